//===- ProgramTable.cpp - a zb.program's compute order as a table ---------===//

#include "zbc/Analysis/ProgramTable.h"

using namespace zbc;
using namespace zbc::zb;

ComputeKind zbc::toComputeKind(sched::Kind kind) {
  switch (kind) {
  case sched::Kind::F:
    return ComputeKind::F;
  case sched::Kind::B:
    return ComputeKind::B;
  case sched::Kind::W:
    return ComputeKind::W;
  case sched::Kind::BW:
    return ComputeKind::BW;
  }
  llvm_unreachable("unknown kind");
}

sched::Kind zbc::toScheduleKind(ComputeKind kind) {
  switch (kind) {
  case ComputeKind::F:
    return sched::Kind::F;
  case ComputeKind::B:
    return sched::Kind::B;
  case ComputeKind::W:
    return sched::Kind::W;
  case ComputeKind::BW:
    return sched::Kind::BW;
  }
  llvm_unreachable("unknown kind");
}

sched::ScheduleTable zbc::tableOfProgram(ProgramOp program) {
  sched::ScheduleTable table;
  table.microbatches = static_cast<int>(program.getMicrobatches());
  for (int64_t rank : program.getPlacement())
    table.rankOfStage.push_back(static_cast<int>(rank));
  for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
    std::vector<sched::Action> &actions = table.ranks.emplace_back();
    for (ComputeOp compute : rank.getBody().front().getOps<ComputeOp>())
      actions.push_back({toScheduleKind(compute.getKind()),
                         static_cast<int>(compute.getStage()),
                         static_cast<int>(compute.getMicrobatch())});
  }
  return table;
}
