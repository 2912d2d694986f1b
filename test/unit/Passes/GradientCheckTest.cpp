//===- GradientCheckTest.cpp - the passes' gradients, checked numerically -===//
//
// For small models that use every model-level op, for a two-layer Llama
// (every Llama op: RMSNorm, q/k/v biases, RoPE with Llama 3's scaling,
// grouped-query attention, SwiGLU, the tied head), and for
// examples/gpt.mlir and examples/llama.mlir:
//   1. zb-autodiff followed by zb-split-backward (B then W) gives gradients
//      bitwise equal to zb-autodiff alone (the fused BW), in F32 and F64;
//   2. those gradients, summed over two microbatches, match central finite
//      differences of the model's loss in float64 to a relative 1e-6:
//      element by element for the small models, and along a random
//      direction per parameter tensor for the GPT (one pair of loss
//      evaluations per tensor instead of one per element).
// The reference interpreter (dialect/lib/Interpreter) runs both the model
// and the pipelines.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Llama.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Interpreter/Interpreter.h"
#include "zbc/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

using namespace mlir;
using namespace zbc;
using interp::Precision;
using interp::Tensor;
using interp::TensorMap;

namespace {

constexpr int kMicrobatches = 2;
constexpr uint64_t kParamSeed = 7;
constexpr uint64_t kDataSeed = 100;

/// A parsed model, and the pipelines the passes make from it.
struct Compiled {
  MLIRContext context;
  OwningOpRef<ModuleOp> model, fused, split;

  explicit Compiled(llvm::StringRef ir) {
    context.loadDialect<zb::ZBDialect>();
    model = parseSourceString<ModuleOp>(ir, &context);
    if (!model)
      return;
    fused = model->clone();
    split = model->clone();
    PassManager fusedPM(&context);
    fusedPM.addPass(createZBAutodiffPass());
    PassManager splitPM(&context);
    splitPM.addPass(createZBAutodiffPass());
    splitPM.addPass(createZBSplitBackwardPass());
    if (failed(fusedPM.run(*fused)) || failed(splitPM.run(*split))) {
      fused = nullptr;
      split = nullptr;
    }
  }
  bool ok() const { return model && fused && split; }
  zb::ModelOp modelOp() { return *model->getOps<zb::ModelOp>().begin(); }
  static zb::PipelineOp pipelineOf(ModuleOp m) {
    return *m.getOps<zb::PipelineOp>().begin();
  }
};

std::vector<TensorMap> microbatches(zb::ModelOp model, Precision p) {
  std::vector<TensorMap> feeds;
  for (int m = 0; m < kMicrobatches; ++m)
    feeds.push_back(interp::randomFeeds(model, kDataSeed + m, p));
  return feeds;
}

/// The step's loss (the mean over the microbatches), in float64.
double stepLoss(zb::ModelOp model, const TensorMap &params,
                 const std::vector<TensorMap> &feeds) {
  double sum = 0;
  for (const TensorMap &mb : feeds) {
    TensorMap all = mb;
    all.insert(params.begin(), params.end());
    FailureOr<Tensor> loss = interp::runModel(model, all, Precision::F64);
    EXPECT_TRUE(succeeded(loss));
    sum += succeeded(loss) ? loss->get(0) : NAN;
  }
  return sum / static_cast<double>(feeds.size());
}

/// Runs a pipeline over the microbatches; returns the accumulated grads.
TensorMap pipelineGrads(zb::PipelineOp pipeline, const TensorMap &params,
                        const std::vector<TensorMap> &feeds, Precision p) {
  FailureOr<interp::StepResult> step =
      interp::runPipelineStep(pipeline, feeds, params, p);
  EXPECT_TRUE(succeeded(step));
  return succeeded(step) ? step->grads : TensorMap();
}

/// Check 1: B-then-W equals BW bit for bit.
void expectSplitBitwiseEqual(Compiled &c, Precision p) {
  TensorMap params = interp::initParams(c.modelOp(), kParamSeed, p);
  std::vector<TensorMap> feeds = microbatches(c.modelOp(), p);
  TensorMap fused = pipelineGrads(Compiled::pipelineOf(*c.fused), params, feeds, p);
  TensorMap split = pipelineGrads(Compiled::pipelineOf(*c.split), params, feeds, p);
  ASSERT_FALSE(fused.empty());
  ASSERT_EQ(fused.size(), split.size());
  for (auto &[key, grad] : fused) {
    ASSERT_TRUE(split.count(key)) << key;
    EXPECT_TRUE(interp::bitwiseEqual(grad, split.at(key))) << key;
  }
}

/// Check 2, element by element: every parameter entry's gradient against
/// (L(theta + h) - L(theta - h)) / 2h.
void expectMatchesFiniteDifferences(Compiled &c) {
  TensorMap params = interp::initParams(c.modelOp(), kParamSeed, Precision::F64);
  std::vector<TensorMap> feeds = microbatches(c.modelOp(), Precision::F64);
  TensorMap grads = pipelineGrads(Compiled::pipelineOf(*c.split), params,
                                  feeds, Precision::F64);
  const double h = 1e-5;
  for (auto &[key, value] : params) {
    std::string name = key.substr(std::string("param.").size());
    ASSERT_TRUE(grads.count("grad." + name)) << name;
    Tensor numeric = Tensor::zeros(value.shape(), Precision::F64);
    for (int64_t i = 0; i < value.numElements(); ++i) {
      TensorMap shifted = params;
      double x = value.get(i);
      shifted[key].set(i, x + h);
      double up = stepLoss(c.modelOp(), shifted, feeds);
      shifted[key].set(i, x - h);
      double down = stepLoss(c.modelOp(), shifted, feeds);
      numeric.set(i, (up - down) / (2 * h));
    }
    EXPECT_LE(interp::relativeError(grads.at("grad." + name), numeric), 1e-6)
        << name << "\n analytic " << grads.at("grad." + name).toString()
        << "\n numeric  " << numeric.toString();
  }
}

// Small models; together they use every model-level op, cuts with one and
// several values, an integer value crossing a cut, and a value with two uses.
const char *kMlp = R"mlir(
zb.model @mlp {
  %x = zb.input "x" : tensor<4x5xf32>
  %y = zb.label "y" : tensor<4xi64>
  %w0 = zb.param "w0" init normal(0.5) : tensor<5x6xf32>
  %b0 = zb.param "b0" init uniform(0.5) : tensor<6xf32>
  %h = zb.linear %x, %w0 : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
  %hb = zb.bias_add %h, %b0 : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %r = zb.relu %hb : tensor<4x6xf32>
  %c = zb.cut %r : tensor<4x6xf32>
  %w1 = zb.param "w1" init normal(0.5) : tensor<6x3xf32>
  %o = zb.linear %c, %w1 : (tensor<4x6xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
  %l = zb.cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";

const char *kNorms = R"mlir(
zb.model @norms {
  %x = zb.input "x" : tensor<2x3x4xf32>
  %y = zb.label "y" : tensor<2x3xi64>
  %g = zb.param "g" init uniform(1.0) : tensor<4xf32>
  %b = zb.param "b" init uniform(0.5) : tensor<4xf32>
  %w = zb.param "w" init normal(0.5) : tensor<4x4xf32>
  %n = zb.layernorm %x, %g, %b : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %e = zb.gelu %n : tensor<2x3x4xf32>
  %c:2 = zb.cut %e, %n : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  %s = zb.add %c#0, %c#1 : tensor<2x3x4xf32>
  %o = zb.linear %s, %w : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %l = zb.cross_entropy %o, %y : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";

const char *kMatmul = R"mlir(
zb.model @bilinear {
  %x = zb.input "x" : tensor<2x3x4xf32>
  %z = zb.input "z" : tensor<2x4x6xf32>
  %y = zb.label "y" : tensor<2x3xi64>
  %wa = zb.param "wa" init normal(0.5) : tensor<4x4xf32>
  %wb = zb.param "wb" init normal(0.5) : tensor<6x5xf32>
  %a = zb.linear %x, %wa : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %b = zb.linear %z, %wb : (tensor<2x4x6xf32>, tensor<6x5xf32>) -> tensor<2x4x5xf32>
  %c:2 = zb.cut %a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>
  %m = zb.matmul %c#0, %c#1 : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %l = zb.cross_entropy %m, %y : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";

const char *kAttention = R"mlir(
zb.model @attention {
  %t = zb.input "t" : tensor<2x4xi64>
  %y = zb.label "y" : tensor<2x4xi64>
  %wte = zb.param "wte" init normal(0.5) : tensor<7x6xf32>
  %c:2 = zb.cut %t, %t : tensor<2x4xi64>, tensor<2x4xi64>
  %e = zb.embedding %c#0, %wte : (tensor<2x4xi64>, tensor<7x6xf32>) -> tensor<2x4x6xf32>
  %wqkv = zb.param "wqkv" init normal(0.5) : tensor<6x18xf32>
  %qkv = zb.linear %e, %wqkv : (tensor<2x4x6xf32>, tensor<6x18xf32>) -> tensor<2x4x18xf32>
  %a = zb.causal_attention %qkv heads(2) : tensor<2x4x18xf32> -> tensor<2x4x6xf32>
  %s = zb.add %e, %a : tensor<2x4x6xf32>
  %k = zb.cut %s : tensor<2x4x6xf32>
  %wo = zb.param "wo" init normal(0.5) : tensor<6x7xf32>
  %o = zb.linear %k, %wo : (tensor<2x4x6xf32>, tensor<6x7xf32>) -> tensor<2x4x7xf32>
  %l = zb.cross_entropy %o, %y : (tensor<2x4x7xf32>, tensor<2x4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";

// Tied parameters: w1 in both stages, and the embedding table read again,
// transposed, as the last stage's head (GPT-2's tying). Their gradients are
// the sums of every use's.
const char *kTied = R"mlir(
zb.model @tied {
  %t = zb.input "t" : tensor<2x4xi64>
  %y = zb.label "y" : tensor<2x4xi64>
  %wte = zb.param "wte" init normal(0.5) : tensor<7x6xf32>
  %e = zb.embedding %t, %wte : (tensor<2x4xi64>, tensor<7x6xf32>) -> tensor<2x4x6xf32>
  %w1 = zb.param "w1" init normal(0.5) : tensor<6x6xf32>
  %h = zb.linear %e, %w1 : (tensor<2x4x6xf32>, tensor<6x6xf32>) -> tensor<2x4x6xf32>
  %c = zb.cut %h : tensor<2x4x6xf32>
  %g = zb.gelu %c : tensor<2x4x6xf32>
  %h2 = zb.linear %g, %w1 : (tensor<2x4x6xf32>, tensor<6x6xf32>) -> tensor<2x4x6xf32>
  %wt = zb.transpose %wte : tensor<7x6xf32> -> tensor<6x7xf32>
  %o = zb.linear %h2, %wt : (tensor<2x4x6xf32>, tensor<6x7xf32>) -> tensor<2x4x7xf32>
  %l = zb.cross_entropy %o, %y : (tensor<2x4x7xf32>, tensor<2x4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";

struct Case {
  const char *name;
  const char *ir;
};

class GradientCheck : public testing::TestWithParam<Case> {};

TEST_P(GradientCheck, SplitIsBitwiseEqualToFusedBackward) {
  Compiled c(GetParam().ir);
  ASSERT_TRUE(c.ok());
  expectSplitBitwiseEqual(c, Precision::F64);
  expectSplitBitwiseEqual(c, Precision::F32);
}

TEST_P(GradientCheck, MatchesCentralFiniteDifferences) {
  Compiled c(GetParam().ir);
  ASSERT_TRUE(c.ok());
  expectMatchesFiniteDifferences(c);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, GradientCheck,
    testing::Values(Case{"mlp", kMlp}, Case{"norms", kNorms},
                    Case{"matmul", kMatmul}, Case{"attention", kAttention},
                    Case{"tied", kTied}),
    [](const testing::TestParamInfo<Case> &info) { return info.param.name; });

std::string readExample(const char *name) {
  std::string path = std::string(ZBC_EXAMPLES_DIR) + "/" + name;
  FILE *f = std::fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (!f)
    return "";
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;)
    text.append(buffer, n);
  std::fclose(f);
  return text;
}

/// A two-layer Llama small enough for element-by-element differences, with
/// every convention switched on: q/k/v biases, a head dimension apart from
/// hidden / heads, Llama 3's scaling (at theta 100 and head_dim 6 the
/// wavelengths 6.3, 29 and 135 fall in its three bands: kept below 48 / 4,
/// interpolated, divided above 48), two query heads per kv head and the
/// head tied to the embedding. Weights of spread 0.5, so that every path
/// carries a gradient well above rounding.
std::string tinyLlama() {
  dsl::LlamaConfig c;
  c.hidden = 8, c.intermediate = 12, c.layers = 2, c.heads = 2, c.kvHeads = 1;
  c.headDim = 6;
  c.vocab = 11, c.seq = 5, c.maxPositions = 16, c.batch = 2;
  c.ropeTheta = 100.0;
  c.llama3 = {4.0, 1.0, 4.0, 48};
  c.tied = true, c.qkvBias = true, c.initStd = 0.5;
  dsl::Model m("tiny_llama");
  dsl::buildLlama(m, c);
  return m.str();
}

TEST(GradientCheckLlama, SplitIsBitwiseEqualToFusedBackward) {
  Compiled c(tinyLlama());
  ASSERT_TRUE(c.ok());
  expectSplitBitwiseEqual(c, Precision::F64);
  expectSplitBitwiseEqual(c, Precision::F32);
}

TEST(GradientCheckLlama, MatchesCentralFiniteDifferences) {
  Compiled c(tinyLlama());
  ASSERT_TRUE(c.ok());
  expectMatchesFiniteDifferences(c);
}

TEST(GradientCheckGPT, SplitIsBitwiseEqualToFusedBackward) {
  Compiled c(readExample("gpt.mlir"));
  ASSERT_TRUE(c.ok());
  expectSplitBitwiseEqual(c, Precision::F64);
  expectSplitBitwiseEqual(c, Precision::F32);
}

/// Directional differences per parameter tensor of an example model.
void expectExampleMatchesDirectionalDifferences(const char *example) {
  Compiled c(readExample(example));
  ASSERT_TRUE(c.ok());
  TensorMap params = interp::initParams(c.modelOp(), kParamSeed, Precision::F64);
  std::vector<TensorMap> feeds = microbatches(c.modelOp(), Precision::F64);
  TensorMap grads = pipelineGrads(Compiled::pipelineOf(*c.split), params,
                                  feeds, Precision::F64);
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal;
  const double h = 1e-5;
  for (auto &[key, value] : params) {
    // Directional derivative along a random v: grad . v against
    // (L(theta + h v) - L(theta - h v)) / 2h.
    std::string name = key.substr(std::string("param.").size());
    const Tensor &grad = grads.at("grad." + name);
    TensorMap up = params, down = params;
    double analytic = 0;
    for (int64_t i = 0; i < value.numElements(); ++i) {
      double v = normal(rng);
      analytic += grad.get(i) * v;
      up[key].set(i, value.get(i) + h * v);
      down[key].set(i, value.get(i) - h * v);
    }
    double numeric = (stepLoss(c.modelOp(), up, feeds) -
                      stepLoss(c.modelOp(), down, feeds)) /
                     (2 * h);
    EXPECT_LE(std::abs(analytic - numeric),
              1e-6 * std::max(std::abs(numeric), 1e-3))
        << name << ": analytic " << analytic << ", numeric " << numeric;
  }
}

TEST(GradientCheckGPT, MatchesCentralFiniteDifferencesPerParameter) {
  expectExampleMatchesDirectionalDifferences("gpt.mlir");
}

TEST(GradientCheckLlama, ExampleMatchesCentralFiniteDifferencesPerParameter) {
  expectExampleMatchesDirectionalDifferences("llama.mlir");
}

} // namespace
