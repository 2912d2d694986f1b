//===- Anneal.cpp - zb-auto's simulated annealing over orders -------------===//
//
// See Anneal.h.
//
//===----------------------------------------------------------------------===//

#include "Anneal.h"

#include <algorithm>
#include <cmath>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

namespace {

/// How far a move takes an op, in places of its rank's order.
constexpr int kReach = 8;
/// The share of the mean span in the cost: enough to order the moves that
/// leave the makespan alone, too little to trade makespan for it.
constexpr double kSpanWeight = 0.01;
/// Where the temperature ends, as a share of the starting makespan (it
/// falls geometrically from the caller's start over the budget): there no
/// move that lengthens the makespan is taken.
constexpr double kCold = 3e-6;

} // namespace

Order zbc::sched::zbauto::anneal(
    const Instance &in, const Order &order, double lower, double hot,
    long visits, long &used, uint64_t seed,
    std::optional<std::chrono::steady_clock::time_point> stopAt) {
  const int p = in.p;
  Evaluator eval(in);
  const Timing &start = eval.run(order);
  used += eval.timed();
  if (!start.ok || visits <= 0)
    return order;
  auto costOf = [&](const Timing &t) {
    return t.makespan + kSpanWeight * t.sumSpan / p;
  };
  Order current = order, best = order;
  Key bestKey = keyOf(start), key;
  double cost = costOf(start);
  hot *= start.makespan;
  const double cold = kCold * start.makespan;
  // held[r][i]: rank r's memory after its i-th op; a move changes it only
  // within the move's window, which is all it checks (Note [zb-auto
  // memory]), through in.fits.
  std::vector<std::vector<double>> held(p);
  for (int r = 0; r < p; ++r) {
    double mem = 0;
    for (Op op : current[r])
      held[r].push_back(mem += in.cost[r].memoryDelta(op.kind));
  }
  std::vector<double> window;
  long spent = 0;
  // Every span is at least its rank's work W_r, so a move's cost is at
  // least its makespan + kSpanWeight * sum(W_r) / p: one whose makespan
  // alone puts that over what the Metropolis rule takes is out, and the
  // cutoff (with the tails of the current order) lets the re-timing stop
  // as soon as an op shows it.
  double work = 0;
  for (int r = 0; r < p; ++r)
    for (Op op : order[r])
      work += in.cost[r].time(op.kind);
  std::vector<double> tail[3];
  eval.tails(current, tail);
  spent += eval.timed();
  SplitMix64 draw(seed);
  for (long moves = 0; spent < visits && bestKey[0] > lower * (1 + 1e-12);
       ++moves) {
    if (stopAt && moves % 256 == 0 &&
        std::chrono::steady_clock::now() >= *stopAt)
      break;
    int r = static_cast<int>(draw() % p);
    std::vector<Op> &ord = current[r];
    int size = static_cast<int>(ord.size());
    spent += 1;
    if (size < 2)
      continue;
    int from = static_cast<int>(draw() % size);
    auto [lo, hi] = shiftRange(ord, from, kReach);
    if (hi == lo)
      continue;
    int to = lo + static_cast<int>(draw() % (hi - lo));
    if (to >= from)
      ++to; // never the place it is in
    moveOp(ord, from, to);
    int first = std::min(from, to), last = std::max(from, to);
    window.clear();
    double mem = first > 0 ? held[r][first - 1] : 0;
    bool fits = true;
    for (int i = first; i <= last && fits; ++i) {
      window.push_back(mem += in.cost[r].memoryDelta(ord[i].kind));
      fits = in.fits(mem);
    }
    spent += last - first + 1;
    if (!fits) {
      moveOp(ord, to, from);
      continue;
    }
    double temperature =
        hot * std::pow(cold / hot, static_cast<double>(spent) / visits);
    // The Metropolis rule, drawn first: take the move if its cost is
    // under cost + slack.
    double slack = -temperature * std::log(1 - draw.unit());
    Evaluator::Cutoff cutoff{tail, cost + slack - kSpanWeight * work / p};
    const Timing &t = eval.retime(current, r, first, last, &cutoff);
    spent += eval.timed();
    if (t.ok) {
      double next = costOf(t);
      if (next <= cost + slack) {
        cost = next;
        std::copy(window.begin(), window.end(), held[r].begin() + first);
        eval.retail(current, r, first, last, tail);
        spent += eval.timed();
        keyOf(t, key); // into a buffer kept across moves
        if (keyLess(key, bestKey)) {
          bestKey.swap(key);
          best = current;
        }
        continue;
      }
    }
    moveOp(ord, to, from);
    eval.undo(current, r, first, last);
  }
  used += spent;
  return best;
}
