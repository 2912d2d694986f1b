//===- Greedy.cpp - zb-v's paced greedy -----------------------------------===//
//
// A paced greedy over the dependency graph with the real per-chunk costs and
// comm, in the manner of the reference implementation's V greedy: a
// memory-bounded warm-up, then rounds of one B and one F per rank, W placed
// where the next input would leave the rank idle anyway, or when memory
// requires it; a few variants and a refinement pass that balances the
// ranks' idle time. Unlike the reference it checks every dependency and the
// limit as it goes: a variant that cannot continue is dropped, never
// emitted half-valid.
//
//===----------------------------------------------------------------------===//

#include "Builders/ZBV/VShape.h"

namespace zbc::sched::zbv {

/// One run of the paced greedy. `approved` (a previous run's idle per rank)
/// lets a rank put a W into a wait that the busiest rank's idle time already
/// covers (the reference's refinement); `fillB`/`fillF` also let it do so
/// before a chunk-1 B / before a forward.
static std::optional<GreedyResult> pacedGreedy(const VShape &v, bool fillB, bool fillF,
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

} // namespace zbc::sched::zbv
