//===- ZBV.cpp - ZB-V: zero bubble on the V placement ---------------------===//
//
// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 6;
// also in "Pipeline Parallelism with Controllable Memory", 2024):
// each rank holds two chunks in a V (Note [V chunks] below), and the split
// backward (B, then W later) lets W fill what would be bubbles. With
// T_F = T_B = T_W, no comm and a limit of 2p chunk activations (1F1B's
// memory: p full-stage microbatches) it has no bubble at all once m >= 2p.
//
// The builder makes several candidate orders, times each with the real
// costs (the simulator's rule, spanOf below) and keeps the shortest that
// stays within the limit:
//  - the handcrafted order (the one PyTorch's ScheduleZBVZeroBubble runs):
//    warm-up forwards, then F B W per chunk in lockstep, then the cool-down.
//    Exact for equal costs; it ignores costs and the limit, so it only
//    counts where it stays within the limit.
//  - a paced greedy over the dependency graph with the real per-chunk costs
//    and comm, in the manner of the reference implementation's V greedy:
//    a memory-bounded warm-up, then rounds of one B and one F per rank,
//    W placed where the next input would leave the rank idle anyway, or
//    when memory requires it; a few variants and a refinement pass that
//    balances the ranks' idle time. Unlike the reference it checks every
//    dependency and the limit as it goes: a variant that cannot continue
//    is dropped, never emitted half-valid.
//  - an event-driven list schedule, the fallback that is valid for every
//    limit down to the minimum (Note [V memory reserve]).
//  - v-half's and v-min's orders (VShapes.cpp: the slot plans, compacted)
//    within the limit, so that zb-v is never worse than either there, and
//    the best of the Controllable Memory paper's building blocks that fits
//    (VShapes.cpp, Block), for the limits between and above theirs.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "Support.h"

#include "zbc/Schedule/Dependences.h"

#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <functional>
#include <optional>
#include <set>
#include <string>

using namespace zbc::sched;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Instances of up to this many actions (6 p m) also get the list
/// schedules built as if each W held as much as its B (Note [V
/// accounting]); larger ones, where the list schedules are most of the
/// build's time, do not.
constexpr long kSmallVOps = 10'000;

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
int slot(Kind k) { return static_cast<int>(k); }

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
double reserveOf(const std::array<StageCost, 2> &c) {
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

//===----------------------------------------------------------------------===//
// The paced greedy
//===----------------------------------------------------------------------===//

struct GreedyResult {
  std::vector<std::vector<Action>> order;
  std::vector<double> idle; // per rank, after its first action
  double maxIdle = 0;
};

/// One run of the paced greedy. `approved` (a previous run's idle per rank)
/// lets a rank put a W into a wait that the busiest rank's idle time already
/// covers (the reference's refinement); `fillB`/`fillF` also let it do so
/// before a chunk-1 B / before a forward.
std::optional<GreedyResult> pacedGreedy(const VShape &v, bool fillB, bool fillF,
                                        const std::vector<double> *approved) {
  int p = v.p, m = v.m;
  State s(v);
  std::vector<double> idle(p, 0.0);
  double maxApproved =
      approved ? *std::max_element(approved->begin(), approved->end()) : 0;
  auto budget = [&](int r) {
    double worst = *std::max_element(idle.begin(), idle.end());
    if (approved)
      worst = std::max(worst, maxApproved - (*approved)[r]);
    return worst - idle[r];
  };
  auto put = [&](Kind k, int r, int c) { return s.put(k, r, c, &idle[r]); };
  auto putW = [&](int r) { return s.putW(r, &idle[r]); };

  // Warm-up 1: microbatch 0 down chunk 0, then back up chunk 1 while each
  // rank fits extra chunk-0 forwards (on it and the ranks above it) into
  // the wait for chunk 1, keeping room for the chunk-1 microbatches still
  // to come back through it.
  for (int r = 0; r < p; ++r)
    if (!put(Kind::F, r, 0))
      return std::nullopt;
  for (int r = p - 1; r >= 0; --r) {
    if (r < p - 1) {
      double arrival = s.end(Kind::F, r + 1, 1, 0) + v.comm;
      double reserve =
          (2 + 2 * r) * std::max(s.cost(r, 0).memB, s.cost(r, 1).memB);
      bool stop = false;
      while (!stop && s.mem[r] + reserve <= s.tol &&
             s.cur[r] + s.cost(r, 0).F <= arrival && s.n(Kind::F, r, 0) < m - r) {
        for (int q = 0; q <= r && !stop; ++q)
          stop = s.n(Kind::F, q, 0) < m && !put(Kind::F, q, 0);
      }
    }
    if (!put(Kind::F, r, 1))
      return std::nullopt;
  }
  // Warm-up 2: bring each rank's forwards level with the rank above it,
  // alternating chunks over the ranks below, deepest first (so every
  // dependency is placed first).
  int chunk = 0;
  for (int r = 1; r < p; ++r) {
    int stalls = 0;
    auto total = [&](int q) { return s.n(Kind::F, q, 0) + s.n(Kind::F, q, 1); };
    while (stalls < 2 &&
           (total(r) < total(r - 1) ||
            (s.n(Kind::F, r, 1) <= s.n(Kind::F, r - 1, 1) && s.n(Kind::F, r - 1, 1) < m))) {
      bool any = false;
      for (int q = p - 1; q >= r; --q)
        if (s.n(Kind::F, q, chunk) < m && put(Kind::F, q, chunk))
          any = true;
      stalls = any ? 0 : stalls + 1;
      chunk = 1 - chunk;
    }
  }

  /// W's before an action whose input arrives at `arrival`: every W that
  /// ends by then, and one more if the wait exceeds this rank's share.
  auto fillBefore = [&](int r, double arrival, bool budgeted) {
    while (!s.pendingW[r].empty() && arrival >= s.cur[r] + s.nextWCost(r))
      if (!putW(r))
        return;
    if (budgeted && !s.pendingW[r].empty() && arrival - s.cur[r] > budget(r))
      putW(r);
  };
  auto crossArrival = [&](Kind k, int r, int c) -> std::optional<double> {
    auto d = k == Kind::F ? v.forwardDep(r, c) : v.backwardDep(r, c);
    int j = s.n(k, r, c);
    if (!d || !d->cross || !s.placed(k, d->rank, d->chunk, j))
      return std::nullopt;
    return s.end(k, d->rank, d->chunk, j) + v.comm;
  };
  /// Frees memory with W's until `k` on chunk c fits.
  auto makeRoom = [&](int r, int c, Kind k) {
    while (!s.fits(r, c, k))
      if (!putW(r))
        return false;
    return true;
  };

  // Rounds: one B and then one F per rank.
  for (int stalls = 0; stalls < 2;) {
    bool done = true;
    for (int r = 0; r < p; ++r)
      done = done && s.allBackwardsPlaced(r);
    if (done)
      break;
    bool any = false;
    // Which B each rank runs: chunk 1 first for each microbatch; chunk 0
    // once its gradient from the rank below is placed (or chunk 1 is done).
    std::vector<std::pair<int, int>> up, down; // (rank, chunk)
    for (int r = 0; r < p; ++r) {
      if (s.allBackwardsPlaced(r))
        continue;
      int b0 = s.n(Kind::B, r, 0), b1 = s.n(Kind::B, r, 1);
      bool chunk0;
      if (b0 >= b1)
        chunk0 = false;
      else if (r == p - 1)
        chunk0 = true;
      else
        chunk0 = s.placed(Kind::B, r + 1, 0, b0) || b1 >= m;
      (chunk0 ? up : down).push_back({r, chunk0 ? 0 : 1});
    }
    // Chunk-0 gradients flow to lower ranks, chunk-1 to higher ones.
    std::reverse(up.begin(), up.end());
    up.insert(up.end(), down.begin(), down.end());
    for (auto [r, c] : up) {
      if (s.readyAt(Kind::B, r, c) == kInf)
        continue;
      if (auto arrival = crossArrival(Kind::B, r, c))
        fillBefore(r, *arrival, c == 0 || fillB);
      if (!makeRoom(r, c, Kind::B))
        continue;
      any |= put(Kind::B, r, c);
    }
    for (int r = 0; r < p; ++r) {
      int f0 = s.n(Kind::F, r, 0), f1 = s.n(Kind::F, r, 1);
      if (f1 >= m)
        continue;
      int c = -1;
      if (f1 >= f0)
        c = 0;
      else if (r == p - 1 || s.placed(Kind::F, r + 1, 1, f1))
        c = 1;
      else if (f0 < m && (r == 0 || s.placed(Kind::F, r - 1, 0, f0)))
        c = 0;
      if (c < 0 || s.readyAt(Kind::F, r, c) == kInf)
        continue;
      if (!makeRoom(r, c, Kind::F))
        continue; // no W to free memory yet: try again next round
      if (auto arrival = crossArrival(Kind::F, r, c))
        fillBefore(r, *arrival, fillF);
      any |= put(Kind::F, r, c);
    }
    stalls = any ? 0 : stalls + 1;
  }
  for (int r = 0; r < p; ++r) {
    if (!s.allBackwardsPlaced(r) || s.n(Kind::F, r, 0) < m || s.n(Kind::F, r, 1) < m)
      return std::nullopt;
    while (!s.pendingW[r].empty())
      if (!putW(r))
        return std::nullopt;
  }
  GreedyResult result;
  result.order = std::move(s.order);
  result.idle = idle;
  result.maxIdle = *std::max_element(idle.begin(), idle.end());
  return result;
}

/// The paced greedy with its refinement: rerun with the previous run's idle
/// times approved while that lowers the worst rank's idle time.
std::optional<GreedyResult> refinedGreedy(const VShape &v, bool fillB,
                                          bool fillF) {
  std::optional<GreedyResult> best = pacedGreedy(v, fillB, fillF, nullptr);
  for (int i = 0; best && i < 16; ++i) {
    std::optional<GreedyResult> next =
        pacedGreedy(v, fillB, fillF, &best->idle);
    if (!next || next->maxIdle >= best->maxIdle)
      break;
    best = std::move(next);
  }
  return best;
}

//===----------------------------------------------------------------------===//
// The event-driven list schedule (fallback)
//===----------------------------------------------------------------------===//

/// Every rank, whenever it is free, runs a ready B (oldest microbatch
/// first), else a ready F that fits the limit with the reserve (chunk 1
/// first), else a pending W if the wait for the next input is at least
/// `fill` W's long (or unknown). `forwardFirst` swaps B and F.
std::optional<std::vector<std::vector<Action>>>
listSchedule(const VShape &v, bool forwardFirst, double fill) {
  int p = v.p, m = v.m;
  State s(v);
  std::vector<int> left(p, 6 * m);
  std::vector<double> reserve(p);
  for (int r = 0; r < p; ++r)
    reserve[r] = reserveOf(v.cost[r]);

  // Tries to run something on rank r at time t (s.cur[r] == t); returns
  // kInf-or-wake time if it cannot, or -1 after running an action.
  auto decide = [&](int r, double t) -> double {
    // When the next F and B of each chunk may start: computed once per
    // decision (nothing is placed between the tries and the wake-up time
    // unless the decision ends there).
    double known[2][2];
    bool have[2][2] = {{false, false}, {false, false}};
    auto readyTime = [&](Kind k, int c) {
      int i = k == Kind::F ? 0 : 1;
      if (!have[i][c]) {
        known[i][c] = s.readyAt(k, r, c);
        have[i][c] = true;
      }
      return known[i][c];
    };
    auto ready = [&](Kind k, int c) { return readyTime(k, c) <= t; };
    auto tryB = [&]() {
      int best = -1;
      for (int c : {0, 1})
        if (s.n(Kind::B, r, c) < s.n(Kind::F, r, c) && ready(Kind::B, c) &&
            (best < 0 || s.n(Kind::B, r, c) < s.n(Kind::B, r, best)))
          best = c;
      if (best < 0)
        return false;
      if (!s.fits(r, best, Kind::B))
        return s.putW(r);
      return s.put(Kind::B, r, best, nullptr, readyTime(Kind::B, best));
    };
    auto tryF = [&]() {
      for (int c : {1, 0}) {
        if (s.n(Kind::F, r, c) >= m || !ready(Kind::F, c))
          continue;
        double need = s.cost(r, c).memB + (c == 0 ? reserve[r] : 0);
        if (s.mem[r] + need <= s.tol)
          return s.put(Kind::F, r, c, nullptr, readyTime(Kind::F, c));
        if (s.putW(r))
          return true;
      }
      return false;
    };
    if (forwardFirst ? (tryF() || tryB()) : (tryB() || tryF()))
      return -1;
    double wake = kInf;
    for (int c : {0, 1}) {
      for (Kind k : {Kind::F, Kind::B}) {
        if (k == Kind::B && s.n(Kind::B, r, c) >= s.n(Kind::F, r, c))
          continue;
        double at = readyTime(k, c);
        if (at > t)
          wake = std::min(wake, at);
      }
    }
    if (!s.pendingW[r].empty() &&
        (wake == kInf || wake - t >= fill * s.nextWCost(r)))
      return s.putW(r) ? -1 : wake;
    return wake;
  };

  // Each rank decides again at `at`: when it is free, or, while stalled,
  // when its known input arrives or a neighbour (the only ranks its inputs
  // come from) places something. Sweeps: at the earliest time t, the ranks
  // due at t decide in rank order, a neighbour woken to t during the sweep
  // deciding in it if it comes later in that order, else in the next sweep
  // (at t again). `due` holds (at, rank) of every rank with work left and a
  // finite time, so a sweep finds its ranks in O(log p) each, not O(p).
  std::vector<double> at(p, 0.0);
  std::vector<bool> stalled(p, false), inDue(p, false);
  std::set<std::pair<double, int>> due;
  auto setAt = [&](int r, double t) {
    if (inDue[r])
      due.erase({at[r], r});
    at[r] = t;
    inDue[r] = t != kInf && left[r] > 0;
    if (inDue[r])
      due.insert({t, r});
  };
  for (int r = 0; r < p; ++r)
    setAt(r, 0.0);
  while (!due.empty()) {
    double t = due.begin()->first;
    // One sweep: the ranks due at t after `last`, in rank order.
    for (int last = -1;;) {
      auto it = due.upper_bound({t, last});
      if (it == due.end() || it->first != t)
        break;
      int r = last = it->second;
      s.cur[r] = t; // idle until now
      size_t before = s.order[r].size();
      double wake = decide(r, t);
      if (s.order[r].size() == before) {
        stalled[r] = true;
        setAt(r, wake); // may be kInf: then only a neighbour wakes it
        continue;
      }
      left[r] -= static_cast<int>(s.order[r].size() - before);
      stalled[r] = false;
      setAt(r, s.cur[r]);
      for (int q : {r - 1, r + 1})
        if (q >= 0 && q < p && stalled[q])
          setAt(q, std::min(at[q], s.cur[r] + v.comm));
    }
  }
  for (int r = 0; r < p; ++r)
    if (left[r])
      return std::nullopt; // cannot happen (Note [V memory reserve])
  return std::move(s.order);
}

//===----------------------------------------------------------------------===//
// The handcrafted order
//===----------------------------------------------------------------------===//

/// Rank r: 2(p-r)-1 chunk-0 forwards; r pairs (chunk-1 F, chunk-0 F);
/// p-r triples (chunk-1 F, B, W); then (chunk-0 F, B, W, chunk-1 F, B, W)
/// until the forwards run out; r pairs of B (chunk 0, chunk 1); p-r pairs
/// (chunk-0 B, W); the W's still owed. With m < 2p-1 it is built for 2p-1
/// microbatches and the extra ones dropped, which keeps it valid (whole
/// microbatches vanish, so no dependency or memory bound can break).
std::vector<std::vector<Action>> handcrafted(int p, int m) {
  int n = std::max(m, 2 * p - 1);
  std::vector<std::vector<Action>> order(p);
  for (int r = 0; r < p; ++r) {
    int s0 = r, s1 = 2 * p - 1 - r;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    std::vector<Action> &o = order[r];
    auto add = [&](Kind k, int stage, int j) {
      if (j < m)
        o.push_back({k, stage, j});
    };
    for (int i = 0; i < 2 * (p - r) - 1; ++i)
      add(Kind::F, s0, f0++);
    for (int i = 0; i < r; ++i) {
      add(Kind::F, s1, f1++);
      add(Kind::F, s0, f0++);
    }
    for (int i = 0; i < p - r; ++i) {
      add(Kind::F, s1, f1++);
      add(Kind::B, s1, b1);
      add(Kind::W, s1, b1++);
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n)
        add(Kind::F, s0, f0++);
      add(Kind::B, s0, b0);
      add(Kind::W, s0, b0++);
      add(Kind::F, s1, f1++);
      add(Kind::B, s1, b1);
      add(Kind::W, s1, b1++);
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < r; ++i) {
      add(Kind::B, s0, b0++);
      add(Kind::B, s1, b1++);
    }
    for (int i = 0; i < p - r; ++i) {
      add(Kind::B, s0, b0++);
      add(Kind::W, s0, w0++);
    }
    while (w1 < b1)
      add(Kind::W, s1, w1++);
    while (w0 < b0)
      add(Kind::W, s0, w0++);
  }
  return order;
}

//===----------------------------------------------------------------------===//
// Scoring candidates
//===----------------------------------------------------------------------===//

/// The makespan the simulator would report for `order` (each rank runs its
/// actions in order, each as soon as the rank and its inputs allow, comm on
/// cross-rank inputs; the longest rank span), or kInf if the order
/// deadlocks or goes over the limit. The candidates are built here and so
/// complete by construction; the one kept still goes through
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

} // namespace

double zbc::sched::zbvDefaultBudget(const Problem &problem) {
  double maxChunkMemB = 0;
  for (const StageCost &s : problem.stages)
    maxChunkMemB = std::max(maxChunkMemB, s.memB);
  return 2.0 * problem.ranks * maxChunkMemB;
}

double zbc::sched::zbvSpanOf(const Problem &problem, double limit,
                             const std::vector<std::vector<Action>> &order) {
  VShape v;
  v.p = problem.ranks;
  v.m = problem.microbatches;
  v.comm = problem.comm;
  v.limit = limit;
  v.cost.resize(v.p);
  for (int r = 0; r < v.p; ++r)
    v.cost[r] = {problem.stages[v.stage(r, 0)], problem.stages[v.stage(r, 1)]};
  return spanOf(v, order);
}

llvm::Expected<ScheduleTable> zbc::sched::buildZBV(const Problem &problem,
                                                   const BuildOptions &,
                                                   BuildReport &report) {
  int p = problem.ranks;
  if (problem.numStages() != 2 * p)
    return fail("zb-v needs 2 stages per rank (the V), got " +
                llvm::Twine(problem.numStages()) + " stages on " +
                llvm::Twine(p) + " ranks");
  VShape v;
  v.p = p;
  v.m = problem.microbatches;
  v.comm = problem.comm;
  v.cost.resize(p);
  double minLimit = 0;
  for (int r = 0; r < p; ++r) {
    v.cost[r] = {problem.stages[v.stage(r, 0)], problem.stages[v.stage(r, 1)]};
    minLimit = std::max(minLimit, v.cost[r][0].memB + reserveOf(v.cost[r]));
  }
  // No limit: one that no order can reach (every microbatch alive on both
  // chunks at their largest).
  double most = 0;
  for (const StageCost &s : problem.stages)
    most = std::max({most, s.memB, s.memW});
  bool unlimited = problem.budget() <= 0;
  v.limit = unlimited ? std::max(2.0 * v.m * most, minLimit) : problem.budget();
  if (v.limit < minLimit * (1 - 1e-9))
    return fail("zb-v needs an activation budget of at least " + formatNumber(minLimit) +
                " per rank (a chunk-0 activation plus room for one chunk-1 "
                "microbatch), got " +
                formatNumber(v.limit));

  // The candidates are independent: they are built and timed (with the
  // real costs and the limit) on a thread pool, and the shortest is kept,
  // the first of equals in the order below, so the result does not depend
  // on the threads.
  using Order = std::vector<std::vector<Action>>;
  struct Candidate {
    std::string name;
    std::function<std::optional<Order>()> build;
    // How long it takes, roughly, for the queue: 3 the list schedules, 2
    // the refined greedies, 1 the patterns and blocks, 0 the handcrafted
    // order (at p = 256, m = 2048: about 1.4, 0.8, 0.3 and 0.15 s).
    int cost = 0;
    // The patterns and blocks instead project their span (VShapeCandidate)
    // and build their order only if they win.
    std::function<std::optional<VShapeCandidate>()> project;
    std::optional<VShapeCandidate> projected;
    std::optional<Order> order;
    double span = kInf;
  };
  std::vector<Candidate> candidates;
  for (bool fillB : {true, false})
    for (bool fillF : {true, false})
      candidates.push_back(
          {std::string("greedy (fill-b ") + (fillB ? "on" : "off") +
               ", fill-f " + (fillF ? "on" : "off") + ")",
           [&v, fillB, fillF]() -> std::optional<Order> {
             if (auto g = refinedGreedy(v, fillB, fillF))
               return std::move(g->order);
             return std::nullopt;
           },
           /*cost=*/2});
  candidates.push_back({"handcrafted", [&v, p]() -> std::optional<Order> {
                          return handcrafted(p, v.m);
                        }});
  // Note [V accounting]: an order within the limit when each W holds as
  // much as its B (M_W = M_B) is within it for any smaller M_W (it frees
  // less at each B and as much at each W, so it holds no less at any
  // point), and the list schedules decide by the accounting they are
  // given: with a lighter W they admit F's the round trip then waits for.
  // So on small instances they are also built as if each W held as much
  // as its B, and timed with the real costs (p = 8, m = 32, W = F/2 at 9
  // chunk activations: 0.2308 instead of 0.2363 with M_W = M_B/2).
  VShape heavyW = v;
  bool lighterW = false;
  for (auto &chunks : heavyW.cost)
    for (StageCost &c : chunks)
      if (c.memW < c.memB) {
        c.memW = c.memB;
        lighterW = true;
      }
  std::vector<const VShape *> listShapes = {&v};
  if (lighterW && 6L * p * v.m <= kSmallVOps)
    listShapes.push_back(&heavyW);
  for (const VShape *shape : listShapes)
    for (bool forwardFirst : {false, true})
      for (double fill : {0.0, 1.0})
        candidates.push_back(
            {std::string("list (") + (forwardFirst ? "F" : "B") + " first, fill " +
                 formatNumber(fill) + (shape == &v ? "" : ", as if M_W = M_B") +
                 ")",
             [shape, forwardFirst, fill] {
               return listSchedule(*shape, forwardFirst, fill);
             },
             /*cost=*/3});
  // The controllable-memory patterns as v-half and v-min build them
  // (compacted, VShapes.cpp), each within its own memory and zb-v's limit:
  // zb-v is then never worse than v-half or v-min at any limit that holds
  // them (they come last, so a tie keeps zb-v's own order).
  for (auto [name, half] :
       {std::pair{"v-half pattern", true}, {"v-min pattern", false}})
    candidates.push_back({name, nullptr, /*cost=*/1,
                          [&problem, &v, half = half] {
                            return vShapeCandidate(problem, half, v.limit);
                          }});
  // And the best building block within the limit (between and above the
  // patterns' own memory).
  candidates.push_back({"building-block", nullptr, /*cost=*/1,
                        [&problem, &v] {
                          return vBlockCandidate(problem, v.limit);
                        }});
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    // Longest first, so that no long one starts last and the threads end
    // close together (the last task on the pool sets its end: with the
    // handcrafted order queued before the patterns, a pattern ran alone at
    // the end).
    std::vector<Candidate *> queue;
    for (Candidate &c : candidates)
      queue.push_back(&c);
    auto longer = [](const Candidate *a, const Candidate *b) {
      return a->cost > b->cost;
    };
    std::stable_sort(queue.begin(), queue.end(), longer);
    for (Candidate *c : queue)
      pool.async([&v, c] {
        if (c->project) {
          if ((c->projected = c->project()))
            c->span = c->projected->span;
          return;
        }
        c->order = c->build();
        if (c->order)
          c->span = spanOf(v, *c->order);
      });
    pool.wait();
  }
  // The shortest; a projected one is built and timed whole first and kept
  // only if it still is (the projection has been exact wherever measured,
  // so this picks once).
  Candidate *bestCandidate = nullptr;
  for (;;) {
    bestCandidate = nullptr;
    for (Candidate &c : candidates)
      if (c.span < (bestCandidate ? bestCandidate->span : kInf))
        bestCandidate = &c;
    if (!bestCandidate || !bestCandidate->projected || bestCandidate->order)
      break;
    bestCandidate->order = bestCandidate->projected->order();
    bestCandidate->span = bestCandidate->order
                              ? spanOf(v, *bestCandidate->order)
                              : kInf;
  }
  double bestSpan = bestCandidate ? bestCandidate->span : kInf;
  int built = 0;
  for (const Candidate &c : candidates)
    built += c.order.has_value() || c.projected.has_value();
  // Cannot happen at or above the least limit with M_W <= M_B (Note [V
  // memory reserve]): the list schedule always fits.
  if (bestSpan == kInf)
    return fail("zb-v found no schedule within the activation budget " +
                formatNumber(v.limit));
  report.notes.push_back("zb-v: activation budget " +
                         (unlimited ? std::string("none") : formatNumber(v.limit) + " per rank") +
                         "; kept the " + bestCandidate->name + " order" +
                         (bestCandidate->projected
                              ? " (" + bestCandidate->projected->how + ")"
                              : std::string()) +
                         ", the shortest of " + std::to_string(built) +
                         " candidates");
  ScheduleTable table;
  table.microbatches = v.m;
  table.rankOfStage = placeStages(Placement::V, p, 2 * p);
  table.ranks = std::move(*bestCandidate->order);
  return std::move(table);
}
