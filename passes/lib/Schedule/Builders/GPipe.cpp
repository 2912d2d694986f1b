//===- GPipe.cpp - all forwards, then all fused backwards -----------------===//
//
// GPipe (Huang et al., NeurIPS 2019): every rank runs the forwards of all m
// microbatches, F(s, 0..m-1), then their fused backwards in reverse order,
// BW(s, m-1..0). Reverse order is what GPipe does: its backward is autograd
// over the forward's clock schedule run backwards, so the microbatch whose
// forward finished last is differentiated first (torchgpipe makes this order
// explicit). With equal stages the order does not change the timing: the last
// stage can start either end at once, and every upstream stage receives the
// backwards in the order it runs them. What it does change is which
// activations stay longest; the peak is m M_B on every rank either way.
//
// Bubble (p-1)(F+B+W) for any m and any per-stage costs equal across stages
// (checked in HandcraftedSchedulesTest); memory m M_B.
//
//===----------------------------------------------------------------------===//

#include "Builders/Builders.h"

using namespace zbc::sched;

llvm::Expected<ScheduleTable> zbc::sched::buildGPipe(const Problem &problem,
                                                     const BuildOptions &,
                                                     BuildReport &) {
  int p = problem.ranks, m = problem.microbatches;
  ScheduleTable table = ScheduleTable::empty(problem, Placement::Linear);
  for (int r = 0; r < p; ++r) {
    std::vector<Action> &order = table.ranks[r];
    order.reserve(2 * m);
    for (int j = 0; j < m; ++j)
      order.push_back({Kind::F, r, j});
    for (int j = m - 1; j >= 0; --j)
      order.push_back({Kind::BW, r, j});
  }
  return table;
}
