//===- ZBAuto.h - internals shared by zb-auto's parts ----------*- C++ -*-===//
//
// Private to passes/lib/Schedule/ZBAuto (the parts: Evaluator, LowerBound,
// Greedy, Repair, Search, ILP; Build.cpp is the builder). zb-auto works on per-rank orders of
// F/B/W ops (one stage per rank, Placement::Linear) and evaluates them with a
// fast as-soon-as-possible timing model that matches Simulator.h's rules; the
// exact mode (ILP.cpp) starts from the heuristic's order and returns an
// order too, so both go through the same conversion to a ScheduleTable.
//
// Note [zb-auto memory]: memory depends only on the per-rank order, never on
// timing: F adds M_B, B adds M_W - M_B, W subtracts M_W, and the peak is the
// largest prefix sum. An F is admitted only if, after it, every microbatch in
// flight can still run its B (mem + max(M_B, M_W) <= limit), so a B is never
// blocked by memory once the W's before it are flushed. The smallest feasible
// limit is therefore max over stages of max(M_B, M_W).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_ZBAUTO_ZBAUTO_H
#define ZBC_SCHEDULE_ZBAUTO_ZBAUTO_H

#include "zbc/Schedule/Dependences.h"
#include "zbc/Schedule/Registry.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace zbc::sched::zbauto {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Instances of up to this many ops (3 p m) get the search's whole fixed
/// budget (Search.cpp) and the searches below the limit (Note [zb-auto
/// monotone]); larger ones a budget that shrinks with their size, and no
/// searches below, so that zb-auto stays near-linear.
constexpr long kSmallOps = 10'000;

/// Relative tolerance for memory comparisons (Note [zb-auto memory]).
inline double memSlack(double limit) { return limit * 1e-12; }

/// A linear-placement problem with its limit resolved.
struct Instance {
  int p = 0, m = 0;
  std::vector<StageCost> cost; // per rank (= stage)
  double comm = 0;
  double limit = 0; // per rank; always > 0 here

  /// Whether memory `used` fits the limit. Every memory decision of the
  /// heuristic goes through here (Note [zb-auto monotone]).
  bool fits(double used) const {
    if (used > limit + memSlack(limit))
      return false;
    tightest = std::max(tightest, used);
    return true;
  }
  /// The most memory any decision found within the limit: the heuristic
  /// decides the same at every limit from here up to `limit`.
  mutable double tightest = 0;

  static Instance from(const Problem &problem, double limit);
};

// Note [zb-auto monotone]: more memory should never give a longer zb-auto
// schedule; a schedule valid at a smaller limit is valid at a larger one.
// The heuristic compares memory with the limit only through
// Instance::fits, so at every limit in [tightest, limit] it makes the same
// decisions and returns the same order. buildZBAuto then searches again
// just below `tightest`, and so on down, keeping the shortest, until the
// lower bound at the next limit is no better than the best so far (a lower
// limit cannot give less than its bound, and the bound only grows as the
// limit shrinks), no smaller limit is feasible, or kLowerSearches searches
// are done. In the first two cases no smaller limit gives a shorter
// schedule; in the last, none down to where it stopped (its note says
// which). Limits closer than a relative 1e-9 count as one. Instances over
// kSmallOps ops, where one search is already most of a build's time, and
// the exact mode, bounded by wall-clock, are outside this rule.

/// One op of a rank's order: F, B or W (zb-auto always splits) of a
/// microbatch; the rank is the stage.
struct Op {
  Kind kind;
  int mb;
};
/// Index of an op's kind in per-kind arrays ([3]: F, B, W).
inline int slot(Kind kind) { return static_cast<int>(kind); }

/// Calls `fn(rank, kind)` for the op each dependence of `kind` on rank r
/// waits for, by the rule of Dependences.h on the linear placement: the
/// product of stage s is made on rank s, an activation by its F and an
/// input gradient by its B.
template <typename Fn>
inline void forEachProducer(const Instance &in, Kind kind, int r, Fn &&fn) {
  forEachDependence(Action{kind, r, 0}, in.p, [&](const ProductRef &d) {
    fn(d.stage, d.product == Product::Activation ? Kind::F : Kind::B);
  });
}
using Order = std::vector<std::vector<Op>>; // per rank, in execution order

/// Timing of an order under the as-soon-as-possible rules of Simulator.h.
struct Timing {
  bool ok = false;        // false: invalid order or deadlock
  double makespan = 0;    // longest rank span
  double sumSpan = 0;     // tie-breaker for the search
  std::vector<double> span;
  /// start[kind][r * m + j], filled only when asked for.
  std::vector<double> start[3];
};

/// Evaluates orders; keeps its buffers between calls.
class Evaluator {
public:
  explicit Evaluator(const Instance &in);
  /// Times `order`; fills Timing::start when `withStarts`.
  const Timing &run(const Order &order, bool withStarts = false);
  /// Peak memory of each rank's order (Note [zb-auto memory]).
  static std::vector<double> peaks(const Instance &in, const Order &order);

private:
  const Instance &in;
  std::vector<double> endF, endB, endW;
  std::vector<int> pos, stack;
  std::vector<double> freeAt, first;
  Timing timing;
};

/// Spans sorted longest first: minimizing this vector lexicographically
/// minimizes the makespan and, at equal makespan, the next-longest spans,
/// which gives the search somewhere to go on plateaus.
using Key = std::vector<double>;

inline Key keyOf(const Timing &t) {
  Key k = t.span;
  std::sort(k.begin(), k.end(), std::greater<>());
  return k;
}

/// Whether `a` is shorter than `b`, with a relative tolerance so that
/// round-off never counts as progress.
inline bool keyLess(const Key &a, const Key &b) {
  double tol = 1e-9 * std::max(1.0, b.empty() ? 1.0 : b[0]);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < b[i] - tol)
      return true;
    if (a[i] > b[i] + tol)
      return false;
  }
  return false;
}

/// A lower bound on the makespan of any schedule (microbatch order or not):
/// the largest of the terms LowerBound.cpp lists (per rank: its work and the
/// idle memory forces at its ends, its slots, the packed heads of its ops,
/// itself alone solved exactly; the last B going up the ranks).
double lowerBound(const Instance &in);

/// The heuristic (Search.cpp): the best order it finds within its budget,
/// with a note on the search in `report`; empty only on an internal error.
Order searchOrders(const Problem &problem, const Instance &in,
                   BuildReport &report);

/// The exact mode: the Zero Bubble paper's ILP solved with CBC, warm-started
/// from `heuristic`, done by `deadline` (wall-clock: the user's --exact
/// seconds from the start of the build; CBC runs under Deadline.h, so it
/// cannot overrun). Returns the better order (or `heuristic`) and adds the
/// bound and gap to `report`.
llvm::Expected<Order>
solveExact(const Instance &in, const Order &heuristic, double heuristicMakespan,
           std::chrono::steady_clock::time_point deadline, BuildReport &report);

} // namespace zbc::sched::zbauto

#endif // ZBC_SCHEDULE_ZBAUTO_ZBAUTO_H
