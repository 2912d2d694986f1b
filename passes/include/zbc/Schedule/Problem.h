//===- Problem.h - what a pipeline schedule is built for ---------*- C++ -*-===//
//
// The inputs every schedule builder, the simulator and the CLI share: ranks,
// stages and their placement, microbatches, per-stage times and activation
// memory, the communication delay and the per-rank activation budget. Plain C++:
// nothing here touches IR, so schedules are fast and unit-testable.
//
// Memory follows the Zero Bubble paper's accounting (Qi et al., ICLR 2024):
// a microbatch's F on a stage adds memB (M_B); its B adds memW - memB, so the
// microbatch then holds memW (M_W); its W frees memW. A fused BW frees memB.
// A recomputed microbatch (Note [Recomputation as an action]) keeps only
// memKeep after its F and gets the rest back from its R; an offloaded one
// (Note [Offload as actions]) moves part of its stash to host memory and
// back.
// Units are the caller's (bytes, or the paper's units); times likewise.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_PROBLEM_H
#define ZBC_SCHEDULE_PROBLEM_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zbc::sched {

/// The work of one stage on one microbatch, or one part of it: the one F/B/W
/// kind of the schedule library (the IR's zb::ComputeKind converts at the
/// edge, zbc/Analysis/ProgramTable.h). R runs a forward again to rebuild
/// what a recomputed F did not keep (Note [Recomputation as an action]).
/// O and L copy a stash to host memory and back (Note [Offload as actions]):
/// they run on their rank's copy queues, not its compute stream.
/// S and T are a rank's passes over its shard of the output layer (Note
/// [Vocabulary passes]); their `stage` names the shard, which is the rank's
/// index.
enum class Kind : uint8_t { F, B, W, BW, R, O, L, S, T };
constexpr int kNumKinds = 9;
const char *kindName(Kind kind);
/// Whether `kind` is a copy (O, L) rather than compute.
inline bool isCopy(Kind kind) { return kind == Kind::O || kind == Kind::L; }
/// Whether `kind` is a pass over a vocabulary shard (S, T).
inline bool isVocabPass(Kind kind) { return kind == Kind::S || kind == Kind::T; }
/// Whether `kind` is a backward that reads its microbatch's stash (B, BW).
inline bool isBackward(Kind kind) { return kind == Kind::B || kind == Kind::BW; }

/// Note [Recomputation as an action]
/// A microbatch is recomputed on a stage when its rank's order has an
/// R(s, j): its F(s, j) then keeps only memKeep (the stage's inputs, or
/// with selective recomputation whatever else the policy keeps) and frees
/// the rest at once; R(s, j) runs the forward again, after F(s, j) and
/// before B or BW(s, j) on the same rank, and restores the whole stash
/// (memB), which the backward then uses as it would have F's. R is
/// scheduled like any other action: it takes its rank for `recompute` time
/// (by default F's), so placing it in a bubble costs nothing, and the
/// simulator and the verifier count its bytes where it runs. Whether a
/// (stage, microbatch) is recomputed is thus a property of the table, not
/// of the problem: the problem says what recomputation would cost.

/// Note [Offload as actions]
/// A microbatch is offloaded on a stage when its rank's order has an
/// O(s, j) and an L(s, j): O copies the part of the stash the stage can
/// move (memOffload) to host memory, L copies it back, in the order
/// F < O < L < backward on the rank. Copies run on two queues per rank,
/// device-to-host for O and host-to-device for L (a link is full duplex),
/// each one copy at a time in the rank's order, beside the compute stream:
///   O(s, j) starts once F(s, j) has ended and its queue is free; its place
///     in the order is a fence: the compute action after it waits until the
///     copy has ended, and the bytes leave the device there (a buffer is
///     reused only once its offload has completed);
///   L(s, j) starts once the action before it in the order has ended (its
///     buffer is allocated there), O(s, j) has ended and its queue is free;
///     the bytes come back at its place, and the backward waits for it (it
///     makes the stash, as R does).
/// A copy takes memOffload / copyBandwidth. Device memory thus stays a
/// running total in each rank's order; host memory holds the copy from
/// F(s, j) (the copy may start right after it) to the backward (which
/// waits for the reload), also in the order. Placing O late enough and L
/// early enough hides the copies behind compute; a fence reached before
/// its copy ends, or an L issued too late, stalls the compute stream, and
/// the simulator charges that. A microbatch is kept, recomputed or
/// offloaded: not both recomputed and offloaded.

/// Cost and memory of one stage (per microbatch). F is positive; B and W may
/// be 0 (a stage whose upstream needs no input gradient has no B work, Note
/// [No gradient upstream] in dialect/docs/ZB.md; one without parameters no W
/// work).
struct StageCost {
  double F = 1, B = 1, W = 1; // times
  double memB = 1;            // held after F (M_B)
  double memW = 1;            // held after B, until W (M_W)
  /// What F keeps of a recomputed microbatch until its R (at most memB):
  /// with full recomputation the stage's inputs.
  double memKeep = 0;
  /// How long R takes; negative: as long as F (a full recomputation).
  double recompute = -1;
  /// What O moves of an offloaded microbatch's stash to host memory (at
  /// most memB); negative: all of it (Note [Offload as actions]).
  double memOffload = -1;

  /// The bytes O and L copy.
  double offloaded() const { return memOffload < 0 ? memB : memOffload; }

  /// How long a compute action of `kind` takes on this stage (BW: B + W);
  /// a copy's time depends on the link: Problem::duration.
  double time(Kind kind) const;
  /// How an action of `kind` changes its rank's live activation memory
  /// (F holds M_B, or M_keep when `recomputed`; R restores the rest; B
  /// trades M_B for M_W; W frees M_W; BW frees M_B; O moves memOffload off
  /// the device, L back).
  double memoryDelta(Kind kind, bool recomputed = false) const;
  /// How an action of `kind` changes its rank's host memory: an
  /// `offloaded` microbatch holds memOffload there from its F to its
  /// backward (Note [Offload as actions]).
  double hostMemoryDelta(Kind kind, bool offloaded) const;
};

/// Note [Vocabulary passes]
/// With vocabulary parallelism (Yeung, Qi, Lin, Wan, MLSys 2025; Note
/// [Vocabulary shards] in zbc/contracts/VocabShards.h) the output layer and
/// its softmax leave the last stage: every rank r holds a shard of the
/// vocabulary and runs two passes over it per microbatch j, S(r, j) and
/// T(r, j), beside its pipeline work:
///   S(r, j) needs the last stage's activation of j (broadcast to every
///     rank, so `comm` where the last stage is elsewhere): its logits
///     shard and their softmax statistics;
///   barrier 1 of j: once every rank's S(r, j) has ended, the statistics'
///     collectives take `collective`; T(r, j) waits for it;
///   with one barrier (`barriers` 1), the input gradient of the output
///     layer is summed in that barrier too and the last stage's backward
///     of j waits for barrier 1; T computes the shard's weight gradient;
///   with two (`barriers` 2), T also computes the shard's part of the
///     input gradient, summed in barrier 2 once every T(r, j) has ended
///     (`collective` again), and the last stage's backward waits for that.
/// A rank holds `mem` from its S(r, j) to its T(r, j) (the logits shard).
/// The passes are placed into any schedule's order by
/// placeVocabularyPasses (VocabPasses.h); the simulator times the barriers.
struct VocabPasses {
  int barriers = 0; // 0: no vocabulary parallelism; 1 or 2
  double S = 0, T = 0;     // a rank's pass over its shard, per microbatch
  double mem = 0;          // held from S to T
  double collective = 0;   // one barrier's collectives
  bool enabled() const { return barriers > 0; }
};

/// How stages map to ranks.
enum class Placement {
  Linear,      // stages == ranks, stage s on rank s
  Interleaved, // stages == v * ranks, stage s on rank s % ranks (Megatron)
  V,           // stages == 2 * ranks, stage s on rank s for s < p, and on
               // rank 2p - 1 - s after (the V shape: rank 0 holds the first
               // and the last stage)
};
const char *placementName(Placement placement);

/// Note [Collectives in the simulator]
/// The gradient sums of a data-parallel or tied program (zb.all_reduce,
/// Note [Collective groups]) as the simulator times them: a sum of the
/// f32 gradients (`bytes`) of parameters that `stages` hold (one stage; a
/// tied parameter's several). Its group is the ranks holding those stages
/// in every one of the problem's `replicas`; a group of one process sums
/// nothing. Each holder issues it when the last W (or BW) of those stages
/// on its rank ends, and a rank runs its collectives one at a time in the
/// order they are issued, beside its compute: a ring all-reduce over n
/// processes takes comm + 2 (n - 1) / n x bytes / collectiveBandwidth. A
/// rank's step ends when its computes and its collectives have, so what
/// the cool-down does not hide lengthens the makespan
/// (SimResult::exposedCommunication). With a sharded optimizer (Note
/// [Sharded optimizer]) a sum over the replicas alone is a reduce-scatter,
/// (n - 1) / n of the bytes, and each rank first gathers the working copies
/// (`paramBytes`) of its stages' parameters over the replicas, one stage
/// after the other from the step's start: no action of a stage starts
/// before its gather has ended. Without a collective bandwidth the
/// collectives are not timed.
struct GradientSum {
  std::vector<int> stages;
  double bytes = 0;      // f32 gradients
  double paramBytes = 0; // the working copies (bf16: half of `bytes`)
};

/// A scheduling problem.
struct Problem {
  int ranks = 1;                 // p
  int microbatches = 1;          // m
  int virtualStages = 1;         // v: stages per rank (interleaved, V)
  std::vector<StageCost> stages; // one per stage, ranks * virtualStages
  double comm = 0;               // delay on every cross-rank edge
  /// Memory units a rank copies to or from host memory per time unit, in
  /// each direction (Note [Offload as actions]); 0: no link, no offload.
  double copyBandwidth = 0;
  /// Note [Collectives in the simulator]: data-parallel replicas, the
  /// gradient sums and the bytes a collective moves per time unit (0: not
  /// timed).
  int replicas = 1;
  bool sharded = false; // zero >= 1, with replicas > 1
  std::vector<GradientSum> gradientSums;
  double collectiveBandwidth = 0;
  /// Note [Vocabulary passes]: none unless `vocab.barriers` > 0.
  VocabPasses vocab;
  /// How long a ring all-reduce of `bytes` over `members` processes takes,
  /// and a ring reduce-scatter or all-gather (half the traffic).
  double allReduceTime(double bytes, int members) const;
  double shardedCollectiveTime(double bytes, int members) const;
  /// Per-rank activation budget (Note [Two memory limits]). 0: none.
  /// Unset: the schedule's default (zb-auto and zb-v have one,
  /// ScheduleInfo::defaultActivationBudget; the others none); buildSchedule
  /// resolves it before the builder runs.
  std::optional<double> activationBudget;

  int numStages() const { return static_cast<int>(stages.size()); }
  /// How long an action of `kind` on `stage` takes: a copy's bytes over
  /// the copy bandwidth, a vocabulary pass its `vocab` time, any other
  /// action its stage's time.
  double duration(Kind kind, int stage) const;
  /// How action `kind` of `stage` changes its rank's live activation
  /// memory: StageCost::memoryDelta, or a vocabulary pass's `vocab.mem`.
  double memoryDelta(Kind kind, int stage, bool recomputed) const;
  /// The budget in force: 0 when none.
  double budget() const { return activationBudget.value_or(0); }
  /// Checks sizes (against zbc/Support/Limits.h), signs and finiteness; the
  /// error names the field and the range accepted.
  llvm::Error validate() const;
};

/// Note [Two memory limits]
/// A schedule's activation budget is what it keeps in flight per rank (the
/// M_B and M_W of the microbatches between F and W: Problem::activationBudget,
/// zb-schedule's activation-budget, zbc schedule's --activation-budget); a
/// memory limit is a rank's whole memory (parameters, gradients, optimizer
/// state, temporaries and activations: zb-schedule's and
/// zb-verify-schedule's memory-limit, zbc compile's --mem-limit), which
/// zb-schedule turns into an activation budget (Note [Rank budget]). An
/// activation budget as written: "default" (the schedule's own: unset),
/// "none" (0) or an amount; these read and write it.
llvm::Expected<std::optional<double>>
parseActivationBudget(llvm::StringRef text);
std::string activationBudgetText(std::optional<double> budget);

/// Checks a problem's sizes before anything is allocated for them: ranks,
/// virtual stages per rank and microbatches at least 1 and at most the
/// ceilings of zbc/Support/Limits.h, and so are their products (stages,
/// stage-microbatch pairs). Takes int64 so that callers check what the
/// user wrote before narrowing it to Problem's ints.
llvm::Error checkProblemSize(int64_t ranks, int64_t virtualStages,
                             int64_t microbatches);

/// The rank holding each stage under `placement`.
std::vector<int> placeStages(Placement placement, int ranks, int numStages);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_PROBLEM_H
