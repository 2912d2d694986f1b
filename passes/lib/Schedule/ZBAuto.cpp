//===- ZBAuto.cpp - zb-auto: automatic zero bubble under a memory limit ---===//
//
// ZB-1p / ZB-2p of the Zero Bubble paper (Qi et al., ICLR 2024) with the
// real per-stage costs and comm; stage s runs on rank s. The search works on
// per-rank orders, times them with a fast as-soon-as-possible model that
// follows Simulator.h's rules (Evaluator), and keeps the order whose longest
// rank span is shortest:
//
//  1. The greedy (the paper's heuristic, made exact). Ranks are advanced in
//     global time order (a tournament tree over per-rank wake-up times); a
//     free rank runs B when its input gradient is there, F when its input
//     activation is there, memory allows and its in-flight cap does, and W
//     into an idle gap at least `fill` T_W long (W has no successor, so a gap
//     is filled once its length is known) or when memory is full. An F is
//     planned only once the upstream stage has produced its input, at its
//     real time: the reference heuristic's failure with uneven stages
//     (../shared/SCHEDULES.md) cannot happen. W's left at the end run back
//     to back.
//  2. Seeds and variants. ZB-H1, ZB-H2 (the registry's builders) and 1F1B
//     with each W after its B are tried where they fit the limit, so zb-auto
//     is never worse than they are at their memory. Then the paper's eight
//     binary choices (B or F first, fill whole gaps or any gap, run W's or
//     wait for a B when memory is full), then warm-up caps (most F's in
//     flight per rank): the F's that fit between a rank's first F and the
//     arrival of its first B (ZB-2p's shape), one or two fewer per rank
//     down from the memory cap (ZB-H1's and ZB-H2's), and their neighbours.
//  3. Improvement. Coordinate descent on the best run's caps, longest-span
//     ranks first (a rank's span is mostly its warm-up phase: one F more
//     trades its wait for the first B against delaying that B upstream).
//     Then a repair of the orders along the critical path: run an op that
//     waited for its rank earlier, move a W into a gap; a move is kept only
//     if the spans, sorted longest first, get lexicographically shorter.
//
// lowerBound (ZBAuto.h) stops the search when it is met and gives the gap
// in the report; on the paper's inputs it proves ZB-1p optimal (it equals
// ZB-H1) and ZB-2p within 0.4%. Work is budgeted in op visits, so the result
// does not depend on the machine's speed. Memory: Note [zb-auto memory].
// Known limit: zb-auto splits every backward; with M_W > M_B a B raises
// memory, so at a limit that only fused BW's fit it can be slower than 1F1B.
//
//===----------------------------------------------------------------------===//

#include "ZBAuto.h"
#include "Support.h"

#include "Builders.h"

#include "llvm/Support/Debug.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#define DEBUG_TYPE "zb-auto"

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

static constexpr double kInf = std::numeric_limits<double>::infinity();

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

double zbc::sched::zbauto::lowerBound(const Instance &in) {
  const int p = in.p, m = in.m;
  const double c = in.comm, limit = in.limit + memSlack(in.limit);
  // first[r]: when rank r's first F starts (nothing delays the F chain).
  std::vector<double> first(p, 0);
  for (int r = 1; r < p; ++r)
    first[r] = first[r - 1] + in.cost[r - 1].F + c;
  double bound = 0;
  for (int r = 0; r < p; ++r) {
    double work = m * (in.cost[r].F + in.cost[r].B + in.cost[r].W);
    // Warm-up: B(r, 0) starts no earlier than the F chain down and the B
    // chain back; before it the rank runs at most `fit` F's.
    double firstB = first[p - 1] + in.cost[p - 1].F;
    for (int k = r + 1; k < p; ++k)
      firstB += in.cost[k].B + c;
    double fit = in.cost[r].memB > 0 ? std::min<double>(m, std::floor(limit / in.cost[r].memB))
                              : m;
    double idle = std::max(0.0, firstB - first[r] - fit * in.cost[r].F);
    // Cool-down: from the end of F(r, m-1) to the start of B(r, m-1) the
    // microbatch goes down and back up; the rank can only run the B's and
    // W's of what it holds then (limit - M_B of it).
    if (fit < m) {
      double roundTrip = 0;
      for (int k = r + 1; k < p; ++k)
        roundTrip += in.cost[k].F + in.cost[k].B + 2 * c;
      double perMem = 0;
      if (in.cost[r].memB > 0 && in.cost[r].memW > 0)
        perMem = std::max((in.cost[r].B + in.cost[r].W) / in.cost[r].memB,
                          in.cost[r].W / in.cost[r].memW);
      double held = perMem > 0 ? std::min((limit - in.cost[r].memB) * perMem,
                                          (m - 1) * (in.cost[r].B + in.cost[r].W))
                               : (m - 1) * (in.cost[r].B + in.cost[r].W);
      idle += std::max(0.0, roundTrip - held);
    }
    bound = std::max(bound, work + idle);
    // Slots: at most `fit` microbatches are between their F and their B on
    // rank r at once, and each stays there for its round trip, so the last B
    // ends ceil(m / fit) round trips after the first F; one W follows.
    if (fit >= 1) {
      double stay = in.cost[r].F + in.cost[r].B;
      for (int k = r + 1; k < p; ++k)
        stay += in.cost[k].F + in.cost[k].B + 2 * c;
      bound = std::max(bound, std::ceil(m / fit) * stay + in.cost[r].W);
    }
    // The last B of rank r ends after all of its F's and B's; then it
    // travels up, and each rank s above still runs a W after it.
    double t = first[r] + m * (in.cost[r].F + in.cost[r].B);
    for (int s = r; s >= 0; --s) {
      if (s < r)
        t += c + in.cost[s].B;
      bound = std::max(bound, t + in.cost[s].W - first[s]);
    }
  }
  return bound;
}

//===----------------------------------------------------------------------===//
// The greedy
//===----------------------------------------------------------------------===//

namespace {

/// The knobs of one greedy run.
struct Params {
  bool preferB = true;      // B before F when both are ready
  double fill = 1.0;        // fill a gap with W if gap >= fill * T_W
  bool waitWhenFull = false; // memory-blocked F: wait for a B, no forced W
  double waitB = 0;         // skip an F if a B arrives within waitB * T_F
  std::vector<int> cap;     // per rank: most F's ahead of B's (0: memory only)
};

class Greedy {
public:
  explicit Greedy(const Instance &in) : in(in) {
    for (leaves = 1; leaves < in.p; leaves *= 2)
      ;
  }
  /// Builds an order; false only on an internal inconsistency.
  bool run(const Params &params, Order &order);

private:
  /// Each rank's next decision time, with a tournament tree over them for
  /// the earliest: O(log p) per update and no stale events.
  void setWake(int r, double t) {
    wake[r] = t;
    for (int node = (leaves + r) / 2; node >= 1; node /= 2) {
      int a = winner[2 * node], b = winner[2 * node + 1];
      winner[node] = wake[a] <= wake[b] ? a : b;
    }
  }
  void wakeBy(int r, double t) {
    t = std::max(t, freeAt[r]);
    if (t < wake[r])
      setWake(r, t);
  }
  void decide(int r, double now, const Params &params, Order &order);

  const Instance &in;
  int leaves = 1;
  std::vector<double> wake;
  std::vector<int> winner;
  std::vector<double> endF, endB, freeAt, mem;
  std::vector<int> nF, nB, nW;
};

} // namespace

bool Greedy::run(const Params &params, Order &order) {
  const int p = in.p, m = in.m;
  endF.assign(size_t(p) * m, -1);
  endB.assign(size_t(p) * m, -1);
  freeAt.assign(p, 0);
  mem.assign(p, 0);
  nF.assign(p, 0);
  nB.assign(p, 0);
  nW.assign(p, 0);
  order.resize(p);
  for (auto &o : order) {
    o.clear();
    o.reserve(3 * size_t(m));
  }
  wake.assign(leaves, kInf);
  winner.assign(2 * leaves, 0);
  for (int i = 0; i < leaves; ++i)
    winner[leaves + i] = i;
  for (int node = leaves - 1; node >= 1; --node)
    winner[node] = winner[2 * node];
  setWake(0, 0);
  for (int r = winner[1]; wake[r] < kInf; r = winner[1])
    decide(r, wake[r], params, order);
  for (int r = 0; r < p; ++r)
    if (nW[r] != m)
      return false;
  return true;
}

void Greedy::decide(int r, double now, const Params &params, Order &order) {
  const int p = in.p, m = in.m;
  const double c = in.comm, limit = in.limit, slack = memSlack(limit);
  const double tF = in.cost[r].F, tB = in.cost[r].B, tW = in.cost[r].W;
  const double mB = in.cost[r].memB, mW = in.cost[r].memW;
  const double eps = 1e-9 * (tF + tB + tW);
  if (nW[r] == m) {
    setWake(r, kInf); // done
    return;
  }
  std::vector<Op> &ord = order[r];
  int f = nF[r], b = nB[r];

  auto placeW = [&](double &at) {
    ord.push_back({Kind::W, nW[r]});
    ++nW[r];
    mem[r] -= mW;
    at += tW;
  };

  if (f == m && b == m) { // only W's left: back to back
    double at = freeAt[r];
    while (nW[r] < m)
      placeW(at);
    freeAt[r] = at;
    setWake(r, kInf);
    return;
  }

  // When the next F and the next B may start: the latest of their
  // dependences (Dependences.h), kInf while one is not placed.
  auto readyAt = [&](Kind kind, int j) {
    double ready = 0;
    forEachProducer(in, kind, r, [&](int q, Kind made) {
      double end = (made == Kind::F ? endF : endB)[size_t(q) * m + j];
      ready = end < 0 ? kInf : std::max(ready, end + (q == r ? 0 : c));
    });
    return ready;
  };
  int cap = params.cap.empty() ? 0 : params.cap[r];
  double readyF = kInf, readyB = kInf;
  if (f < m && (cap <= 0 || f - b < cap))
    readyF = readyAt(Kind::F, f);
  if (b < f)
    readyB = readyAt(Kind::B, b);
  // Not ready is kInf, and stays not ready even when `now` overflows.
  bool fReady = readyF < kInf && readyF <= now + eps;
  bool bReady = readyB < kInf && readyB <= now + eps;
  // Not starting anything now: sleep until an input we know of arrives, or
  // until a neighbour's commit wakes us.
  auto wait = [&] {
    double next = kInf;
    if (readyF > now + eps)
      next = readyF;
    if (readyB > now + eps)
      next = std::min(next, readyB);
    setWake(r, next);
  };
  int pendingW = b - nW[r];
  // W's an op needs first so that memory stays within the limit; an F is
  // admitted only if its B can run later (Note [zb-auto memory]).
  auto wNeeded = [&](double rise) {
    double over = mem[r] + rise - limit;
    if (over <= slack)
      return 0;
    return mW > 0 ? static_cast<int>(std::ceil((over - slack) / mW)) : m + 1;
  };

  Kind kind = Kind::F;
  int needW = 0;
  if (bReady && (params.preferB || !fReady)) {
    kind = Kind::B;
  } else if (fReady) {
    if (!bReady && readyB < now + params.waitB * tF) {
      wait(); // the B is due soon: keep the rank free for it
      return;
    }
    int k = wNeeded(std::max(mB, mW));
    if (k == 0) {
      kind = Kind::F;
    } else if (bReady) {
      kind = Kind::B;
    } else if (k <= pendingW && !(params.waitWhenFull && b < f)) {
      kind = Kind::F;
      needW = k;
    } else {
      wait(); // for a B
      return;
    }
  } else {
    wait(); // nothing ready yet
    return;
  }
  if (kind == Kind::B)
    needW = std::min(pendingW, wNeeded(mW - mB));

  // W's into the gap [freeAt, now), then the forced ones.
  double at = freeAt[r];
  while (nW[r] < b) {
    if (needW <= 0) {
      double gap = now - at;
      if (gap <= eps || gap + eps < params.fill * tW)
        break;
    }
    placeW(at);
    --needW;
  }
  double start = std::max(at, now);
  int j = kind == Kind::F ? f : b;
  ord.push_back({kind, j});
  if (kind == Kind::F) {
    double end = start + tF;
    endF[size_t(r) * m + j] = end;
    mem[r] += mB;
    ++nF[r];
    freeAt[r] = end;
    setWake(r, end);
    if (r + 1 < p)
      wakeBy(r + 1, end + c);
  } else {
    double end = start + tB;
    endB[size_t(r) * m + j] = end;
    mem[r] += mW - mB;
    ++nB[r];
    freeAt[r] = end;
    setWake(r, end);
    if (r > 0)
      wakeBy(r - 1, end + c);
  }
}

//===----------------------------------------------------------------------===//
// Repair: critical-path local search over the per-rank orders
//===----------------------------------------------------------------------===//

namespace {

/// Spans sorted longest first: minimizing this vector lexicographically
/// minimizes the makespan and, at equal makespan, the next-longest spans,
/// which gives the search somewhere to go on plateaus.
using Key = std::vector<double>;

static Key keyOf(const Timing &t) {
  Key k = t.span;
  std::sort(k.begin(), k.end(), std::greater<>());
  return k;
}

static bool keyLess(const Key &a, const Key &b) {
  double tol = 1e-9 * std::max(1.0, b.empty() ? 1.0 : b[0]);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < b[i] - tol)
      return true;
    if (a[i] > b[i] + tol)
      return false;
  }
  return false;
}

class Repair {
public:
  Repair(const Instance &in, Evaluator &eval) : in(in), eval(eval) {}

  /// Improves `order` until no move on its critical path helps or `budget`
  /// evaluations are spent; returns the evaluations used.
  long run(Order &order, long budget);

private:
  struct Move {
    int r, from, to;
  };
  bool memoryOk(const std::vector<Op> &ord, int r) const {
    double mem = 0, limit = in.limit + memSlack(in.limit);
    for (Op op : ord) {
      mem += in.cost[r].memoryDelta(op.kind);
      if (mem > limit)
        return false;
    }
    return true;
  }
  double startOf(Op op, int r) const {
    return timing.start[slot(op.kind)][size_t(r) * in.m + op.mb];
  }
  double endOf(Op op, int r) const {
    return startOf(op, r) + in.cost[r].time(op.kind);
  }
  /// Index in order[r] of op (kind, mb).
  int &index(Kind kind, int r, int j) {
    return idx[slot(kind)][size_t(r) * in.m + j];
  }
  /// Lowest index op (kind, mb) on rank r may move to: after the previous
  /// op of its kind (zb-auto keeps microbatch order) and after the ops of
  /// this rank it depends on (Dependences.h: its own F, or its own B).
  int lowestIndex(Op op, int r) {
    int lo = 0;
    if (op.mb > 0)
      lo = index(op.kind, r, op.mb - 1) + 1;
    forEachProducer(in, op.kind, r, [&](int q, Kind made) {
      if (q == r)
        lo = std::max(lo, index(made, r, op.mb) + 1);
    });
    return lo;
  }
  void candidates(const Order &order, std::vector<Move> &moves);

  const Instance &in;
  Evaluator &eval;
  Timing timing;
  std::vector<int> idx[3];
};

} // namespace

void Repair::candidates(const Order &order, std::vector<Move> &moves) {
  const int p = in.p, m = in.m;
  const double c = in.comm, eps = 1e-9 * std::max(1.0, timing.makespan);
  for (auto &v : idx)
    v.assign(size_t(p) * m, -1);
  for (int r = 0; r < p; ++r)
    for (int i = 0, e = static_cast<int>(order[r].size()); i < e; ++i)
      index(order[r][i].kind, r, order[r][i].mb) = i;
  int crit = 0;
  for (int r = 1; r < p; ++r)
    if (timing.span[r] > timing.span[crit])
      crit = r;
  moves.clear();
  int r = crit, i = static_cast<int>(order[crit].size()) - 1;
  while (i >= 0) {
    Op op = order[r][i];
    int j = op.mb;
    double s = startOf(op, r);
    // The dependence that bounds this op, if any (the latest; of equals,
    // the last the rule names, which is the one on another rank).
    double ready = 0;
    int dr = -1, di = -1;
    forEachProducer(in, op.kind, r, [&](int q, Kind made) {
      double at = endOf({made, j}, q) + (q == r ? 0 : c);
      if (dr < 0 || at >= ready) {
        ready = at;
        dr = q;
        di = index(made, q, j);
      }
    });
    double prevEnd = i > 0 ? endOf(order[r][i - 1], r) : -kInf;
    if (dr >= 0 && ready >= s - eps) {
      // Waits for its dependency. A gap before it can take the next W.
      if (i > 0 && prevEnd < s - eps) {
        for (int k = i + 1, e = static_cast<int>(order[r].size()); k < e; ++k)
          if (order[r][k].kind == Kind::W) {
            if (index(Kind::B, r, order[r][k].mb) < i)
              moves.push_back({r, k, i});
            break;
          }
      }
      r = dr;
      i = di;
      continue;
    }
    if (i > 0 && prevEnd >= s - eps) {
      // Waits for its rank: try running it earlier.
      int lo = lowestIndex(op, r);
      if (lo <= i - 1) {
        moves.push_back({r, i, i - 1});
        // The earliest position where it would not wait idle.
        int k = i - 1;
        while (k > lo && endOf(order[r][k - 1], r) > ready + eps)
          --k;
        if (k < i - 1)
          moves.push_back({r, i, k});
      }
      --i;
      continue;
    }
    break;
  }
}

long Repair::run(Order &order, long budget) {
  long used = 0;
  std::vector<Move> moves;
  timing = eval.run(order, true);
  ++used;
  if (!timing.ok)
    return used;
  Key best = keyOf(timing);
  while (used < budget) {
    candidates(order, moves);
    bool improved = false;
    for (const Move &mv : moves) {
      if (used >= budget)
        break;
      std::vector<Op> &ord = order[mv.r];
      auto rotate = [&](int from, int to) {
        if (from > to)
          std::rotate(ord.begin() + to, ord.begin() + from,
                      ord.begin() + from + 1);
        else
          std::rotate(ord.begin() + from, ord.begin() + from + 1,
                      ord.begin() + to + 1);
      };
      rotate(mv.from, mv.to);
      if (memoryOk(ord, mv.r)) {
        ++used;
        const Timing &t = eval.run(order, true);
        if (t.ok) {
          Key k = keyOf(t);
          if (keyLess(k, best)) {
            best = std::move(k);
            timing = t;
            improved = true;
            break;
          }
        }
      }
      rotate(mv.to, mv.from);
    }
    if (!improved)
      break;
  }
  return used;
}

//===----------------------------------------------------------------------===//
// The search driver
//===----------------------------------------------------------------------===//

namespace {

/// Work is counted in op visits (one op timed once), so results do not
/// depend on the machine's speed or load. A greedy run costs about
/// kGreedyCost evaluations. The budget is kVisits visits for instances of up
/// to kSmallOps ops, the same time spread thinner above that, and never
/// fewer than kMinGreedyRuns greedy runs: p = 16, m = 48 gets ~500 greedy
/// runs' worth (~50 ms), p = 32, m = 256 ~30 (~40 ms), p = 64, m = 1024 ~30
/// (~0.4 s). The search also stops as soon as it meets the lower bound.
constexpr long kGreedyCost = 7;
constexpr long kMinGreedyRuns = 30;
constexpr long kVisits = 8'000'000;
constexpr long kSmallOps = 10'000;

class Search {
public:
  explicit Search(const Instance &in)
      : in(in), ops(3L * in.p * in.m), greedy(in), eval(in),
        lower(lowerBound(in)) {
    budget = std::max(kMinGreedyRuns * kGreedyCost * ops,
                      kVisits * std::min(ops, kSmallOps) / ops);
  }

  /// Whether the best meets the lower bound: nothing left to find.
  bool optimal() const {
    return !pool.empty() && pool[0].makespan <= lower * (1 + 1e-12);
  }
  /// Whether `fraction` of the budget is used, or there is no point going on.
  bool spent(double fraction = 1) const {
    return used >= fraction * budget || optimal();
  }

  /// Times `order` and keeps it if it is among the kPool best; returns its
  /// timing (valid until the next evaluation), or null if it is invalid or
  /// breaks the limit.
  const Timing *tryOrder(const Order &order) {
    used += ops;
    for (double x : Evaluator::peaks(in, order))
      if (x > in.limit + memSlack(in.limit))
        return nullptr;
    const Timing &t = eval.run(order);
    if (!t.ok)
      return nullptr;
    Key key = keyOf(t);
    for (const Entry &e : pool)
      if (!keyLess(key, e.key) && !keyLess(e.key, key))
        return &t; // a tie: most likely the same order again
    auto at = std::find_if(pool.begin(), pool.end(), [&](const Entry &e) {
      return keyLess(key, e.key);
    });
    if (at - pool.begin() < static_cast<long>(kPool)) {
      pool.insert(at, Entry{std::move(key), order, t.makespan});
      if (pool.size() > kPool)
        pool.pop_back();
    }
    return &t;
  }

  /// Runs the greedy with `params`; returns the key and spans of its
  /// result (empty key if it failed).
  std::pair<Key, std::vector<double>> tryParams(const Params &params) {
    used += kGreedyCost * ops;
    ++greedyRuns;
    const Timing *t = greedy.run(params, scratch) ? tryOrder(scratch) : nullptr;
    if (!t)
      return {};
    Key key = keyOf(*t);
    if (bestGreedyKey.empty() || keyLess(key, bestGreedyKey)) {
      bestGreedyKey = key;
      bestParams = params;
    }
    return {std::move(key), t->span};
  }

  /// Repairs the pool's orders, best first, with what is left.
  void repairPool() {
    Repair repair(in, eval);
    std::vector<Entry> start = pool;
    for (size_t i = 0; i < start.size() && !spent(); ++i) {
      Order order = start[i].order;
      long visits = (budget - used) / (static_cast<long>(start.size() - i));
      if (i == 0)
        visits = std::max(visits, (budget - used) / 2);
      long evals = repair.run(order, std::max(1L, visits / ops));
      used += evals * ops;
      repairEvals += evals;
      tryOrder(order);
    }
  }

  struct Entry {
    Key key;
    Order order;
    double makespan;
  };
  static constexpr size_t kPool = 3;

  const Instance &in;
  long ops, budget, used = 0;
  Greedy greedy;
  Evaluator eval;
  Order scratch;
  std::vector<Entry> pool; // best first
  Params bestParams; // of the best greedy run
  Key bestGreedyKey;
  int greedyRuns = 0;
  long repairEvals = 0;
  double lower;
};

/// Caps on F's in flight per rank, from memory alone.
static std::vector<int> memoryCaps(const Instance &in) {
  std::vector<int> cap(in.p);
  for (int r = 0; r < in.p; ++r) {
    double need = std::max(in.cost[r].memB, in.cost[r].memW);
    double fit = need > 0 ? std::floor((in.limit + memSlack(in.limit)) / need)
                          : in.m;
    cap[r] = static_cast<int>(std::clamp<double>(fit, 1, in.m));
  }
  return cap;
}

/// The caps that cover each rank's warm-up: the F's that fit between its
/// first F and the arrival of its first B gradient, with the real per-stage
/// costs and comm (F's arrive no faster than the slowest upstream stage).
static std::vector<int> roundTripCaps(const Instance &in) {
  const int p = in.p;
  std::vector<double> first(p), arrive(p);
  double t = 0;
  for (int r = 0; r < p; ++r) {
    first[r] = t;
    t += in.cost[r].F + in.comm;
  }
  double a = first[p - 1] + in.cost[p - 1].F;
  for (int r = p - 1; r >= 0; --r) {
    arrive[r] = a;
    a += in.cost[r].B + in.comm;
  }
  std::vector<int> cap(p);
  double slowest = 0;
  for (int r = 0; r < p; ++r) {
    slowest = std::max(slowest, in.cost[r].F);
    double n = 1 + std::floor((arrive[r] - first[r] - in.cost[r].F) / slowest + 1e-9);
    cap[r] = static_cast<int>(std::clamp<double>(n, 1, in.m));
  }
  return cap;
}

} // namespace

/// The heuristic: seeds, the paper's variants, cap families, coordinate
/// descent on the caps, then the repair. Returns the best order.
static Order searchOrders(const Problem &problem, const Instance &in,
                          BuildReport &report) {
  const int p = in.p;
  Search search(in);

  // Seeds: the handcrafted schedules, where they fit the limit, so zb-auto
  // is never worse than ZB-H1 / ZB-H2 at the same memory.
  for (auto *build : {buildZBH1, buildZBH2}) {
    BuildReport ignored;
    llvm::Expected<ScheduleTable> table = build(problem, {}, ignored);
    if (!table) {
      llvm::consumeError(table.takeError());
      continue;
    }
    Order order(p);
    bool linear = static_cast<int>(table->ranks.size()) == p;
    for (int r = 0; linear && r < p; ++r)
      for (const Action &a : table->ranks[r]) {
        if (a.stage != r || a.kind == Kind::BW) {
          linear = false;
          break;
        }
        order[r].push_back({a.kind, a.microbatch});
      }
    if (linear)
      search.tryOrder(order);
  }
  // And 1F1B with each W right after its B (the fused BW's timing, and no
  // more memory when M_W <= M_B): zb-auto is never worse than 1F1B either.
  {
    Order order(p);
    const int m = in.m;
    for (int r = 0; r < p; ++r) {
      int f = 0;
      for (; f < std::min(m, p - r - 1); ++f)
        order[r].push_back({Kind::F, f});
      for (int i = 0; i < m; ++i) {
        if (f < m)
          order[r].push_back({Kind::F, f++});
        order[r].push_back({Kind::B, i});
        order[r].push_back({Kind::W, i});
      }
    }
    search.tryOrder(order);
  }

  // The paper's eight: B or F first, fill whole gaps or any gap, run W's or
  // wait for a B when memory is full.
  for (bool preferB : {true, false})
    for (double fill : {1.0, 0.0})
      for (bool waitWhenFull : {false, true}) {
        Params params;
        params.preferB = preferB;
        params.fill = fill;
        params.waitWhenFull = waitWhenFull;
        search.tryParams(params);
      }
  if (search.pool.empty())
    return {}; // cannot happen: the greedy always completes

  // Warm-up caps: the round trip of each rank (ZB-2p's shape), a slope of
  // one or two F's per rank down from the memory cap (ZB-H1's and ZB-H2's
  // shapes), and their neighbours.
  std::vector<int> memCap = memoryCaps(in), rtCap = roundTripCaps(in);
  auto clampCaps = [&](std::vector<int> cap) {
    for (int r = 0; r < p; ++r)
      cap[r] = std::clamp(cap[r], 1, memCap[r]);
    return cap;
  };
  auto slope = [&](double s, int offset) {
    std::vector<int> cap(p);
    for (int r = 0; r < p; ++r)
      cap[r] = static_cast<int>(std::lround(memCap[0] + offset - s * r));
    return clampCaps(cap);
  };
  auto shifted = [&](std::vector<int> cap, int d) {
    for (int &x : cap)
      x += d;
    return clampCaps(cap);
  };
  std::vector<std::vector<int>> families = {
      clampCaps(rtCap), slope(1, 0), slope(2, 0),  shifted(rtCap, -1),
      shifted(rtCap, 1), slope(1, -1), slope(2, -1)};
  struct Knobs {
    bool preferB;
    double fill, waitB;
  };
  const Knobs knobs[] = {{true, 0, 0},    {true, 1, 0},   {true, 0.5, 0},
                         {true, 0, 0.5},  {true, 1, 0.5}, {false, 0, 0},
                         {false, 1, 0}};
  for (const Knobs &k : knobs)
    for (const std::vector<int> &cap : families) {
      if (search.spent(0.5))
        break;
      Params params;
      params.preferB = k.preferB;
      params.fill = k.fill;
      params.waitB = k.waitB;
      params.cap = cap;
      search.tryParams(params);
    }

  // Coordinate descent on the best greedy run's caps, longest-span ranks
  // first: a rank's span is mostly set by its own warm-up (one more F in
  // flight trades its idle wait for the first B against delaying that B for
  // the ranks upstream), so the critical rank's cap is the one to try.
  Params cur = search.bestParams;
  if (cur.cap.empty())
    cur.cap = memCap;
  auto [curKey, curSpan] = search.tryParams(cur);
  while (!curKey.empty() && !search.spent(0.75)) {
    std::vector<int> ranks(p);
    for (int r = 0; r < p; ++r)
      ranks[r] = r;
    std::stable_sort(ranks.begin(), ranks.end(),
                     [&](int a, int b) { return curSpan[a] > curSpan[b]; });
    bool improved = false;
    for (int r : ranks) {
      for (int d : {1, -1}) {
        Params t = cur;
        t.cap[r] = std::clamp(t.cap[r] + d, 1, memCap[r]);
        if (t.cap[r] == cur.cap[r] || search.spent(0.75))
          continue;
        auto [key, span] = search.tryParams(t);
        if (!key.empty() && keyLess(key, curKey)) {
          cur = std::move(t);
          curKey = std::move(key);
          curSpan = std::move(span);
          improved = true;
          break;
        }
      }
      if (improved || search.spent(0.75))
        break;
    }
    if (!improved)
      break;
  }
  double beforeRepair = search.pool[0].makespan;
  LLVM_DEBUG(llvm::dbgs() << "zb-auto: " << search.greedyRuns
                          << " greedy runs, best " << beforeRepair
                          << ", lower bound " << search.lower << "\n");

  search.repairPool();
  LLVM_DEBUG(llvm::dbgs() << "zb-auto: " << search.repairEvals
                          << " repair evaluations, best "
                          << search.pool[0].makespan << "; budget used "
                          << search.used << " of " << search.budget
                          << " op visits\n");

  double best = search.pool[0].makespan;
  report.notes.push_back(
      "zb-auto heuristic: " + std::to_string(search.greedyRuns) +
      " greedy runs (best before repair " + formatNumber(beforeRepair) + "), " +
      std::to_string(search.repairEvals) + " repair evaluations; makespan " +
      formatNumber(best) + ", lower bound " + formatNumber(search.lower) + " (gap " +
      formatNumber(std::max(0.0, std::round(1e4 * (best - search.lower) / best) / 1e2)) +
      "%)" +
      (search.optimal() ? ", optimal" : ""));
  return search.pool[0].order;
}

//===----------------------------------------------------------------------===//
// buildZBAuto
//===----------------------------------------------------------------------===//

/// The most any rank can hold: every microbatch alive at its largest.
static double heaviestMicrobatch(const Problem &problem) {
  double most = 0;
  for (const StageCost &s : problem.stages)
    most = std::max({most, s.memB, s.memW});
  return most;
}

double zbc::sched::zbAutoDefaultMemLimit(const Problem &problem) {
  return 2.0 * problem.ranks * heaviestMicrobatch(problem);
}

llvm::Expected<ScheduleTable>
zbc::sched::buildZBAuto(const Problem &problem, const BuildOptions &options,
                        BuildReport &report) {
  // --exact's seconds are the whole build's, the heuristic's search included.
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options.exactSeconds));
  const int p = problem.ranks;
  double heaviest = heaviestMicrobatch(problem);
  double limit = problem.limit();
  if (limit > 0 && limit + memSlack(limit) < heaviest)
    return fail("memory limit " + formatNumber(limit) +
                " is below the smallest feasible limit " + formatNumber(heaviest) +
                ": every rank must hold one microbatch's activations, the "
                "largest M_B (or M_W) of any stage");
  // No limit: plan for one that no order can reach (every microbatch alive
  // at once), so the search is the unconstrained one.
  if (limit <= 0)
    limit = problem.microbatches * heaviest;
  if (limit <= 0) // every M_B and M_W is 0: memory constrains nothing
    limit = 1;

  Instance in = Instance::from(problem, limit);
  Order order = searchOrders(problem, in, report);
  if (order.empty())
    return fail("zb-auto: the greedy found no schedule (internal error)");
  if (options.exactSeconds > 0) {
    Evaluator eval(in);
    double heuristic = eval.run(order).makespan;
    llvm::Expected<Order> exact =
        solveExact(in, order, heuristic, deadline, report);
    if (!exact)
      return exact.takeError();
    order = std::move(*exact);
  }

  ScheduleTable table = ScheduleTable::empty(problem, Placement::Linear);
  for (int r = 0; r < p; ++r) {
    table.ranks[r].reserve(order[r].size());
    for (Op op : order[r])
      table.ranks[r].push_back({op.kind, r, op.mb});
  }
  return table;
}
