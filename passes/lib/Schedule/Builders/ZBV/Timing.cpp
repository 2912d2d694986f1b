//===- Timing.cpp - zb-v's clock for its candidates -----------------------===//
//
// spanOf times a candidate order by the simulator's rule without the
// simulator's verify (which at p = 32, m = 256 would be most of the build);
// zbvSpanOf exposes it to the test that holds it to simulate().
//
//===----------------------------------------------------------------------===//

#include "Builders/ZBV/VShape.h"
#include "Builders/Builders.h"

namespace zbc::sched::zbv {

/// The makespan the simulator would report for `order` (each rank runs its
/// actions in order, each as soon as the rank and its inputs allow, comm on
/// cross-rank inputs; the longest rank span), or kInf if the order
/// deadlocks or goes over the limit. zb-v's own generators build the
/// candidates and so complete by construction; the one kept still goes through
/// ScheduleTable::verify and the simulator in buildSchedule. (Scoring with
/// simulate() itself costs a verify per candidate, which at p = 32,
/// m = 256 is most of the build time.)
double spanOf(const VShape &v, const std::vector<std::vector<Action>> &order) {
  int p = v.p, m = v.m, stages = 2 * p;
  auto rankOf = [&](int s) { return s < p ? s : stages - 1 - s; };
  auto chunkOf = [&](int s) { return s < p ? 0 : 1; };
  // End of each stage's F and input gradient (B or BW) per microbatch,
  // microbatch-major (see State::end).
  std::vector<double> doneF(size_t(stages) * m, -1), doneB(doneF);
  std::vector<size_t> next(p, 0);
  std::vector<double> freeAt(p, 0), first(p, -1), mem(p, 0);
  double tol = v.limit * (1 + 1e-9);
  size_t left = 0;
  for (const auto &o : order)
    left += o.size();
  // A worklist of ranks: a rank runs its actions until one's input is not
  // there yet; only what its neighbours (the ranks of the stages next to
  // its own in the V) produce can unblock it, so a rank that progressed
  // puts them (and itself) back. Each action is timed once: linear in the
  // actions, where rescanning every rank until nothing moves was not. The
  // times do not depend on the visiting order.
  std::vector<int> work;
  std::vector<bool> queued(p, true);
  for (int r = p - 1; r >= 0; --r)
    work.push_back(r);
  while (!work.empty()) {
    int r = work.back();
    work.pop_back();
    queued[r] = false;
    bool progress = false;
    while (next[r] < order[r].size()) {
      const Action &a = order[r][next[r]];
      double ready = freeAt[r];
      bool ok = true;
      forEachDependence(a, stages, [&](const ProductRef &d) {
        const std::vector<double> &done =
            d.product == Product::Activation ? doneF : doneB;
        double end = done[size_t(a.microbatch) * stages + d.stage];
        if (end < 0)
          ok = false;
        else
          ready = std::max(ready, end + (rankOf(d.stage) != r ? v.comm : 0));
      });
      if (!ok)
        break;
      const StageCost &c = v.cost[r][chunkOf(a.stage)];
      double dur = c.time(a.kind);
      mem[r] += c.memoryDelta(a.kind);
      if (mem[r] > tol)
        return kInf;
      if (first[r] < 0)
        first[r] = ready;
      freeAt[r] = ready + dur;
      if (a.kind == Kind::F)
        doneF[size_t(a.microbatch) * stages + a.stage] = freeAt[r];
      else if (a.kind != Kind::W)
        doneB[size_t(a.microbatch) * stages + a.stage] = freeAt[r];
      ++next[r];
      --left;
      progress = true;
    }
    if (progress)
      for (int q : {r - 1, r, r + 1})
        if (q >= 0 && q < p && !queued[q] && next[q] < order[q].size()) {
          queued[q] = true;
          work.push_back(q);
        }
  }
  if (left)
    return kInf; // deadlock

  double span = 0;
  for (int r = 0; r < p; ++r)
    if (first[r] >= 0)
      span = std::max(span, freeAt[r] - first[r]);
  return span;
}

} // namespace zbc::sched::zbv

double zbc::sched::zbvSpanOf(const Problem &problem, double limit,
                             const std::vector<std::vector<Action>> &order) {
  return zbv::spanOf(zbv::VShape::of(problem, limit), order);
}
