//===- Evaluator.cpp - zb-auto's as-soon-as-possible timing -----------------===//
//
// Times per-rank orders under the rules of Simulator.h (each op starts when
// its rank is free and its dependences have arrived), fast enough to run
// thousands of times per build: the search's inner loop. Also the
// instance (a linear-placement problem with its limit resolved) and the
// peak memory of an order (Note [zb-auto memory]).
//
//===----------------------------------------------------------------------===//

#include "ZBAuto.h"

#include <algorithm>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

Instance Instance::from(const Problem &problem, double limit) {
  Instance in;
  in.p = problem.ranks;
  in.m = problem.microbatches;
  in.cost = problem.stages;
  in.comm = problem.comm;
  in.limit = limit;
  return in;
}

//===----------------------------------------------------------------------===//
// Evaluator: as-soon-as-possible timing of per-rank orders
//===----------------------------------------------------------------------===//

Evaluator::Evaluator(const Instance &in) : in(in) {}

const Timing &Evaluator::run(const Order &order, bool withStarts) {
  const int p = in.p, m = in.m;
  const double c = in.comm;
  endF.assign(size_t(p) * m, -1);
  endB.assign(size_t(p) * m, -1);
  pos.assign(p, 0);
  freeAt.assign(p, 0);
  first.assign(p, -1);
  if (withStarts)
    for (auto &s : timing.start)
      s.assign(size_t(p) * m, -1);
  std::vector<char> queued(p, 1);
  stack.clear();
  for (int r = p - 1; r >= 0; --r)
    stack.push_back(r);
  timing.ok = false;
  while (!stack.empty()) {
    int r = stack.back();
    stack.pop_back();
    queued[r] = 0;
    const std::vector<Op> &ord = order[r];
    size_t i = pos[r];
    double t = freeAt[r];
    bool movedF = false, movedB = false;
    for (; i < ord.size(); ++i) {
      Op op = ord[i];
      int j = op.mb;
      // The latest of its dependences (Dependences.h): one of this rank
      // not done yet is an invalid order, one of another rank a wait.
      double ready = 0;
      bool waits = false, invalid = false;
      forEachProducer(in, op.kind, r, [&](int q, Kind made) {
        double end = (made == Kind::F ? endF : endB)[size_t(q) * m + j];
        if (end < 0)
          (q == r ? invalid : waits) = true;
        else
          ready = std::max(ready, end + (q == r ? 0 : c));
      });
      if (invalid)
        return timing; // B before its F, or W before its B
      if (waits)
        break;
      double dur = in.cost[r].time(op.kind);
      double s = std::max(t, ready);
      t = s + dur;
      if (first[r] < 0)
        first[r] = s;
      if (withStarts)
        timing.start[slot(op.kind)][size_t(r) * m + j] = s;
      if (op.kind == Kind::F) {
        endF[size_t(r) * m + j] = t;
        movedF = true;
      } else if (op.kind == Kind::B) {
        endB[size_t(r) * m + j] = t;
        movedB = true;
      }
    }
    pos[r] = static_cast<int>(i);
    freeAt[r] = t;
    if (movedF && r + 1 < p && !queued[r + 1]) {
      queued[r + 1] = 1;
      stack.push_back(r + 1);
    }
    if (movedB && r > 0 && !queued[r - 1]) {
      queued[r - 1] = 1;
      stack.push_back(r - 1);
    }
  }
  timing.span.assign(p, 0);
  timing.makespan = timing.sumSpan = 0;
  for (int r = 0; r < p; ++r) {
    if (pos[r] != static_cast<int>(order[r].size()))
      return timing; // deadlock
    timing.span[r] = order[r].empty() ? 0 : freeAt[r] - first[r];
    timing.makespan = std::max(timing.makespan, timing.span[r]);
    timing.sumSpan += timing.span[r];
  }
  timing.ok = true;
  return timing;
}

std::vector<double> Evaluator::peaks(const Instance &in, const Order &order) {
  std::vector<double> peak(in.p, 0);
  for (int r = 0; r < in.p; ++r) {
    double mem = 0;
    for (Op op : order[r]) {
      mem += in.cost[r].memoryDelta(op.kind);
      peak[r] = std::max(peak[r], mem);
    }
  }
  return peak;
}
