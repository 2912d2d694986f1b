//===- Greedy.h - zb-auto's simulation-driven greedy -----------*- C++ -*-===//
//
// The paper's heuristic, made exact: ranks are advanced in global time
// order (a tournament tree over per-rank wake-up times); a free rank runs B
// when its input gradient is there, F when its input activation is there,
// memory allows and its in-flight cap does, and W into an idle gap at least
// `fill` T_W long (W has no successor, so a gap is filled once its length
// is known) or when memory is full. An F is planned only once the upstream
// stage has produced its input, at its real time: the reference
// heuristic's failure with uneven stages (ZB.md, "zb-auto") cannot
// happen. W's left at the end run back to back.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_ZBAUTO_GREEDY_H
#define ZBC_SCHEDULE_ZBAUTO_GREEDY_H

#include "ZBAuto.h"

#include <vector>

namespace zbc::sched::zbauto {

/// The knobs of one greedy run.
struct Params {
  bool preferB = true;      // B before F when both are ready
  double fill = 1.0;        // fill a gap with W if gap >= fill * T_W
  bool waitWhenFull = false; // memory-blocked F: wait for a B, no forced W
  double waitB = 0;         // skip an F if a B arrives within waitB * T_F
  /// A ready B waits for an F due within waitF * T_F, the wait filled with
  /// W's, and then the F goes first (the reference heuristic's rounds): on
  /// the bottleneck rank running the B drains the microbatches in flight.
  double waitF = 0;
  /// Rank 0, once its F's are done, runs every pending W before each B
  /// (its B feeds no rank, so nothing waits for it).
  bool flushW0 = false;
  std::vector<int> cap;     // per rank: most F's ahead of B's (0: memory only)
  /// Per rank, whether it takes F before B when both are ready (overrides
  /// preferB; empty: preferB everywhere). An F first on a rank upstream of
  /// the bottleneck feeds it sooner; a B first drains memory.
  std::vector<char> fFirst;
  /// Per rank, the gap a W fills (overrides fill; empty: fill everywhere).
  /// A W in the gaps of a rank that feeds the bottleneck delays its F's;
  /// kInf keeps that rank's W's for when memory forces them, or the end.
  std::vector<double> fillOf;

  double fillAt(int r) const { return fillOf.empty() ? fill : fillOf[r]; }

  bool prefersB(int r) const {
    if (waitF > 0)
      return false;
    return fFirst.empty() ? preferB : !fFirst[r];
  }
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


} // namespace zbc::sched::zbauto

#endif // ZBC_SCHEDULE_ZBAUTO_GREEDY_H
