//===- SimulatorTest.cpp - unit tests of the simulator and schedule I/O ---===//
//
// Checks the simulator on hand-built tables whose timing is worked out by
// hand in the comments (2-rank 1F1B, comm delays, the longest-span makespan,
// memory peaks and the limit), that it rejects deadlocks, invalid tables and
// mismatched problems with messages naming rank and action, and that it stays
// fast at p = 64, m = 1024. Then checks every export format on a small
// schedule, and that PyTorch-format CSVs round-trip, parse as PyTorch writes
// them (empty cells, CRLF, overlapped pairs) and fail with row and column.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Simulator.h"
#include "zbc/Schedule/Export.h"
#include "zbc/Schedule/TorchCSV.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include "Actions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace zbc::sched;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

using namespace zbc::sched::test_actions;

/// p ranks, v stages each, m microbatches, unit costs and memory.
Problem uniform(int p, int m, int v = 1) {
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.virtualStages = v;
  problem.stages.assign(p * v, StageCost{});
  return problem;
}

/// 1F1B on p ranks (stage r on rank r): p - r - 1 warm-up forwards, then one
/// forward and one backward; `fused` uses BW, otherwise B then W at once.
ScheduleTable oneFOneB(int p, int m, bool fused) {
  ScheduleTable table;
  table.microbatches = m;
  table.rankOfStage.resize(p);
  table.ranks.resize(p);
  for (int r = 0; r < p; ++r) {
    table.rankOfStage[r] = r;
    std::vector<Action> &order = table.ranks[r];
    int warm = std::min(p - r - 1, m);
    for (int j = 0; j < warm; ++j)
      order.push_back(F(r, j));
    for (int j = 0; j < m; ++j) {
      if (warm + j < m)
        order.push_back(F(r, warm + j));
      if (fused) {
        order.push_back(BW(r, j));
      } else {
        order.push_back(B(r, j));
        order.push_back(W(r, j));
      }
    }
  }
  return table;
}

SimResult simulateOK(const Problem &problem, const ScheduleTable &table) {
  llvm::Expected<SimResult> sim = simulate(problem, table);
  if (!sim) {
    ADD_FAILURE() << llvm::toString(sim.takeError());
    return {};
  }
  return std::move(*sim);
}

std::string simulateError(const Problem &problem, const ScheduleTable &table) {
  llvm::Expected<SimResult> sim = simulate(problem, table);
  if (sim) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(sim.takeError());
}

const TimedAction *find(const SimResult &sim, int rank, Action a) {
  for (const TimedAction &t : sim.timeline[rank])
    if (t.action == a)
      return &t;
  return nullptr;
}

#define EXPECT_TIMES(SIM, RANK, ACTION, START, END)                            \
  do {                                                                         \
    const TimedAction *t = find(SIM, RANK, ACTION);                            \
    ASSERT_NE(t, nullptr) << (ACTION).str();                                   \
    EXPECT_DOUBLE_EQ(t->start, START) << (ACTION).str();                       \
    EXPECT_DOUBLE_EQ(t->end, END) << (ACTION).str();                           \
  } while (0)

template <typename Fn> std::string print(Fn fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  fn(os);
  return text;
}

size_t count(llvm::StringRef text, llvm::StringRef needle) {
  return text.count(needle);
}

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

// 1F1B, p = 2, m = 4, F = B = W = 1 (BW = 2), no comm. By hand:
//   rank 0: F0 [0,1] F1 [1,2] BW0 [4,6] F2 [6,7] BW1 [7,9] F3 [9,10]
//           BW2 [10,12] BW3 [13,15]
//   rank 1: F0 [1,2] BW0 [2,4] F1 [4,5] BW1 [5,7] F2 [7,8] BW2 [8,10]
//           F3 [10,11] BW3 [11,13]
// makespan 15 = (m + p - 1)(F + B + W); bubble (15 - 4 * 3) / 15 = 0.2;
// idle 3 and 0; peak memory p M_B = 2 on rank 0, 1 on rank 1.
TEST(Simulator, OneFOneBTwoRanksByHand) {
  SimResult sim = simulateOK(uniform(2, 4), oneFOneB(2, 4, /*fused=*/true));
  EXPECT_TIMES(sim, 0, BW(0, 0), 4, 6);
  EXPECT_TIMES(sim, 0, BW(0, 3), 13, 15);
  EXPECT_TIMES(sim, 1, F(1, 1), 4, 5);
  EXPECT_TIMES(sim, 1, BW(1, 3), 11, 13);
  EXPECT_DOUBLE_EQ(sim.makespan, 15);
  EXPECT_DOUBLE_EQ(sim.bubbleRate, 0.2);
  EXPECT_EQ(sim.idle, (std::vector<double>{3, 0}));
  EXPECT_EQ(sim.peakMemory, (std::vector<double>{2, 1}));
  ASSERT_EQ(sim.timeline.size(), 2u);
  EXPECT_EQ(sim.timeline[0].size(), 8u);
}

// The closed form (m + p - 1)(F + B + W) for 1F1B, with uneven costs too.
TEST(Simulator, OneFOneBClosedForm) {
  for (int p : {1, 3, 4})
    for (int m : {1, 4, 9}) {
      Problem problem = uniform(p, m);
      for (StageCost &c : problem.stages)
        c = {/*F=*/2, /*B=*/3, /*W=*/1.5, 1, 1};
      SimResult sim = simulateOK(problem, oneFOneB(p, m, true));
      EXPECT_DOUBLE_EQ(sim.makespan, (m + p - 1) * 6.5) << p << " " << m;
    }
}

// p = 2, m = 1, B and W split, comm 0.5. By hand:
//   rank 0: F [0,1]; rank 1: F [1.5,2.5] B [2.5,3.5] W [3.5,4.5];
//   rank 0: B [4,5] (3.5 + 0.5) W [5,6]
// makespan 6 (rank 0's span) against 5 without comm: two hops.
TEST(Simulator, CommDelayOnCrossRankEdges) {
  Problem problem = uniform(2, 1);
  problem.comm = 0.5;
  ScheduleTable table = oneFOneB(2, 1, /*fused=*/false);
  SimResult sim = simulateOK(problem, table);
  EXPECT_TIMES(sim, 1, F(1, 0), 1.5, 2.5);
  EXPECT_TIMES(sim, 0, B(0, 0), 4, 5);
  EXPECT_TIMES(sim, 0, W(0, 0), 5, 6); // same rank: no comm before W
  EXPECT_DOUBLE_EQ(sim.makespan, 6);
  problem.comm = 0;
  EXPECT_DOUBLE_EQ(simulateOK(problem, table).makespan, 5);
}

// Note [Collectives in the simulator] on a 2-rank 1F1B (m = 4, unit costs,
// comm 0.5), two replicas, collective bandwidth 10: rank 1 sums stage 1's
// 20 bytes in 0.5 + 2 (1/2) 20 / 10 = 2.5 from its last BW's end, which is
// 2.5 before rank 0's (its BW, 2, and the hop, 0.5): hidden. Rank 0, which
// ends the step, sums stage 0's 10 bytes in 1.5 after it: 1.5 exposed.
// One replica sums nothing.
TEST(Simulator, GradientSumsOverReplicasAfterTheLastBackward) {
  Problem problem = uniform(2, 4);
  problem.comm = 0.5;
  problem.collectiveBandwidth = 10;
  problem.gradientSums = {{{0}, 10}, {{1}, 20}};
  ScheduleTable table = oneFOneB(2, 4, /*fused=*/true);
  // comm delays the cross-rank edges: the timing without sums first.
  Problem unsummed = problem;
  unsummed.gradientSums.clear();
  double base = simulateOK(unsummed, table).makespan;
  problem.replicas = 2;
  SimResult sim = simulateOK(problem, table);
  EXPECT_DOUBLE_EQ(sim.communication[0], 1.5);
  EXPECT_DOUBLE_EQ(sim.communication[1], 2.5);
  EXPECT_DOUBLE_EQ(sim.exposedCommunication, 1.5);
  EXPECT_DOUBLE_EQ(sim.makespan, base + 1.5);
  problem.replicas = 1;
  EXPECT_DOUBLE_EQ(simulateOK(problem, table).makespan, base);
  // A parameter both stages hold (a tied one) sums over the two ranks even
  // with one replica; on one rank it would sum nothing.
  problem.gradientSums = {{{0, 1}, 10}};
  SimResult tied = simulateOK(problem, table);
  EXPECT_DOUBLE_EQ(tied.communication[0], 1.5);
  EXPECT_DOUBLE_EQ(tied.communication[1], 1.5);
  problem.collectiveBandwidth = 0; // not timed
  EXPECT_DOUBLE_EQ(simulateOK(problem, table).makespan, base);
}

// The same 1F1B with the optimizer sharded over the two replicas (Note
// [Collectives in the simulator]): rank 0 first gathers stage 0's 5 bytes
// of working copies in 0.5 + (1/2) 5 / 10 = 0.75, so its F starts then
// (rank 1's gather, 1.0, hides behind its wait for that F); the sums are
// reduce-scatters, (1/2) of the bytes: 1.0 on rank 0 after the step's
// last BW. Rank 0's span runs from its gather's start: 0.75 + 1.0 more.
TEST(Simulator, ShardedOptimizerGathersFirstAndScatters) {
  Problem problem = uniform(2, 4);
  problem.comm = 0.5;
  problem.collectiveBandwidth = 10;
  problem.gradientSums = {{{0}, 10, 5}, {{1}, 20, 10}};
  ScheduleTable table = oneFOneB(2, 4, /*fused=*/true);
  Problem unsummed = problem;
  unsummed.gradientSums.clear();
  double base = simulateOK(unsummed, table).makespan;
  problem.replicas = 2;
  problem.sharded = true;
  SimResult sim = simulateOK(problem, table);
  EXPECT_TIMES(sim, 0, F(0, 0), 0.75, 1.75);
  EXPECT_DOUBLE_EQ(sim.communication[0], 0.75 + 1.0);
  EXPECT_DOUBLE_EQ(sim.communication[1], 1.0 + 1.5);
  EXPECT_DOUBLE_EQ(sim.makespan, base + 1.75);
  EXPECT_DOUBLE_EQ(sim.exposedCommunication, 1.75);
}

// Both stages on one rank (a V of one rank): no edge crosses ranks, so comm
// never applies and the rank runs back to back: makespan 6.
TEST(Simulator, NoCommBetweenStagesOfOneRank) {
  Problem problem = uniform(1, 1, /*v=*/2);
  problem.comm = 5;
  ScheduleTable table;
  table.microbatches = 1;
  table.rankOfStage = {0, 0};
  table.ranks = {{F(0, 0), F(1, 0), B(1, 0), W(1, 0), B(0, 0), W(0, 0)}};
  SimResult sim = simulateOK(problem, table);
  EXPECT_DOUBLE_EQ(sim.makespan, 6);
  EXPECT_DOUBLE_EQ(sim.bubbleRate, 0);
}

// The makespan is the longest rank's span, not the latest end minus the
// earliest start. p = 2, m = 2, F = B = W = 1 except W = 2 on stage 1;
// rank 1 defers its W's:
//   rank 0: F0 [0,1] F1 [1,2] B0 [3,4] W0 [4,5] B1 [5,6] W1 [6,7]
//   rank 1: F0 [1,2] B0 [2,3] F1 [3,4] B1 [4,5] W0 [5,7] W1 [7,9]
// Spans 7 and 8: makespan 8 (not 9). The busiest rank does 1 + 1 + 2 = 4
// per microbatch: bubble (8 - 2 * 4) / 8 = 0.
TEST(Simulator, MakespanIsLongestRankSpan) {
  Problem problem = uniform(2, 2);
  problem.stages[1].W = 2;
  ScheduleTable table;
  table.microbatches = 2;
  table.rankOfStage = {0, 1};
  table.ranks = {{F(0, 0), F(0, 1), B(0, 0), W(0, 0), B(0, 1), W(0, 1)},
                 {F(1, 0), B(1, 0), F(1, 1), B(1, 1), W(1, 0), W(1, 1)}};
  SimResult sim = simulateOK(problem, table);
  EXPECT_TIMES(sim, 1, W(1, 1), 7, 9);
  EXPECT_TIMES(sim, 0, W(0, 1), 6, 7);
  EXPECT_DOUBLE_EQ(sim.makespan, 8);
  EXPECT_DOUBLE_EQ(sim.bubbleRate, 0);
  EXPECT_EQ(sim.idle, (std::vector<double>{1, 0}));
}

// F adds M_B, B adds M_W - M_B, W frees M_W: with M_B = 3, M_W = 2 the order
// F0 F1 B0 W0 B1 W1 holds 3 6 5 3 2 0: peak 6. A fused BW frees M_B.
TEST(Simulator, MemoryPeaksFollowTheAccounting) {
  Problem problem = uniform(1, 2);
  problem.stages[0].memB = 3;
  problem.stages[0].memW = 2;
  ScheduleTable table;
  table.microbatches = 2;
  table.rankOfStage = {0};
  table.ranks = {{F(0, 0), F(0, 1), B(0, 0), W(0, 0), B(0, 1), W(0, 1)}};
  EXPECT_EQ(simulateOK(problem, table).peakMemory, (std::vector<double>{6}));
  // B then F: 3 2 5 3 0 -> ... peak 5.
  table.ranks = {{F(0, 0), B(0, 0), F(0, 1), W(0, 0), B(0, 1), W(0, 1)}};
  EXPECT_EQ(simulateOK(problem, table).peakMemory, (std::vector<double>{5}));
  // Fused: 3 0 3 0.
  table.ranks = {{F(0, 0), BW(0, 0), F(0, 1), BW(0, 1)}};
  EXPECT_EQ(simulateOK(problem, table).peakMemory, (std::vector<double>{3}));
}

TEST(Simulator, MemoryLimitError) {
  Problem problem = uniform(1, 2);
  problem.stages[0].memB = 3;
  problem.stages[0].memW = 2;
  ScheduleTable table;
  table.microbatches = 2;
  table.rankOfStage = {0};
  table.ranks = {{F(0, 0), F(0, 1), B(0, 0), W(0, 0), B(0, 1), W(0, 1)}};
  problem.activationBudget = 5;
  std::string error = simulateError(problem, table);
  EXPECT_NE(error.find("rank 0: F(0,1)"), std::string::npos) << error;
  EXPECT_NE(error.find("microbatch 1"), std::string::npos) << error;
  EXPECT_NE(error.find("to 6, over the activation budget 5"), std::string::npos) << error;
  problem.activationBudget = 6; // exactly at the limit is fine
  EXPECT_EQ(simulateOK(problem, table).peakMemory, (std::vector<double>{6}));
}

// 0.1 + 0.1 + 0.1 is 0.30000000000000004 in binary; a limit of 0.3 holds.
TEST(Simulator, MemoryLimitToleratesRoundOff) {
  Problem problem = uniform(1, 3);
  problem.stages[0].memB = 0.1;
  problem.activationBudget = 0.3;
  ScheduleTable table;
  table.microbatches = 3;
  table.rankOfStage = {0};
  table.ranks = {{F(0, 0), F(0, 1), F(0, 2), BW(0, 0), BW(0, 1), BW(0, 2)}};
  simulateOK(problem, table);
  problem.activationBudget = 0.29;
  EXPECT_NE(simulateError(problem, table).find("over the activation budget 0.29"),
            std::string::npos);
}

// A limit in bytes is quoted as the number the check compared, not rounded
// to six digits ("6.11174e+06, over the activation budget 6e+06"), and a sum's
// round-off does not show.
TEST(Simulator, MemoryLimitErrorQuotesBytesInFull) {
  Problem problem = uniform(1, 2);
  problem.stages[0].memB = 3055872;
  problem.stages[0].memW = 0;
  ScheduleTable table;
  table.microbatches = 2;
  table.rankOfStage = {0};
  table.ranks = {{F(0, 0), F(0, 1), BW(0, 0), BW(0, 1)}};
  problem.activationBudget = 6000000;
  std::string error = simulateError(problem, table);
  EXPECT_NE(error.find("to 6111744, over the activation budget 6000000 (it adds 3055872 "
                       "to 3055872)"),
            std::string::npos)
      << error;
  // 0.1 + 0.1 + 0.1 is 0.30000000000000004: quoted as 0.3.
  Problem small = uniform(1, 3);
  small.stages[0].memB = 0.1;
  small.activationBudget = 0.25;
  table.microbatches = 3;
  table.ranks = {{F(0, 0), F(0, 1), F(0, 2), BW(0, 0), BW(0, 1), BW(0, 2)}};
  error = simulateError(small, table);
  EXPECT_NE(error.find("to 0.3, over the activation budget 0.25 (it adds 0.1 to 0.2)"),
            std::string::npos)
      << error;
}

// Rank 1 starts with F(1,1), which needs F(0,1); rank 0 runs F(0,1) only
// after B(0,0), which needs B(1,0), which rank 1 runs after F(1,1).
TEST(Simulator, DeadlockAcrossRanks) {
  ScheduleTable table;
  table.microbatches = 2;
  table.rankOfStage = {0, 1};
  table.ranks = {{F(0, 0), B(0, 0), W(0, 0), F(0, 1), B(0, 1), W(0, 1)},
                 {F(1, 1), F(1, 0), B(1, 0), W(1, 0), B(1, 1), W(1, 1)}};
  std::string error = simulateError(uniform(2, 2), table);
  EXPECT_NE(error.find("deadlock"), std::string::npos) << error;
  EXPECT_NE(error.find("rank 0: B(0,0) (action 1, microbatch 0) waits for "
                       "B(1,0) on rank 1 (action 2), which is stuck at F(1,1)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("rank 1: F(1,1) (action 0, microbatch 1) waits for "
                       "F(0,1) on rank 0 (action 3), which is stuck at B(0,0)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("(1 of 12 actions ran)"), std::string::npos) << error;
}

// V placement on one rank: B(0,0) needs B(1,0), placed after it.
TEST(Simulator, DeadlockOnOneRank) {
  ScheduleTable table;
  table.microbatches = 1;
  table.rankOfStage = {0, 0};
  table.ranks = {{F(0, 0), F(1, 0), B(0, 0), W(0, 0), B(1, 0), W(1, 0)}};
  std::string error = simulateError(uniform(1, 1, 2), table);
  EXPECT_NE(error.find("rank 0: B(0,0) (action 2, microbatch 0) waits for "
                       "B(1,0), which comes later on this rank (action 4)"),
            std::string::npos)
      << error;
}

// simulate() runs ScheduleTable::verify itself, since imported CSVs have
// not been through buildSchedule.
TEST(Simulator, RejectsInvalidTables) {
  Problem problem = uniform(2, 2);
  ScheduleTable good = oneFOneB(2, 2, false);
  simulateOK(problem, good);

  ScheduleTable missingW = good;
  llvm::erase(missingW.ranks[1], W(1, 1));
  std::string error = simulateError(problem, missingW);
  EXPECT_NE(error.find("stage 1, microbatch 1: has B but no W"),
            std::string::npos)
      << error;

  ScheduleTable duplicate = good;
  duplicate.ranks[0].push_back(F(0, 0));
  error = simulateError(problem, duplicate);
  EXPECT_NE(error.find("F(0,0): appears twice"), std::string::npos) << error;

  ScheduleTable wrongRank = good;
  wrongRank.ranks[0].push_back(F(1, 0));
  error = simulateError(problem, wrongRank);
  EXPECT_NE(error.find("rank 0, action 6 F(1,0): stage 1 is placed on rank 1"),
            std::string::npos)
      << error;

  ScheduleTable wBeforeB = good;
  std::swap(wBeforeB.ranks[0][2], wBeforeB.ranks[0][3]); // W(0,0) before B(0,0)
  error = simulateError(problem, wBeforeB);
  EXPECT_NE(error.find("rank 0, stage 0, microbatch 0: W(0,0) (action 2) "
                       "runs before B(0,0) (action 3)"),
            std::string::npos)
      << error;
}

TEST(Simulator, RejectsMismatchedProblem) {
  ScheduleTable table = oneFOneB(2, 2, true);
  EXPECT_NE(simulateError(uniform(3, 2), table).find("2 ranks, the problem 3"),
            std::string::npos);
  EXPECT_NE(simulateError(uniform(2, 3), table)
                .find("2 microbatches, the problem has 3"),
            std::string::npos);
  Problem bad = uniform(2, 2);
  bad.stages[1].F = 0; // B and W may be 0 (no work); F may not
  EXPECT_NE(simulateError(bad, table).find("stage 1"), std::string::npos);
}

// ~200k actions at p = 64, m = 1024. The work is linear; the bound is loose
// so a loaded machine does not fail it, but a quadratic walk would.
TEST(Simulator, LargeScheduleIsFast) {
  const int p = 64, m = 1024;
  for (bool fused : {true, false}) {
    ScheduleTable table = oneFOneB(p, m, fused);
    auto start = std::chrono::steady_clock::now();
    SimResult sim = simulateOK(uniform(p, m), table);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    size_t actions = 0;
    for (const auto &line : sim.timeline)
      actions += line.size();
    EXPECT_EQ(actions, static_cast<size_t>(p) * m * (fused ? 2 : 3));
    if (fused) {
      EXPECT_DOUBLE_EQ(sim.makespan, (m + p - 1) * 3.0);
    }
    std::printf("[ timing   ] p=%d m=%d %zu actions (%s): %.3f s\n", p, m,
                actions, fused ? "BW" : "B+W", seconds);
    EXPECT_LT(seconds, 2.0);
  }
}

//===----------------------------------------------------------------------===//
// Export
//===----------------------------------------------------------------------===//

struct Small {
  Problem problem = uniform(2, 4);
  ScheduleTable table = oneFOneB(2, 4, true);
  SimResult sim = simulateOK(problem, table);
};

TEST(Export, TableSummarisesAndListsOrder) {
  Small s;
  std::string text = print([&](llvm::raw_ostream &os) {
    writeTable(s.problem, s.table, s.sim, os);
  });
  EXPECT_NE(text.find("makespan 15"), std::string::npos) << text;
  EXPECT_NE(text.find("bubble rate 0.2 (20.00%)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank  busy  idle  span  peak memory\n"
                      "   0    12     3    15            2\n"
                      "   1    12     0    12            1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 0: F(0,0) F(0,1) BW(0,0) F(0,2)"),
            std::string::npos)
      << text;
}

TEST(Export, JSONHasRoundNumbers) {
  Small s;
  std::string text = print(
      [&](llvm::raw_ostream &os) { writeJSON(s.problem, s.table, s.sim, os); });
  EXPECT_NE(text.find("\"makespan\":15,\"bubble_rate\":0.2,"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"kind\":\"BW\",\"stage\":0,\"microbatch\":0,"
                      "\"start\":4,\"end\":6}"),
            std::string::npos)
      << text;
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
  const llvm::json::Object *root = value->getAsObject();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->getNumber("makespan"), 15);
  EXPECT_EQ(root->getInteger("ranks"), 2);
  EXPECT_EQ(root->getInteger("stages"), 2);
  EXPECT_EQ(root->getInteger("microbatches"), 4);
  const llvm::json::Array *order = root->getArray("order");
  ASSERT_NE(order, nullptr);
  ASSERT_EQ(order->size(), 2u);
  EXPECT_EQ((*order)[1].getAsArray()->size(), 8u);
  EXPECT_EQ(root->getArray("peak_memory")->size(), 2u);
  EXPECT_EQ((*root->getArray("idle"))[0].getAsNumber(), 3);
  EXPECT_EQ((*root->getArray("placement"))[1].getAsInteger(), 1);

  // 0.1 + 0.1 + 0.1 prints as 0.3, not 0.30000000000000004.
  Problem problem = uniform(1, 3);
  problem.stages[0] = {0.1, 0.1, 0.1, 1, 1};
  ScheduleTable table;
  table.microbatches = 3;
  table.rankOfStage = {0};
  table.ranks = {{F(0, 0), F(0, 1), F(0, 2), BW(0, 0), BW(0, 1), BW(0, 2)}};
  SimResult sim = simulateOK(problem, table);
  text =
      print([&](llvm::raw_ostream &os) { writeJSON(problem, table, sim, os); });
  EXPECT_NE(text.find("\"start\":0.2,\"end\":0.3}"), std::string::npos) << text;
  EXPECT_EQ(text.find("0000000"), std::string::npos) << text;
}

TEST(Export, SVGHasOneRectPerActionAndTheMicrobatches) {
  Small s;
  std::string text = print(
      [&](llvm::raw_ostream &os) { writeSVG(s.problem, s.table, s.sim, os); });
  EXPECT_TRUE(llvm::StringRef(text).starts_with("<svg "));
  EXPECT_TRUE(llvm::StringRef(text).ends_with("</svg>\n"));
  EXPECT_EQ(count(text, "<rect"), 16u);
  EXPECT_EQ(count(text, "<rect class=\"F\""), 8u);
  EXPECT_EQ(count(text, "<rect class=\"BW\""), 8u);
  EXPECT_EQ(count(text, "<text class=\"mb\""), 16u);
  for (int j = 0; j < 4; ++j) // each microbatch: 2 ranks x (F, BW)
    EXPECT_EQ(
        count(text, "text-anchor=\"middle\">" + std::to_string(j) + "</text>"),
        4u + (j == 0 || j == 2)) // + the time axis's 0 and 2
        << j;
  EXPECT_NE(text.find(">rank 1</text>"), std::string::npos);
  EXPECT_NE(text.find("F forward"), std::string::npos); // the legend
  // The widest box ends at the right margin: 15 units over 1500 px.
  EXPECT_NE(text.find("x=\"1470.00\""), std::string::npos) << text;
}

TEST(Export, ChromeTrace) {
  Small s;
  std::string text = print([&](llvm::raw_ostream &os) {
    writeChromeTrace(s.problem, s.table, s.sim, os);
  });
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
  const llvm::json::Array *events =
      value->getAsObject()->getArray("traceEvents");
  ASSERT_NE(events, nullptr);
  int complete = 0, threadNames = 0;
  bool sawBW0 = false;
  for (const llvm::json::Value &e : *events) {
    const llvm::json::Object *o = e.getAsObject();
    if (o->getString("ph") == "X") {
      ++complete;
      if (o->getString("name") == "BW0" && o->getInteger("tid") == 0) {
        sawBW0 = true;
        EXPECT_EQ(o->getString("cat"), "BW");
        EXPECT_EQ(o->getNumber("ts"), 4000); // 1 unit = 1000 us
        EXPECT_EQ(o->getNumber("dur"), 2000);
        EXPECT_EQ(o->getObject("args")->getInteger("stage"), 0);
        EXPECT_EQ(o->getObject("args")->getInteger("microbatch"), 0);
      }
    } else if (o->getString("name") == "thread_name") {
      ++threadNames;
      EXPECT_EQ(o->getObject("args")->getString("name"),
                "rank " + std::to_string(*o->getInteger("tid")));
    }
  }
  EXPECT_EQ(complete, 16);
  EXPECT_EQ(threadNames, 2);
  EXPECT_TRUE(sawBW0);
}

std::string csv(const ScheduleTable &table) {
  return print([&](llvm::raw_ostream &os) {
    llvm::Error error = writeCSV(table, os);
    EXPECT_FALSE(bool(error)) << llvm::toString(std::move(error));
  });
}

TEST(Export, CSVIsPyTorchsFormat) {
  EXPECT_EQ(csv(oneFOneB(2, 2, false)),
            "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n");
  EXPECT_EQ(csv(oneFOneB(2, 2, true)), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

void expectSameTable(const ScheduleTable &a, const ScheduleTable &b) {
  EXPECT_EQ(a.microbatches, b.microbatches);
  EXPECT_EQ(a.rankOfStage, b.rankOfStage);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r)
    EXPECT_TRUE(a.ranks[r] == b.ranks[r]) << "rank " << r;
}

TEST(Export, CSVRoundTrip) {
  for (bool fused : {true, false}) {
    ScheduleTable table = oneFOneB(3, 5, fused);
    llvm::Expected<ScheduleTable> back =
        parseCSV(csv(table), 3, 3, 5, Placement::Linear);
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    expectSameTable(table, *back);
  }
  // V placement, mixing fused and split backwards: stages 0 and 3 on rank 0.
  ScheduleTable v;
  v.microbatches = 2;
  v.rankOfStage = placeStages(Placement::V, 2, 4);
  v.ranks = {{F(0, 0), F(0, 1), F(3, 0), B(3, 0), F(3, 1), BW(3, 1), W(3, 0),
              BW(0, 0), B(0, 1), W(0, 1)},
             {F(1, 0), F(2, 0), F(1, 1), F(2, 1), B(2, 0), W(2, 0), BW(1, 0),
              BW(2, 1), B(1, 1), W(1, 1)}};
  if (llvm::Error error = v.verify())
    FAIL() << llvm::toString(std::move(error));
  llvm::Expected<ScheduleTable> back = parseCSV(csv(v), 2, 4, 2, Placement::V);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  expectSameTable(v, *back);
  simulateOK(uniform(2, 2, 2), *back);
}

// What PyTorch's _dump_csv writes: "\r\n" rows, empty cells for idle steps
// (None), and DualPipeV's overlapped pairs, which run here one after the
// other.
TEST(Export, CSVReadsWhatPyTorchWrites) {
  std::string text = "0F0,,0F1,0I0,0W0,,0I1,0W1\r\n"
                     ",1F0,1I0,1W0,1F1,1I1,1W1,\r\n";
  llvm::Expected<ScheduleTable> table =
      parseCSV(text, 2, 2, 2, Placement::Linear);
  ASSERT_TRUE(bool(table)) << llvm::toString(table.takeError());
  expectSameTable(*table, oneFOneB(2, 2, false));

  // V placement (stages 0 and 3 on rank 0); a quoted cell, spaces.
  text = "0F0,0F1,3F0,(3F1;3B0)OVERLAP_F_B,3B1,0B0,0B1\n"
         "\"1F0\",1F1,2F0,2F1,2B0,2B1, 1B0 ,1B1\n";
  table = parseCSV(text, 2, 4, 2, Placement::V);
  ASSERT_TRUE(bool(table)) << llvm::toString(table.takeError());
  EXPECT_TRUE(table->ranks[0][3] == F(3, 1));
  EXPECT_TRUE(table->ranks[0][4] == BW(3, 0));
  EXPECT_TRUE(table->ranks[1][0] == F(1, 0));
  EXPECT_TRUE(table->ranks[1][6] == BW(1, 0));
  // By hand (F = 1, BW = 2): rank 0 runs 3F1 [5,6] then 3B0 [6,8], ...,
  // 0B1 [16,18]; rank 1 spans [1,16].
  SimResult sim = simulateOK(uniform(2, 2, 2), *table);
  EXPECT_TIMES(sim, 0, BW(3, 0), 6, 8);
  EXPECT_DOUBLE_EQ(sim.makespan, 18);
}

// Tests that the compute+comms format reads as the same compute order, its
// transfers and FSDP ops set aside (parseCSVProgram reads the transfers).
TEST(Export, CSVReadsTheCommsFormat) {
  llvm::Expected<ScheduleTable> table = parseCSV(
      "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0RESHARD\n"
      "1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n",
      2, 2, 2, Placement::Linear);
  ASSERT_TRUE(bool(table)) << llvm::toString(table.takeError());
  EXPECT_EQ(table->ranks[0].size(), 4u);
  EXPECT_TRUE(table->ranks[1][1] == BW(1, 0));
}

// Tests that blank lines after the last row are not ranks (an editor's
// trailing newlines), while a blank row in between is a rank with no work,
// and that scanCSV sizes the problem from the rows and cells.
TEST(Export, CSVTrailingBlankLinesAreNotRanks) {
  llvm::Expected<ScheduleTable> table =
      parseCSV("0F0,0B0\n1F0,1B0\n\n  \r\n", 2, 2, 1, Placement::Linear);
  ASSERT_TRUE(bool(table)) << llvm::toString(table.takeError());
  EXPECT_EQ(table->numRanks(), 2);

  CSVShape shape = scanCSV("0F0,0F1,0I0\n1F0,(1F1;1I0)OVERLAP_F_B,1W3\n\n");
  EXPECT_EQ(shape.rows, 2);
  EXPECT_EQ(shape.stages, 2);
  EXPECT_EQ(shape.microbatches, 4);
  EXPECT_EQ(scanCSV("").rows, 0);
}

std::string csvError(llvm::StringRef text, int ranks = 2, int stages = 2,
                     int microbatches = 1,
                     Placement placement = Placement::Linear) {
  llvm::Expected<ScheduleTable> table =
      parseCSV(text, ranks, stages, microbatches, placement);
  if (table) {
    ADD_FAILURE() << "expected an error for:\n" << text.str();
    return "";
  }
  return llvm::toString(table.takeError());
}

#define EXPECT_CSV_ERROR(TEXT, MESSAGE)                                        \
  do {                                                                         \
    std::string error = csvError(TEXT);                                        \
    EXPECT_NE(error.find(MESSAGE), std::string::npos) << error;                \
  } while (0)

// Tests that PyTorch's newer actions come back out as they went in: an
// OVERLAP_F_B cell stays one cell, REDUCE_GRAD and FSDP cells stay where
// they were; and that zbc's own DualPipeV writes its F&B pairs as overlaps.
TEST(Export, CSVWritesOverlapsAndKeptCellsBack) {
  std::string text = "0F0,0F1,3F0,(3F1;3B0)OVERLAP_F_B,3B1,0B0,0B1,0REDUCE_GRAD\n"
                     "1UNSHARD,1F0,1F1,2F0,2F1,2B0,2B1,1B0,1B1,1REDUCE_GRAD\n";
  llvm::Expected<ScheduleTable> table = parseCSV(text, 2, 4, 2, Placement::V);
  ASSERT_TRUE(bool(table)) << llvm::toString(table.takeError());
  EXPECT_EQ(table->overlaps.count({0, 3}), 1u);
  std::string written;
  llvm::raw_string_ostream os(written);
  ASSERT_FALSE(bool(writeCSV(*table, os)));
  EXPECT_EQ(written, text);

  Problem problem = uniform(2, 4, 2); // p = 2, m = 4, the V's 2 stages per rank
  llvm::Expected<BuiltSchedule> built = buildSchedule("dualpipe-v", problem);
  ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
  EXPECT_FALSE(built->table.overlaps.empty());
  std::string dualpipe;
  llvm::raw_string_ostream out(dualpipe);
  ASSERT_FALSE(bool(writeCSV(built->table, out)));
  EXPECT_NE(dualpipe.find(")OVERLAP_F_B"), std::string::npos) << dualpipe;
  llvm::Expected<ScheduleTable> again = parseCSV(dualpipe, 2, 4, 4, Placement::V);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(again->overlaps, built->table.overlaps);
}

// Tests that an overlap pairs a forward with a backward that do not need
// each other, and that the compute+comms program gates the pair's first
// compute on what the second needs (so either may run first).
TEST(Export, CSVOverlapsPairIndependentForwardAndBackward) {
  EXPECT_NE(csvError("(0F0;0B0)OVERLAP_F_B\n1F0,1B0\n")
                .find("depend on each other"),
            std::string::npos);
  EXPECT_NE(csvError("(0F0;0F1)OVERLAP_F_B,0B0,0B1\n1F0,1F1,1B0,1B1\n", 2, 2, 2)
                .find("pairs a forward with a backward"),
            std::string::npos);
  llvm::Expected<CSVProgram> program = parseCSVProgram(
      "0F0,0SEND_F0,0RECV_B0,(0F1;0B0)OVERLAP_F_B,0SEND_F1,0RECV_B1,0B1\n"
      "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n",
      2, 2, 2, Placement::Linear);
  ASSERT_TRUE(bool(program)) << llvm::toString(program.takeError());
  const std::vector<ProgramOp> &ops = program->program.ranks[0].ops;
  // 0F1 (op 3) needs nothing received, but waits for 0B0's gradient (the
  // recv, op 2): the pair starts when both can.
  ASSERT_EQ(ops[3].kind, Kind::F);
  EXPECT_NE(std::find(ops[3].deps.begin(), ops[3].deps.end(), 2),
            ops[3].deps.end());
  EXPECT_FALSE(verifyProgram(program->program).has_value());
}

TEST(Export, CSVErrorsNameRowAndColumn) {
  EXPECT_CSV_ERROR("0F0,F0\n1F0,1B0\n",
                   "CSV line 1 (rank 0), cell 2 'F0': malformed action");
  EXPECT_CSV_ERROR("0F0,0B0\n1F0,1B0x\n",
                   "line 2 (rank 1), cell 2 '1B0x': malformed action");
  EXPECT_CSV_ERROR("0F0,0X0\n1F0,1B0\n",
                   "cell 2 '0X0': unknown computation type 'X'");
  EXPECT_CSV_ERROR("0F0,0BW0\n1F0,1B0\n",
                   "PyTorch writes a fused backward as B");
  EXPECT_CSV_ERROR(
      "0F0,0B0\n1F0,7B0\n",
      "line 2 (rank 1), cell 2 '7B0': stage 7 out of range [0, 2)");
  EXPECT_CSV_ERROR("0F0,0B3\n1F0,1B0\n",
                   "cell 2 '0B3': microbatch 3 out of range [0, 1)");
  EXPECT_CSV_ERROR("0F0,0B\n1F0,1B0\n", "cell 2 '0B': the action has no "
                                        "microbatch");
  EXPECT_CSV_ERROR("0F0,0B0\n1F0,0B0\n",
                   "line 2 (rank 1), cell 2 '0B0': stage 0 is on rank 0");
  EXPECT_CSV_ERROR("0F0,0B0\n1F0,1B0\n1F0\n",
                   "CSV line 3: more rows than ranks (2)");
  EXPECT_CSV_ERROR("0F0,0B0\n", "1 rows for 2 ranks");
  EXPECT_CSV_ERROR("0F0,0SEND_F1,0B0\n1RECV_F0,1F0,1B0\n",
                   "cell 2 '0SEND_F1': microbatch 1 out of range [0, 1)");
  EXPECT_CSV_ERROR("0F0,0RECV_F0,0B0\n1F0,1B0\n",
                   "cell 2 '0RECV_F0': RECV_F of stage 0: no stage sends it");
  EXPECT_CSV_ERROR("0F0,0B0\n1F0,1B0,1F0\n",
                   "line 2 (rank 1), cell 3 '1F0': 1F0 appears twice "
                   "(also at line 2 (rank 1), cell 1 '1F0')");
  EXPECT_CSV_ERROR("0F0,0B0,0W0\n1F0,1I0,1W0\n",
                   "cell 2 '0B0': B is a full backward");
  EXPECT_CSV_ERROR("0F0,0B0\n1F0,1B0,1UNSHARD,1XSHARD\n",
                   "cell 4 '1XSHARD': unknown computation type 'XSHARD'");
  EXPECT_CSV_ERROR("0F0,(0B0)FOO\n1F0,1B0\n", "only OVERLAP_F_B groups");
  EXPECT_CSV_ERROR("0F0,\"0B0\n1F0,1B0\n", "line 1 (rank 0): unterminated");
  // Well-formed cells, but the order or the table is wrong: verify's
  // message, in the CSV's own notation.
  EXPECT_CSV_ERROR("0B0,0F0\n1F0,1B0\n",
                   "CSV: rank 0, stage 0, microbatch 0: 0B0 (action 0) "
                   "runs before 0F0 (action 1)");
  EXPECT_CSV_ERROR("0F0,0B0\n1F0\n", "CSV: rank 1, stage 1, microbatch 0: no "
                                     "backward");
  std::string error = csvError("0F0\n", 1, 2, 1, Placement::Linear);
  EXPECT_NE(error.find("2 stages cannot be placed linear on 1 ranks"),
            std::string::npos)
      << error;
}

} // namespace
