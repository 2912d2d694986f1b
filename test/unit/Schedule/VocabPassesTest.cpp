//===- VocabPassesTest.cpp - vocabulary passes in the schedules -----------===//
//
// Note [Vocabulary passes] (Problem.h) and Note [Placing the vocabulary
// passes] (VocabPasses.h): the barriers' timing on a table worked out by
// hand, for one and two barriers; every registered schedule taking the
// passes at p = 2 and 4 (placed on every rank, the order deadlock-free, no
// faster than without them and holding no less); and the refusals: a table
// whose passes are missing or out of order, a problem and a table that
// disagree, and a barrier that a rank reaches too late (the deadlock names
// it).
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Registry.h"
#include "zbc/Schedule/VocabPasses.h"

#include "Actions.h"

#include <gtest/gtest.h>

using namespace zbc::sched;
using namespace zbc::sched::test_actions;

namespace {

/// p ranks, one stage each, m microbatches, unit F, B, W and memory, with
/// vocabulary passes of `barriers`.
Problem withVocab(int p, int m, int barriers) {
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.stages.assign(p, StageCost{});
  problem.vocab = {barriers, /*S=*/0.5, /*T=*/0.25, /*mem=*/3,
                   /*collective=*/0.1};
  return problem;
}

/// 1F1B on 2 ranks, one microbatch.
ScheduleTable twoRanks() {
  ScheduleTable table;
  table.microbatches = 1;
  table.rankOfStage = {0, 1};
  table.ranks = {{F(0, 0), BW(0, 0)}, {F(1, 0), BW(1, 0)}};
  return table;
}

std::string error(llvm::Error e) { return llvm::toString(std::move(e)); }

TEST(VocabPasses, BarriersTimedByHand) {
  // Without the passes: F(0,0) 0-1, F(1,0) 1-2, BW(1,0) 2-4, BW(0,0) 4-6.
  // S goes where F(1,0) ends (2): on both ranks before the BW. With one
  // barrier T waits a microbatch, here to the end; with two it goes where
  // BW(1,0) starts (2), before it.
  // One barrier: S(0,0) and S(1,0) 2-2.5 (rank 0 waits for the hidden
  // states), barrier 1 at 2.5 + 0.1 = 2.6, BW(1,0) 2.6-4.6, BW(0,0)
  // 4.6-6.6, T(0,0) 6.6-6.85.
  // Two: T 2.6-2.85 on both, barrier 2 at 2.95, BW(1,0) 2.95-4.95, BW(0,0)
  // 4.95-6.95.
  for (int barriers : {1, 2}) {
    Problem problem = withVocab(2, 1, barriers);
    ScheduleTable table = twoRanks();
    ASSERT_FALSE(placeVocabularyPasses(problem, table)) << barriers;
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(table.ranks[r],
                barriers == 1
                    ? (std::vector<Action>{F(r, 0), S(r, 0), BW(r, 0), T(r, 0)})
                    : (std::vector<Action>{F(r, 0), S(r, 0), T(r, 0), BW(r, 0)}))
          << barriers;
    llvm::Expected<SimResult> sim = simulate(problem, table);
    ASSERT_TRUE(!!sim) << error(sim.takeError());
    int bw = barriers == 1 ? 2 : 3;
    EXPECT_DOUBLE_EQ(sim->timeline[0][1].start, 2.0); // S(0,0)
    EXPECT_DOUBLE_EQ(sim->timeline[1][bw].start, barriers == 1 ? 2.6 : 2.95);
    EXPECT_DOUBLE_EQ(sim->timeline[0][bw].end, barriers == 1 ? 6.6 : 6.95);
    EXPECT_DOUBLE_EQ(sim->makespan, barriers == 1 ? 6.85 : 6.95);
    // Each rank holds its shard's logits (3) from S to T beside a
    // microbatch's M_B (1).
    EXPECT_DOUBLE_EQ(sim->peakMemory[0], 4.0);
    EXPECT_DOUBLE_EQ(sim->peakMemory[1], 4.0);
  }
}

TEST(VocabPasses, EveryScheduleTakesThem) {
  for (const ScheduleInfo &info : registeredSchedules())
    for (int p : {2, 4})
      for (int barriers : {1, 2}) {
        Problem problem = withVocab(p, 2 * p, barriers);
        problem.virtualStages = info.placement == Placement::Linear ? 1 : 2;
        problem.stages.assign(p * problem.virtualStages, StageCost{});
        problem.activationBudget = 0; // the schedules' own defaults aside
        std::string what = std::string(info.name) + " p=" + std::to_string(p) +
                           " barriers=" + std::to_string(barriers);
        llvm::Expected<BuiltSchedule> with = buildSchedule(info.name, problem);
        ASSERT_TRUE(!!with) << what << ": " << error(with.takeError());
        Problem none = problem;
        none.vocab = {};
        llvm::Expected<BuiltSchedule> without = buildSchedule(info.name, none);
        ASSERT_TRUE(!!without) << what << ": " << error(without.takeError());
        for (int r = 0; r < p; ++r) {
          EXPECT_EQ(llvm::count(with->table.ranks[r], S(r, 0)), 1) << what;
          EXPECT_EQ(with->table.ranks[r].size(),
                    without->table.ranks[r].size() + 2 * 2 * p)
              << what;
          // A held shard only adds to what the order holds at each action.
          EXPECT_GE(with->sim.peakMemory[r], without->sim.peakMemory[r])
              << what;
          EXPECT_GE(with->sim.peakMemory[r], 3.0) << what;
        }
        EXPECT_GE(with->sim.makespan, without->sim.makespan) << what;
      }
}

TEST(VocabPasses, TablesOutOfOrderAreRefused) {
  Problem problem = withVocab(2, 1, 1);
  ScheduleTable table = twoRanks();
  table.ranks[0] = {F(0, 0), T(0, 0), S(0, 0), BW(0, 0)};
  table.ranks[1] = {F(1, 0), S(1, 0), T(1, 0), BW(1, 0)};
  EXPECT_EQ(error(table.verify()),
            "rank 0, microbatch 0: T(0,0) (action 1) runs before S(0,0) "
            "(action 2)");
  table.ranks[0] = {F(0, 0), S(0, 0), BW(0, 0)};
  EXPECT_EQ(error(table.verify()), "rank 0, microbatch 0: has S but no T");
  table.ranks[0] = {F(0, 0), S(1, 0), T(0, 0), BW(0, 0)};
  EXPECT_EQ(error(table.verify()),
            "rank 0, action 1 S(1,0): is over shard 1, which rank 1 holds");
  // The problem and the table must agree on whether there are passes.
  ScheduleTable plain = twoRanks();
  llvm::Expected<SimResult> sim = simulate(problem, plain);
  ASSERT_FALSE(!!sim);
  EXPECT_NE(error(sim.takeError()).find("place them"), std::string::npos);
}

TEST(VocabPasses, ABarrierReachedTooLateDeadlocks) {
  // Rank 0 runs its S only after its backward, which waits for rank 1's,
  // which waits for barrier 1, which waits for rank 0's S.
  Problem problem = withVocab(2, 1, 1);
  ScheduleTable table = twoRanks();
  table.ranks[0] = {F(0, 0), BW(0, 0), S(0, 0), T(0, 0)};
  table.ranks[1] = {F(1, 0), S(1, 0), T(1, 0), BW(1, 0)};
  llvm::Expected<SimResult> sim = simulate(problem, table);
  ASSERT_FALSE(!!sim);
  std::string message = error(sim.takeError());
  EXPECT_NE(message.find("rank 1: T(1,0) (action 2, microbatch 0) waits for "
                         "barrier 1 of microbatch 0 (every rank's S), which "
                         "rank 0 has not run"),
            std::string::npos)
      << message;
}

} // namespace
