//===- ListSchedule.cpp - zb-v's list schedule ----------------------------===//
//
// The event-driven list schedule, zb-v's fallback: valid for every limit
// down to the least (Note [V memory reserve] in VShape.h).
//
//===----------------------------------------------------------------------===//

#include "Builders/ZBV/VShape.h"

namespace zbc::sched::zbv {

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

} // namespace zbc::sched::zbv
