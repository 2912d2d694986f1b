//===- InterpreterBFloat16Test.cpp - bf16 in the reference interpreter ----===//
//
// Checks Note [bf16] (zbc/contracts/BFloat16.h) where the interpreter applies
// it (Executor::store): roundToBFloat16 itself; that at F32 every value of
// a bf16 model is bf16 (the loss against the kernels with one rounding per
// op, every value each phase of its pipeline yields, the fill constants and
// bound keys) while the caller's fp32 master weights and the step's grad
// sums are not rounded; that the bf16 model stays within 2e-2 of its f32
// twin; and that at F64 bf16 computes exactly, so the two are bitwise equal.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Interpreter/Interpreter.h"
#include "zbc/Interpreter/Kernels.h"
#include "zbc/Passes/Passes.h"
#include "zbc/contracts/BFloat16.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

using namespace zbc::interp;
using zbc::FailureOr;
using zbc::succeeded;
using zbc::rt::roundToBFloat16;
namespace zb = zbc::zb;

namespace {

constexpr Precision F64 = Precision::F64;
constexpr Precision F32 = Precision::F32;

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

//===----------------------------------------------------------------------===//
// roundToBFloat16
//===----------------------------------------------------------------------===//

TEST(BFloat16, RoundsTiesToEven) {
  // Around 1, bf16 steps by 2^-7; 1 + 2^-8 is half way.
  const float ulp = std::ldexp(1.0f, -7), half = ulp / 2;
  EXPECT_EQ(roundToBFloat16(1.0f + half), 1.0f);                 // to even 1
  EXPECT_EQ(roundToBFloat16(1.0f + ulp + half), 1.0f + 2 * ulp); // to even
  EXPECT_EQ(roundToBFloat16(-(1.0f + half)), -1.0f);
  EXPECT_EQ(roundToBFloat16(-(1.0f + ulp + half)), -(1.0f + 2 * ulp));
  // Off the tie, to nearest.
  EXPECT_EQ(roundToBFloat16(std::nextafter(1.0f + half, 2.0f)), 1.0f + ulp);
  EXPECT_EQ(roundToBFloat16(std::nextafter(1.0f + half, 0.0f)), 1.0f);
  // bf16 values are kept.
  for (float x : {0.0f, 1.0f, -3.0f, 0.5f, 1.0f + ulp, 65536.0f})
    EXPECT_EQ(bitsOf(roundToBFloat16(x)), bitsOf(x)) << x;
  // Not a truncation: 0.1f (0x3DCCCCCD) rounds up to 0x3DCD.
  EXPECT_EQ(bitsOf(roundToBFloat16(0.1f)), 0x3DCD0000u);
}

TEST(BFloat16, RoundsNearOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  const float maxBf16 = fromBits(0x7F7F0000u); // (2 - 2^-7) 2^127
  EXPECT_EQ(roundToBFloat16(maxBf16), maxBf16);
  EXPECT_EQ(roundToBFloat16(fromBits(0x7F7F7FFFu)), maxBf16); // below the tie
  // The tie above the largest bf16 (odd mantissa) goes to even: infinity.
  EXPECT_EQ(roundToBFloat16(fromBits(0x7F7F8000u)), inf);
  EXPECT_EQ(roundToBFloat16(std::numeric_limits<float>::max()), inf);
  EXPECT_EQ(roundToBFloat16(-std::numeric_limits<float>::max()), -inf);
  EXPECT_EQ(roundToBFloat16(inf), inf);
  EXPECT_EQ(roundToBFloat16(-inf), -inf);
}

TEST(BFloat16, KeepsNaNAndSignedZero) {
  // A NaN whose payload lies only in the low 16 bits would become infinity
  // if merely truncated or rounded.
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    float r = roundToBFloat16(fromBits(bits));
    EXPECT_TRUE(std::isnan(r)) << std::hex << bits;
    EXPECT_EQ(std::signbit(r), std::signbit(fromBits(bits)))
        << std::hex << bits;
  }
  EXPECT_EQ(bitsOf(roundToBFloat16(-0.0f)), 0x80000000u);
  // The smallest subnormals round to zeros of their sign.
  EXPECT_EQ(bitsOf(roundToBFloat16(fromBits(0x00000001u))), 0x00000000u);
  EXPECT_EQ(bitsOf(roundToBFloat16(fromBits(0x80000001u))), 0x80000000u);
}

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

// Two stages: linear, bias_add, gelu | layernorm, linear, cross_entropy.
constexpr const char *kMlpBf16 = R"mlir(
zb.model @mlp {
  %x = zb.input "x" : tensor<4x6xbf16>
  %y = zb.label "y" : tensor<4xi64>
  %w0 = zb.param "w0" init normal(0.5) : tensor<6x8xbf16>
  %b0 = zb.param "b0" init uniform(0.5) : tensor<8xbf16>
  %h = zb.linear %x, %w0 : (tensor<4x6xbf16>, tensor<6x8xbf16>) -> tensor<4x8xbf16>
  %hb = zb.bias_add %h, %b0 : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %a = zb.gelu %hb : tensor<4x8xbf16>
  %c = zb.cut %a : tensor<4x8xbf16>
  %g = zb.param "ln.g" init uniform(1.0) : tensor<8xbf16>
  %b = zb.param "ln.b" init normal(0.1) : tensor<8xbf16>
  %w1 = zb.param "w1" init normal(0.5) : tensor<8x5xbf16>
  %n = zb.layernorm %c, %g, %b : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %o = zb.linear %n, %w1 : (tensor<4x8xbf16>, tensor<8x5xbf16>) -> tensor<4x5xbf16>
  %l = zb.cross_entropy %o, %y : (tensor<4x5xbf16>, tensor<4xi64>) -> tensor<bf16>
  zb.loss %l : tensor<bf16>
}
)mlir";

/// The same model with f32 types.
std::string f32Twin(std::string text) {
  for (size_t pos; (pos = text.find("bf16")) != std::string::npos;)
    text.replace(pos, 4, "f32");
  return text;
}

/// A parsed model and the split pipeline zb-autodiff + zb-split-backward
/// make from it.
struct Compiled {
  explicit Compiled(llvm::StringRef text) {
    context.loadDialect<zb::ZBDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
    if (!module)
      return;
    model = *module->getOps<zb::ModelOp>().begin();
    pipelineModule = module->clone();
    mlir::PassManager pm(&context);
    pm.addPass(zbc::createZBAutodiffPass());
    pm.addPass(zbc::createZBSplitBackwardPass());
    if (failed(pm.run(*pipelineModule)))
      return;
    pipeline = *pipelineModule->getOps<zb::PipelineOp>().begin();
  }
  bool ok() const { return model && pipeline; }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module, pipelineModule;
  zb::ModelOp model;
  zb::PipelineOp pipeline;
};

TensorMap merge(TensorMap a, const TensorMap &b) {
  a.insert(b.begin(), b.end());
  return a;
}

/// "" if every element of `t` is a bf16 value (or `t` holds integers), else
/// the first one that is not.
std::string notBFloat16(const Tensor &t) {
  if (!t.isFloat())
    return "";
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double x = t.get(i);
    if (static_cast<double>(roundToBFloat16(static_cast<float>(x))) != x)
      return formatIndex(t.shape(), i) + " = " + std::to_string(x) +
             " is not a bf16 value";
  }
  return "";
}

bool anyNotBFloat16(const TensorMap &map) {
  for (const auto &[key, t] : map)
    if (!notBFloat16(t).empty())
      return true;
  return false;
}

/// One microbatch through `pipeline` phase by phase with runPhase, in
/// runPipelineStep's order; returns each stage's environment, which holds
/// everything its phases yielded.
std::vector<TensorMap> runStages(zb::PipelineOp pipeline, const TensorMap &mb,
                                 const TensorMap &params, Precision p) {
  auto stages =
      llvm::to_vector(pipeline.getBody().front().getOps<zb::StageOp>());
  std::vector<TensorMap> envs(stages.size(), merge(mb, params));
  // Copies `from`'s `kind` keys to `to` under their counterparts.
  auto pass = [](const TensorMap &from, zb::KeyKind kind, TensorMap &to) {
    for (const auto &[key, t] : from)
      if (auto parsed = zb::PhaseKey::parse(key);
          parsed && parsed->kind == kind)
        to[parsed->counterpart()->str()] = t;
  };
  for (size_t k = 0; k < stages.size(); ++k) {
    if (k > 0)
      pass(envs[k - 1], zb::KeyKind::Out, envs[k]);
    EXPECT_TRUE(succeeded(runPhase(stages[k].getPhases().front(), envs[k], p)));
  }
  for (size_t k = stages.size(); k-- > 0;) {
    if (k + 1 < stages.size())
      pass(envs[k + 1], zb::KeyKind::DIn, envs[k]);
    auto phases = stages[k].getPhases();
    for (zb::PhaseOp phase : llvm::drop_begin(phases))
      EXPECT_TRUE(succeeded(runPhase(phase, envs[k], p)));
  }
  return envs;
}

//===----------------------------------------------------------------------===//
// F32: every bf16 value is bf16
//===----------------------------------------------------------------------===//

/// kMlpBf16's loss composed from the kernels at F32, with the leaves and
/// the ops' results rounded to bf16 or not.
Tensor composedLoss(const TensorMap &feeds, bool roundLeaves,
                    bool roundResults) {
  auto round = [](Tensor t, bool really) {
    for (int64_t i = 0; really && i < t.numElements(); ++i)
      t.set(i, roundToBFloat16(static_cast<float>(t.get(i))));
    return t;
  };
  auto r = [&](Tensor t) { return round(std::move(t), roundResults); };
  auto leaf = [&](const char *key) {
    return round(feeds.at(key).cast(F32), roundLeaves);
  };
  namespace k = kernels;
  Tensor h = r(k::linear(leaf("input.x"), leaf("param.w0")));
  h = r(k::gelu(r(k::biasAdd(h, leaf("param.b0")))));
  h = r(k::layerNorm(h, leaf("param.ln.g"), leaf("param.ln.b"), 1e-5));
  std::string error;
  FailureOr<Tensor> loss = k::crossEntropy(r(k::linear(h, leaf("param.w1"))),
                                           feeds.at("label.y"), -100, error);
  EXPECT_TRUE(succeeded(loss)) << error;
  return succeeded(loss) ? r(*loss) : Tensor();
}

// runModel's loss is the kernels' composition with every bf16 leaf rounded
// when bound and every op's result rounded, bit for bit; the feeds (fp32,
// as the caller holds them) are left as they were. Over several seeds, so
// that leaving out either half of the rule changes some loss.
TEST(InterpreterBFloat16, RunModelRoundsEveryLeafAndResult) {
  Compiled c(kMlpBf16);
  ASSERT_TRUE(c.ok());
  int leavesMatter = 0, resultsMatter = 0;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    TensorMap feeds = merge(randomFeeds(c.model, seed, F32),
                            initParams(c.model, seed + 100, F32));
    ASSERT_FALSE(notBFloat16(feeds["input.x"]).empty());
    ASSERT_FALSE(notBFloat16(feeds["param.w0"]).empty());
    TensorMap before = feeds;
    FailureOr<Tensor> loss = runModel(c.model, feeds, F32);
    ASSERT_TRUE(succeeded(loss));
    EXPECT_EQ(notBFloat16(*loss), "");
    Tensor expected = composedLoss(feeds, true, true);
    EXPECT_TRUE(bitwiseEqual(*loss, expected))
        << "seed " << seed << ": " << loss->toString() << " vs "
        << expected.toString();
    leavesMatter += !bitwiseEqual(composedLoss(feeds, false, true), expected);
    resultsMatter += !bitwiseEqual(composedLoss(feeds, true, false), expected);
    for (auto &[key, t] : feeds)
      EXPECT_TRUE(bitwiseEqual(t, before[key])) << key;
  }
  EXPECT_GT(leavesMatter, 0);
  EXPECT_GT(resultsMatter, 0);
}

// Every value every phase yields (activations sent and received, saved F.*
// and B.* values, d_in, one microbatch's grads, the loss) is bf16; the
// parameters' fp32 master weights in the environment stay as they were.
TEST(InterpreterBFloat16, EveryPhaseValueIsBFloat16) {
  Compiled c(kMlpBf16);
  ASSERT_TRUE(c.ok());
  TensorMap params = initParams(c.pipeline, 3, F32);
  TensorMap mb = randomMicrobatches(c.pipeline, 1, 4, F32)[0];
  std::vector<TensorMap> envs = runStages(c.pipeline, mb, params, F32);
  ASSERT_EQ(envs.size(), 2u);
  int checked = 0;
  for (size_t k = 0; k < envs.size(); ++k)
    for (const auto &[key, t] : envs[k]) {
      zb::KeyKind kind = zb::PhaseKey::parse(key)->kind;
      if (kind == zb::KeyKind::Param) {
        EXPECT_TRUE(bitwiseEqual(t, params.at(key))) << key;
        continue;
      }
      if (kind == zb::KeyKind::Input || kind == zb::KeyKind::Label)
        continue;
      ++checked;
      EXPECT_EQ(notBFloat16(t), "") << "stage " << k << " " << key;
    }
  // loss, out/in, F.*, B.*, d_in/d_out and the five grads at least.
  EXPECT_GE(checked, 12);
  EXPECT_TRUE(envs[1].count("loss") && envs[0].count("grad.w0"));
  EXPECT_TRUE(anyNotBFloat16(params)) << "the master weights are fp32";
}

// zb.fill rounds its constant, a bound bf16 key is rounded while the same
// key bound as f32 is not, and an integer key passes through.
TEST(InterpreterBFloat16, FillAndBoundKeysAreRounded) {
  constexpr const char *text = R"mlir(
zb.pipeline @p {
  zb.stage 0 {
    %x = zb.input "x" : tensor<3xbf16>
    %z = zb.input "z" : tensor<3xf32>
    %y = zb.label "y" : tensor<3xi64>
    zb.phase F(%x0 = "input.x" : tensor<3xbf16>, %z0 = "input.z" : tensor<3xf32>,
               %y0 = "label.y" : tensor<3xi64>) {
      %t = zb.fill 0.1 : tensor<3xbf16>
      %u = zb.fill 0.1 : tensor<3xf32>
      %s = zb.add %x0, %t : tensor<3xbf16>
      zb.yield "F.0" = %x0, "F.1" = %z0, "F.2" = %y0, "F.3" = %t, "F.4" = %u,
               "F.5" = %s
          : tensor<3xbf16>, tensor<3xf32>, tensor<3xi64>, tensor<3xbf16>,
            tensor<3xf32>, tensor<3xbf16>
    }
  }
}
)mlir";
  mlir::MLIRContext context;
  context.loadDialect<zb::ZBDialect>();
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/false);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, config);
  ASSERT_TRUE(module);
  zb::PipelineOp pipeline = *module->getOps<zb::PipelineOp>().begin();
  zb::StageOp stage = *pipeline.getBody().front().getOps<zb::StageOp>().begin();
  zb::PhaseOp f = stage.getPhases().front();
  const std::vector<double> x = {0.1, 1.0 + 1.0 / 256, -3.3};
  for (Precision p : {F32, F64}) {
    TensorMap env = {{"input.x", Tensor::fromValues({3}, F64, x)},
                     {"input.z", Tensor::fromValues({3}, F64, x)},
                     {"label.y", Tensor::fromInts({3}, {4, -1, 7})}};
    ASSERT_TRUE(succeeded(runPhase(f, env, p)));
    Tensor xr = Tensor::zeros({3}, p), tr = Tensor::zeros({3}, p);
    Tensor sr = Tensor::zeros({3}, p);
    for (int64_t i = 0; i < 3; ++i) {
      double xi = p == F32 ? roundToBFloat16(static_cast<float>(x[i])) : x[i];
      double ti = p == F32 ? roundToBFloat16(0.1f) : 0.1;
      xr.set(i, xi);
      tr.set(i, ti);
      sr.set(i, xi + ti);
      if (p == F32)
        sr.set(i, roundToBFloat16(static_cast<float>(sr.get(i))));
    }
    EXPECT_TRUE(bitwiseEqual(env["F.0"], xr)) << env["F.0"].toString();
    EXPECT_TRUE(bitwiseEqual(env["F.1"], Tensor::fromValues({3}, p, x)));
    EXPECT_TRUE(bitwiseEqual(env["F.2"], env["label.y"]));
    EXPECT_TRUE(bitwiseEqual(env["F.3"], tr)) << env["F.3"].toString();
    EXPECT_TRUE(bitwiseEqual(env["F.4"], Tensor::filled({3}, p, 0.1)));
    EXPECT_TRUE(bitwiseEqual(env["F.5"], sr)) << env["F.5"].toString();
  }
}

// A pipeline step: the losses are bf16, each microbatch's W-phase grads are
// bf16 values, and the step's grads are their mean taken in fp32, not
// rounded again. The parameters are the caller's; a step on the masters
// rounded to bf16 gives the same result, as bind rounds them anyway.
TEST(InterpreterBFloat16, PipelineStepAccumulatesGradsInFp32) {
  Compiled c(kMlpBf16);
  ASSERT_TRUE(c.ok());
  TensorMap params = initParams(c.pipeline, 5, F32);
  std::vector<TensorMap> mbs = randomMicrobatches(c.pipeline, 2, 6, F32);
  FailureOr<StepResult> both = runPipelineStep(c.pipeline, mbs, params, F32);
  FailureOr<StepResult> first =
      runPipelineStep(c.pipeline, {mbs[0]}, params, F32);
  FailureOr<StepResult> second =
      runPipelineStep(c.pipeline, {mbs[1]}, params, F32);
  ASSERT_TRUE(succeeded(both) && succeeded(first) && succeeded(second));
  for (double loss : both->losses)
    EXPECT_EQ(static_cast<double>(roundToBFloat16(static_cast<float>(loss))),
              loss);
  ASSERT_EQ(both->grads.size(), params.size());
  for (auto &[key, grad] : both->grads) {
    EXPECT_EQ(grad.precision(), F32);
    EXPECT_EQ(notBFloat16(first->grads[key]), "") << key;
    EXPECT_EQ(notBFloat16(second->grads[key]), "") << key;
    Tensor sum = kernels::add(first->grads[key], second->grads[key]);
    Tensor mean = Tensor::zeros(sum.shape(), F32);
    for (int64_t i = 0; i < sum.numElements(); ++i)
      mean.set(i, sum.get(i) * 0.5);
    EXPECT_TRUE(bitwiseEqual(grad, mean)) << key;
  }
  EXPECT_TRUE(anyNotBFloat16(both->grads)) << "the sums were rounded";

  TensorMap rounded = params;
  for (auto &[key, t] : rounded)
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, roundToBFloat16(static_cast<float>(t.get(i))));
  FailureOr<StepResult> again = runPipelineStep(c.pipeline, mbs, rounded, F32);
  ASSERT_TRUE(succeeded(again));
  EXPECT_EQ(again->losses, both->losses);
  for (auto &[key, grad] : both->grads)
    EXPECT_TRUE(bitwiseEqual(again->grads[key], grad)) << key;
}

//===----------------------------------------------------------------------===//
// bf16 against its f32 twin
//===----------------------------------------------------------------------===//

// At F32 the bf16 model is close to, but not the same as, the f32 one.
TEST(InterpreterBFloat16, F32RunIsCloseToTheF32Twin) {
  Compiled bf16(kMlpBf16), f32(f32Twin(kMlpBf16));
  ASSERT_TRUE(bf16.ok() && f32.ok());
  TensorMap params = initParams(f32.pipeline, 7, F32);
  std::vector<TensorMap> mbs = randomMicrobatches(f32.pipeline, 2, 8, F32);
  FailureOr<StepResult> narrow =
      runPipelineStep(bf16.pipeline, mbs, params, F32);
  FailureOr<StepResult> wide = runPipelineStep(f32.pipeline, mbs, params, F32);
  ASSERT_TRUE(succeeded(narrow) && succeeded(wide));
  for (size_t m = 0; m < mbs.size(); ++m) {
    EXPECT_NEAR(narrow->losses[m], wide->losses[m],
                2e-2 * std::abs(wide->losses[m]));
    EXPECT_NE(narrow->losses[m], wide->losses[m]) << "bf16 was not rounded";
  }
  for (auto &[key, grad] : wide->grads) {
    double error = relativeError(narrow->grads[key], grad);
    EXPECT_LE(error, 2e-2) << key;
    EXPECT_GT(error, 0.0) << key;
  }
}

// At F64 bf16 is computed exactly, unrounded: the bf16 model and its f32
// twin give the same bits, in runModel and in a pipeline step.
TEST(InterpreterBFloat16, F64RunEqualsTheF32Twin) {
  Compiled bf16(kMlpBf16), f32(f32Twin(kMlpBf16));
  ASSERT_TRUE(bf16.ok() && f32.ok());
  TensorMap params = initParams(f32.pipeline, 9, F64);
  std::vector<TensorMap> mbs = randomMicrobatches(f32.pipeline, 2, 10, F64);
  // The same parameters and data whatever the element type.
  TensorMap params16 = initParams(bf16.pipeline, 9, F64);
  for (auto &[key, t] : params)
    EXPECT_TRUE(bitwiseEqual(t, params16[key])) << key;

  FailureOr<Tensor> a = runModel(bf16.model, merge(mbs[0], params), F64);
  FailureOr<Tensor> b = runModel(f32.model, merge(mbs[0], params), F64);
  ASSERT_TRUE(succeeded(a) && succeeded(b));
  EXPECT_TRUE(bitwiseEqual(*a, *b)) << a->toString() << " vs " << b->toString();

  FailureOr<StepResult> x = runPipelineStep(bf16.pipeline, mbs, params, F64);
  FailureOr<StepResult> y = runPipelineStep(f32.pipeline, mbs, params, F64);
  ASSERT_TRUE(succeeded(x) && succeeded(y));
  EXPECT_EQ(x->losses, y->losses);
  ASSERT_EQ(x->grads.size(), y->grads.size());
  for (auto &[key, grad] : y->grads)
    EXPECT_TRUE(bitwiseEqual(x->grads[key], grad)) << key;
}

} // namespace
