//===- DependencesTest.cpp - the one dependence rule and its users ---------===//
//
// Dependences.h is the one home of "what waits for what". These tests pin
// the rule itself, and check that two of its users that time schedules
// independently, zb-auto's fast evaluator (ZBAuto.h) and the simulator,
// agree on random per-rank orders: the same verdict (runs, or is invalid or
// deadlocks) and, when it runs, the same makespan and peak memory.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Dependences.h"
#include "zbc/Schedule/Simulator.h"

#include "Builders/ZBAuto/ZBAuto.h" // passes/lib/Schedule: the evaluator under test

#include "gtest/gtest.h"

#include <algorithm>
#include <random>
#include <vector>

using namespace zbc::sched;

namespace {

std::vector<ProductRef> needs(Kind kind, int stage, int stages) {
  std::vector<ProductRef> out;
  forEachDependence(Action{kind, stage, 5}, stages,
                    [&](const ProductRef &d) { out.push_back(d); });
  return out;
}

TEST(Dependences, TheRule) {
  using P = Product;
  EXPECT_TRUE(needs(Kind::F, 0, 4).empty());
  EXPECT_EQ(needs(Kind::F, 2, 4), (std::vector<ProductRef>{{P::Activation, 1, 5}}));
  EXPECT_EQ(needs(Kind::B, 1, 4),
            (std::vector<ProductRef>{{P::Activation, 1, 5}, {P::InputGrad, 2, 5}}));
  EXPECT_EQ(needs(Kind::BW, 3, 4), (std::vector<ProductRef>{{P::Activation, 3, 5}}));
  EXPECT_EQ(needs(Kind::W, 2, 4), (std::vector<ProductRef>{{P::InputGrad, 2, 5}}));
  EXPECT_EQ(productOf({Kind::F, 1, 2}), (ProductRef{P::Activation, 1, 2}));
  EXPECT_EQ(productOf({Kind::BW, 1, 2}), (ProductRef{P::InputGrad, 1, 2}));
  EXPECT_FALSE(productOf({Kind::W, 1, 2}));
  // Dense, distinct indices.
  std::vector<int64_t> seen;
  for (P product : {P::Activation, P::InputGrad})
    for (int s = 0; s < 3; ++s)
      for (int j = 0; j < 2; ++j)
        seen.push_back(productIndex({product, s, j}, 3, 2));
  std::sort(seen.begin(), seen.end());
  for (size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(seen[i], static_cast<int64_t>(i));
}

// Tests that zb-auto's evaluator and the simulator agree on a few thousand
// random linear orders, valid or not.
TEST(Dependences, EvaluatorAgreesWithSimulator) {
  std::mt19937 rng(20261201);
  int runs = 0, invalid = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    int p = 1 + rng() % 4, m = 1 + rng() % 4;
    Problem problem;
    problem.ranks = p;
    problem.microbatches = m;
    problem.comm = (rng() % 3) * 0.25;
    std::uniform_real_distribution<double> cost(0.5, 2.0);
    for (int s = 0; s < p; ++s) {
      StageCost c;
      c.F = cost(rng);
      c.B = rng() % 5 == 0 ? 0 : cost(rng); // B and W may be 0
      c.W = rng() % 5 == 0 ? 0 : cost(rng);
      c.memB = cost(rng);
      c.memW = cost(rng);
      problem.stages.push_back(c);
    }
    problem.activationBudget = 0;

    // Each rank's F, B and W of every microbatch in a random order; half the
    // trials keep F before B before W per microbatch, so most of those run
    // (or deadlock across ranks) rather than fail on the rank's own order.
    ScheduleTable table = ScheduleTable::empty(problem, Placement::Linear);
    zbauto::Order order(p);
    for (int r = 0; r < p; ++r) {
      std::vector<std::pair<double, Action>> keyed;
      bool ordered = trial % 2 == 0;
      for (int j = 0; j < m; ++j) {
        double base = std::uniform_real_distribution<double>(0, m)(rng);
        int k = 0;
        for (Kind kind : {Kind::F, Kind::B, Kind::W})
          keyed.push_back({ordered ? base + 0.001 * k++ + j * 1e-6
                                   : std::uniform_real_distribution<double>(0, 1)(rng),
                           Action{kind, r, j}});
      }
      std::sort(keyed.begin(), keyed.end(),
                [](const auto &a, const auto &b) { return a.first < b.first; });
      for (const auto &[key, a] : keyed) {
        table.ranks[r].push_back(a);
        order[r].push_back({a.kind, a.microbatch});
      }
    }

    zbauto::Instance in = zbauto::Instance::from(problem, 1e30);
    zbauto::Evaluator eval(in);
    const zbauto::Timing &timing = eval.run(order);
    llvm::Expected<SimResult> sim = simulate(problem, table);
    ASSERT_EQ(timing.ok, bool(sim)) << "trial " << trial << ": "
                                    << (sim ? "" : llvm::toString(sim.takeError()));
    if (!sim) {
      ++invalid;
      llvm::consumeError(sim.takeError());
      continue;
    }
    ++runs;
    EXPECT_NEAR(timing.makespan, sim->makespan, 1e-9 * sim->makespan)
        << "trial " << trial;
    std::vector<double> peaks = zbauto::Evaluator::peaks(in, order);
    for (int r = 0; r < p; ++r)
      EXPECT_NEAR(peaks[r], sim->peakMemory[r], 1e-9) << "trial " << trial;
  }
  // Both verdicts occur often enough for the comparison to mean something.
  EXPECT_GT(runs, 300);
  EXPECT_GT(invalid, 300);
}

} // namespace
