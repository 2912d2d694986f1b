//===- ScheduleDSL.cpp - pipeline schedules written in C++ ----------------===//
//
// Note [Schedule DSL] (zbc/DSL/Schedule.h): the builder's shapes, and a
// definition turned into a registered schedule.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Schedule.h"

#include "zbc/Schedule/Registry.h"

#include <algorithm>
#include <deque>

using namespace zbc;
using namespace zbc::dsl;

ScheduleBuilder::ScheduleBuilder(const sched::Problem &problem,
                                 sched::Placement placement)
    : problem_(problem),
      table_(sched::ScheduleTable::empty(problem, placement)),
      nextF_(problem.ranks, 0), nextBackward_(problem.ranks, 0),
      pendingW_(problem.ranks) {}

std::vector<int> ScheduleBuilder::stagesOf(int rank) const {
  return table_.stagesOf(rank);
}

ScheduleBuilder &ScheduleBuilder::append(int rank, sched::Kind kind, int stage,
                                         int microbatch) {
  // A rank outside the problem is kept as rank 0's action on a stage it
  // does not hold, so that the table's check names it (no action is lost).
  if (rank < 0 || rank >= ranks()) {
    table_.ranks[0].push_back({kind, -1, microbatch});
    return *this;
  }
  table_.ranks[rank].push_back({kind, stage, microbatch});
  return *this;
}

ScheduleBuilder &ScheduleBuilder::F(int rank, int stage, int microbatch) {
  return append(rank, sched::Kind::F, stage, microbatch);
}
ScheduleBuilder &ScheduleBuilder::B(int rank, int stage, int microbatch) {
  return append(rank, sched::Kind::B, stage, microbatch);
}
ScheduleBuilder &ScheduleBuilder::W(int rank, int stage, int microbatch) {
  return append(rank, sched::Kind::W, stage, microbatch);
}
ScheduleBuilder &ScheduleBuilder::BW(int rank, int stage, int microbatch) {
  return append(rank, sched::Kind::BW, stage, microbatch);
}

ScheduleBuilder &ScheduleBuilder::warmUp(int rank, int count) {
  if (rank < 0 || rank >= ranks())
    return append(rank, sched::Kind::F, -1, 0); // named by the check
  int stage = stagesOf(rank).front();
  for (int i = 0; i < count && nextF_[rank] < microbatches(); ++i)
    F(rank, stage, nextF_[rank]++);
  return *this;
}

ScheduleBuilder &ScheduleBuilder::steady(int rank, bool fused) {
  if (rank < 0 || rank >= ranks())
    return append(rank, sched::Kind::F, -1, 0); // named by the check
  int stage = stagesOf(rank).front();
  while (nextF_[rank] < microbatches()) {
    F(rank, stage, nextF_[rank]++);
    issueNextBackward(rank, stage, fused);
  }
  return *this;
}

ScheduleBuilder &ScheduleBuilder::coolDown(int rank, bool fused) {
  if (rank < 0 || rank >= ranks())
    return append(rank, sched::Kind::F, -1, 0); // named by the check
  int stage = stagesOf(rank).front();
  while (nextBackward_[rank] < microbatches())
    issueNextBackward(rank, stage, fused);
  return *this;
}

void ScheduleBuilder::issueNextBackward(int rank, int stage, bool fused) {
  int j = nextBackward_[rank]++;
  if (fused) {
    BW(rank, stage, j);
    return;
  }
  B(rank, stage, j);
  pendingW_[rank].push_back(j);
}

ScheduleBuilder &ScheduleBuilder::fillW(int rank) {
  if (rank < 0 || rank >= ranks())
    return append(rank, sched::Kind::F, -1, 0); // named by the check
  int stage = stagesOf(rank).front();
  for (int j : pendingW_[rank])
    W(rank, stage, j);
  pendingW_[rank].clear();
  return *this;
}

llvm::Error zbc::dsl::registerSchedule(ScheduleDefinition definition) {
  if (definition.name.empty() || !definition.write)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "a schedule definition needs a name and a function that writes it");
  // The registry keeps C strings: these live as long as the process.
  static std::deque<std::string> strings;
  auto keep = [](const std::string &text) {
    return strings.emplace_back(text).c_str();
  };
  sched::ScheduleInfo info{};
  info.name = keep(definition.name);
  info.summary = keep(definition.summary.empty() ? "a schedule of one's own"
                                                 : definition.summary);
  info.source = keep(definition.source.empty() ? "written with zbc's schedule "
                                                 "DSL"
                                               : definition.source);
  info.bubble = "(not stated: zbc schedule simulates it)";
  info.memory = "(not stated: zbc schedule simulates it)";
  info.placement = definition.placement;
  info.usesVirtual = definition.placement == sched::Placement::Interleaved;
  sched::Placement placement = definition.placement;
  auto write = std::move(definition.write);
  info.build = [placement, write](const sched::Problem &problem,
                                        const sched::BuildOptions &,
                                        sched::BuildReport &)
      -> llvm::Expected<sched::ScheduleTable> {
    ScheduleBuilder builder(problem, placement);
    write(builder);
    if (std::optional<sched::ScheduleTable::Fault> fault =
            builder.table().firstFault())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     fault->message); // buildSchedule names it
    return builder.table();
  };
  return sched::registerSchedule(std::move(info));
}
