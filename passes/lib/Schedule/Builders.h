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
ZBC_DECLARE_BUILDER(buildZBV)              // ZBV.cpp
ZBC_DECLARE_BUILDER(buildVHalf)            // VShapes.cpp
ZBC_DECLARE_BUILDER(buildVMin)             // VShapes.cpp
ZBC_DECLARE_BUILDER(buildDualPipeV)        // DualPipeV.cpp
#undef ZBC_DECLARE_BUILDER

/// The limits zb-auto and zb-v plan for when the user gives none
/// (ScheduleInfo::defaultMemLimit).
double zbAutoDefaultMemLimit(const Problem &problem); // 2p max(M_B, M_W)
double zbvDefaultMemLimit(const Problem &problem);    // 2p chunk M_B

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_BUILDERS_H
