//===- InputLimitsTest.cpp - the ceilings of Limits.h and the cost file ---===//
//
// The boundaries exactly: the largest accepted size passes and one more
// fails, so a ceiling cannot drift by one; the cost-file reader's type and
// depth checks name the key and what it found.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/CostFile.h"
#include "zbc/Schedule/Problem.h"
#include "zbc/Support/Limits.h"

#include "gtest/gtest.h"

#include <string>

using namespace zbc;
using namespace zbc::sched;

namespace {

std::string errorOf(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : std::string();
}

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  return value ? std::string() : llvm::toString(value.takeError());
}

TEST(Limits, CheckedArithmetic) {
  EXPECT_EQ(limits::checkedMul(1 << 20, 1 << 20), int64_t(1) << 40);
  EXPECT_FALSE(limits::checkedMul(int64_t(1) << 32, int64_t(1) << 32));
  EXPECT_FALSE(limits::checkedMul(-1, 2));
  EXPECT_EQ(limits::checkedAdd(1, 2), 3);
  EXPECT_FALSE(limits::checkedAdd(INT64_MAX, 1));
}

TEST(Limits, ProblemSizesAtTheirCeilings) {
  const int64_t maxRanks = limits::kMaxRanks;
  EXPECT_EQ(errorOf(checkProblemSize(maxRanks, 2, 256)), "");
  EXPECT_EQ(errorOf(checkProblemSize(maxRanks + 1, 1, 1)),
            "ranks must be in [1, 4096], got 4097");
  EXPECT_EQ(errorOf(checkProblemSize(1, 1, 0)),
            "microbatches must be in [1, 1048576], got 0");
  EXPECT_EQ(errorOf(checkProblemSize(1, 1, limits::kMaxMicrobatches)), "");
  EXPECT_NE(errorOf(checkProblemSize(4096, 3, 1)).find("at most 8192"),
            std::string::npos);
  EXPECT_EQ(errorOf(checkProblemSize(1024, 1, 2048)), "");
  EXPECT_NE(errorOf(checkProblemSize(1024, 1, 2049)).find("at most 2097152"),
            std::string::npos);
}

TEST(Limits, AmountsAndZeroWork) {
  Problem problem;
  problem.ranks = 2;
  problem.stages.assign(2, StageCost{});
  problem.stages[1].B = 0; // no input-gradient work: legal
  problem.stages[1].W = 0; // no weight-gradient work: legal
  EXPECT_EQ(errorOf(problem.validate()), "");
  problem.stages[0].F = limits::kMaxAmount;
  EXPECT_EQ(errorOf(problem.validate()), "");
  problem.stages[0].F = 2 * limits::kMaxAmount;
  EXPECT_NE(errorOf(problem.validate()).find("stage 0: F must be in (0, 1e+30]"),
            std::string::npos);
  problem.stages[0].F = 1;
  problem.activationBudget = -1;
  EXPECT_NE(errorOf(problem.validate()).find("activation budget must be in [0"),
            std::string::npos);
}

TEST(CostFile, ReadsEveryKey) {
  llvm::Expected<CostFile> file = parseCostFile(
      R"({"ranks": 2, "microbatches": 4, "virtual": 1, "comm": 0.5,
          "activation_budget": 0, "F": [1, 2], "B": 1, "W": 0, "M_B": 3, "M_W": [1, 1]})",
      "c.json");
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->ranks, 2);
  EXPECT_EQ(file->microbatches, 4);
  EXPECT_EQ(file->activationBudget, 0.0); // given: no limit, not "the default"
  EXPECT_EQ(file->F, (std::vector<double>{1, 2}));
  EXPECT_EQ(file->W, (std::vector<double>{0}));
  EXPECT_FALSE(parseCostFile("{}", "c.json")->activationBudget); // left out
}

TEST(CostFile, WrongTypesNameKeyFoundAndExpected) {
  auto error = [](const char *text) {
    return errorOf(parseCostFile(text, "c.json"));
  };
  EXPECT_EQ(error(R"({"ranks": true})"),
            "c.json: 'ranks' must be an integer in [1, 4096], got a boolean");
  EXPECT_EQ(error(R"({"virtual": 0})"),
            "c.json: 'virtual' must be an integer in [1, 8192], got 0");
  EXPECT_EQ(error(R"({"microbatches": 1e30})"),
            "c.json: 'microbatches' must be an integer in [1, 1048576], got 1e+30");
  EXPECT_EQ(error(R"({"comm": {"a": 1}})"),
            "c.json: 'comm' must be a number in [0, 1e+30], got an object");
  EXPECT_EQ(error(R"({"F": "1"})"),
            "c.json: 'F' must be a number or a list of numbers, got a string (\"1\")");
  EXPECT_EQ(error(R"({"W": [1, -1]})"),
            "c.json: 'W[1]' must be a number in [0, 1e+30], got -1");
  EXPECT_EQ(error("[1]"), "c.json: expected a JSON object, got a list");
  EXPECT_NE(error("{").find("c.json: "), std::string::npos);
}

TEST(CostFile, DepthIsBoundedBeforeParsing) {
  auto nested = [](int depth) {
    return std::string("{\"F\":") + std::string(depth - 1, '[') +
           std::string(depth - 1, ']') + "}";
  };
  // At the limit the reader runs (and rejects the nested lists by type).
  EXPECT_EQ(errorOf(parseCostFile(nested(64), "c.json")).find("nested"),
            std::string::npos);
  EXPECT_EQ(errorOf(parseCostFile(nested(65), "c.json")),
            "c.json:1:69: JSON nested deeper than 64 levels");
  // Brackets inside strings do not count.
  EXPECT_EQ(errorOf(checkJSONDepth("\"" + std::string(100, '[') + "\"", "s",
                                   limits::kMaxJSONDepth)),
            "");
}

} // namespace
