//===- CompileOptionsTest.cpp - the typed compile request -----------------===//
//
// CompileOptions.h: every option read back as it is written, values
// refused with the words every front end prints, and the passes' textual
// options bound to the same declaration (PassOptionBinder.h): a pass made
// from typed options prints them, and its text parses back to them.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Options/CompileOptions.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Passes/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "gtest/gtest.h"

#include <set>

using namespace zbc;

namespace {

std::string errorOf(llvm::Error error) { return llvm::toString(std::move(error)); }

/// A binder that writes every option's text and reads it back into a
/// fresh struct: what the pass options and the flags do, without them.
struct RoundTrip {
  std::vector<std::string> names;
  std::vector<std::string> failures;
  template <typename T> void operator()(T &field, const OptionInfo &info) {
    names.push_back(info.name);
    T copy{};
    if (llvm::Error e = readOptionValue(optionValueText(field), copy, info.bounds))
      failures.push_back(std::string(info.name) + ": " + errorOf(std::move(e)));
    else if (!(copy == field))
      failures.push_back(std::string(info.name) + ": read back differently");
  }
};

TEST(CompileOptions, EveryOptionReadsBackAsWritten) {
  CompileOptions options;
  options.schedule = "zb-v";
  options.exactSeconds = 2.5;
  options.recompute = RecomputeLever::Checkpoint;
  options.offload = OffloadLever::Auto;
  options.microbatches = 64;
  options.stagesPerRank = 2;
  options.activationBudget = ActivationBudget::bytes(123456789);
  options.memoryLimit = 80000000000;
  options.optimizer = Optimizer::AdamW;
  options.costFile = "costs.json";
  options.comm = 0.1;
  options.copyBandwidth = 1e9;
  options.stages = 16;
  RoundTrip trip;
  options.bind(trip);
  EXPECT_TRUE(trip.failures.empty()) << trip.failures.front();
  // Each option once, under one name.
  EXPECT_EQ(std::set<std::string>(trip.names.begin(), trip.names.end()).size(),
            trip.names.size());
  // The three states of a budget, and an unset stages-per-rank.
  for (ActivationBudget budget :
       {ActivationBudget(), ActivationBudget::none(), ActivationBudget::bytes(7)}) {
    ActivationBudget read = ActivationBudget::bytes(1);
    ASSERT_FALSE(readOptionValue(optionValueText(budget), read, std::nullopt));
    EXPECT_TRUE(read == budget) << optionValueText(budget);
  }
  std::optional<int64_t> unset = 3;
  ASSERT_FALSE(readOptionValue(optionValueText(std::optional<int64_t>()), unset,
                               std::nullopt));
  EXPECT_FALSE(unset);
}

TEST(CompileOptions, RefusalsSayWhatIsAccepted) {
  int64_t count = 0;
  EXPECT_EQ(errorOf(readOptionValue("0", count, Bounds{1, 1048576})),
            "'0' is not an integer in [1, 1048576]");
  EXPECT_EQ(errorOf(readOptionValue("4x", count, Bounds{1, 8})),
            "'4x' is not an integer in [1, 8]");
  double seconds = 0;
  EXPECT_EQ(errorOf(readOptionValue("-1", seconds, Bounds{0, 86400})),
            "'-1' is not a number in [0, 86400]");
  RecomputeLever lever;
  EXPECT_EQ(errorOf(readOptionValue("some", lever, std::nullopt)),
            "recompute mode must be 'none', 'full', 'selective', 'auto' or "
            "'checkpoint', got 'some'");
  Optimizer optimizer;
  EXPECT_EQ(errorOf(readOptionValue("adam", optimizer, std::nullopt)),
            "optimizer must be 'sgd' or 'adamw', got 'adam'");
  ActivationBudget budget;
  EXPECT_NE(errorOf(readOptionValue("-3", budget, std::nullopt))
                .find("activation budget must be 'default', 'none' or "
                      "bytes"),
            std::string::npos);
}

/// The textual form of `pass` as a pipeline prints it.
std::string textOf(mlir::Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pass.printAsTextualPipeline(os);
  return text;
}

TEST(CompileOptions, PassesPrintTheTypedOptionsTheyWereMadeWith) {
  mlir::MLIRContext context;
  context.loadDialect<zb::ZBDialect>();
  CompileOptions options;
  options.schedule = "zb-auto";
  options.microbatches = 8;
  options.recompute = RecomputeLever::Auto;
  options.memoryLimit = 2200000;
  options.costFile = "costs.json";
  std::unique_ptr<mlir::Pass> schedule = createZBSchedulePass(options);
  std::string text = textOf(*schedule);
  for (const char *expected :
       {"schedule=zb-auto", "microbatches=8", "recompute=auto",
        "memory-limit=2200000", "activation-budget=default"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << " in " << text;
  // The costs are zb-stage-costs' options, not zb-schedule's.
  EXPECT_EQ(text.find("cost-file"), std::string::npos) << text;
  std::unique_ptr<mlir::Pass> costs = createZBStageCostsPass(options);
  EXPECT_NE(textOf(*costs).find("cost-file=costs.json"), std::string::npos)
      << textOf(*costs);
}

TEST(CompileOptions, PipelineTextParsesToTheTypedOptions) {
  std::unique_ptr<LowerToProgramCLOptions> parsed =
      LowerToProgramCLOptions::createFromString(
          "schedule=interleaved-1f1b microbatches=16 virtual=2 "
          "recompute=checkpoint offload=full copy-bandwidth=1e9 "
          "activation-budget=none optimizer=adamw stages=8");
  ASSERT_TRUE(parsed);
  CompileOptions options = parsed->options();
  EXPECT_EQ(options.schedule, "interleaved-1f1b");
  EXPECT_EQ(options.microbatches, 16);
  EXPECT_EQ(options.stagesPerRank, std::optional<int64_t>(2));
  EXPECT_EQ(options.recompute, RecomputeLever::Checkpoint);
  EXPECT_EQ(options.offload, OffloadLever::Full);
  EXPECT_EQ(options.copyBandwidth, 1e9);
  EXPECT_TRUE(options.activationBudget.isNone());
  EXPECT_EQ(options.optimizer, Optimizer::AdamW);
  EXPECT_EQ(options.stages, 8);
  // Left out: the declaration's defaults.
  CompileOptions defaults =
      LowerToProgramCLOptions::createFromString("")->options();
  EXPECT_EQ(defaults.schedule, "1f1b");
  EXPECT_FALSE(defaults.stagesPerRank);
  EXPECT_TRUE(defaults.activationBudget.isScheduleDefault());
  // A value its reading refuses is refused when parsed.
  EXPECT_FALSE(LowerToProgramCLOptions::createFromString("microbatches=0"));
}

} // namespace
