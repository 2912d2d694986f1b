//===- Schedule.h - pipeline schedules written in C++ ------------*- C++ -*-===//
//
// Note [Schedule DSL]
// A schedule of one's own, written as ordinary C++: for a problem (ranks,
// stages, microbatches, costs) and a placement, each rank's list of F, B
// (input gradient), W (weight gradient) or BW (fused backward) actions of
// (stage, microbatch), appended in order:
//
//   void writeDeferredW(zbc::dsl::ScheduleBuilder &s) {
//     for (int r = 0; r < s.ranks(); ++r) {
//       s.warmUp(r, s.ranks() - r - 1); // F of the first p - r - 1
//       s.steady(r);                    // then one F, one B until all F
//       s.coolDown(r);                  // the B left
//       s.fillW(r);                     // every W, deferred to the end
//     }
//   }
//
// Registered under a name (registerSchedule; a plugin's entry point,
// ZBC_SCHEDULE_PLUGIN, does it when `zbc --schedule-plugin LIB.so` loads
// it), the schedule is one of zbc's: `zbc schedule --schedule NAME`
// simulates, draws and writes it as a CSV, `zbc compile/run --schedule
// NAME` compiles and trains it, through the same checks as every registered
// schedule (Registry.h's buildSchedule): the table's rules (every action
// once, F before B before W on a rank, only stages the rank holds: an
// error names the schedule, the rank, the position in its order and the
// action), then the simulation (an order whose ranks wait for each other
// is refused), then, compiled, the proof of the program.
//
// Plain C++ over the schedule library (zbc::Schedule): no MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DSL_SCHEDULE_H
#define ZBC_DSL_SCHEDULE_H

#include "zbc/Schedule/ScheduleTable.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace zbc::dsl {

/// Each rank's order of a schedule under construction (Note [Schedule DSL]).
class ScheduleBuilder {
public:
  ScheduleBuilder(const sched::Problem &problem, sched::Placement placement);

  const sched::Problem &problem() const { return problem_; }
  int ranks() const { return problem_.ranks; }
  int stages() const { return problem_.numStages(); }
  int microbatches() const { return problem_.microbatches; }
  /// The stages `rank` holds, its first chunk first.
  std::vector<int> stagesOf(int rank) const;
  int rankOf(int stage) const { return table_.rankOfStage.at(stage); }

  /// Appends an action to `rank`'s order.
  ScheduleBuilder &F(int rank, int stage, int microbatch);
  ScheduleBuilder &B(int rank, int stage, int microbatch);
  ScheduleBuilder &W(int rank, int stage, int microbatch);
  ScheduleBuilder &BW(int rank, int stage, int microbatch);

  // The usual shapes, on the rank's first stage (one stage per rank, the
  // linear placement), microbatches in order. Each continues where the
  // rank's earlier actions left off.

  /// The F of the rank's next `count` microbatches (fewer if fewer are
  /// left).
  ScheduleBuilder &warmUp(int rank, int count);
  /// One F, then one backward (B, or BW when `fused`), until every F is
  /// issued.
  ScheduleBuilder &steady(int rank, bool fused = false);
  /// The backwards (B, or BW when `fused`) not issued yet.
  ScheduleBuilder &coolDown(int rank, bool fused = false);
  /// The W of every microbatch whose B is issued and whose W is not.
  ScheduleBuilder &fillW(int rank);

  /// The table as written, in the papers' notation; ScheduleTable::verify
  /// holds it to the rules (buildSchedule does, for a registered one).
  const sched::ScheduleTable &table() const { return table_; }

private:
  ScheduleBuilder &append(int rank, sched::Kind kind, int stage,
                          int microbatch);
  /// The rank's next backward on `stage`: BW when `fused`, else B with its W
  /// left for fillW.
  void issueNextBackward(int rank, int stage, bool fused);
  sched::Problem problem_;
  sched::ScheduleTable table_;
  /// Per rank, on its first stage: the next F and backward to issue, and
  /// the microbatches whose B is issued and whose W is not.
  std::vector<int> nextF_, nextBackward_;
  std::vector<std::vector<int>> pendingW_;
};

/// A schedule written with the builder: its name (kebab-case, as `--schedule`
/// takes it), one line on what it is, where it comes from, its placement,
/// and the function that writes it for a problem.
struct ScheduleDefinition {
  std::string name, summary, source;
  sched::Placement placement = sched::Placement::Linear;
  std::function<void(ScheduleBuilder &)> write;
};

/// Registers `definition` among zbc's schedules (Registry.h); an error if
/// its name is taken or it has no name or no writer.
llvm::Error registerSchedule(ScheduleDefinition definition);

} // namespace zbc::dsl

namespace zbc::dsl {
/// What a plugin and the zbc that loads it must agree on: the layout of the
/// types they pass each other. A plugin built against another zbc's
/// headers is refused by name instead of crashing.
constexpr unsigned long schedulePluginABI() {
  return 2 /* bumped when a passed type changes meaning */ * 1000003ul +
         sizeof(sched::ScheduleTable) * 1009ul + sizeof(sched::Problem) * 31ul +
         sizeof(sched::StageCost) * 7ul + sizeof(ScheduleDefinition);
}
} // namespace zbc::dsl

/// A schedule plugin's entry point, called once when `zbc --schedule-plugin
/// LIB.so` loads the library (after checking zbc_schedule_plugin_abi): its
/// body registers the plugin's schedules (registerSchedule); what it returns
/// (an error, or success) zbc reports.
#define ZBC_SCHEDULE_PLUGIN                                                    \
  extern "C" unsigned long zbc_schedule_plugin_abi() {                         \
    return zbc::dsl::schedulePluginABI();                                      \
  }                                                                            \
  extern "C" llvm::Error *zbc_register_schedules();                            \
  static llvm::Error zbcRegisterSchedules();                                   \
  extern "C" llvm::Error *zbc_register_schedules() {                           \
    return new llvm::Error(zbcRegisterSchedules());                            \
  }                                                                            \
  static llvm::Error zbcRegisterSchedules()

#endif // ZBC_DSL_SCHEDULE_H
