//===- ZBAutoAnnealTest.cpp - zb-auto's re-timing and annealing ----------===//
//
// The anneal's parts, each against what it must agree with:
//   - Evaluator::retime (Note [zb-auto timing]) gives the spans a whole run
//     gives, move after move, kept or undone, including where it stops
//     early because the rest of the last timing stands;
//   - the anneal never returns a longer order nor one over its limit
//     (ZBAutoBoundsTest pins an input where it decides).
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Registry.h"

#include "Builders/ZBAuto/Anneal.h" // passes/lib/Schedule: the anneal and evaluator
#include "UnevenProblems.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <random>
#include <vector>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

namespace {

/// bench/uneven_stages.py's spread of costs, comm `comm`, with room for
/// any order.
Instance randomInstance(int p, int m, double comm, std::mt19937 &rng) {
  return Instance::from(randomProblem(p, m, rng, false, comm), 2.0 * m * 2.0);
}

/// A valid order: every F, then each B followed by its W.
Order allForwardsFirst(const Instance &in) {
  Order order(in.p);
  for (int r = 0; r < in.p; ++r) {
    for (int j = 0; j < in.m; ++j)
      order[r].push_back({Kind::F, j});
    for (int j = 0; j < in.m; ++j) {
      order[r].push_back({Kind::B, j});
      order[r].push_back({Kind::W, j});
    }
  }
  return order;
}

/// A move as the anneal makes them: one op of a random rank to a random
/// place within `reach` that keeps the order valid (shiftRange), made in
/// `order`; false if the op drawn cannot move.
struct Move {
  int r, from, to;
  int first() const { return std::min(from, to); }
  int last() const { return std::max(from, to); }
};
bool randomMove(Order &order, std::mt19937 &rng, Move &move) {
  move.r = static_cast<int>(rng() % order.size());
  std::vector<Op> &ord = order[move.r];
  move.from = static_cast<int>(rng() % ord.size());
  auto [lo, hi] =
      shiftRange(ord, move.from, 1 + static_cast<int>(rng() % 12));
  if (lo == hi)
    return false;
  move.to = lo + static_cast<int>(rng() % (hi - lo + 1));
  if (move.to == move.from)
    return false;
  moveOp(ord, move.from, move.to);
  return true;
}

void expectSameSpans(const Timing &got, const Timing &want) {
  ASSERT_EQ(got.ok, want.ok);
  ASSERT_EQ(got.span.size(), want.span.size());
  for (size_t r = 0; r < want.span.size(); ++r)
    EXPECT_DOUBLE_EQ(got.span[r], want.span[r]) << "rank " << r;
  EXPECT_DOUBLE_EQ(got.makespan, want.makespan);
}

// Tests that re-timing after a move gives what timing the whole order
// gives (a deadlock too), over random problems (with and without comm) and
// thousands of random moves of every reach, each kept or undone at random;
// an undone move leaves the timing the next move starts from as it was.
TEST(ZBAutoAnneal, RetimeMatchesAWholeRun) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    int p = 2 + trial % 6, m = 2 + static_cast<int>(rng() % 14);
    Instance in = randomInstance(p, m, trial % 3 == 0 ? 0.0 : 0.05, rng);
    Order order = allForwardsFirst(in);
    Evaluator incremental(in), whole(in);
    ASSERT_TRUE(incremental.run(order).ok);
    for (int i = 0; i < 400; ++i) {
      Move mv;
      if (!randomMove(order, rng, mv))
        continue;
      const Timing &got =
          incremental.retime(order, mv.r, mv.first(), mv.last());
      bool ok = got.ok;
      expectSameSpans(got, whole.run(order));
      // A move that deadlocks is always undone (what the anneal and the
      // repair do: the timing it leaves is no order's).
      if (!ok || rng() % 2) {
        moveOp(order[mv.r], mv.to, mv.from);
        incremental.undo(order, mv.r, mv.first(), mv.last());
      }
    }
    // After all of it, the starts agree too.
    const Timing &want = whole.run(order, /*withStarts=*/true);
    for (int r = 0; r < p; ++r)
      for (int i = 0; i < static_cast<int>(order[r].size()); ++i) {
        Op op = order[r][i];
        EXPECT_DOUBLE_EQ(incremental.startOf(r, i),
                         want.start[slot(op.kind)][size_t(r) * m + op.mb]);
      }
  }
}

// Tests the tails (the longest path from an op to a rank's end, less that
// rank's first start) and the cutoff they give retime: after random kept
// moves, re-doing the tails near the move gives what doing them all gives;
// a retime the cutoff stops is one whose makespan a whole run puts over
// the cutoff, and one it lets through is timed exactly.
TEST(ZBAutoAnneal, TailsAndTheCutoffAgreeWithAWholeRun) {
  std::mt19937 rng(5);
  int stopped = 0;
  for (int trial = 0; trial < 12; ++trial) {
    int p = 2 + trial % 6, m = 2 + static_cast<int>(rng() % 14);
    Instance in = randomInstance(p, m, trial % 3 == 0 ? 0.0 : 0.05, rng);
    Order order = allForwardsFirst(in);
    Evaluator incremental(in), whole(in);
    ASSERT_TRUE(incremental.run(order).ok);
    std::vector<double> tail[3], wantTail[3];
    incremental.tails(order, tail);
    for (int i = 0; i < 400; ++i) {
      Move mv;
      if (!randomMove(order, rng, mv))
        continue;
      const Timing &want = whole.run(order);
      bool ok = want.ok;
      double makespan = want.makespan;
      // A cutoff around the makespan, so that about half stop.
      std::uniform_real_distribution<double> around(0.97, 1.03);
      Evaluator::Cutoff cutoff{tail, makespan * around(rng)};
      const Timing &got =
          incremental.retime(order, mv.r, mv.first(), mv.last(), &cutoff);
      if (!got.ok && ok) {
        ++stopped;
        EXPECT_GT(makespan, cutoff.makespan);
      } else if (ok) {
        EXPECT_DOUBLE_EQ(got.makespan, makespan);
      }
      if (!got.ok || rng() % 2) {
        moveOp(order[mv.r], mv.to, mv.from);
        incremental.undo(order, mv.r, mv.first(), mv.last());
        continue;
      }
      incremental.retail(order, mv.r, mv.first(), mv.last(), tail);
      ASSERT_TRUE(whole.run(order).ok);
      whole.tails(order, wantTail);
      for (int k = 0; k < 3; ++k)
        for (size_t x = 0; x < wantTail[k].size(); ++x)
          ASSERT_DOUBLE_EQ(tail[k][x], wantTail[k][x])
              << "trial " << trial << " move " << i << " kind " << k
              << " op " << x;
    }
  }
  EXPECT_GT(stopped, 100); // the cutoff is put to the test
}

// Tests that the anneal returns an order no longer than the one it started
// from and within its limit, and that it keeps every zb-auto order's rules
// (a whole run, which checks them, times it).
TEST(ZBAutoAnneal, NeverLongerAndWithinItsLimit) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 6; ++trial) {
    Instance in = randomInstance(3 + trial, 2 * (3 + trial), 0.05, rng);
    Order start = allForwardsFirst(in);
    std::vector<double> peak = Evaluator::peaks(in, start);
    in.limit = *std::max_element(peak.begin(), peak.end());
    double before = Evaluator(in).run(start).makespan;
    long used = 0;
    Order found = anneal(in, start, 0, 3e-4, 2'000'000, used, 1);
    Evaluator eval(in);
    const Timing &after = eval.run(found);
    ASSERT_TRUE(after.ok);
    EXPECT_LE(after.makespan, before);
    for (double x : Evaluator::peaks(in, found))
      EXPECT_LE(x, in.limit * (1 + 1e-12));
    EXPECT_GE(used, 2'000'000);
  }
}

} // namespace
