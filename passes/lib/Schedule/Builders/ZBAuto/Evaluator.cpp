//===- Evaluator.cpp - zb-auto's as-soon-as-possible timing -----------------===//
//
// Times per-rank orders under the rules of Simulator.h (each op starts when
// its rank is free and its dependences have arrived), fast enough to run
// hundreds of thousands of times per build: the search's inner loop. A
// whole order at once (run), or again after one rank's ops changed places
// (retime, Note [zb-auto timing]). Also the instance (a linear-placement
// problem with its limit resolved) and the peak memory of an order (Note
// [zb-auto memory]).
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

Evaluator::Evaluator(const Instance &in)
    : in(in), crossRank(3 * in.p, -1), crossKind(3 * in.p, -1),
      ownKind(3 * in.p, -1), consumed(3 * in.p, 0),
      consumerRank(3 * in.p, -1), duration(3 * in.p) {
  // The dependence rule, read once into tables the inner loop indexes.
  for (int r = 0; r < in.p; ++r)
    for (Kind kind : {Kind::F, Kind::B, Kind::W}) {
      int k = slot(kind) * in.p + r;
      duration[k] = in.cost[r].time(kind);
      forEachProducer(in, kind, r, [&](int q, Kind made) {
        if (q == r) {
          ownKind[k] = slot(made);
        } else {
          crossRank[k] = q;
          crossKind[k] = slot(made);
          consumed[slot(made) * in.p + q] = 1;
          consumerRank[slot(made) * in.p + q] = r;
        }
      });
    }
  for (auto &v : changed)
    v.assign(size_t(in.p) * in.m, 0);
  for (auto &v : changedTail)
    v.assign(size_t(in.p) * in.m, 0);
}

void Evaluator::index(const Order &order, int r, int lo, int hi) {
  for (int i = lo; i <= hi; ++i)
    at[slot(order[r][i].kind)][size_t(r) * in.m + order[r][i].mb] = i;
}

bool Evaluator::simulate(const Order &order, const Window *window) {
  const int p = in.p, m = in.m;
  const double c = in.comm;
  // A rank waits on the stack to be timed further; one that stopped at an
  // op whose product another rank has not timed yet goes back on it only
  // once that rank has.
  stack.clear();
  queued.assign(p, 0);
  waitsOn.assign(p, {-1, 0});
  for (int r = p - 1; r >= 0; --r)
    if (pos[r] < static_cast<int>(order[r].size())) {
      stack.push_back(r);
      queued[r] = 1;
    }
  // Again (Note [zb-auto timing]): how many ranks run on a timeline other
  // than their last one (the changed rank until past its window; another
  // rank once an op ends at another time), and how many ops ended at
  // another time (or moved) while the op on another rank that waits for
  // them is not timed again yet. When both are 0, every op not timed yet
  // starts where it did: the rest of the last timing stands.
  int diverged = 0, pending = 0;
  std::vector<char> &off = divergedRank;
  // With a cutoff: from which position each rank's ops come after the op
  // that follows the window (so the rest of the order after them is what
  // it was, and so are their tails).
  std::vector<int> &after = afterWindow;
  if (window) {
    off.assign(p, 0);
    off[window->rank] = 1;
    diverged = 1;
    ++stamp;
    if (window->cutoff) {
      after.assign(p, std::numeric_limits<int>::max());
      after[window->rank] = window->hi + 1;
    }
  }
  bool converged = false;
  while (!stack.empty() && !converged) {
    int r = stack.back();
    stack.pop_back();
    queued[r] = 0;
    const Op *ord = order[r].data();
    double *start = startAt[r].data();
    int i = pos[r], n = static_cast<int>(order[r].size());
    double t = freeAt[r];
    waitsOn[r].rank = -1;
    for (; i < n; ++i) {
      Op op = ord[i];
      int k = slot(op.kind) * p + r;
      // Its own rank's product must come earlier in the order (else the
      // order is invalid: B before its F, or W before its B); another
      // rank's must have been timed (else it waits; a missing one waits
      // for ever, a deadlock).
      if (!window && ownKind[k] >= 0 &&
          static_cast<unsigned>(at[ownKind[k]][size_t(r) * m + op.mb]) >=
              static_cast<unsigned>(i))
        return false;
      double ready = 0;
      if (int q = crossRank[k]; q >= 0) {
        size_t made = size_t(q) * m + op.mb;
        unsigned where = static_cast<unsigned>(at[crossKind[k]][made]);
        if (where >= static_cast<unsigned>(pos[q])) {
          waitsOn[r] = {q, static_cast<int>(where)};
          break;
        }
        ready = startAt[q][where] + duration[crossKind[k] * p + q] + c;
        if (window && window->cutoff && static_cast<int>(where) >= after[q])
          after[r] = std::min(after[r], i);
        if (window && changed[crossKind[k]][made] == stamp) {
          changed[crossKind[k]][made] = stamp - 1;
          --pending;
        }
      }
      double s = std::max(t, ready);
      t = s + duration[k];
      if (window && window->cutoff && i >= after[r]) {
        // The makespan is at least this start plus this op's tail.
        const Cutoff &cut = *window->cutoff;
        if (s + cut.tail[slot(op.kind)][size_t(r) * m + op.mb] >
            cut.makespan) {
          timedOps += i - pos[r] + 1;
          pos[r] = i; // what undo restores goes up to here
          return false;
        }
      }
      if (window) {
        double before = start[i];
        saved[r][i - savedFrom[r]] = before; // for undo
        if (consumed[k] && ((r == window->rank && i <= window->hi) ||
                            s != before)) {
          changed[slot(op.kind)][size_t(r) * m + op.mb] = stamp;
          ++pending;
        }
      }
      start[i] = s;
    }
    timedOps += i - pos[r] + 1; // and taking the rank up
    pos[r] = i;
    freeAt[r] = t;
    if (window && i > savedFrom[r]) {
      // Whether rank r now runs on its last timeline: its latest op (one
      // past the window, where the ops are the same) ends where it did.
      bool now = i < n && ((r == window->rank && i - 1 <= window->hi) ||
                           t != saved[r][i - 1 - savedFrom[r]] +
                                    duration[slot(ord[i - 1].kind) * p + r]);
      diverged += now - off[r];
      off[r] = now;
      converged = diverged == 0 && pending == 0;
    }
    for (int q : {r + 1, r - 1})
      if (q >= 0 && q < p && !queued[q] && waitsOn[q].rank == r &&
          waitsOn[q].where < i) {
        queued[q] = 1;
        stack.push_back(q);
      }
  }
  timing.span.assign(p, 0);
  timing.makespan = timing.sumSpan = 0;
  for (int r = 0; r < p; ++r) {
    int n = static_cast<int>(order[r].size());
    if (!converged && pos[r] != n)
      return false; // deadlock
    timing.span[r] = n == 0 ? 0 : endAt(order, r, n - 1) - startAt[r][0];
    timing.makespan = std::max(timing.makespan, timing.span[r]);
    timing.sumSpan += timing.span[r];
  }
  return true;
}

const Timing &Evaluator::run(const Order &order, bool withStarts) {
  const int p = in.p, m = in.m;
  startAt.resize(p);
  for (auto &v : at)
    v.assign(size_t(p) * m, -1);
  for (int r = 0; r < p; ++r) {
    startAt[r].resize(order[r].size());
    index(order, r, 0, static_cast<int>(order[r].size()) - 1);
  }
  pos.assign(p, 0);
  freeAt.assign(p, 0);
  saved.resize(p);
  savedFrom.assign(p, 0);
  timedOps = 0;
  timing.ok = simulate(order, nullptr);
  for (auto &s : timing.start)
    s.clear();
  if (timing.ok && withStarts) {
    for (auto &s : timing.start)
      s.assign(size_t(p) * m, -1);
    for (int r = 0; r < p; ++r)
      for (int i = 0, n = static_cast<int>(order[r].size()); i < n; ++i)
        timing.start[slot(order[r][i].kind)][size_t(r) * m + order[r][i].mb] =
            startAt[r][i];
  }
  return timing;
}

const Timing &Evaluator::retime(const Order &order, int r, int lo, int hi,
                                const Cutoff *cutoff) {
  index(order, r, lo, hi);
  // Note [zb-auto timing]: nothing that started before the window's
  // earliest start waits for the window.
  double from = lo > 0 ? endAt(order, r, lo - 1) : -kInf;
  for (int q = 0; q < in.p; ++q) {
    const std::vector<double> &start = startAt[q];
    int k = q == r ? lo
                   : static_cast<int>(std::lower_bound(start.begin(),
                                                       start.end(), from) -
                                      start.begin());
    pos[q] = k;
    freeAt[q] = k > 0 ? endAt(order, q, k - 1) : 0;
    // Where what it overwrites is kept, for undo.
    savedFrom[q] = k;
    saved[q].resize(start.size() - k);
  }
  timedOps = in.p; // finding where each rank starts again
  Window window{r, lo, hi, cutoff};
  timing.ok = simulate(order, &window);
  for (auto &s : timing.start)
    s.clear();
  return timing;
}

void Evaluator::tails(const Order &order, std::vector<double> (&tail)[3]) {
  for (auto &v : tail)
    v.assign(size_t(in.p) * in.m, -kInf);
  for (int r = 0; r < in.p; ++r)
    pos[r] = static_cast<int>(order[r].size());
  propagateTails(order, tail, nullptr);
}

void Evaluator::retail(const Order &order, int r, int lo, int hi,
                       std::vector<double> (&tail)[3]) {
  // A tail depends on the order only through the paths from its op: only
  // an op that can reach the window (it starts before the window's last
  // start) can have a new one, and the window's own.
  double latest = -kInf;
  for (int i = lo; i <= hi; ++i)
    latest = std::max(latest, startAt[r][i]);
  for (int q = 0; q < in.p; ++q)
    pos[q] = q == r ? hi + 1
                    : static_cast<int>(std::upper_bound(startAt[q].begin(),
                                                        startAt[q].end(),
                                                        latest) -
                                       startAt[q].begin());
  Window window{r, lo, hi, nullptr};
  propagateTails(order, tail, &window);
}

void Evaluator::propagateTails(const Order &order,
                               std::vector<double> (&tail)[3],
                               const Window *window) {
  const int p = in.p, m = in.m;
  const double c = in.comm;
  // Backwards, a rank at a time as in simulate: an op's tail needs the
  // tail of the op after it and of the op on another rank that waits for
  // it (its consumer, of the same kind, Dependences.h), which waits to be
  // done first. pos[r]: the ops of rank r from there on have their tails.
  // Again (retail), as simulate's: how many ranks are off their last
  // tails (the window's rank until below its window, where the ops are the
  // same; another rank once a tail changes), and how many ops whose tail
  // changed the op that waits on them has not been given its tail since;
  // when both are 0, every tail not done yet is what it was.
  int diverged = 0, pending = 0;
  std::vector<char> &off = divergedRank;
  off.assign(p, 0);
  if (window) {
    off[window->rank] = 1;
    diverged = 1;
    ++stamp;
  }
  timedOps = p; // setting each rank up
  stack.clear();
  queued.assign(p, 1);
  waitsOn.assign(p, {-1, 0});
  for (int r = p - 1; r >= 0; --r)
    if (!window || r != window->rank)
      stack.push_back(r);
  if (window) // first
    stack.push_back(window->rank);
  bool converged = false;
  while (!stack.empty() && !converged) {
    int r = stack.back();
    stack.pop_back();
    queued[r] = 0;
    waitsOn[r].rank = -1;
    const Op *ord = order[r].data();
    int i = pos[r] - 1, n = static_cast<int>(order[r].size());
    bool lastChanged = false;
    for (; i >= 0; --i) {
      Op op = ord[i];
      int k = slot(op.kind);
      double after = i + 1 < n ? tail[slot(ord[i + 1].kind)]
                                     [size_t(r) * m + ord[i + 1].mb]
                               : -startAt[r][0];
      if (int q = consumerRank[k * p + r]; q >= 0) {
        size_t waiting = size_t(q) * m + op.mb;
        int where = at[k][waiting];
        if (where < pos[q]) { // its tail is not done yet
          waitsOn[r] = {q, where};
          break;
        }
        after = std::max(after, c + tail[k][waiting]);
        if (window && changedTail[k][waiting] == stamp) {
          changedTail[k][waiting] = stamp - 1;
          --pending;
        }
      }
      double &mine = tail[k][size_t(r) * m + op.mb];
      double now = after + duration[k * p + r];
      lastChanged = now != mine;
      if (window && lastChanged && crossRank[k * p + r] >= 0) {
        changedTail[k][size_t(r) * m + op.mb] = stamp;
        ++pending;
      }
      mine = now;
    }
    timedOps += pos[r] - (i + 1) + 1; // and taking the rank up
    bool moved = i + 1 < pos[r];
    pos[r] = i + 1;
    if (window && moved) {
      // Whether rank r is back on its last tails: its earliest op done
      // (below the window, where the ops are the same) has the tail it had.
      bool now = pos[r] > 0 &&
                 ((r == window->rank && pos[r] >= window->lo) || lastChanged);
      diverged += now - off[r];
      off[r] = now;
      converged = diverged == 0 && pending == 0;
    }
    for (int q : {r + 1, r - 1})
      if (q >= 0 && q < p && !queued[q] && waitsOn[q].rank == r &&
          waitsOn[q].where >= pos[r]) {
        queued[q] = 1;
        stack.push_back(q);
      }
  }
}

void Evaluator::undo(const Order &order, int r, int lo, int hi) {
  for (int q = 0; q < in.p; ++q)
    std::copy(saved[q].begin(), saved[q].begin() + (pos[q] - savedFrom[q]),
              startAt[q].begin() + savedFrom[q]);
  index(order, r, lo, hi);
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
