//===- RecomputeTest.cpp - recomputation as a scheduled action ------------===//
//
// Checks Note [Recomputation as an action] end to end in the schedule
// library: the costs' validation and memory deltas; the table's invariants
// (an R between its F and its backward, once); the simulator's timing and
// bytes on a 2-rank 1F1B worked out by hand; the planned problem and its
// budget error; the placement of R before every backward, overlapped pairs
// kept; every registered schedule built with --recompute full staying in
// its budget; zb-auto beating itself without the lever where memory is
// tight; and the PyTorch CSV refusing what it cannot express.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Recompute.h"
#include "zbc/Schedule/Registry.h"
#include "zbc/Schedule/TorchCSV.h"

#include "llvm/Support/raw_ostream.h"

#include "Actions.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>

using namespace zbc::sched;

namespace {

using namespace zbc::sched::test_actions;

/// p ranks, m microbatches, unit times and M_B = M_W = 1; a recomputed F
/// keeps a quarter.
Problem uniform(int p, int m, int v = 1) {
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.virtualStages = v;
  StageCost cost;
  cost.memKeep = 0.25;
  problem.stages.assign(p * v, cost);
  return problem;
}

RecomputedStages all(int stages) { return RecomputedStages(stages, true); }

std::string errorOf(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : "";
}

/// 1F1B on 2 ranks, 2 microbatches, every microbatch recomputed:
///   rank 0: F(0,0) F(0,1) R(0,0) B(0,0) W(0,0) R(0,1) B(0,1) W(0,1)
///   rank 1: F(1,0) R(1,0) B(1,0) W(1,0) F(1,1) R(1,1) B(1,1) W(1,1)
ScheduleTable recomputed1F1B() {
  ScheduleTable table;
  table.microbatches = 2;
  table.rankOfStage = {0, 1};
  table.ranks = {{F(0, 0), F(0, 1), R(0, 0), B(0, 0), W(0, 0), R(0, 1),
                  B(0, 1), W(0, 1)},
                 {F(1, 0), R(1, 0), B(1, 0), W(1, 0), F(1, 1), R(1, 1),
                  B(1, 1), W(1, 1)}};
  return table;
}

TEST(Recompute, CostsAreValidated) {
  Problem problem = uniform(2, 2);
  EXPECT_EQ(errorOf(problem.validate()), "");
  problem.stages[1].memKeep = 1.5; // more than M_B = 1
  EXPECT_NE(errorOf(problem.validate()).find("stage 1: M_keep"),
            std::string::npos)
      << errorOf(problem.validate());
  problem.stages[1].memKeep = 0;
  problem.stages[0].recompute = -2; // only -1 means "as long as F"
  EXPECT_NE(errorOf(problem.validate()).find("R must be in"), std::string::npos)
      << errorOf(problem.validate());
}

TEST(Recompute, MemoryDeltasAndTime) {
  StageCost cost;
  cost.F = 2, cost.memB = 4, cost.memW = 1, cost.memKeep = 1;
  EXPECT_EQ(cost.memoryDelta(Kind::F), 4);
  EXPECT_EQ(cost.memoryDelta(Kind::F, /*recomputed=*/true), 1);
  EXPECT_EQ(cost.memoryDelta(Kind::R, true), 3); // back to M_B
  EXPECT_EQ(cost.memoryDelta(Kind::B, true), -3); // to M_W, as without
  EXPECT_EQ(cost.time(Kind::R), 2);               // F's by default
  cost.recompute = 0.5;                           // a selective one
  EXPECT_EQ(cost.time(Kind::R), 0.5);
}

TEST(Recompute, TableInvariants) {
  ScheduleTable table = recomputed1F1B();
  EXPECT_EQ(errorOf(table.verify()), "");
  EXPECT_TRUE(table.hasRecompute());
  std::vector<bool> mask = table.recomputedMask();
  EXPECT_EQ(mask, std::vector<bool>(4, true));

  // R before its F.
  ScheduleTable early = recomputed1F1B();
  std::swap(early.ranks[1][0], early.ranks[1][1]);
  EXPECT_NE(errorOf(early.verify()).find(
                "R(1,0) (action 0) runs before F(1,0) (action 1)"),
            std::string::npos)
      << errorOf(early.verify());

  // The backward before its R.
  ScheduleTable late = recomputed1F1B();
  std::swap(late.ranks[0][2], late.ranks[0][3]);
  EXPECT_NE(errorOf(late.verify()).find(
                "B(0,0) (action 2) runs before R(0,0) (action 3)"),
            std::string::npos)
      << errorOf(late.verify());

  // Two R for one microbatch.
  ScheduleTable twice = recomputed1F1B();
  twice.ranks[0].insert(twice.ranks[0].begin() + 3, R(0, 0));
  EXPECT_NE(errorOf(twice.verify()).find("appears twice"), std::string::npos)
      << errorOf(twice.verify());

  // On another rank than its stage's.
  ScheduleTable elsewhere = recomputed1F1B();
  elsewhere.ranks[1].insert(elsewhere.ranks[1].begin(), R(0, 1));
  elsewhere.ranks[0].erase(elsewhere.ranks[0].begin() + 5);
  EXPECT_NE(errorOf(elsewhere.verify()), "");
}

TEST(Recompute, SimulatedByHand) {
  // Unit times, comm 0. rank 1: F(1,0) [1,2] after F(0,0); R [2,3]; B [3,4];
  // W [4,5]; F(1,1) [5,6]; R [6,7]; B [7,8]; W [8,9]. rank 0: F [0,1],
  // F [1,2], R(0,0) [2,3], B(0,0) waits for B(1,0): [4,5]; W [5,6];
  // R(0,1) [6,7]; B(0,1) waits for B(1,1): [8,9]; W [9,10].
  Problem problem = uniform(2, 2);
  llvm::Expected<SimResult> sim = simulate(problem, recomputed1F1B());
  ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  EXPECT_DOUBLE_EQ(sim->makespan, 10);
  // Rank 0 keeps 0.25 per forward, then R(0,0) brings microbatch 0 back to
  // M_B: 0.25 + 1 = 1.25; without recomputation F(0,1) would hold 2.
  EXPECT_DOUBLE_EQ(sim->peakMemory[0], 1.25);
  EXPECT_DOUBLE_EQ(sim->peakMemory[1], 1);

  // R takes its own time: a cheaper one (selective) shortens the step.
  problem.stages[0].recompute = problem.stages[1].recompute = 0.5;
  llvm::Expected<SimResult> cheaper = simulate(problem, recomputed1F1B());
  ASSERT_TRUE(bool(cheaper)) << llvm::toString(cheaper.takeError());
  EXPECT_LT(cheaper->makespan, 10);

  // The budget is checked where R raises the memory, naming it.
  problem.activationBudget = 1.2;
  llvm::Expected<SimResult> over = simulate(problem, recomputed1F1B());
  ASSERT_FALSE(bool(over));
  std::string message = llvm::toString(over.takeError());
  EXPECT_NE(message.find("rank 0: R(0,0) (action 2, microbatch 0) raises "
                         "live memory to 1.25"),
            std::string::npos)
      << message;
}

TEST(Recompute, PlannedProblem) {
  Problem problem = uniform(2, 4);
  problem.stages[1].memB = 2;
  problem.stages[1].memKeep = 0.5;
  problem.activationBudget = 3;
  llvm::Expected<Problem> planned = plannedForRecompute(problem, all(2), false);
  ASSERT_TRUE(bool(planned)) << llvm::toString(planned.takeError());
  EXPECT_DOUBLE_EQ(planned->stages[0].B, 2); // R + B
  EXPECT_DOUBLE_EQ(planned->stages[1].memB, 0.5);
  // B holds what R rebuilt until it is traded for M_W: max(M_W, M_B).
  EXPECT_DOUBLE_EQ(planned->stages[1].memW, 2);
  EXPECT_DOUBLE_EQ(planned->budget(), 3);

  // Before a fused backward the largest stash an R rebuilds, stage 1's
  // 2 - 0.5, is held apart.
  llvm::Expected<Problem> fused = plannedForRecompute(problem, all(2), true);
  ASSERT_TRUE(bool(fused)) << llvm::toString(fused.takeError());
  EXPECT_DOUBLE_EQ(fused->budget(), 1.5);

  problem.activationBudget = 1.5;
  llvm::Expected<Problem> none = plannedForRecompute(problem, all(2), true);
  ASSERT_FALSE(bool(none));
  EXPECT_NE(llvm::toString(none.takeError()).find("leaves no room to recompute"),
            std::string::npos);
}

TEST(Recompute, FusedBackwardPlansWithTheReserve) {
  // 1F1B fuses its backward: under a budget of 2 its plain order (4 in
  // flight at p = 4) needs 1.75 with recomputation, so it fits without the
  // reserve; at 1.7 the first plan goes over and buildSchedule reports it.
  Problem problem = uniform(4, 8);
  BuildOptions options;
  options.recompute = RecomputeMode::Full;
  problem.activationBudget = 2;
  llvm::Expected<BuiltSchedule> fits = buildSchedule("1f1b", problem, options);
  ASSERT_TRUE(bool(fits)) << llvm::toString(fits.takeError());
  EXPECT_DOUBLE_EQ(fits->sim.peakMemory[0], 1.75);
  problem.activationBudget = 1.7;
  llvm::Expected<BuiltSchedule> over = buildSchedule("1f1b", problem, options);
  ASSERT_FALSE(bool(over));
  std::string message = llvm::toString(over.takeError());
  EXPECT_NE(message.find("over the activation budget"), std::string::npos)
      << message;
}

TEST(Recompute, EveryScheduleRecomputesWithinItsBudget) {
  for (const ScheduleInfo &info : registeredSchedules()) {
    int v = info.placement == Placement::Linear ? 1 : 2;
    for (int p : {2, 4}) {
      Problem problem = uniform(p, 8, v);
      BuildOptions options;
      options.recompute = RecomputeMode::Full;
      llvm::Expected<BuiltSchedule> built =
          buildSchedule(info.name, problem, options);
      ASSERT_TRUE(bool(built))
          << info.name << " p=" << p << ": " << llvm::toString(built.takeError());
      // One R per (stage, microbatch), each right before its backward or
      // before the F that shares an overlapped slot with it.
      std::vector<bool> mask = built->table.recomputedMask();
      EXPECT_EQ(std::count(mask.begin(), mask.end(), true),
                static_cast<long>(mask.size()))
          << info.name;
      for (auto [r, actions] : llvm::enumerate(built->table.ranks))
        for (size_t i = 0; i < actions.size(); ++i)
          if (actions[i].kind == Kind::R) {
            size_t next = i + 1;
            if (built->table.overlaps.count({int(r), int(next)}))
              ++next;
            ASSERT_LT(next, actions.size()) << info.name;
            EXPECT_EQ(actions[next].stage, actions[i].stage) << info.name;
            EXPECT_EQ(actions[next].microbatch, actions[i].microbatch)
                << info.name;
            EXPECT_TRUE(actions[next].kind == Kind::B ||
                        actions[next].kind == Kind::BW)
                << info.name;
          }
      if (built->problem.budget() > 0) {
        for (double peak : built->sim.peakMemory)
          EXPECT_LE(peak, built->problem.budget() * (1 + 1e-9)) << info.name;
      }

      // A fixed order (no budget to plan for) never holds more than it does
      // without the lever; a planner may spend what it saves on more
      // microbatches in flight.
      if (built->problem.budget() > 0)
        continue;
      llvm::Expected<BuiltSchedule> plain = buildSchedule(info.name, problem);
      ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
      for (int rank = 0; rank < p; ++rank)
        EXPECT_LE(built->sim.peakMemory[rank], plain->sim.peakMemory[rank])
            << info.name << " p=" << p << " rank " << rank;
    }
  }
}

TEST(Recompute, OneFOneBHoldsOneStashInFlight) {
  // 1F1B, p = 4, m = 8: rank 0 holds 4 stashes without recomputation and
  // with it 3 kept inputs plus the one rebuilt: 3 * 0.25 + 1 = 1.75.
  Problem problem = uniform(4, 8);
  BuildOptions options;
  options.recompute = RecomputeMode::Full;
  llvm::Expected<BuiltSchedule> plain = buildSchedule("1f1b", problem);
  llvm::Expected<BuiltSchedule> built = buildSchedule("1f1b", problem, options);
  ASSERT_TRUE(plain && built);
  EXPECT_DOUBLE_EQ(plain->sim.peakMemory[0], 4);
  EXPECT_DOUBLE_EQ(built->sim.peakMemory[0], 1.75);
  EXPECT_GT(built->sim.makespan, plain->sim.makespan); // R is not free
}

TEST(Recompute, SelectiveIsFullWithItsPolicysCosts) {
  // To the schedule library a selective policy is its costs (Note
  // [Selective recomputation]): the same order as full with the same
  // costs, said so in the note; with a larger M_keep and a cheaper R, 1F1B
  // holds more and runs shorter.
  llvm::Expected<RecomputeMode> parsed = parseRecomputeMode("selective");
  ASSERT_TRUE(static_cast<bool>(parsed));
  EXPECT_EQ(*parsed, RecomputeMode::Selective);
  Problem problem = uniform(4, 8);
  BuildOptions full, selective;
  full.recompute = RecomputeMode::Full;
  selective.recompute = RecomputeMode::Selective;
  llvm::Expected<BuiltSchedule> a = buildSchedule("1f1b", problem, full);
  llvm::Expected<BuiltSchedule> b = buildSchedule("1f1b", problem, selective);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->table.ranks, b->table.ranks);
  EXPECT_NE(b->report.notes.back().find("recompute selective: "),
            std::string::npos)
      << b->report.notes.back();
  Problem cheap = problem;
  for (StageCost &stage : cheap.stages) {
    stage.memKeep = 0.5;
    stage.recompute = 0.1 * stage.F;
  }
  llvm::Expected<BuiltSchedule> c = buildSchedule("1f1b", cheap, selective);
  ASSERT_TRUE(static_cast<bool>(c));
  EXPECT_DOUBLE_EQ(c->sim.peakMemory[0], 3 * 0.5 + 1);
  EXPECT_LT(c->sim.makespan, b->sim.makespan);
}

TEST(Recompute, ZBAutoUsesTheLeverWhereMemoryIsTight) {
  // A budget of 1.5 M_B: without recomputation a rank holds one stash at a
  // time; with it, a stash rebuilt beside two kept inputs.
  Problem problem = uniform(4, 8);
  problem.activationBudget = 1.5;
  llvm::Expected<BuiltSchedule> plain = buildSchedule("zb-auto", problem);
  BuildOptions options;
  options.recompute = RecomputeMode::Full;
  llvm::Expected<BuiltSchedule> built =
      buildSchedule("zb-auto", problem, options);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  for (double peak : built->sim.peakMemory)
    EXPECT_LE(peak, 1.5);
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  EXPECT_LT(built->sim.makespan, plain->sim.makespan);
}

TEST(Recompute, AutoIsNeverWorseThanNoneOrFull) {
  // zb-auto at p = 4, m = 8 from the tightest budget up to twice 1F1B's
  // memory: auto fits whenever either fits, and is at least as short as
  // both.
  for (double budget : {0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 8.0}) {
    Problem problem = uniform(4, 8);
    problem.activationBudget = budget;
    std::optional<double> best;
    for (RecomputeMode mode : {RecomputeMode::None, RecomputeMode::Full}) {
      BuildOptions options;
      options.recompute = mode;
      llvm::Expected<BuiltSchedule> built =
          buildSchedule("zb-auto", problem, options);
      if (!built) {
        llvm::consumeError(built.takeError());
        continue;
      }
      best = std::min(best.value_or(built->sim.makespan), built->sim.makespan);
    }
    BuildOptions options;
    options.recompute = RecomputeMode::Auto;
    llvm::Expected<BuiltSchedule> chosen =
        buildSchedule("zb-auto", problem, options);
    if (!best) {
      EXPECT_FALSE(bool(chosen)) << "budget " << budget;
      llvm::consumeError(chosen.takeError());
      continue;
    }
    ASSERT_TRUE(bool(chosen))
        << "budget " << budget << ": " << llvm::toString(chosen.takeError());
    EXPECT_LE(chosen->sim.makespan, *best * (1 + 1e-9)) << "budget " << budget;
    for (double peak : chosen->sim.peakMemory)
      EXPECT_LE(peak, budget * (1 + 1e-9)) << "budget " << budget;
    const std::vector<std::string> &notes = chosen->report.notes;
    ASSERT_GE(notes.size(), 2u);
    EXPECT_NE(notes[notes.size() - 2].find("recompute auto: "),
              std::string::npos);
    // The bound that holds for the levered order is below its makespan.
    double span = 0, bound = 0;
    ASSERT_EQ(std::sscanf(notes.back().c_str(),
                          "with the levers: makespan %lf, lower bound %lf",
                          &span, &bound),
              2)
        << notes.back();
    EXPECT_DOUBLE_EQ(span, chosen->sim.makespan);
    EXPECT_LE(bound, span) << "budget " << budget;
    EXPECT_GT(bound, 0) << "budget " << budget;
  }
}

TEST(Recompute, AutoRecomputesNothingWhereMemoryIsFree) {
  // No budget: R only costs time, so auto keeps every stash.
  BuildOptions options;
  options.recompute = RecomputeMode::Auto;
  llvm::Expected<BuiltSchedule> built =
      buildSchedule("1f1b", uniform(4, 8), options);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  EXPECT_FALSE(built->table.hasRecompute());
  EXPECT_NE(built->report.notes.back().find("recompute auto: no stage of 4"),
            std::string::npos)
      << built->report.notes.back();
}

TEST(Recompute, FitByRecomputingDropsTheStashNeededLast) {
  // 1F1B at p = 4, m = 8 under a budget of 2.5 (M_B = 1, M_keep = 0.25).
  // Rank 0 runs F0 F1 F2 F3 BW0 F4 BW1 F5 BW2 F6 BW3 F7 BW4..BW7: F2 would
  // hold 3, so mb 2 (needed last of 0-2) keeps 0.25: 2.25; F3 the same for
  // mb 3: 2.5. R2 before BW2 raises 1.75 + 0.75 = 3.25 with 4 and 5 in
  // flight: mb 5 goes; R3 likewise drops mb 6. Rank 1 (three in flight):
  // mb 2 at F2, then at R2 mb 4 and at R4 mb 6. Ranks 2 and 3 fit.
  Problem problem = uniform(4, 8);
  problem.activationBudget = 2.5;
  llvm::Expected<BuiltSchedule> plain = buildSchedule("1f1b", uniform(4, 8));
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  llvm::Expected<std::vector<bool>> chosen =
      fitByRecomputing(problem, plain->table);
  ASSERT_TRUE(bool(chosen)) << llvm::toString(chosen.takeError());
  std::vector<bool> expected(32, false);
  for (int j : {2, 3, 5, 6})
    expected[0 * 8 + j] = true;
  for (int j : {2, 4, 6})
    expected[1 * 8 + j] = true;
  EXPECT_EQ(*chosen, expected);

  // Placed before the backwards, the table fits exactly.
  ScheduleTable table = plain->table;
  recomputeBeforeEachBackward(
      table, [&](int s, int j) { return bool(expected[s * 8 + j]); });
  llvm::Expected<SimResult> sim = simulate(problem, table);
  ASSERT_TRUE(bool(sim)) << llvm::toString(sim.takeError());
  EXPECT_DOUBLE_EQ(sim->peakMemory[0], 2.5);

  // auto finds it, and it beats recomputing whole stages (ranks 0 and 1:
  // 38) and every stage (41).
  BuildOptions options;
  options.recompute = RecomputeMode::Auto;
  llvm::Expected<BuiltSchedule> built = buildSchedule("1f1b", problem, options);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  EXPECT_EQ(built->table.recomputedMask(), expected);
  EXPECT_DOUBLE_EQ(built->sim.makespan, 35);
  EXPECT_NE(built->report.notes.back().find(
                "recompute auto: the order for 2.5 with 7 of 32 microbatches "
                "recomputed (makespan by choice: no stage of 4 does not fit"),
            std::string::npos)
      << built->report.notes.back();

  // Below one rebuilt stash beside the kept inputs nothing fits: named.
  problem.activationBudget = 1.1;
  llvm::Expected<std::vector<bool>> none =
      fitByRecomputing(problem, plain->table);
  ASSERT_FALSE(bool(none));
  std::string message = llvm::toString(none.takeError());
  EXPECT_NE(message.find("rank 0: "), std::string::npos) << message;
  EXPECT_NE(message.find("even with every other microbatch in flight "
                         "recomputed"),
            std::string::npos)
      << message;
}

TEST(Recompute, AutoFitsEveryScheduleWhereFullRecomputationDoes) {
  // Every registered schedule under the peak it reaches with every stage
  // recomputed (planned without a budget): auto finds a table within it,
  // dualpipe-v's overlapped pairs included, at most as long as full
  // recomputation's (buildSchedule verifies and simulates what it returns).
  // A lower budget need not fit: what waits for its W (ZB-H1's last rank
  // defers p - 1 of them) cannot be recomputed.
  for (const ScheduleInfo &info : registeredSchedules()) {
    int v = info.placement == Placement::Linear ? 1 : 2;
    for (int p : {2, 4}) {
      Problem problem = uniform(p, 8, v);
      for (StageCost &cost : problem.stages)
        cost.memW = 0.5; // the paper's M_W = M_B / 2
      problem.activationBudget = 0; // none: full recomputation's own order
      BuildOptions options;
      options.recompute = RecomputeMode::Full;
      llvm::Expected<BuiltSchedule> full =
          buildSchedule(info.name, problem, options);
      ASSERT_TRUE(bool(full)) << llvm::toString(full.takeError());
      double peak = *std::max_element(full->sim.peakMemory.begin(),
                                      full->sim.peakMemory.end());
      problem.activationBudget = peak;
      options.recompute = RecomputeMode::Auto;
      llvm::Expected<BuiltSchedule> built =
          buildSchedule(info.name, problem, options);
      ASSERT_TRUE(bool(built)) << info.name << " p=" << p << ": "
                               << llvm::toString(built.takeError());
      for (double rankPeak : built->sim.peakMemory)
        EXPECT_LE(rankPeak, peak * (1 + 1e-9)) << info.name << " p=" << p;
      if (info.defaultActivationBudget == nullptr) { // a fixed order
        EXPECT_LE(built->sim.makespan, full->sim.makespan * (1 + 1e-9))
            << info.name << " p=" << p;
      }
    }
  }
}

TEST(Recompute, AutoSaysWhyNothingFits) {
  Problem problem = uniform(4, 8);
  problem.activationBudget = 0.5; // below one rebuilt stash, M_B = 1
  BuildOptions options;
  options.recompute = RecomputeMode::Auto;
  llvm::Expected<BuiltSchedule> built =
      buildSchedule("zb-auto", problem, options);
  ASSERT_FALSE(bool(built));
  std::string message = llvm::toString(built.takeError());
  EXPECT_NE(message.find("schedule 'zb-auto': "), std::string::npos) << message;
}

TEST(Recompute, PyTorchCSVCannotExpressIt) {
  std::string written;
  llvm::raw_string_ostream os(written);
  std::string message = errorOf(writeCSV(recomputed1F1B(), os));
  EXPECT_NE(message.find("cannot express recomputation: rank 0, action 2 "
                         "R(0,0)"),
            std::string::npos)
      << message;
  EXPECT_EQ(written, ""); // nothing half-written
}

} // namespace
