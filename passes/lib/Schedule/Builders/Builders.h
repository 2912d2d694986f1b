//===- Builders.h - the schedule builders the registry names -----*- C++ -*-===//
//
// One function per registered schedule, each in its own file. Private to
// passes/lib/Schedule: users go through Registry.h, which validates the
// problem before and verifies and simulates the table after.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_BUILDERS_H
#define ZBC_SCHEDULE_BUILDERS_H

#include "zbc/Schedule/Registry.h"

#include <functional>
#include <optional>

namespace zbc::sched {

#define ZBC_DECLARE_BUILDER(NAME)                                              \
  llvm::Expected<ScheduleTable> NAME(const Problem &problem,                   \
                                     const BuildOptions &options,              \
                                     BuildReport &report);
ZBC_DECLARE_BUILDER(buildGPipe)            // GPipe.cpp
ZBC_DECLARE_BUILDER(buildOneFOneB)         // OneFOneB.cpp
ZBC_DECLARE_BUILDER(buildInterleaved1F1B)  // Interleaved1F1B.cpp
ZBC_DECLARE_BUILDER(buildZBH1)             // ZBHandcrafted.cpp
ZBC_DECLARE_BUILDER(buildZBH2)             // ZBHandcrafted.cpp
ZBC_DECLARE_BUILDER(buildZBAuto)           // ZBAuto/ (Build.cpp)
ZBC_DECLARE_BUILDER(buildZBV)              // ZBV/Build.cpp
ZBC_DECLARE_BUILDER(buildVHalf)            // VShapes.cpp
ZBC_DECLARE_BUILDER(buildVMin)             // VShapes.cpp
ZBC_DECLARE_BUILDER(buildDualPipeV)        // DualPipeV.cpp
#undef ZBC_DECLARE_BUILDER

/// The limits zb-auto and zb-v plan for when the user gives none
/// (ScheduleInfo::defaultActivationBudget).
double zbAutoDefaultBudget(const Problem &problem); // 2p max(M_B, M_W)
double zbvDefaultBudget(const Problem &problem);    // 2p chunk M_B
/// ZB-V's own clock (ZBV/Timing.cpp's spanOf, which scores its
/// candidates), for a V `order` of `problem` within `limit` per rank: the
/// makespan simulate() reports, or +inf if the order deadlocks or goes over
/// the limit. Held to simulate() by a randomized test.
double zbvSpanOf(const Problem &problem, double limit,
                 const std::vector<std::vector<Action>> &order);

/// What zb-v needs of v-half (`half`) or v-min (VShapes.cpp): the span of
/// the order it builds for `problem`, every rank within the pattern's own
/// memory and at most `cap` (0: no cap), planned on a short instance and
/// extrapolated (the whole order's span exactly, in every case measured),
/// and that order, built on demand, so that a candidate that does not win
/// costs no time linear in m. None if no candidate fits or the problem is
/// not on the V.
struct VShapeCandidate {
  double span;
  std::function<std::optional<std::vector<std::vector<Action>>>()> order;
  std::string how; // which plan, and how it was compacted
};
std::optional<VShapeCandidate> vShapeCandidate(const Problem &problem,
                                               bool half, double cap);

/// The same for the best of the Controllable Memory paper's building blocks
/// (VShapes.cpp, Block) within `cap` per rank, whatever their own memory:
/// what makes zb-v improve on both patterns between and above their limits.
/// None without a cap, or if no block fits it.
std::optional<VShapeCandidate> vBlockCandidate(const Problem &problem,
                                               double cap);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_BUILDERS_H
