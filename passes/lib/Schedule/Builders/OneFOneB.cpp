//===- OneFOneB.cpp - one forward, one fused backward (1F1B) --------------===//
//
// 1F1B (PipeDream-Flush, the non-interleaved Megatron-LM schedule). Rank r
// runs min(p - r - 1, m) warm-up forwards, so that its first backward's
// input gradient arrives just as its forwards would otherwise run ahead of
// what the pipeline can drain; then it alternates one forward (while any
// remain) with one fused backward BW, oldest microbatch first; the backwards
// left when the forwards run out are the cool-down. Rank r therefore holds
// at most min(p - r, m) microbatches' activations: p M_B on rank 0.
//
// Any m >= 1 works: with m <= p - r - 1 the whole rank is warm-up, then all
// backwards. The makespan is (m + p - 1)(F + B + W) with stages of equal cost
// and no comm, so the bubble is (p-1)(F+B+W) for every m (checked in
// HandcraftedSchedulesTest).
//
//===----------------------------------------------------------------------===//

#include "Builders/Builders.h"

#include <algorithm>

using namespace zbc::sched;

llvm::Expected<ScheduleTable> zbc::sched::buildOneFOneB(const Problem &problem,
                                                        const BuildOptions &,
                                                        BuildReport &) {
  int p = problem.ranks, m = problem.microbatches;
  ScheduleTable table = ScheduleTable::empty(problem, Placement::Linear);
  for (int r = 0; r < p; ++r) {
    std::vector<Action> &order = table.ranks[r];
    order.reserve(2 * m);
    int forwards = std::min(p - r - 1, m); // forwards issued so far
    for (int j = 0; j < forwards; ++j)
      order.push_back({Kind::F, r, j});
    for (int j = 0; j < m; ++j) {
      if (forwards < m)
        order.push_back({Kind::F, r, forwards++});
      order.push_back({Kind::BW, r, j});
    }
  }
  return table;
}
