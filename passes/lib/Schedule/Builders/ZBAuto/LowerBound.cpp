//===- LowerBound.cpp - a lower bound on any zb-auto schedule ---------------===//
//
// The bound that stops zb-auto's search when it is met, gives the gap in
// its report, and is the exact mode's floor (ZBAuto.h, lowerBound). Each
// term is a fact every schedule obeys, whatever its order: the arguments
// count ops ("the k-th F a rank runs") rather than name microbatches, so
// they hold for schedules zb-auto does not build too. Spans are measured
// from S_r, the as-soon-as-possible start of rank r's first F, which is
// where every rank starts when each begins with the first microbatch (every
// schedule zbc builds does; the ILP pins it, ILP.cpp).
//
// The terms, per rank r (largest wins):
//  * warmUpAndCoolDown: its work, plus the idle before its first B (only the
//    F's that fit in memory can run while the first gradient makes its
//    round trip) and after its last F (only the B's and W's of what it holds
//    then can cover that microbatch's round trip; what it holds is a small
//    knapsack over activations and pending W's).
//  * slots: at most `fit` microbatches are between their F and their B at
//    once, each for its whole round trip.
//  * heads (O(p m^2), where that is affordable): the earliest
//    start ("head") of every op from the ops it waits for, each rank's ops
//    then packed on it as a preemptive one-machine schedule (Jackson's
//    rule: optimal for that relaxation, so a valid bound on the real one).
//    Memory enters as the B's and W's it forces before an F or a B ("the
//    k-th F waits for the (k - fit)-th B").
//  * rankDP (the strongest; after heads, where p m^3 / 6 is affordable):
//    each rank alone, exactly, over the counts of its F's, B's and W's
//    done, with the heads' starts as releases, a B a round trip after its
//    F, and memory checked after every op; its last B then goes up to the
//    ranks before it. It sees what the packing cannot: a rank with little
//    memory cannot both hold the F's that cover its round trip and put its
//    W's off, nor run its last F late and have that F's B early (on
//    bench/uneven_stages.py it raised 21 of the 120 bounds, by up to 3.4%,
//    and proved one more schedule optimal).
//  * travelUp, where heads is not run: the last B of each rank goes up to
//    the ranks before it, each still running a W after it.
//
//===----------------------------------------------------------------------===//

#include "ZBAuto.h"

#include <algorithm>
#include <cmath>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

namespace {

/// The heads term runs where p * m^2 is at most this (p = 32, m = 256 is
/// 2M steps, about 10 ms); past it the cheaper travelUp stands in.
constexpr double kHeadSteps = 1 << 23;

/// The rank-DP term runs where its p m^3 / 6 states are at most this
/// (p = 16, m = 64: 0.7M; p = 32, m = 128: 11M, about 60 ms).
constexpr double kRankDPSteps = 1 << 24;

struct Bounds {
  const Instance &in;
  int p, m;
  double c, limit; // limit: with its slack, for first guesses only
  std::vector<double> first; // S_r
  std::vector<int> fit;      // activations rank r can hold at once

  explicit Bounds(const Instance &in)
      : in(in), p(in.p), m(in.m), c(in.comm),
        limit(in.limit + memSlack(in.limit)), first(in.p, 0), fit(in.p) {
    for (int r = 1; r < p; ++r)
      first[r] = first[r - 1] + in.cost[r - 1].F + c;
    for (int r = 0; r < p; ++r)
      fit[r] = most(0, in.cost[r].memB, m);
  }

  /// The largest n <= cap with base + n * each within the limit (base is),
  /// asked through Instance::fits (Note [zb-auto monotone]).
  int most(double base, double each, int cap) const {
    if (each <= 0)
      return cap;
    int n = static_cast<int>(
        std::clamp<double>(std::floor((limit - base) / each), 0, cap));
    while (n < cap && in.fits(base + (n + 1) * each))
      ++n;
    while (n > 0 && !in.fits(base + n * each))
      --n;
    return n;
  }

  /// From the end of rank r's F to the start of its B, for one microbatch:
  /// down through the ranks after r and back.
  double roundTrip(int r) const {
    double t = 0;
    for (int k = r + 1; k < p; ++k)
      t += in.cost[k].F + in.cost[k].B + 2 * c;
    return t;
  }

  /// The most B and W work rank r can have in hand while one activation
  /// (the last microbatch's) is held: a activations (each a B and a W to
  /// run) and b pending W's, with a M_B + b M_W within the rest of the limit.
  double heldWork(int r) const {
    const StageCost &s = in.cost[r];
    double best = 0;
    for (int a = 0, most_a = most(s.memB, s.memB, m - 1); a <= most_a; ++a) {
      int b = most(s.memB + a * s.memB, s.memW, m - 1 - a);
      best = std::max(best, a * (s.B + s.W) + b * s.W);
    }
    return std::min(best, (m - 1) * (s.B + s.W));
  }

  double warmUpAndCoolDown(int r) const {
    const StageCost &s = in.cost[r];
    double work = m * (s.F + s.B + s.W);
    // Warm-up: B(r, 0) starts no earlier than the F chain down and the B
    // chain back; before it the rank runs at most `fit` F's.
    double firstB = first[p - 1] + in.cost[p - 1].F;
    for (int k = r + 1; k < p; ++k)
      firstB += in.cost[k].B + c;
    double idle = std::max(0.0, firstB - first[r] - fit[r] * s.F);
    // Cool-down: from the end of the last F to the start of its B the rank
    // can only run what it holds.
    if (fit[r] < m)
      idle += std::max(0.0, roundTrip(r) - heldWork(r));
    return work + idle;
  }

  double slots(int r) const {
    if (fit[r] < 1)
      return 0;
    const StageCost &s = in.cost[r];
    double stay = s.F + s.B + roundTrip(r);
    return std::ceil(double(m) / fit[r]) * stay + s.W;
  }

  /// From the end of rank r's last B to the end of the longest span it
  /// still bounds among the ranks before it (less that rank's S_r): the
  /// same microbatch's B goes up through each, which then runs its W.
  /// -inf for rank 0.
  double upFrom(int r) const {
    double up = -kInf, chain = 0;
    for (int s = r - 1; s >= 0; --s) {
      chain += c + in.cost[s].B;
      up = std::max(up, chain + in.cost[s].W - first[s]);
    }
    return up;
  }

  double travelUp(int r) const {
    double lastB = first[r] + m * (in.cost[r].F + in.cost[r].B);
    return std::max({0.0, lastB + in.cost[r].W - first[r], lastB + upFrom(r)});
  }

  /// Jackson's preemptive bound: ops with the given sorted heads and
  /// lengths, packed as early as they may start; returns the last end.
  struct Run {
    const std::vector<double> *heads;
    double length;
    int count;
  };
  static double pack(std::initializer_list<Run> runs) {
    size_t at[3] = {0, 0, 0};
    double t = -kInf;
    for (;;) {
      int pick = -1;
      double head = kInf;
      int i = 0;
      for (const Run &run : runs) {
        if (at[i] < static_cast<size_t>(run.count) &&
            (*run.heads)[at[i]] < head) {
          head = (*run.heads)[at[i]];
          pick = i;
        }
        ++i;
      }
      if (pick < 0)
        return t;
      t = std::max(t, head) + std::data(runs)[pick].length;
      ++at[pick];
    }
  }

  /// The W's rank r must have run before its (k+1)-th F ends, having run
  /// at least `bs` B's: with nB B's done it then holds k + 1 - nB
  /// activations and nB - nW gradients waiting for their W, all within the
  /// limit, so nW is at least the least of that over the nB it may have.
  int forcedWBeforeF(int r, int k, int bs) const {
    const StageCost &s = in.cost[r];
    int least = m;
    for (int nB = bs; nB <= k && least > 0; ++nB) {
      double held = (k + 1 - nB) * s.memB;
      if (!in.fits(held))
        continue; // too many activations: this nB is not possible
      least = std::min(least, std::max(0, nB - most(held, s.memW, m)));
    }
    return least == m ? 0 : least;
  }

  /// The heads term over all ranks. hF/hB[r][k]: when the (k+1)-th F / B
  /// of rank r may start; eF/eB: when it can have ended, with the rank's
  /// own ops that must run before it packed first: its earlier F's, the B's
  /// memory forces before an F (k - fit + 1 of them), and the W's memory
  /// forces before either (forcedWBeforeF; before the (k+1)-th B starts it
  /// holds that B's activation and k - nW gradients, so at least
  /// k - pendingW W's are done, pendingW the most M_W's that fit beside one
  /// M_B).
  std::vector<std::vector<double>> hF, hB; // heads' starts, kept for rankDP

  double heads() {
    hF.assign(p, std::vector<double>(m));
    hB = hF;
    std::vector<std::vector<double>> eF = hF, eB = hF;
    std::vector<int> pendingW(p);
    for (int r = 0; r < p; ++r)
      pendingW[r] = most(in.cost[r].memB, in.cost[r].memW, m);
    for (int k = 0; k < m; ++k) {
      for (int r = 0; r < p; ++r) {
        const StageCost &s = in.cost[r];
        double h = first[r];
        if (k > 0)
          h = std::max(h, hF[r][k - 1] + s.F);
        if (r > 0)
          h = std::max(h, eF[r - 1][k] + c);
        if (k >= fit[r]) // memory: a B must end first
          h = std::max(h, eB[r][k - fit[r]]);
        int bs = std::max(0, k - fit[r] + 1);
        int ws = forcedWBeforeF(r, k, bs);
        if (ws > 0) // and W's
          h = std::max(h, eB[r][ws - 1] + s.W);
        hF[r][k] = h;
        eF[r][k] = std::max(h + s.F, pack({{&hF[r], s.F, k + 1},
                                           {&hB[r], s.B, bs},
                                           {&eB[r], s.W, ws}}));
      }
      for (int r = p - 1; r >= 0; --r) {
        const StageCost &s = in.cost[r];
        double h = eF[r][k];
        if (k > 0)
          h = std::max(h, hB[r][k - 1] + s.B);
        if (r + 1 < p)
          h = std::max(h, eB[r + 1][k] + c);
        hB[r][k] = h;
        int ws = std::max(0, k - pendingW[r]);
        eB[r][k] = std::max(h + s.B, pack({{&hF[r], s.F, k + 1},
                                           {&hB[r], s.B, k + 1},
                                           {&eB[r], s.W, ws}}));
      }
    }
    double bound = 0;
    for (int r = 0; r < p; ++r) {
      const StageCost &s = in.cost[r];
      // The (k+1)-th W starts after the (k+1)-th B ends.
      double all = pack(
          {{&hF[r], s.F, m}, {&hB[r], s.B, m}, {&eB[r], s.W, m}});
      bound = std::max(bound, all - first[r]);
    }
    return bound;
  }

  /// The rank-DP term (after heads, whose starts it takes as releases):
  /// rank r alone, exactly, every other rank relaxed. The k-th F may start
  /// at hF[r][k]; the k-th B at hB[r][k] and a round trip after the
  /// (k+1)-th F can have ended (k+1 microbatches have had their B by then,
  /// each its F a round trip before); memory after every op within the
  /// limit. Over the states (f, b, w), the F's, B's and W's done, the
  /// earliest time each is reached is a lower bound for any schedule that
  /// passes through it, by induction over its ops (each release is one).
  /// Ended by its last B, the rank's schedule then bounds the makespan two
  /// ways: its own remaining W's, and that microbatch's B going up to each
  /// rank before it, which still runs its W. Where heads lets a rank put
  /// off all its W's, this counts what it must do first: hold the F's
  /// that cover the round trip and still have room for the pending W's
  /// (the heavy rank with little memory, whose W's cannot wait).
  /// O(m^3) per rank, in two layers of O(m^2) states.
  double rankDP(int r) const {
    const StageCost &s = in.cost[r];
    int M = m + 1;
    double trip = roundTrip(r);
    // pending[a]: the most W's that can wait beside a activations, -1 where
    // a activations alone do not fit: every memory decision of the DP, each
    // taken once, through most().
    std::vector<int> pending(M, -1);
    for (int a = 0; a <= m && in.fits(a * s.memB); ++a)
      pending[a] = most(a * s.memB, s.memW, m);
    // Layer b: the states with b B's done, at [a * M + q] by the
    // activations held (a = F's - B's) and the W's pending (q = B's - W's).
    // An F moves to (a + 1, q), a W to (a, q - 1), both in the layer, so
    // with a rising and q falling each state's time is final when it is
    // reached; a B moves to (a - 1, q + 1) of the next layer. Each state
    // also keeps when its latest F can have ended (`gate`): the B of that
    // F waits a round trip after it, in this state, which is what charges
    // a rank that runs its last F late the wait for that F's B (a bound
    // over all the paths into a state is the least time and the least
    // gate, each of some path: both only delay what follows).
    struct Label {
      double time = kInf, gate = kInf;
      void merge(double t, double g) {
        time = std::min(time, t);
        gate = std::min(gate, g);
      }
    };
    std::vector<Label> layer(size_t(M) * M), next = layer;
    std::vector<double> nthFEnd(m, kInf); // when the (k+1)-th F can end
    std::vector<double> lastB(M, kInf);   // the m-th B's end, per W's done
    layer[0] = {first[r], -kInf};
    for (int b = 0; b <= m; ++b) {
      for (int a = 0; a <= m - b; ++a)
        for (int q = std::min(b, pending[a]); q >= 0; --q) {
          const Label now = layer[size_t(a) * M + q];
          if (now.time == kInf)
            continue;
          int f = b + a;
          if (f < m && pending[a + 1] >= q) {
            double end = std::max(now.time, hF[r][f]) + s.F;
            layer[size_t(a + 1) * M + q].merge(end, end);
            nthFEnd[f] = std::min(nthFEnd[f], end);
          }
          if (q > 0)
            layer[size_t(a) * M + q - 1].merge(now.time + s.W, now.gate);
        }
      if (b == m)
        break;
      // Then the B's, into the next layer: the (b+1)-th F has ended in
      // every state of this one that can run it.
      for (int a = 0; a < m - b; ++a) // the states the next layer holds
        std::fill_n(next.begin() + size_t(a) * M, b + 2, Label());
      double release = std::max(hB[r][b], nthFEnd[b] + trip);
      for (int a = 1; a <= m - b; ++a)
        for (int q = 0; q <= std::min(b, pending[a]); ++q) {
          const Label now = layer[size_t(a) * M + q];
          if (now.time == kInf || pending[a - 1] < q + 1)
            continue;
          // With one activation held, this B is the latest F's.
          double ready =
              a == 1 ? std::max(release, now.gate + trip) : release;
          double end = std::max(now.time, ready) + s.B;
          next[size_t(a - 1) * M + q + 1].merge(end, now.gate);
          if (b + 1 == m)
            lastB[b - q] = std::min(lastB[b - q], end);
        }
      std::swap(layer, next);
    }
    // What follows the last B: this rank's W's still due, and up the ranks
    // before it the same microbatch's B and W.
    double up = upFrom(r), bound = kInf;
    for (int w = 0; w <= m; ++w)
      if (lastB[w] < kInf)
        bound = std::min(bound, std::max(lastB[w] + up,
                                         lastB[w] + (m - w) * s.W - first[r]));
    return bound == kInf ? 0 : bound;
  }

};

} // namespace

double zbc::sched::zbauto::lowerBound(const Instance &in) {
  Bounds b(in);
  double bound = 0;
  for (int r = 0; r < in.p; ++r)
    bound = std::max({bound, b.warmUpAndCoolDown(r), b.slots(r)});
  if (double(in.p) * in.m * in.m <= kHeadSteps) {
    bound = std::max(bound, b.heads());
    if (double(in.p) * in.m * in.m * in.m / 6 <= kRankDPSteps)
      for (int r = 0; r < in.p; ++r)
        bound = std::max(bound, b.rankDP(r));
  } else {
    for (int r = 0; r < in.p; ++r)
      bound = std::max(bound, b.travelUp(r));
  }
  return bound;
}
