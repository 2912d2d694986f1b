//===- VShape.h - zb-v's view of a V problem --------------------*- C++ -*-===//
//
// Private to zb-v (Builders/ZBV/): the V problem per rank and chunk
// (VShape), the per-rank bookkeeping its greedy and list builders share
// (State), and the candidate generators and the clock Build.cpp runs:
//  - Greedy.cpp: the paced greedy with its refinement;
//  - ListSchedule.cpp: the event-driven list schedule (the fallback);
//  - Handcrafted.cpp: the order PyTorch's ScheduleZBVZeroBubble runs;
//  - Timing.cpp: spanOf, each candidate's makespan by the simulator's rule
//    (held to simulate() by ZBVTiming.AgreesWithTheSimulator);
//  - Build.cpp: the candidates on a thread pool, the shortest kept.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_BUILDERS_ZBV_VSHAPE_H
#define ZBC_SCHEDULE_BUILDERS_ZBV_VSHAPE_H

#include "zbc/Schedule/Dependences.h"
#include "zbc/Schedule/Problem.h"
#include "zbc/Schedule/ScheduleTable.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

namespace zbc::sched::zbv {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Note [V chunks]
// Rank r holds chunk 0 = stage r and chunk 1 = stage 2p-1-r (Problem.h,
// Placement::V). Forwards run down chunk 0 (rank r-1 -> r) and back up
// chunk 1 (rank r+1 -> r); rank p-1 turns around without a hop (its chunk 1
// reads its own chunk 0). Backwards run the other way: down chunk 1 from
// rank 0 (which holds the last stage and so needs nothing but its own F),
// turning at rank p-1, and up chunk 0 back to rank 0.

/// What an F or B of (rank, chunk) waits for on another (or the same) rank.
struct Dep {
  int rank, chunk;
  bool cross; // pays comm
};

/// The V problem as the builders see it: per rank and chunk.
struct VShape {
  int p = 0, m = 0;
  double comm = 0, limit = 0;
  std::vector<std::array<StageCost, 2>> cost; // [rank][chunk]

  /// The V of `problem` (2p stages) with its costs per rank and chunk,
  /// within `limit`.
  static VShape of(const Problem &problem, double limit) {
    VShape v;
    v.p = problem.ranks;
    v.m = problem.microbatches;
    v.comm = problem.comm;
    v.limit = limit;
    v.cost.resize(v.p);
    for (int r = 0; r < v.p; ++r)
      v.cost[r] = {problem.stages[v.stage(r, 0)],
                   problem.stages[v.stage(r, 1)]};
    return v;
  }

  int stage(int r, int c) const { return c == 0 ? r : 2 * p - 1 - r; }

  /// Where stage s sits, seen from rank `from`.
  Dep place(int s, int from) const {
    int rank = s < p ? s : 2 * p - 1 - s;
    return Dep{rank, s < p ? 0 : 1, rank != from};
  }
  /// The (rank, chunk) whose F (B) the F (B) of (r, c) waits for, by the
  /// rule of Dependences.h (its own F aside); none at the ends of the V.
  std::optional<Dep> forwardDep(int r, int c) const {
    return otherDep(Kind::F, r, c);
  }
  std::optional<Dep> backwardDep(int r, int c) const {
    return otherDep(Kind::B, r, c);
  }
  std::optional<Dep> otherDep(Kind k, int r, int c) const {
    std::optional<Dep> dep;
    int s = stage(r, c);
    forEachDependence(Action{k, s, 0}, 2 * p, [&](const ProductRef &d) {
      if (d.stage != s)
        dep = place(d.stage, r);
    });
    return dep;
  }
};

/// Index of a kind in the per-kind arrays below (F, B, W; zb-v never fuses).
inline int slot(Kind k) { return static_cast<int>(k); }

// Note [V memory reserve]
// A rank that fills its memory with chunk-0 forwards can deadlock: the
// oldest microbatch still needs its chunk-1 forward (and then its B) there
// before anything is freed. So a chunk-0 forward is admitted only if room
// for one more chunk-1 microbatch remains afterwards:
//   reserve = max(M_B1, M_W1, M_W0 - M_B0).
// Forwards run in microbatch order per chunk, W can always run after its B
// and, with M_W <= M_B (transformer layers: 32h against 34h + 5as), a B
// never needs room; so the oldest unfinished microbatch can always take its
// next step on every rank, and the list schedule never deadlocks for a
// limit of at least M_B0 + reserve per rank, which is also the least any V
// schedule needs (a rank holds both chunks of a microbatch at once, then
// its chunk-1 M_W, then its chunk-0 M_W). With M_W > M_B a B may find no
// room; the builder then reports that no candidate fits.
inline double reserveOf(const std::array<StageCost, 2> &c) {
  return std::max({c[1].memB, c[1].memW, c[0].memW - c[0].memB});
}

/// Per-rank bookkeeping shared by the greedy builders: counts, end times of
/// each F and B, memory, the W queue and the order so far.
struct State {
  const VShape &v;
  double tol; // the simulator's round-off allowance on the limit
  std::vector<std::array<std::array<int, 2>, 3>> count; // [r][kind][chunk]
  std::vector<double> ends; // [kind F/B][r][chunk][j], -1: not placed
  std::vector<double> cur, mem;
  std::vector<std::deque<int>> pendingW; // chunks, in B order
  std::vector<std::vector<Action>> order;

  explicit State(const VShape &v)
      : v(v), tol(v.limit * (1 + 1e-9)), count(v.p),
        ends(2 * size_t(v.p) * 2 * v.m, -1.0), cur(v.p, 0.0), mem(v.p, 0.0),
        pendingW(v.p), order(v.p) {
    for (auto &o : order)
      o.reserve(6 * size_t(v.m)); // F, B and W of both chunks
    for (auto &byKind : count)
      for (auto &byChunk : byKind)
        byChunk = {0, 0};
  }

  double &end(Kind k, int r, int c, int j) {
    // Microbatch-major: the ranks work on nearby microbatches at any one
    // time, so what a step reads and writes lies close together (at p = 256,
    // m = 2048 the array is 16 MB, far beyond the caches).
    return ends[((size_t(j) * v.p + r) * 2 + c) * 2 + slot(k)];
  }
  int n(Kind k, int r, int c) const { return count[r][slot(k)][c]; }
  bool placed(Kind k, int r, int c, int j) {
    return j >= 0 && j < v.m && end(k, r, c, j) >= 0;
  }
  const StageCost &cost(int r, int c) const { return v.cost[r][c]; }

  /// When (kind, r, c) for its next microbatch may start, ignoring the
  /// rank's own clock; kInf if a dependency is not placed yet. The
  /// dependences are Dependences.h's, mapped to (rank, chunk).
  double readyAt(Kind k, int r, int c) {
    int j = n(k, r, c);
    if (j >= v.m)
      return kInf;
    double t = 0;
    forEachDependence(Action{k, v.stage(r, c), j}, 2 * v.p,
                      [&](const ProductRef &d) {
                        Dep at = v.place(d.stage, r);
                        Kind maker = d.product == Product::Activation
                                         ? Kind::F
                                         : Kind::B;
                        if (!placed(maker, at.rank, at.chunk, j))
                          t = kInf;
                        else
                          t = std::max(t, end(maker, at.rank, at.chunk, j) +
                                              (at.cross ? v.comm : 0));
                      });
    return t;
  }

  bool fits(int r, int c, Kind k) const {
    return mem[r] + v.cost[r][c].memoryDelta(k) <= tol;
  }

  /// Places (kind, r, c) for its next microbatch at the earliest time the
  /// rank and the dependencies allow; false (nothing placed) if a dependency
  /// is missing or memory would go over the limit.
  /// `known` is readyAt(k, r, c) if the caller has it (a NaN: not).
  bool put(Kind k, int r, int c, double *idle = nullptr,
           double known = std::numeric_limits<double>::quiet_NaN()) {
    double ready = std::isnan(known) ? readyAt(k, r, c) : known;
    if (ready == kInf || !fits(r, c, k))
      return false;
    int j = n(k, r, c);
    double start = std::max(cur[r], ready);
    if (idle && !order[r].empty())
      *idle += start - cur[r];
    cur[r] = start + cost(r, c).time(k);
    if (k != Kind::W)
      end(k, r, c, j) = cur[r];
    mem[r] += cost(r, c).memoryDelta(k);
    order[r].push_back({k, v.stage(r, c), j});
    ++count[r][slot(k)][c];
    if (k == Kind::B)
      pendingW[r].push_back(c);
    return true;
  }

  bool putW(int r, double *idle = nullptr) {
    if (pendingW[r].empty())
      return false;
    int c = pendingW[r].front();
    if (!put(Kind::W, r, c, idle))
      return false;
    pendingW[r].pop_front();
    return true;
  }
  double nextWCost(int r) const {
    return v.cost[r][pendingW[r].front()].W;
  }
  bool allBackwardsPlaced(int r) const {
    return count[r][slot(Kind::B)][0] == v.m && count[r][slot(Kind::B)][1] == v.m;
  }
};

/// Per rank, in execution order: what every candidate generator returns.
using Order = std::vector<std::vector<Action>>;

struct GreedyResult {
  std::vector<std::vector<Action>> order;
  std::vector<double> idle; // per rank, after its first action
  double maxIdle = 0;
};

/// The paced greedy with its refinement (Greedy.cpp); `fillB`/`fillF` let a
/// rank put a W into a wait before a chunk-1 B / before a forward. None if
/// a variant cannot continue within the limit.
std::optional<GreedyResult> refinedGreedy(const VShape &v, bool fillB,
                                          bool fillF);

/// The event-driven list schedule (ListSchedule.cpp): valid for every limit
/// down to the least (Note [V memory reserve]).
std::optional<Order> listSchedule(const VShape &v, bool forwardFirst,
                                  double fill);

/// The handcrafted order (Handcrafted.cpp), for p ranks and m microbatches.
Order handcrafted(int p, int m);

/// The makespan the simulator would report for `order`, or kInf if it
/// deadlocks or goes over the limit (Timing.cpp).
double spanOf(const VShape &v, const Order &order);

} // namespace zbc::sched::zbv

#endif // ZBC_SCHEDULE_BUILDERS_ZBV_VSHAPE_H
