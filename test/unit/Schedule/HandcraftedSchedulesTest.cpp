//===- HandcraftedSchedulesTest.cpp - gpipe, 1f1b, interleaved, ZB-H1/H2 --===//
//
// Builds the handcrafted schedules through buildSchedule (validation, the
// builder, ScheduleTable::verify, the simulator) and checks them against the
// Zero Bubble paper's closed forms (ZB.md's schedule table), measured thus:
// bubble = makespan - m * (the busiest rank's F+B+W per microbatch), the
// makespan being the longest rank span, with stages of equal cost and no
// comm unless a test says otherwise.
//   - unit costs, p = 2..16, m in {2p, 2p+3, 4p}: 1F1B and GPipe
//     (p-1)(F+B+W), ZB-H1 (p-1)(F+B-W), ZB-H2 (p-1)(F+B-2W), exactly; peak
//     memory p M_B, p M_B, (2p-1) M_B, m M_B, and the per-rank forms;
//   - other costs: where the paper's forms hold (W <= F, and 2W <= F+B for
//     ZB-H2), and the general forms the construction reaches otherwise;
//   - m < 2p: valid schedules, the zero-bubble makespan for m <= p;
//   - interleaved 1F1B: Megatron's order, (p-1)(F+B+W) of one chunk per
//     microbatch for m % p == 0, valid schedules for any other m;
//   - the orders of the Zero Bubble paper's Figure 3 (p = 4, m = 8).
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Registry.h"

#include "llvm/ADT/StringRef.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

using namespace zbc::sched;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// p ranks, v stages each, m microbatches, every stage costing `cost`.
Problem uniform(int p, int m, StageCost cost = {}, int v = 1) {
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.virtualStages = v;
  problem.stages.assign(p * v, cost);
  return problem;
}

/// Unit times, M_B = 2 and M_W = 1: distinct, so the per-rank memory forms
/// tell M_B from M_W.
StageCost unitCost() { return {1, 1, 1, /*memB=*/2, /*memW=*/1}; }

std::optional<BuiltSchedule> build(llvm::StringRef name,
                                   const Problem &problem) {
  llvm::Expected<BuiltSchedule> built = buildSchedule(name, problem);
  if (!built) {
    ADD_FAILURE() << name.str() << " p=" << problem.ranks
                  << " m=" << problem.microbatches
                  << " v=" << problem.virtualStages << ": "
                  << llvm::toString(built.takeError());
    return std::nullopt;
  }
  return std::move(*built);
}

/// makespan - m * (F+B+W of a rank), stages of equal cost.
double bubble(const BuiltSchedule &built, const Problem &problem) {
  const StageCost &c = problem.stages[0];
  return built.sim.makespan -
         problem.microbatches * problem.virtualStages * (c.F + c.B + c.W);
}

std::string where(llvm::StringRef name, int p, int m, int v = 1) {
  return name.str() + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
         (v == 1 ? "" : " v=" + std::to_string(v));
}

/// A rank's actions in the papers' notation, e.g. "F(0,0) B(0,0) W(0,0)".
std::string order(const ScheduleTable &table, int rank) {
  std::string text;
  for (const Action &a : table.ranks[rank])
    text += (text.empty() ? "" : " ") + a.str();
  return text;
}

/// The same, microbatch numbers only ("F0 B0 W0"), for one-stage-per-rank
/// schedules.
std::string compact(const ScheduleTable &table, int rank) {
  std::string text;
  for (const Action &a : table.ranks[rank])
    text += (text.empty() ? "" : " ") + std::string(kindName(a.kind)) +
            std::to_string(a.microbatch);
  return text;
}

constexpr double kTol = 1e-9;

//===----------------------------------------------------------------------===//
// The closed forms with unit costs
//===----------------------------------------------------------------------===//

// F = B = W = 1: 1F1B and GPipe (p-1) * 3, ZB-H1 p - 1, ZB-H2 0, compared
// exactly (every time is an integer). Peaks with M_B = 2, M_W = 1: 1F1B
// (p - r) M_B, ZB-H1 (p-i+1) M_B + (i-1) M_W with i = r + 1 (the paper's
// 1-based form), ZB-H2 (2p-2r-1) M_B + 2r M_W, GPipe m M_B.
TEST(HandcraftedUnitCost, BubblesAndMemoryMatchClosedForms) {
  for (int p = 2; p <= 16; ++p) {
    for (int m : {2 * p, 2 * p + 3, 4 * p}) {
      Problem problem = uniform(p, m, unitCost());
      double MB = 2, MW = 1;
      struct Expect {
        const char *name;
        double bubble;
      } expects[] = {{"1f1b", (p - 1) * 3.0},
                     {"gpipe", (p - 1) * 3.0},
                     {"zb-h1", (p - 1) * 1.0},
                     {"zb-h2", 0.0}};
      for (const Expect &e : expects) {
        std::optional<BuiltSchedule> built = build(e.name, problem);
        if (!built)
          continue;
        EXPECT_DOUBLE_EQ(bubble(*built, problem), e.bubble)
            << where(e.name, p, m);
        EXPECT_DOUBLE_EQ(built->sim.bubbleRate, e.bubble / built->sim.makespan)
            << where(e.name, p, m);
        ASSERT_EQ(built->sim.peakMemory.size(), size_t(p));
        for (int r = 0; r < p; ++r) {
          int i = r + 1;
          double peak = llvm::StringRef(e.name) == "gpipe"  ? m * MB
                        : llvm::StringRef(e.name) == "1f1b" ? (p - r) * MB
                        : llvm::StringRef(e.name) == "zb-h1"
                            ? (p - i + 1) * MB + (i - 1) * MW
                            : (2 * p - 2 * r - 1) * MB + 2 * r * MW;
          EXPECT_DOUBLE_EQ(built->sim.peakMemory[r], peak)
              << where(e.name, p, m) << " rank " << r;
        }
      }
      // Rank 0's peaks, as the registry states them.
      std::optional<BuiltSchedule> h2 = build("zb-h2", problem);
      if (h2) {
        EXPECT_DOUBLE_EQ(h2->sim.peakMemory[0], (2 * p - 1) * MB);
      }
    }
  }
}

// The paper's Figure 3 (p = 4, m = 8), 0-based microbatches: ZB-H1 rank 0
// runs W right after each B, the last rank defers its W's by p - 1 = 3 B's;
// ZB-H2 rank 0 warms up with 2(p-1) = 6 forwards, the last rank defers its
// W's by 2(p-1) = 6 and runs the rest at the end.
TEST(HandcraftedOrder, ZeroBubblePaperFigure3) {
  Problem problem = uniform(4, 8, unitCost());
  std::optional<BuiltSchedule> h1 = build("zb-h1", problem);
  std::optional<BuiltSchedule> h2 = build("zb-h2", problem);
  ASSERT_TRUE(h1 && h2);
  EXPECT_EQ(compact(h1->table, 0), "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 "
                                   "W3 F7 B4 W4 B5 W5 B6 W6 B7 W7");
  EXPECT_EQ(compact(h1->table, 1), "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 "
                                   "B4 W3 F7 B5 W4 B6 W5 B7 W6 W7");
  EXPECT_EQ(compact(h1->table, 3), "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 "
                                   "W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
  EXPECT_EQ(compact(h2->table, 0), "F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 B2 W2 "
                                   "B3 W3 B4 W4 B5 W5 B6 W6 B7 W7");
  EXPECT_EQ(compact(h2->table, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 "
                                   "W0 F7 B7 W1 W2 W3 W4 W5 W6 W7");
  // Zero bubble: rank 0 never idles (3 * 8 = 24 busy), nor does any rank.
  EXPECT_DOUBLE_EQ(h2->sim.makespan, 24);
  for (double idle : h2->sim.idle)
    EXPECT_DOUBLE_EQ(idle, 0);
}

TEST(HandcraftedOrder, GPipeAndOneFOneB) {
  Problem problem = uniform(3, 4, unitCost());
  std::optional<BuiltSchedule> gpipe = build("gpipe", problem);
  std::optional<BuiltSchedule> f1b1 = build("1f1b", problem);
  ASSERT_TRUE(gpipe && f1b1);
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(compact(gpipe->table, r), "F0 F1 F2 F3 BW3 BW2 BW1 BW0");
  EXPECT_EQ(compact(f1b1->table, 0), "F0 F1 F2 BW0 F3 BW1 BW2 BW3");
  EXPECT_EQ(compact(f1b1->table, 1), "F0 F1 BW0 F2 BW1 F3 BW2 BW3");
  EXPECT_EQ(compact(f1b1->table, 2), "F0 BW0 F1 BW1 F2 BW2 F3 BW3");
  EXPECT_EQ(order(f1b1->table, 2), "F(2,0) BW(2,0) F(2,1) BW(2,1) F(2,2) "
                                   "BW(2,2) F(2,3) BW(2,3)");
}

//===----------------------------------------------------------------------===//
// Other costs
//===----------------------------------------------------------------------===//

// F = 1.2, B = 1.1, W = 0.7: W <= F and 2W <= F + B, where the paper's
// forms hold exactly, from m = p for ZB-H1 and m = 2p - 1 for ZB-H2 on.
TEST(HandcraftedCosts, PaperFormsHoldWhenWeightGradientIsSmall) {
  StageCost cost{1.2, 1.1, 0.7, 2, 1};
  double F = cost.F, B = cost.B, W = cost.W;
  for (int p = 2; p <= 16; ++p) {
    for (int m : {p, 2 * p - 1, 2 * p, 2 * p + 3, 4 * p}) {
      Problem problem = uniform(p, m, cost);
      std::vector<std::pair<const char *, double>> expects = {
          {"1f1b", (p - 1) * (F + B + W)},
          {"gpipe", (p - 1) * (F + B + W)},
          {"zb-h1", (p - 1) * (F + B - W)}};
      if (m >= 2 * p - 1)
        expects.push_back({"zb-h2", (p - 1) * (F + B - 2 * W)});
      for (auto [name, expected] : expects) {
        std::optional<BuiltSchedule> built = build(name, problem);
        if (built) {
          EXPECT_NEAR(bubble(*built, problem), expected, kTol)
              << where(name, p, m);
        }
      }
    }
  }
}

// The construction's bubble for any positive F, B, W (equal stages, no
// comm): ZB-H1 (p-1)(F + B - min(W, F)), ZB-H2 (p-1) max(0, F + B -
// 2 min(W, F)). A W longer than F cannot hide between two B's arriving
// F + B apart, so the paper's forms (which assume T_W < T_F) understate
// the bubble there: e.g. F = B = 1, W = 2 gives p - 1 for ZB-H1, not 0.
// 1F1B and GPipe stay (p-1)(F+B+W) for any costs.
TEST(HandcraftedCosts, GeneralFormsForAnyCosts) {
  const double values[] = {0.3, 0.7, 1.0, 1.5, 2.5};
  for (double F : values)
    for (double B : values)
      for (double W : values)
        for (int p : {2, 3, 5, 8})
          for (int m : {2 * p, 3 * p + 1}) {
            Problem problem = uniform(p, m, {F, B, W, 1, 1});
            std::pair<const char *, double> expects[] = {
                {"1f1b", (p - 1) * (F + B + W)},
                {"gpipe", (p - 1) * (F + B + W)},
                {"zb-h1", (p - 1) * (F + B - std::min(W, F))},
                {"zb-h2", (p - 1) * std::max(0.0, F + B - 2 * std::min(W, F))}};
            for (auto [name, expected] : expects) {
              std::optional<BuiltSchedule> built = build(name, problem);
              if (built) {
                EXPECT_NEAR(bubble(*built, problem), expected, kTol)
                    << where(name, p, m) << " F=" << F << " B=" << B
                    << " W=" << W;
              }
            }
          }
}

//===----------------------------------------------------------------------===//
// Few microbatches
//===----------------------------------------------------------------------===//

// m < 2p (the reference code needs m >= 2p): every schedule is valid. With
// m <= p the ZB schedules reach the zero-bubble makespan (m+p-1)(F+B) + W
// (the forward chain, the backward chain, rank 0's last W) whenever W <= F;
// with unit costs ZB-H2's bubble is 2p - 1 - m for every m < 2p - 1, the
// least possible (rank 0's first B cannot start before 2p - 1, and it has
// only m forwards to fill the wait), and ZB-H1 stays at p - 1 from m = p on.
// 1F1B and GPipe keep (p-1)(F+B+W). Rank 0 holds min(m, p) M_B under
// ZB-H1 and every microbatch at once, m M_B, under ZB-H2.
TEST(HandcraftedFewMicrobatches, ValidAndZeroBubbleBound) {
  for (int p = 1; p <= 10; ++p) {
    for (int m = 1; m < 2 * p; ++m) {
      Problem unit = uniform(p, m, unitCost());
      std::pair<const char *, double> expects[] = {
          {"1f1b", (p - 1) * 3.0},
          {"gpipe", (p - 1) * 3.0},
          {"zb-h1", m <= p ? (m + p - 1) * 2 + 1 - 3 * m : p - 1.0},
          {"zb-h2", std::max(0, 2 * p - 1 - m) * 1.0}};
      for (auto [name, expected] : expects) {
        std::optional<BuiltSchedule> built = build(name, unit);
        if (!built)
          continue;
        EXPECT_DOUBLE_EQ(bubble(*built, unit), expected) << where(name, p, m);
        if (llvm::StringRef(name) == "zb-h1") {
          EXPECT_DOUBLE_EQ(built->sim.peakMemory[0], std::min(m, p) * 2.0)
              << where(name, p, m);
        }
        if (llvm::StringRef(name) == "zb-h2") {
          EXPECT_DOUBLE_EQ(built->sim.peakMemory[0], m * 2.0)
              << where(name, p, m);
        }
      }
      if (m > p)
        continue;
      StageCost cost{1.2, 1.1, 0.7, 1, 1};
      Problem problem = uniform(p, m, cost);
      for (const char *name : {"zb-h1", "zb-h2"}) {
        std::optional<BuiltSchedule> built = build(name, problem);
        if (built) {
          EXPECT_NEAR(built->sim.makespan,
                      (m + p - 1) * (cost.F + cost.B) + cost.W, kTol)
              << where(name, p, m);
        }
      }
    }
  }
}

// For m <= p ZB-H2 is ZB-H1: no memory to spend on extra forwards.
TEST(HandcraftedFewMicrobatches, ZBH2IsZBH1UpToP) {
  for (int p = 1; p <= 6; ++p)
    for (int m = 1; m <= p; ++m) {
      Problem problem = uniform(p, m);
      std::optional<BuiltSchedule> h1 = build("zb-h1", problem);
      std::optional<BuiltSchedule> h2 = build("zb-h2", problem);
      ASSERT_TRUE(h1 && h2);
      for (int r = 0; r < p; ++r)
        EXPECT_EQ(order(h1->table, r), order(h2->table, r))
            << where("zb-h2", p, m) << " rank " << r;
    }
}

//===----------------------------------------------------------------------===//
// Robustness: comm, uneven stages, one rank
//===----------------------------------------------------------------------===//

// Comm and uneven stages only change the timing of the fixed orders: every
// schedule stays valid (buildSchedule simulates it), and no rank can beat
// the busiest stage's work.
TEST(HandcraftedRobustness, CommAndUnevenStages) {
  for (int p : {2, 3, 6})
    for (int m : {1, p - 1, p + 1, 2 * p, 3 * p + 2}) {
      if (m < 1)
        continue;
      Problem problem = uniform(p, m);
      problem.comm = 0.25;
      double busiest = 0;
      for (int s = 0; s < p; ++s) {
        StageCost &c = problem.stages[s];
        c = {1.0 + 0.3 * s, 1.5 - 0.1 * s, 0.4 + 0.2 * (s % 2), 1.0 + s, 0.5};
        busiest = std::max(busiest, m * (c.F + c.B + c.W));
      }
      for (const char *name : {"1f1b", "gpipe", "zb-h1", "zb-h2"}) {
        std::optional<BuiltSchedule> built = build(name, problem);
        if (built) {
          EXPECT_GE(built->sim.makespan, busiest - kTol) << where(name, p, m);
        }
      }
    }
}

// One rank: nothing to pipeline, so no bubble.
TEST(HandcraftedRobustness, SingleRank) {
  for (int m : {1, 2, 7}) {
    Problem problem = uniform(1, m, {1.2, 1.1, 0.7, 1, 1});
    for (const char *name : {"1f1b", "gpipe", "zb-h1", "zb-h2"}) {
      std::optional<BuiltSchedule> built = build(name, problem);
      if (built) {
        EXPECT_NEAR(bubble(*built, problem), 0, kTol) << where(name, 1, m);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Interleaved 1F1B
//===----------------------------------------------------------------------===//

// Megatron's order for p = 2, v = 2, m = 4: forwards in groups of p per
// chunk, (0,c0) (1,c0) (0,c1) (1,c1) (2,c0) ..; backwards the same with the
// chunk mirrored; rank r warms up with 2(p - r - 1) + (v - 1) p forwards.
// Stage k is on rank k % p.
TEST(HandcraftedInterleaved, MegatronOrder) {
  Problem problem = uniform(2, 4, {}, /*v=*/2);
  std::optional<BuiltSchedule> built = build("interleaved-1f1b", problem);
  ASSERT_TRUE(built);
  EXPECT_EQ(built->table.rankOfStage, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(order(built->table, 0),
            "F(0,0) F(0,1) F(2,0) F(2,1) F(0,2) BW(2,0) F(0,3) BW(2,1) "
            "F(2,2) BW(0,0) F(2,3) BW(0,1) BW(2,2) BW(2,3) BW(0,2) BW(0,3)");
  EXPECT_EQ(order(built->table, 1),
            "F(1,0) F(1,1) F(3,0) BW(3,0) F(3,1) BW(3,1) F(1,2) BW(1,0) "
            "F(1,3) BW(1,1) F(3,2) BW(3,2) F(3,3) BW(3,3) BW(1,2) BW(1,3)");
  EXPECT_TRUE(built->report.notes.empty());
}

// m % p == 0, equal chunks, no comm: the bubble is (p-1)(F+B+W) of one
// chunk, i.e. Megatron's (p-1)(F+B+W)/v of a whole rank's layers, for unit
// and other costs. Rank 0 holds 2(p-1) + (v-1)p + 1 = vp + p - 1 chunk
// activations (vp when m == p: Megatron runs everything as warm-up then).
TEST(HandcraftedInterleaved, BubbleIsOneOverV) {
  for (StageCost cost :
       {StageCost{1, 1, 1, 1, 1}, StageCost{1.2, 1.1, 0.7, 1, 1},
        StageCost{0.5, 2.0, 1.5, 1, 1}})
    for (int v : {2, 3})
      for (int p = 2; p <= 8; ++p)
        for (int m : {p, 2 * p, 3 * p}) {
          Problem problem = uniform(p, m, cost, v);
          std::optional<BuiltSchedule> built =
              build("interleaved-1f1b", problem);
          if (!built)
            continue;
          double full = v * (cost.F + cost.B + cost.W); // a rank's layers
          EXPECT_NEAR(bubble(*built, problem), (p - 1) * full / v, kTol)
              << where("interleaved-1f1b", p, m, v);
          EXPECT_DOUBLE_EQ(built->sim.peakMemory[0],
                           m == p ? v * p : v * p + p - 1)
              << where("interleaved-1f1b", p, m, v);
          // A v-th of 1F1B's bubble on the same layers (one stage per rank
          // costing v chunks).
          Problem plain =
              uniform(p, m, {v * cost.F, v * cost.B, v * cost.W, 1, 1});
          std::optional<BuiltSchedule> f1b1 = build("1f1b", plain);
          if (f1b1) {
            EXPECT_NEAR(bubble(*f1b1, plain), v * bubble(*built, problem), 1e-6)
                << where("interleaved-1f1b", p, m, v);
          }
        }
}

// Megatron requires m % p == 0; zbc builds any m by building for m rounded
// up to a multiple of p and leaving the missing microbatches out (see
// Interleaved1F1B.cpp), and says so in the report. Valid for every m, with
// no more memory than the rounded-up schedule.
TEST(HandcraftedInterleaved, AnyMicrobatchCount) {
  for (int v : {2, 3})
    for (int p = 2; p <= 8; ++p)
      for (int m = 1; m <= 3 * p + 1; ++m) {
        Problem problem = uniform(p, m, {}, v);
        std::optional<BuiltSchedule> built = build("interleaved-1f1b", problem);
        if (!built)
          continue;
        EXPECT_EQ(built->report.notes.empty(), m % p == 0)
            << where("interleaved-1f1b", p, m, v);
        int padded = (m + p - 1) / p * p;
        EXPECT_LE(built->sim.peakMemory[0], padded == p ? v * p : v * p + p - 1)
            << where("interleaved-1f1b", p, m, v);
        EXPECT_GE(bubble(*built, problem), (p - 1) * 3.0 - kTol)
            << where("interleaved-1f1b", p, m, v);
      }
}

// v = 1 is plain 1F1B.
TEST(HandcraftedInterleaved, OneChunkIsOneFOneB) {
  for (int p : {1, 2, 5})
    for (int m : {1, p, 2 * p + 1}) {
      Problem problem = uniform(p, m);
      std::optional<BuiltSchedule> inter = build("interleaved-1f1b", problem);
      std::optional<BuiltSchedule> plain = build("1f1b", problem);
      ASSERT_TRUE(inter && plain);
      for (int r = 0; r < p; ++r)
        EXPECT_EQ(order(inter->table, r), order(plain->table, r))
            << where("interleaved-1f1b", p, m);
    }
}

} // namespace
