//===- OffloadTest.cpp - activation offload as scheduled copies -----------===//
//
// Checks Note [Offload as actions] in the schedule library: the costs'
// validation; the table's invariants (F < O < L < backward, both copies or
// neither, never with an R); the simulator's copy queues, fences and
// device and host bytes on one rank worked out by hand; a copy without a
// link refused; the placement of every offload and the fit to a budget on
// the registered schedules; auto never longer than the order without
// offload; one lever per schedule, both on auto keeping the shorter; and
// the PyTorch CSV refusing copies.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Offload.h"
#include "zbc/Schedule/Registry.h"
#include "zbc/Schedule/TorchCSV.h"

#include "llvm/Support/raw_ostream.h"

#include "Actions.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

using namespace zbc::sched;

namespace {

using namespace zbc::sched::test_actions;

/// p ranks, m microbatches, unit times, M_B = 1, M_W = 0.5, a copy of a
/// whole stash taking one time unit.
Problem uniform(int p, int m, int v = 1) {
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.virtualStages = v;
  problem.copyBandwidth = 1;
  StageCost cost;
  cost.memW = 0.5;
  problem.stages.assign(p * v, cost);
  return problem;
}

std::string errorOf(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : "";
}

/// One rank, two microbatches; microbatch 0 offloaded around microbatch
/// 1's whole life.
ScheduleTable oneRank(std::vector<Action> order) {
  ScheduleTable table;
  table.microbatches = 2;
  table.rankOfStage = {0};
  table.ranks = {std::move(order)};
  return table;
}


TEST(Offload, CostsAreValidated) {
  Problem problem = uniform(2, 2);
  EXPECT_EQ(errorOf(problem.validate()), "");
  EXPECT_EQ(problem.stages[0].offloaded(), 1); // all of M_B by default
  problem.stages[1].memOffload = 1.5;          // more than M_B = 1
  EXPECT_NE(errorOf(problem.validate()).find("stage 1: M_offload"),
            std::string::npos)
      << errorOf(problem.validate());
  problem.stages[1].memOffload = 0.25;
  EXPECT_EQ(problem.stages[1].offloaded(), 0.25);
  EXPECT_EQ(problem.duration(Kind::L, 1), 0.25);
  problem.copyBandwidth = -1;
  EXPECT_NE(errorOf(problem.validate()).find("copy bandwidth must be"),
            std::string::npos);
}

TEST(Offload, TableInvariantsNameRankActionAndMicrobatch) {
  struct Case {
    std::vector<Action> order;
    const char *message;
  };
  const Case cases[] = {
      {{F(0, 0), O(0, 0), B(0, 0), W(0, 0), F(0, 1), B(0, 1), W(0, 1)},
       "microbatch 0: has O but no L"},
      {{F(0, 0), L(0, 0), B(0, 0), W(0, 0), F(0, 1), B(0, 1), W(0, 1)},
       "microbatch 0: has L but no O"},
      {{F(0, 0), L(0, 0), O(0, 0), B(0, 0), W(0, 0), F(0, 1), B(0, 1),
        W(0, 1)},
       "L(0,0) (action 1) runs before O(0,0) (action 2)"},
      {{F(0, 0), O(0, 0), B(0, 0), L(0, 0), W(0, 0), F(0, 1), B(0, 1),
        W(0, 1)},
       "B(0,0) (action 2) runs before L(0,0) (action 3)"},
      {{O(0, 0), F(0, 0), L(0, 0), B(0, 0), W(0, 0), F(0, 1), B(0, 1),
        W(0, 1)},
       "O(0,0) (action 0) runs before F(0,0) (action 1)"},
      {{F(0, 0), O(0, 0), R(0, 0), L(0, 0), B(0, 0), W(0, 0), F(0, 1),
        B(0, 1), W(0, 1)},
       "both recomputed and offloaded"},
  };
  for (const Case &c : cases) {
    std::string error = errorOf(oneRank(c.order).verify());
    EXPECT_NE(error.find("rank 0"), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

TEST(Offload, SimulatorTimesCopiesBesideComputeAndCountsBothMemories) {
  Problem problem = uniform(1, 2);
  // Late reload: O's copy (1 to 2) holds F(0,1) back by its fence, and the
  // reload, issued once W(0,1) ends at 5, holds B(0,0) until 6.
  ScheduleTable late = oneRank({F(0, 0), O(0, 0), F(0, 1), B(0, 1), W(0, 1),
                                L(0, 0), B(0, 0), W(0, 0)});
  llvm::Expected<SimResult> sim = simulate(problem, late);
  ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  const std::vector<TimedAction> &line = sim->timeline[0];
  ASSERT_EQ(line.size(), 8u);
  EXPECT_EQ(line[1].start, 1); // O starts when its F ends
  EXPECT_EQ(line[1].end, 2);
  EXPECT_EQ(line[2].start, 2); // F(0,1) waits for the fence
  EXPECT_EQ(line[5].start, 5); // L is issued when W(0,1) ends
  EXPECT_EQ(line[6].start, 6); // B(0,0) waits for its reload
  EXPECT_EQ(sim->makespan, 8);
  EXPECT_EQ(sim->idle[0], 2); // the copies are not busy time
  EXPECT_EQ(sim->peakMemory[0], 1); // never both stashes on the device
  ASSERT_EQ(sim->peakHostMemory.size(), 1u);
  EXPECT_EQ(sim->peakHostMemory[0], 1);

  // Reloaded before B(0,1): the copy runs beside it and nothing waits for
  // it, but both stashes are on the device again.
  ScheduleTable early = oneRank({F(0, 0), O(0, 0), F(0, 1), L(0, 0), B(0, 1),
                                 W(0, 1), B(0, 0), W(0, 0)});
  sim = simulate(problem, early);
  ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  EXPECT_EQ(sim->makespan, 7);
  EXPECT_EQ(sim->peakMemory[0], 2);

  // Without offload: 6, peak 2, and no host column.
  ScheduleTable plain = oneRank(
      {F(0, 0), F(0, 1), B(0, 1), W(0, 1), B(0, 0), W(0, 0)});
  sim = simulate(problem, plain);
  ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  EXPECT_EQ(sim->makespan, 6);
  EXPECT_EQ(sim->peakMemory[0], 2);
  EXPECT_TRUE(sim->peakHostMemory.empty());

  // The budget counts the device only: 1 fits the late reload.
  problem.activationBudget = 1;
  EXPECT_TRUE(bool(simulate(problem, late)));
  std::string error = errorOf(simulate(problem, early).takeError());
  EXPECT_NE(error.find("L(0,0) (action 3, microbatch 0) raises live memory to "
                       "2"),
            std::string::npos)
      << error;
}

TEST(Offload, CopiesNeedALink) {
  Problem problem = uniform(1, 2);
  problem.copyBandwidth = 0;
  std::string error = errorOf(
      simulate(problem, oneRank({F(0, 0), O(0, 0), F(0, 1), L(0, 0), B(0, 1),
                                 W(0, 1), B(0, 0), W(0, 0)}))
          .takeError());
  EXPECT_NE(error.find("rank 0: O(0,0) (action 1, microbatch 0) copies"),
            std::string::npos)
      << error;
  BuildOptions options;
  options.offload = OffloadMode::Full;
  error = errorOf(buildSchedule("1f1b", uniform(2, 4), options).takeError());
  EXPECT_EQ(error, "");
  Problem noLink = uniform(2, 4);
  noLink.copyBandwidth = 0;
  error = errorOf(buildSchedule("1f1b", noLink, options).takeError());
  EXPECT_NE(error.find("offload needs a copy bandwidth"), std::string::npos)
      << error;
}

TEST(Offload, ModesParse) {
  for (OffloadMode mode :
       {OffloadMode::None, OffloadMode::Full, OffloadMode::Auto}) {
    llvm::Expected<OffloadMode> parsed = parseOffloadMode(offloadModeName(mode));
    ASSERT_TRUE(bool(parsed));
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_NE(errorOf(parseOffloadMode("some").takeError())
                .find("'none', 'full' or 'auto', got 'some'"),
            std::string::npos);
}

TEST(Offload, FullOffloadsEveryMicrobatchOfEverySchedule) {
  for (const ScheduleInfo &info : registeredSchedules()) {
    int v = info.placement == Placement::Linear ? 1 : 2;
    Problem problem = uniform(4, 8, v);
    BuildOptions options;
    options.offload = OffloadMode::Full;
    llvm::Expected<BuiltSchedule> built =
        buildSchedule(info.name, problem, options);
    ASSERT_TRUE(bool(built)) << info.name << ": "
                             << llvm::toString(built.takeError());
    // Every pair with room between its F and its backward (an overlapped
    // pair may have none).
    EXPECT_GT(built->table.count(Kind::O), 0u) << info.name;
    EXPECT_EQ(built->table.count(Kind::O), built->table.count(Kind::L))
        << info.name;
    if (built->table.overlaps.empty()) {
      EXPECT_EQ(built->table.count(Kind::O), size_t(4 * v * 8)) << info.name;
    }
    ASSERT_EQ(built->sim.peakHostMemory.size(), 4u) << info.name;
    EXPECT_GT(built->sim.peakHostMemory[0], 0) << info.name;
  }
}

TEST(Offload, FitKeepsEveryRankWithinTheBudget) {
  // 1F1B keeps p stashes on rank 0; at half of that, offload must move
  // some, and the fitted order runs within the budget as simulated.
  Problem problem = uniform(4, 8);
  llvm::Expected<BuiltSchedule> built = buildSchedule("1f1b", problem);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  ScheduleTable table = built->table;
  problem.activationBudget = 2;
  EXPECT_FALSE(bool(simulate(problem, table))); // 4 in flight on rank 0
  llvm::consumeError(simulate(problem, table).takeError());
  llvm::Expected<LeverFit> fit =
      fitByLevers(problem, table, /*mayRecompute=*/false);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_GT(fit->places[0].size(), 0u);
  EXPECT_TRUE(fit->places[3].empty()); // the last rank keeps one at a time
  EXPECT_FALSE(llvm::is_contained(fit->recomputed, true));
  insertOffloads(table, fit->places);
  EXPECT_EQ(errorOf(table.verify()), "");
  llvm::Expected<SimResult> sim = simulate(problem, table);
  ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  EXPECT_LE(sim->peakMemory[0], 2);

  // Below one stash nothing can fit: the error names where.
  problem.activationBudget = 0.5;
  std::string error =
      errorOf(fitByLevers(problem, table, false).takeError());
  EXPECT_NE(error.find("rank 0: F(0,0) (action 0, microbatch 0)"),
            std::string::npos)
      << error;
}

TEST(Offload, AutoIsNeverLongerThanWithoutIt) {
  // Where the order without offload fits, auto builds and keeps it or a
  // shorter one; where it does not, what auto builds fits the budget (an
  // M_W held between B and W cannot move, so some budgets stay out of
  // reach).
  int rescued = 0;
  for (const char *name : {"1f1b", "zb-h1", "zb-auto"}) {
    for (double budget : {1.5, 2.0, 3.0, 8.0}) {
      Problem problem = uniform(4, 8);
      problem.activationBudget = budget;
      BuildOptions options;
      options.offload = OffloadMode::Auto;
      llvm::Expected<BuiltSchedule> offloaded =
          buildSchedule(name, problem, options);
      llvm::Expected<BuiltSchedule> plain = buildSchedule(name, problem);
      if (!plain) {
        llvm::consumeError(plain.takeError());
        if (!offloaded) {
          llvm::consumeError(offloaded.takeError());
          continue;
        }
        ++rescued;
      } else {
        ASSERT_TRUE(bool(offloaded)) << name << " at " << budget << ": "
                                     << llvm::toString(offloaded.takeError());
        EXPECT_LE(offloaded->sim.makespan, plain->sim.makespan + 1e-9)
            << name << " at " << budget;
      }
      for (double peak : offloaded->sim.peakMemory)
        EXPECT_LE(peak, budget * (1 + 1e-9)) << name;
    }
  }
  EXPECT_GT(rescued, 0); // 1F1B at 2 and 3: rank 0 keeps p = 4 without it
}

TEST(Offload, OneLeverPerScheduleBothAutoKeepsTheShorter) {
  BuildOptions options;
  options.offload = OffloadMode::Full;
  options.recompute = RecomputeMode::Full;
  std::string error =
      errorOf(buildSchedule("1f1b", uniform(2, 4), options).takeError());
  EXPECT_NE(error.find("recompute full and offload full together"),
            std::string::npos)
      << error;

  // Both on auto: each lever builds on its own and the shorter is kept. A
  // copy as long as an F hides on 1F1B at half its peak; with no link
  // recomputation is all there is.
  Problem problem = uniform(4, 8);
  problem.activationBudget = 2;
  for (StageCost &cost : problem.stages)
    cost.memKeep = 0.25;
  options.offload = OffloadMode::Auto;
  options.recompute = RecomputeMode::Auto;
  double spans[2];
  for (OffloadMode alone : {OffloadMode::Auto, OffloadMode::None}) {
    BuildOptions one;
    one.offload = alone;
    one.recompute =
        alone == OffloadMode::None ? RecomputeMode::Auto : RecomputeMode::None;
    llvm::Expected<BuiltSchedule> built = buildSchedule("1f1b", problem, one);
    ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
    spans[alone == OffloadMode::None] = built->sim.makespan;
  }
  EXPECT_LT(spans[0], spans[1]); // offload 33, recompute 38
  llvm::Expected<BuiltSchedule> both = buildSchedule("1f1b", problem, options);
  ASSERT_TRUE(bool(both)) << llvm::toString(both.takeError());
  EXPECT_EQ(both->sim.makespan, spans[0]);
  EXPECT_TRUE(both->table.hasOffload());
  problem.copyBandwidth = 0;
  both = buildSchedule("1f1b", problem, options);
  ASSERT_TRUE(bool(both)) << llvm::toString(both.takeError());
  EXPECT_EQ(both->sim.makespan, spans[1]);
  EXPECT_TRUE(both->table.hasRecompute());
}

/// The makespan of `name` on `problem` with `recompute` and `offload`.
double makespanWith(const char *name, const Problem &problem,
                    RecomputeMode recompute, OffloadMode offload,
                    BuiltSchedule *keep = nullptr) {
  BuildOptions options;
  options.recompute = recompute;
  options.offload = offload;
  llvm::Expected<BuiltSchedule> built = buildSchedule(name, problem, options);
  if (!built) {
    llvm::consumeError(built.takeError());
    return std::numeric_limits<double>::infinity();
  }
  if (keep)
    *keep = *built;
  return built->sim.makespan;
}

TEST(Offload, FitWithBothLeversMixesThemPerMicrobatch) {
  // 1F1B keeps 4 stashes on rank 0; at a budget of 2 two must go. A
  // copy takes 4 F's: offloading all three stalls the rank, while an R
  // costs an F. The fit recomputes some and offloads others, and the
  // table runs within the budget.
  Problem problem = uniform(4, 8);
  problem.copyBandwidth = 0.25;
  for (StageCost &cost : problem.stages)
    cost.memKeep = 0.25;
  llvm::Expected<BuiltSchedule> built = buildSchedule("1f1b", problem);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  const ScheduleTable &plain = built->table;
  ScheduleTable table = plain;
  problem.activationBudget = 2;
  llvm::Expected<LeverFit> fit = fitByLevers(problem, table, true);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  insertOffloads(table, fit->places);
  int m = problem.microbatches;
  recomputeBeforeEachBackward(table, [&](int stage, int microbatch) {
    return bool(fit->recomputed[size_t(stage) * m + microbatch]);
  });
  EXPECT_EQ(errorOf(table.verify()), ""); // never both on one microbatch
  EXPECT_GT(table.count(Kind::O), 0u);
  EXPECT_GT(table.count(Kind::R), 0u);
  llvm::Expected<SimResult> sim = simulate(problem, table);
  ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  for (double peak : sim->peakMemory)
    EXPECT_LE(peak, 2 * (1 + 1e-9));

  // Without a link only R's relieve; offload alone then cannot fit.
  problem.copyBandwidth = 0;
  fit = fitByLevers(problem, plain, true);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_TRUE(llvm::all_of(fit->places, [](const auto &rank) {
    return rank.empty();
  }));
  EXPECT_TRUE(llvm::is_contained(fit->recomputed, true));
  std::string error = errorOf(fitByLevers(problem, plain, false).takeError());
  EXPECT_NE(error.find("offload needs a copy bandwidth"), std::string::npos)
      << error;
}

TEST(Offload, BothAutoIsNeverLongerThanEitherLeverAlone) {
  // Over budgets and copy speeds, both levers on auto against each alone:
  // never longer than the shorter, and strictly shorter than both where
  // mixing pays (1F1B at 3 with slow copies: 34 against 35 recomputing
  // and 41 offloading; zb-auto at 3 with fast ones: 27 against 31 and 28).
  int mixedWins = 0;
  for (const char *name : {"1f1b", "zb-auto"})
    for (double bandwidth : {0.25, 1.0})
      for (double budget : {1.5, 3.0}) {
        Problem problem = uniform(4, 8);
        problem.copyBandwidth = bandwidth;
        problem.activationBudget = budget;
        for (StageCost &cost : problem.stages)
          cost.memKeep = 0.25;
        double recompute = makespanWith(name, problem, RecomputeMode::Auto,
                                        OffloadMode::None);
        double offload = makespanWith(name, problem, RecomputeMode::None,
                                      OffloadMode::Auto);
        BuiltSchedule both;
        double span = makespanWith(name, problem, RecomputeMode::Auto,
                                   OffloadMode::Auto, &both);
        std::string at = std::string(name) + " at budget " +
                         std::to_string(budget) + ", bandwidth " +
                         std::to_string(bandwidth);
        EXPECT_LE(span, std::min(recompute, offload) * (1 + 1e-9)) << at;
        if (span < std::min(recompute, offload) * (1 - 1e-9)) {
          ++mixedWins;
          EXPECT_TRUE(both.table.hasRecompute() && both.table.hasOffload())
              << at;
          bool named = llvm::any_of(both.report.notes, [](const std::string &n) {
            return n.find("kept offload and recompute") != std::string::npos;
          });
          EXPECT_TRUE(named) << at;
        }
      }
  EXPECT_EQ(mixedWins, 2);
}

TEST(Offload, TorchCSVRefusesCopies) {
  ScheduleTable table = oneRank({F(0, 0), O(0, 0), F(0, 1), L(0, 0), B(0, 1),
                                 W(0, 1), B(0, 0), W(0, 0)});
  std::string error = errorOf(checkCSVExpressible(table));
  EXPECT_NE(error.find("cannot express offload: rank 0, action 1 O(0,0)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("--offload none"), std::string::npos) << error;
}

} // namespace
