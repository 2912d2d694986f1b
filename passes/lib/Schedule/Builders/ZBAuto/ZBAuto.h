//===- ZBAuto.h - internals shared by zb-auto's parts ----------*- C++ -*-===//
//
// Private to passes/lib/Schedule/ZBAuto (the parts: Evaluator, LowerBound,
// Greedy, Rounds, Repair, Search, Anneal, ILP; Build.cpp is the builder). zb-auto
// works on per-rank orders of F/B/W ops (one stage per rank,
// Placement::Linear) and evaluates them with a fast as-soon-as-possible
// timing model that matches Simulator.h's rules; the exact mode (ILP.cpp)
// starts from the heuristic's order and returns an order too, so both go
// through the same conversion to a ScheduleTable.
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

#include "llvm/ADT/STLFunctionalExtras.h"

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
  /// fits without the round-off slack: a sum of M_B's that equals the
  /// limit in exact arithmetic can come out just over it (the reference
  /// implementation's comparison, which Rounds.cpp reproduces).
  bool fitsWithoutSlack(double used) const {
    return used <= limit && fits(used);
  }
  /// The most memory any decision found within the limit: the heuristic
  /// decides the same at every limit from here up to `limit`.
  mutable double tightest = 0;

  static Instance from(const Problem &problem, double limit);
};

// Note [zb-auto monotone]: more memory should never give a longer zb-auto
// schedule; a schedule valid at a smaller limit is valid at a larger one.
// The heuristic (searchOrders) compares memory with the limit only through
// Instance::fits (or fitsWithoutSlack, which asks fits about everything it
// lets through), so at every limit in [tightest, limit] it makes the same
// decisions and returns the same order. buildZBAuto then searches again
// just below `tightest`, and so on down, until the lower bound at the next
// limit is no better than the best search so far (a lower limit cannot give
// less than its bound, and the bound only grows as the limit shrinks), no
// smaller limit is feasible, or kLowerSearches searches are done. It
// anneals each search's order (Anneal.h) within that order's own peak
// memory, never asking the limit, so an anneal's result depends on the
// order it starts from and the bound it stops at alone: the same at every
// limit where the search decides the same. It keeps the shortest of all.
// In the first two cases no smaller limit gives a shorter schedule; in the
// last, none down to where it stopped (its note says which). Limits closer
// than a relative 1e-9 count as one. Instances over kSmallOps ops, where
// one search is already most of a build's time, and the exact mode,
// bounded by wall-clock, are outside this rule.

/// One op of a rank's order: F, B or W (zb-auto always splits) of a
/// microbatch; the rank is the stage.
struct Op {
  Kind kind;
  int mb;
  bool operator==(const Op &o) const { return kind == o.kind && mb == o.mb; }
};
/// A small, fast generator with a fixed seed (splitmix64), so that a
/// build gives the same schedule every time.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t operator()() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }
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

/// The places the op at `from` of a rank's order may move to, [lo, hi]
/// within `reach` of it, keeping what every zb-auto order keeps: each kind
/// in microbatch order, and a microbatch's F before its B before its W. It
/// may pass only ops of other kinds and other microbatches.
inline std::pair<int, int> shiftRange(const std::vector<Op> &ord, int from,
                                      int reach) {
  Op op = ord[from];
  auto blocks = [&](int k) {
    return ord[k].kind == op.kind || ord[k].mb == op.mb;
  };
  int lo = from, hi = from, size = static_cast<int>(ord.size());
  while (lo > 0 && from - lo < reach && !blocks(lo - 1))
    --lo;
  while (hi + 1 < size && hi - from < reach && !blocks(hi + 1))
    ++hi;
  return {lo, hi};
}

/// Moves the op at `from` to `to`, shifting the ones between by one;
/// moving it from `to` back to `from` undoes it.
inline void moveOp(std::vector<Op> &ord, int from, int to) {
  if (from > to)
    std::rotate(ord.begin() + to, ord.begin() + from, ord.begin() + from + 1);
  else
    std::rotate(ord.begin() + from, ord.begin() + from + 1,
                ord.begin() + to + 1);
}

/// Whether rank r's order stays within the limit after every op (Note
/// [zb-auto memory]), asked through Instance::fits.
inline bool withinLimit(const Instance &in, const std::vector<Op> &ord,
                        int r) {
  double mem = 0;
  for (Op op : ord) {
    mem += in.cost[r].memoryDelta(op.kind);
    if (!in.fits(mem))
      return false;
  }
  return true;
}

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
///
/// Note [zb-auto timing]: every start is the as-soon-as-possible one, the
/// latest of the end of the op before it on its rank and the ends of the
/// products it waits for (Dependences.h; comm after those of another rank).
/// `run` times a whole order; `retime` times an order again after one
/// rank's ops changed places within a window, from the last timing, which
/// is what makes the anneal (Anneal.h) cheap:
///  * an op that started before the earliest the window's first op can
///    start (the end of the op before it) waits for nothing in the window:
///    it keeps its start, and each rank is timed again from the first op
///    that started after that;
///  * once every rank is back on its last timeline (its latest op timed
///    ends where it did) and every op whose end moved has had the op that
///    waits for it timed again, nothing not timed yet can move: the rest
///    of the last timing stands;
///  * with a Cutoff, an op after the window (whose paths to the ranks' ends
///    are what they were) that starts so late that its tail puts the
///    makespan over the cutoff ends it at once.
/// Tails (`tails`, `retail`) are kept the same way backwards: a tail
/// depends on the paths from its op alone, so only ops that can reach the
/// window get new ones, until they are what they were.
class Evaluator {
public:
  explicit Evaluator(const Instance &in);
  /// Times `order`; fills Timing::start when `withStarts`.
  const Timing &run(const Order &order, bool withStarts = false);
  /// What lets `retime` give up early: per op (kind, r * m + j), the
  /// longest path from its start to the end of any rank's span (tails()),
  /// and the makespan over which the caller has no use for the result.
  struct Cutoff {
    const std::vector<double> *tail;
    double makespan;
  };
  /// Times `order` again after rank r's ops at positions [lo, hi] changed
  /// places among themselves since the last `run` or kept `retime`. Fills
  /// no starts. Either keep the result, or put rank r's ops back and call
  /// `undo` with the same window. With a cutoff, not ok as soon as an op
  /// after the window starts so late that its tail puts the makespan over
  /// cutoff->makespan (tails of ops after the window do not change).
  const Timing &retime(const Order &order, int r, int lo, int hi,
                       const Cutoff *cutoff = nullptr);
  /// The tails of the last timing's order (for a Cutoff): per op, the
  /// longest path of ops and comm from its start to the end of some rank,
  /// less that rank's first start.
  void tails(const Order &order, std::vector<double> (&tail)[3]);
  /// The same after a kept `retime` of that window: only the tails of ops
  /// that can reach the window are done again, and only until they are
  /// what they were.
  void retail(const Order &order, int r, int lo, int hi,
              std::vector<double> (&tail)[3]);
  /// Returns to the timing before the last `retime`.
  void undo(const Order &order, int r, int lo, int hi);
  /// The work of the last `run`, `retime`, `tails` or `retail` (what the
  /// search budgets): the ops it timed, one more each time it took a rank
  /// up (a rank stops at each op whose product another rank has not timed
  /// yet, every few ops; taking it up again costs about as much as timing
  /// an op), and one per rank for setting them up.
  long timed() const { return timedOps; }
  /// The start of rank r's op at position i, as last timed.
  double startOf(int r, int i) const { return startAt[r][i]; }
  /// Peak memory of each rank's order (Note [zb-auto memory]).
  static std::vector<double> peaks(const Instance &in, const Order &order);

private:
  void index(const Order &order, int r, int lo, int hi);
  /// The ops of one rank that changed places, for `retime`.
  struct Window {
    int rank, lo, hi;
    const Cutoff *cutoff;
  };
  /// Times every rank from pos[] on, each starting free at freeAt[]. A
  /// whole order (no window) is checked for an op before the op of its own
  /// rank it needs; `retime` keeps orders valid, and stops where the rest
  /// of the last timing stands.
  bool simulate(const Order &order, const Window *window);
  /// Gives every op before pos[] its tail, backwards (tails, retail).
  void propagateTails(const Order &order, std::vector<double> (&tail)[3],
                      const Window *window);
  double endAt(const Order &order, int r, int i) const {
    return startAt[r][i] + duration[slot(order[r][i].kind) * in.p + r];
  }

  const Instance &in;
  /// Per (kind, rank): the rank of the product an op waits for on another
  /// rank and the kind that makes it (-1: none), and the kind of the one
  /// it waits for on its own rank (-1: none); from Dependences.h.
  std::vector<int> crossRank, crossKind, ownKind;
  /// Per (kind, rank): whether an op on another rank waits for it.
  std::vector<char> consumed;
  /// Per (kind, r * m + j): the retime in which its end moved while its
  /// consumer was not timed again yet (`stamp`).
  std::vector<int> changed[3], changedTail[3];
  int stamp = 0;
  std::vector<char> divergedRank;
  std::vector<int> afterWindow;
  /// Per (kind, rank): the rank of the op on another rank that waits for
  /// it (-1: none; the same kind, by Dependences.h's linear rule).
  std::vector<int> consumerRank;
  std::vector<double> duration;               // per (kind, rank)
  std::vector<std::vector<double>> startAt;   // per rank and position
  std::vector<int> at[3];                     // position of (kind, r * m + j)
  std::vector<int> pos, stack;
  std::vector<char> queued;
  struct Wait {
    int rank, where; // the position of the op it waits for on that rank
  };
  std::vector<Wait> waitsOn;
  std::vector<double> freeAt;
  /// The starts `retime` overwrote, from savedFrom[r] to pos[r], for
  /// `undo`.
  std::vector<std::vector<double>> saved;
  std::vector<int> savedFrom;
  long timedOps = 0;
  Timing timing;
};

/// Spans sorted longest first: minimizing this vector lexicographically
/// minimizes the makespan and, at equal makespan, the next-longest spans,
/// which gives the search somewhere to go on plateaus.
using Key = std::vector<double>;

inline void keyOf(const Timing &t, Key &key) {
  key.assign(t.span.begin(), t.span.end());
  std::sort(key.begin(), key.end(), std::greater<>());
}
inline Key keyOf(const Timing &t) {
  Key key;
  keyOf(t, key);
  return key;
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

/// The Zero Bubble reference implementation's round-by-round heuristic
/// (Rounds.cpp): calls `fn` with the order of each of its eight variants
/// that memory let finish (valid during the call); not timed, and on
/// uneven stages not always valid.
void forEachRoundOrder(const Instance &in,
                       llvm::function_ref<void(const Order &)> fn);

/// What the heuristic found: its best order, the lower bound at its limit
/// (which it stops at) and the order's makespan.
struct Searched {
  Order order;
  double lower = 0, makespan = 0;
};

/// The heuristic (Search.cpp): the best order it finds within its budget,
/// with a note on the search in `report`; an empty order only on an
/// internal error.
Searched searchOrders(const Problem &problem, const Instance &in,
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
