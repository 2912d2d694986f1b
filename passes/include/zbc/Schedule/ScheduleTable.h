//===- ScheduleTable.h - per-rank ordered F/B/W work --------------*- C++ -*-===//
//
// The output of every schedule builder: for each rank, the (kind, stage,
// microbatch) actions it runs, in order, and which rank holds each stage.
// `verify` checks what every schedule must satisfy, whatever built it:
// each rank runs only stages it holds; every (stage, microbatch) gets exactly
// one F and either one BW or one B and one W; F before B before W on a rank;
// and at most one R, between its F and its backward (Note [Recomputation as
// an action], Problem.h); vocabulary passes (Note [Vocabulary passes]) on
// no rank, or on every rank an S then a T of every microbatch, each over
// the rank's own shard.
// Cross-rank dependencies, deadlock and memory are the simulator's to check
// (Simulator.h), since they depend on timing and the problem's limits.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_SCHEDULETABLE_H
#define ZBC_SCHEDULE_SCHEDULETABLE_H

#include "zbc/Schedule/Problem.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zbc::sched {

struct Action {
  Kind kind;
  int stage;
  int microbatch;
  bool operator==(const Action &o) const {
    return kind == o.kind && stage == o.stage && microbatch == o.microbatch;
  }
  /// "F(2,5)": kind(stage, microbatch), the papers' notation.
  std::string str() const;
  /// "2F5", "1I2", "1W2", "1B2": the cell of PyTorch's schedule CSV (I its
  /// input gradient, our B; B its full backward, our BW). The notation is
  /// the core's, so that the core names actions without the CSV format
  /// (TorchCSV.h reads and writes it).
  std::string csvStr() const;
};

struct ScheduleTable {
  /// How messages name actions: the papers' "B(1,3)", or the cell of
  /// PyTorch's CSV, "1I3", for a table read from one (parseCSV), so that an
  /// error about an imported schedule speaks the file's language.
  enum class Notation { Papers, CSV };
  Notation notation = Notation::Papers;
  int microbatches = 0;
  std::vector<int> rankOfStage;            // size = number of stages
  std::vector<std::vector<Action>> ranks;  // per rank, in execution order
  /// PyTorch's OVERLAP_F_B: (rank, i) when actions i and i + 1 of the rank
  /// are an F and a backward issued together, "(0F7;7B3)OVERLAP_F_B", which
  /// may run in either order. zbc runs them in the table's order, the first
  /// waiting for what either needs (so the other order could start no
  /// earlier); the simulator times them one after the other. DualPipeV's
  /// builder and a CSV's cells set them; the CSV writer writes them back.
  std::set<std::pair<int, int>> overlaps;
  /// Cells of a CSV that zbc reads but does not schedule (REDUCE_GRAD,
  /// UNSHARD, RESHARD: gradient reduction and FSDP, which zbc's runtime
  /// does at the step's end or not at all), per rank with the index of
  /// the action they preceded: written back where they were.
  std::vector<std::vector<std::pair<int, std::string>>> passthrough;

  /// A table for `problem` with its stages placed and every rank's order
  /// still empty: where builders start.
  static ScheduleTable empty(const Problem &problem, Placement placement);

  int numRanks() const { return static_cast<int>(ranks.size()); }
  /// `action` in this table's notation, for messages.
  std::string name(const Action &action) const;
  int numStages() const { return static_cast<int>(rankOfStage.size()); }
  /// The stages `rank` holds, ascending: the first chunk first (in a V,
  /// r then 2p-1-r).
  std::vector<int> stagesOf(int rank) const;
  /// Which (stage, microbatch) pairs are recomputed (have an R), indexed
  /// stage * microbatches + microbatch; empty when none is, so that tables
  /// without recomputation pay nothing.
  std::vector<bool> recomputedMask() const { return maskOf(Kind::R); }
  /// Which pairs are offloaded (have an L), likewise.
  std::vector<bool> offloadedMask() const { return maskOf(Kind::L); }
  /// Which pairs a backward reads restored (Dependences.h): rebuilt by an
  /// R or brought back by an L; likewise.
  std::vector<bool> restoredMask() const;
  /// Which pairs have an action of `kind`, likewise.
  std::vector<bool> maskOf(Kind kind) const;
  /// Whether any action is an R.
  bool hasRecompute() const { return has(Kind::R); }
  /// Whether any action is an O or an L.
  bool hasOffload() const { return has(Kind::O) || has(Kind::L); }
  bool has(Kind kind) const;
  /// How many actions are of `kind` (of an R or an O: the pairs
  /// recomputed or offloaded).
  size_t count(Kind kind) const;
  /// Whether `a`'s (stage, microbatch) is set in `mask`, one of the masks
  /// above.
  bool isRecomputed(const std::vector<bool> &mask, const Action &a) const {
    return !mask.empty() &&
           mask[size_t(a.stage) * size_t(microbatches) + size_t(a.microbatch)];
  }

  /// Checks the per-rank invariants above; the error names the rank, the
  /// action and the microbatch.
  llvm::Error verify() const;
  /// The same check, with where the problem is: the rank and the index of
  /// the action in its order (-1 where no action is at fault, e.g. a
  /// missing F, or for a misplaced stage), for located diagnostics.
  struct Fault {
    int rank, action;
    std::string message;
  };
  std::optional<Fault> firstFault() const;
};

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_SCHEDULETABLE_H
