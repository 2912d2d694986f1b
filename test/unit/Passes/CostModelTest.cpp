//===- CostModelTest.cpp - unit tests of the cost model and zb-partition --===//
//
// Checks that the cost model reproduces the Zero Bubble paper's matmul FLOP
// accounting for a GPT layer (F = sbh(24h + 4s)) over several shapes, that
// the backward matmul ops cost what the paper's B and W terms need, that the
// attention kernels state their workspaces and every kernel op is held to
// its kernel table row (KernelOpInterface), and that
// zb-partition balances GPT-like models (every stage within one layer of the
// ideal, only the residual stream crossing each cut) and finds the optimal
// partition of MLPs, compared against exhaustive search.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/CostModel.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

//===----------------------------------------------------------------------===//
// IR generators
//===----------------------------------------------------------------------===//

struct GPTShape {
  int64_t b, s, h, heads;
};

std::string tensor(std::initializer_list<int64_t> dims,
                   const char *elt = "f32") {
  std::string text = "tensor<";
  for (int64_t d : dims)
    text += std::to_string(d) + "x";
  return text + elt + ">";
}

/// One pre-LN GPT block reading `%x<l>` and defining `%x<l+1>`: layernorm,
/// QKV linear h->3h, bias, causal attention, projection h->h, bias,
/// residual add, layernorm, MLP h->4h, bias, gelu, 4h->h, bias, residual add.
std::string gptBlock(const GPTShape &sh, int layer) {
  int64_t b = sh.b, s = sh.s, h = sh.h;
  std::string p = "%l" + std::to_string(layer) + "_";
  std::string q = "\"l" + std::to_string(layer) + ".";
  std::string x = "%x" + std::to_string(layer);
  std::string y = "%x" + std::to_string(layer + 1);
  std::string t = tensor({b, s, h}), t3 = tensor({b, s, 3 * h}),
              t4 = tensor({b, s, 4 * h});
  std::string vh = tensor({h}), v3 = tensor({3 * h}), v4 = tensor({4 * h});
  std::string whh3 = tensor({h, 3 * h}), whh = tensor({h, h}),
              wh4 = tensor({h, 4 * h}), w4h = tensor({4 * h, h});
  std::string o;
  auto param = [&](const char *name, const char *init, const std::string &type) {
    o += "  " + p + name + " = zb.param " + q + name + "\" init " + init +
         " : " + type + "\n";
  };
  param("g1", "ones", vh);
  param("b1", "zeros", vh);
  param("wqkv", "normal(0.02)", whh3);
  param("bqkv", "zeros", v3);
  param("wo", "normal(0.02)", whh);
  param("bo", "zeros", vh);
  param("g2", "ones", vh);
  param("b2", "zeros", vh);
  param("wfc", "normal(0.02)", wh4);
  param("bfc", "zeros", v4);
  param("wpr", "normal(0.02)", w4h);
  param("bpr", "zeros", vh);
  std::string heads = std::to_string(sh.heads);
  o += "  " + p + "n1 = zb.layernorm " + x + ", " + p + "g1, " + p + "b1 : (" +
       t + ", " + vh + ", " + vh + ") -> " + t + "\n";
  o += "  " + p + "qkv = zb.linear " + p + "n1, " + p + "wqkv : (" + t + ", " +
       whh3 + ") -> " + t3 + "\n";
  o += "  " + p + "qkvb = zb.bias_add " + p + "qkv, " + p + "bqkv : (" + t3 +
       ", " + v3 + ") -> " + t3 + "\n";
  o += "  " + p + "att = zb.causal_attention " + p + "qkvb heads(" + heads +
       ") : " + t3 + " -> " + t + "\n";
  o += "  " + p + "pr = zb.linear " + p + "att, " + p + "wo : (" + t + ", " +
       whh + ") -> " + t + "\n";
  o += "  " + p + "prb = zb.bias_add " + p + "pr, " + p + "bo : (" + t + ", " +
       vh + ") -> " + t + "\n";
  o += "  " + p + "r1 = zb.add " + x + ", " + p + "prb : " + t + "\n";
  o += "  " + p + "n2 = zb.layernorm " + p + "r1, " + p + "g2, " + p + "b2 : (" +
       t + ", " + vh + ", " + vh + ") -> " + t + "\n";
  o += "  " + p + "fc = zb.linear " + p + "n2, " + p + "wfc : (" + t + ", " +
       wh4 + ") -> " + t4 + "\n";
  o += "  " + p + "fcb = zb.bias_add " + p + "fc, " + p + "bfc : (" + t4 +
       ", " + v4 + ") -> " + t4 + "\n";
  o += "  " + p + "act = zb.gelu " + p + "fcb : " + t4 + "\n";
  o += "  " + p + "mo = zb.linear " + p + "act, " + p + "wpr : (" + t4 + ", " +
       w4h + ") -> " + t + "\n";
  o += "  " + p + "mob = zb.bias_add " + p + "mo, " + p + "bpr : (" + t + ", " +
       vh + ") -> " + t + "\n";
  o += "  " + y + " = zb.add " + p + "r1, " + p + "mob : " + t + "\n";
  return o;
}

/// The number of non-leaf ops gptBlock emits.
constexpr int kOpsPerBlock = 14;

/// A GPT-like model without cuts: token embedding, `layers` blocks, an
/// untied head over `vocab` tokens and the cross-entropy loss.
std::string gptModel(const GPTShape &sh, int layers, int64_t vocab) {
  std::string tokens = tensor({sh.b, sh.s}, "i64");
  std::string t = tensor({sh.b, sh.s, sh.h});
  std::string logits = tensor({sh.b, sh.s, vocab});
  std::string o = "zb.model @gpt {\n";
  o += "  %tokens = zb.input \"tokens\" : " + tokens + "\n";
  o += "  %targets = zb.label \"targets\" : " + tokens + "\n";
  o += "  %wte = zb.param \"wte\" init normal(0.02) : " +
       tensor({vocab, sh.h}) + "\n";
  o += "  %x0 = zb.embedding %tokens, %wte : (" + tokens + ", " +
       tensor({vocab, sh.h}) + ") -> " + t + "\n";
  for (int l = 0; l < layers; ++l)
    o += gptBlock(sh, l);
  std::string x = "%x" + std::to_string(layers);
  o += "  %head = zb.param \"head\" init normal(0.02) : " +
       tensor({sh.h, vocab}) + "\n";
  o += "  %logits = zb.linear " + x + ", %head : (" + t + ", " +
       tensor({sh.h, vocab}) + ") -> " + logits + "\n";
  o += "  %loss = zb.cross_entropy %logits, %targets : (" + logits + ", " +
       tokens + ") -> tensor<f32>\n";
  o += "  zb.loss %loss : tensor<f32>\n}\n";
  return o;
}

/// An MLP over `rows` samples: linear+relu layers of the given widths
/// (widths[0] the input features), then a linear head to `classes`.
std::string mlpModel(int64_t rows, const std::vector<int64_t> &widths,
                     int64_t classes) {
  std::string o = "zb.model @mlp {\n";
  o += "  %x = zb.input \"x\" : " + tensor({rows, widths[0]}) + "\n";
  o += "  %y = zb.label \"y\" : " + tensor({rows}, "i64") + "\n";
  std::string prev = "%x";
  auto layer = [&](size_t i, int64_t in, int64_t out, bool relu) {
    std::string w = "%w" + std::to_string(i), h = "%h" + std::to_string(i);
    o += "  " + w + " = zb.param \"w" + std::to_string(i) +
         "\" init normal(0.1) : " + tensor({in, out}) + "\n";
    o += "  " + h + " = zb.linear " + prev + ", " + w + " : (" +
         tensor({rows, in}) + ", " + tensor({in, out}) + ") -> " +
         tensor({rows, out}) + "\n";
    prev = h;
    if (relu) {
      std::string a = "%a" + std::to_string(i);
      o += "  " + a + " = zb.relu " + h + " : " + tensor({rows, out}) + "\n";
      prev = a;
    }
  };
  for (size_t i = 0; i + 1 < widths.size(); ++i)
    layer(i, widths[i], widths[i + 1], /*relu=*/true);
  layer(widths.size() - 1, widths.back(), classes, /*relu=*/false);
  o += "  %loss = zb.cross_entropy " + prev + ", %y : (" +
       tensor({rows, classes}) + ", " + tensor({rows}, "i64") +
       ") -> tensor<f32>\n";
  o += "  zb.loss %loss : tensor<f32>\n}\n";
  return o;
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

class ZBTest : public ::testing::Test {
protected:
  ZBTest() { context.loadDialect<ZBDialect>(); }

  OwningOpRef<ModuleOp> parse(const std::string &text) {
    return parseSourceString<ModuleOp>(text, &context);
  }

  /// Runs zb-partition with `stages` on `module`.
  LogicalResult partition(ModuleOp module, int64_t stages) {
    PassManager pm(&context);
    ZBPartitionPassOptions options;
    options.stages = stages;
    pm.addPass(createZBPartitionPass(options));
    return pm.run(module);
  }

  static ModelOp getModel(ModuleOp module) {
    return *module.getOps<ModelOp>().begin();
  }

  /// The body ops that are not inputs, labels or parameters.
  static std::vector<Operation *> computeOps(ModelOp model) {
    std::vector<Operation *> ops;
    for (Operation &op : model.getBody().front())
      if (!isa<InputOp, LabelOp, ParamOp>(op))
        ops.push_back(&op);
    return ops;
  }

  static std::vector<int64_t> stageCosts(ModelOp model) {
    std::vector<int64_t> costs(model.getNumStages(), 0);
    llvm::DenseMap<Operation *, unsigned> stageOf = model.getStageOfOps();
    for (Operation &op : model.getBody().front())
      costs[stageOf.lookup(&op)] += getOpCost(&op).total();
    return costs;
  }

  MLIRContext context;
};

using CostModel = ZBTest;
using Partition = ZBTest;

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// The forward matmul FLOPs of one pre-LN GPT layer are the paper's
/// F = sbh(24h + 4s), for several shapes.
TEST_F(CostModel, GPTLayerForwardMatchesPaper) {
  const GPTShape shapes[] = {
      {1, 16, 32, 2}, {2, 64, 128, 4}, {4, 128, 256, 8},
      {8, 1024, 1024, 16}, {1, 2048, 4096, 32}, {3, 100, 60, 5},
  };
  for (const GPTShape &sh : shapes) {
    SCOPED_TRACE("b=" + std::to_string(sh.b) + " s=" + std::to_string(sh.s) +
                 " h=" + std::to_string(sh.h));
    std::string t = tensor({sh.b, sh.s, sh.h});
    std::string labels = tensor({sh.b, sh.s}, "i64");
    std::string text = "zb.model @layer {\n  %x0 = zb.input \"x\" : " + t +
                       "\n  %y = zb.label \"y\" : " + labels + "\n" +
                       gptBlock(sh, 0) +
                       "  %l = zb.cross_entropy %x1, %y : (" + t + ", " +
                       labels + ") -> tensor<f32>\n  zb.loss %l : "
                                "tensor<f32>\n}\n";
    OwningOpRef<ModuleOp> module = parse(text);
    ASSERT_TRUE(module) << text;
    OpCost forward;
    int numOps = 0;
    for (Operation *op : computeOps(getModel(*module))) {
      if (isa<CrossEntropyOp, LossOp>(op))
        continue;
      forward += getOpCost(op);
      ++numOps;
    }
    EXPECT_EQ(numOps, kOpsPerBlock);
    int64_t sbh = sh.s * sh.b * sh.h;
    EXPECT_EQ(forward.matmulFlops, sbh * (24 * sh.h + 4 * sh.s));
    // Elementwise work is there but small next to the matmuls.
    EXPECT_GT(forward.elementwiseFlops, 0);
    EXPECT_LT(forward.elementwiseFlops, forward.matmulFlops);
  }
}

/// Builds backward ops directly (they belong in a zb.phase, which these
/// unverified ops skip: the cost model reads types only) and checks that
/// linear_grad_* cost 2MKN, attention's gradient 8BSSH, the matmul grads
/// 2*batch*MKN, and fill one FLOP per element.
TEST_F(CostModel, BackwardOps) {
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  Type f32 = builder.getF32Type();
  auto fill = [&](ArrayRef<int64_t> shape) {
    return FillOp::create(builder, loc, RankedTensorType::get(shape, f32),
                          builder.getF64FloatAttr(0.0))
        .getResult();
  };
  auto type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  };

  // Linear [4, 64, 256] x [256, 1024]: M = 256, K = 256, N = 1024.
  Value x = fill({4, 64, 256}), w = fill({256, 1024}), dy = fill({4, 64, 1024});
  EXPECT_EQ(getOpCost(x.getDefiningOp()).elementwiseFlops, 4 * 64 * 256);
  EXPECT_EQ(getOpCost(x.getDefiningOp()).matmulFlops, 0);
  int64_t linear = 2 * 256 * 256 * 1024;
  auto gradInput = LinearGradInputOp::create(builder, loc, type({4, 64, 256}), dy, w);
  auto gradWeight = LinearGradWeightOp::create(builder, loc, type({256, 1024}), x, dy);
  EXPECT_EQ(getOpCost(gradInput).matmulFlops, linear);
  EXPECT_EQ(getOpCost(gradWeight).matmulFlops, linear);
  EXPECT_EQ(getOpCost(gradInput).elementwiseFlops, 0);

  // Attention over qkv [B=2, S=128, 3H = 3*96], 4 heads.
  Value qkv = fill({2, 128, 288}), dout = fill({2, 128, 96});
  auto attnGrad = CausalAttentionGradOp::create(builder, loc, type({2, 128, 288}),
                                                dout, qkv, Value(), 4);
  EXPECT_EQ(getOpCost(attnGrad).matmulFlops, 8LL * 2 * 128 * 128 * 96);
  EXPECT_GT(getOpCost(attnGrad).elementwiseFlops, 0);

  // Batched matmul grads: A [3, 8, 16], B [3, 16, 32], C [3, 8, 32].
  Value a = fill({3, 8, 16}), bm = fill({3, 16, 32}), dc = fill({3, 8, 32});
  auto gradLhs = MatmulGradLhsOp::create(builder, loc, type({3, 8, 16}), dc, bm);
  auto gradRhs = MatmulGradRhsOp::create(builder, loc, type({3, 16, 32}), a, dc);
  EXPECT_EQ(getOpCost(gradLhs).matmulFlops, 2 * 3 * 8 * 16 * 32);
  EXPECT_EQ(getOpCost(gradRhs).matmulFlops, 2 * 3 * 8 * 16 * 32);

  // Elementwise gradients have no matmul part.
  auto biasGrad = BiasGradOp::create(builder, loc, type({1024}), dy);
  EXPECT_EQ(getOpCost(biasGrad).matmulFlops, 0);
  EXPECT_EQ(getOpCost(biasGrad).elementwiseFlops, 4 * 64 * 1024);
}

/// Summed over a layer, the backward matmul ops give the paper's
/// B = sbh(24h + 8s) and W = 24sbh^2 (one linear_grad_input and one
/// linear_grad_weight per forward linear, one attention gradient).
TEST_F(CostModel, GPTLayerBackwardMatchesPaper) {
  const GPTShape shapes[] = {{2, 64, 128, 4}, {8, 1024, 1024, 16}};
  for (const GPTShape &sh : shapes) {
    OpBuilder builder(&context);
    Location loc = builder.getUnknownLoc();
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
    Type f32 = builder.getF32Type();
    auto type = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, f32);
    };
    auto fill = [&](ArrayRef<int64_t> shape) {
      return FillOp::create(builder, loc, type(shape),
                            builder.getF64FloatAttr(0.0))
          .getResult();
    };
    int64_t b = sh.b, s = sh.s, h = sh.h;
    OpCost inputGrad, weightGrad;
    // (in, out) of the four linears of a layer.
    const std::pair<int64_t, int64_t> linears[] = {
        {h, 3 * h}, {h, h}, {h, 4 * h}, {4 * h, h}};
    for (auto [in, out] : linears) {
      Value x = fill({b, s, in}), w = fill({in, out}), dy = fill({b, s, out});
      inputGrad += getOpCost(
          LinearGradInputOp::create(builder, loc, type({b, s, in}), dy, w));
      weightGrad += getOpCost(
          LinearGradWeightOp::create(builder, loc, type({in, out}), x, dy));
    }
    inputGrad += getOpCost(CausalAttentionGradOp::create(
        builder, loc, type({b, s, 3 * h}), fill({b, s, h}),
        fill({b, s, 3 * h}), Value(), sh.heads));
    int64_t sbh = s * b * h;
    EXPECT_EQ(inputGrad.matmulFlops, sbh * (24 * h + 8 * s));
    EXPECT_EQ(weightGrad.matmulFlops, 24 * sbh * h);
  }
}

/// Absurd shapes saturate instead of overflowing.
TEST_F(CostModel, SaturatesInsteadOfOverflowing) {
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  Type f32 = builder.getF32Type();
  auto type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  };
  Value x = FillOp::create(builder, loc, type({1 << 22, 1 << 22}),
                           builder.getF64FloatAttr(0.0));
  Value w = FillOp::create(builder, loc, type({1 << 22, 1 << 22}),
                           builder.getF64FloatAttr(0.0));
  auto big = LinearOp::create(builder, loc, type({1 << 22, 1 << 22}), x, w);
  EXPECT_EQ(getOpCost(big).matmulFlops, std::numeric_limits<int64_t>::max());
}

/// The attention kernels' workspaces (KernelOpInterface::getWorkspaceBytes,
/// what the memory plan reserves): causal attention one S x S score matrix
/// of its element type, its gradient two; zb.attention the score matrix and
/// the packed q | k | v with 64 elements to spare, its gradient twice that.
/// Every other kernel needs none.
TEST_F(CostModel, WorkspaceBytesOfTheAttentionKernels) {
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  auto fill = [&](ArrayRef<int64_t> shape, Type element) {
    return FillOp::create(builder, loc, RankedTensorType::get(shape, element),
                          builder.getF64FloatAttr(0.0))
        .getResult();
  };
  for (Type element : {Type(builder.getF32Type()), Type(builder.getBF16Type())}) {
    SCOPED_TRACE(element.isF32() ? "f32" : "bf16");
    int64_t bytes = element.isF32() ? 4 : 2;
    auto type = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, element);
    };
    // qkv [B=2, S=128, 3H = 3*96], 4 heads.
    Value qkv = fill({2, 128, 288}, element), dout = fill({2, 128, 96}, element);
    auto causal =
        CausalAttentionOp::create(builder, loc, type({2, 128, 96}), qkv, Value(), 4);
    auto causalGrad = CausalAttentionGradOp::create(
        builder, loc, type({2, 128, 288}), dout, qkv, Value(), 4);
    EXPECT_EQ(causal.getWorkspaceBytes(), 128 * 128 * bytes);
    EXPECT_EQ(causalGrad.getWorkspaceBytes(), 2 * 128 * 128 * bytes);
    // q [B=2, S=16, 4 heads of 16], k and v [2, 16, 2 kv heads of 16].
    Value q = fill({2, 16, 64}, element), k = fill({2, 16, 32}, element),
          v = fill({2, 16, 32}, element), dy = fill({2, 16, 64}, element);
    auto grouped =
        AttentionOp::create(builder, loc, type({2, 16, 64}), q, k, v, Value(), 4, 2);
    auto groupedGrad = AttentionGradOp::create(
        builder, loc, type({2, 16, 64}), type({2, 16, 32}), type({2, 16, 32}),
        dy, q, k, v, Value(), 4, 2);
    int64_t packed = 16 * 16 + 3 * 2 * 16 * 64 + 64;
    EXPECT_EQ(grouped.getWorkspaceBytes(), packed * bytes);
    EXPECT_EQ(groupedGrad.getWorkspaceBytes(), 2 * packed * bytes);
    auto linear = LinearOp::create(builder, loc, type({2, 16, 64}), q,
                                   fill({64, 64}, element));
    EXPECT_EQ(cast<KernelOpInterface>(linear.getOperation()).getWorkspaceBytes(),
              0);
  }
}

/// KernelOpInterface's verifier holds an op's tensors to its kernel table
/// row at the op's dims: a zb.linear whose result has a column too few
/// (built unverified) makes its weight [8, 16] disagree with the row's
/// w = in * out = 8 * 15.
TEST_F(CostModel, KernelShapesAreHeldToTheirRows) {
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  auto type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  };
  auto fill = [&](ArrayRef<int64_t> shape) {
    return FillOp::create(builder, loc, type(shape),
                          builder.getF64FloatAttr(0.0))
        .getResult();
  };
  Value x = fill({4, 8}), w = fill({8, 16});
  std::string message;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto fits = LinearOp::create(builder, loc, type({4, 16}), x, w);
  EXPECT_TRUE(succeeded(verifyKernelShape(fits)));
  EXPECT_EQ(message, "");
  auto bad = LinearOp::create(builder, loc, type({4, 15}), x, w);
  EXPECT_TRUE(failed(verifyKernelShape(bad)));
  EXPECT_EQ(message, "'zb.linear' op does not fit its kernel row zbc_rt_linear: "
                     "buffer 'w' has 128 elements, the row states 120 at the "
                     "op's dims (a compiler bug)");
}

//===----------------------------------------------------------------------===//
// zb-partition
//===----------------------------------------------------------------------===//

/// examples/gpt.mlir with its cuts removed, cut into 2, 4 and 8 stages: no
/// stage exceeds the ideal (total / stages) by more than the largest layer,
/// where a layer is one transformer block (a stage of the example between
/// two cuts; the blocks are identical).
TEST_F(Partition, BalancesTheExampleGPT) {
  std::string path = std::string(ZBC_EXAMPLES_DIR) + "/gpt.mlir";
  OwningOpRef<ModuleOp> original = parseSourceFile<ModuleOp>(path, &context);
  ASSERT_TRUE(original);
  std::vector<int64_t> exampleStages = stageCosts(getModel(*original));
  ASSERT_EQ(exampleStages.size(), 4u);
  int64_t blockCost = exampleStages[1];
  EXPECT_EQ(exampleStages[2], blockCost);

  for (int64_t stages : {2, 4, 8}) {
    SCOPED_TRACE(std::to_string(stages) + " stages");
    OwningOpRef<ModuleOp> module = original->clone();
    ModelOp model = getModel(*module);
    for (CutOp cut : llvm::make_early_inc_range(
             model.getBody().front().getOps<CutOp>())) {
      cut.replaceAllUsesWith(cut.getInputs());
      cut.erase();
    }
    ASSERT_EQ(model.getNumStages(), 1u);
    ASSERT_TRUE(succeeded(partition(*module, stages)));
    ASSERT_EQ(model.getNumStages(), stages);
    std::vector<int64_t> costs = stageCosts(model);
    int64_t total = std::accumulate(costs.begin(), costs.end(), int64_t(0));
    int64_t largest = *std::max_element(costs.begin(), costs.end());
    EXPECT_LE(largest, total / stages + blockCost);
    llvm::outs() << "[partition] examples/gpt.mlir, " << stages
                 << " stages: max/ideal "
                 << llvm::format("%.3f", double(largest) * stages / total)
                 << ", (max - ideal) / block = "
                 << llvm::format("%.2f", double(largest - total / stages) /
                                             blockCost)
                 << "\n";
    llvm::outs().flush();
  }
}

/// GPT-like models without cuts, cut into 2, 4 and 8 stages: every stage
/// costs at most the ideal plus one layer, and only the residual stream (a
/// single [b, s, h] tensor made by a residual add) crosses each cut.
TEST_F(Partition, BalancesGPTLayers) {
  const GPTShape sh{2, 128, 256, 4};
  const int64_t vocab = 1024;
  for (int layers : {8, 10, 12, 13}) {
    std::string text = gptModel(sh, layers, vocab);
    for (int64_t stages : {2, 4, 8}) {
      SCOPED_TRACE(std::to_string(layers) + " layers, " +
                   std::to_string(stages) + " stages");
      OwningOpRef<ModuleOp> module = parse(text);
      ASSERT_TRUE(module);
      ModelOp model = getModel(*module);
      std::vector<Operation *> ops = computeOps(model);
      // ops[0] is the embedding; ops[1..15) the first block.
      int64_t layerCost = 0;
      for (int i = 1; i <= kOpsPerBlock; ++i)
        layerCost += getOpCost(ops[i]).total();
      int64_t total = 0;
      for (Operation *op : ops)
        total += getOpCost(op).total();

      ASSERT_TRUE(succeeded(partition(*module, stages)));
      ASSERT_EQ(model.getNumStages(), stages);
      std::vector<int64_t> costs = stageCosts(model);
      int64_t largest = *std::max_element(costs.begin(), costs.end());
      EXPECT_LE(largest, total / stages + layerCost);
      EXPECT_EQ(std::accumulate(costs.begin(), costs.end(), int64_t(0)), total);
      llvm::outs() << "[partition] " << layers << " layers, " << stages
                   << " stages: imbalance (max/ideal) "
                   << llvm::format("%.3f", double(largest) * stages / total)
                   << ", max-ideal = "
                   << llvm::format("%.2f", double(largest - total / stages) /
                                               layerCost)
                   << " layers\n";
      llvm::outs().flush();

      auto t = RankedTensorType::get({sh.b, sh.s, sh.h},
                                     Float32Type::get(&context));
      for (CutOp cut : model.getBody().front().getOps<CutOp>()) {
        ASSERT_EQ(cut.getInputs().size(), 1u);
        Value crossing = cut.getInputs()[0];
        EXPECT_TRUE(isa_and_nonnull<AddOp>(crossing.getDefiningOp()));
        EXPECT_EQ(crossing.getType(), t);
        // No use of the crossing value is left after the cut.
        for (Operation *user : crossing.getUsers())
          EXPECT_FALSE(cut->isBeforeInBlock(user));
      }
    }
  }
}

/// On MLPs with uneven layer widths the pass finds the optimal partition:
/// the smallest maximum stage cost and, among those, the smallest sum of
/// squares, compared against exhaustive search over all cut positions.
TEST_F(Partition, MatchesExhaustiveSearchOnMLPs) {
  const std::vector<std::vector<int64_t>> mlps = {
      {16, 64, 64, 64, 64},
      {32, 128, 16, 256, 8, 64, 64, 32},
      {8, 8, 512, 512, 8, 8, 96, 200, 24},
  };
  for (const std::vector<int64_t> &widths : mlps) {
    std::string text = mlpModel(8, widths, 10);
    OwningOpRef<ModuleOp> reference = parse(text);
    ASSERT_TRUE(reference);
    std::vector<int64_t> costs;
    for (Operation *op : computeOps(getModel(*reference)))
      if (!isa<LossOp>(op))
        costs.push_back(getOpCost(op).total());
    // Every gap after a tensor op but the cross-entropy is a candidate (one
    // value crosses each); gap g splits costs[0..g] from costs[g+1..].
    int numGaps = static_cast<int>(costs.size()) - 1;
    for (int64_t stages = 2; stages <= std::min<int64_t>(5, numGaps + 1);
         ++stages) {
      SCOPED_TRACE(std::to_string(widths.size()) + " layers, " +
                   std::to_string(stages) + " stages");
      // Exhaustive search in (max, sum of squares) order.
      std::pair<int64_t, double> best{INT64_MAX, 0};
      std::vector<int> cuts;
      std::function<void(int, int64_t, double, int64_t)> search =
          [&](int from, int64_t maxSoFar, double squares, int64_t left) {
            if (left == 0) {
              int64_t last = 0;
              for (int i = from; i < static_cast<int>(costs.size()); ++i)
                last += costs[i];
              std::pair<int64_t, double> value{
                  std::max(maxSoFar, last), squares + double(last) * last};
              best = std::min(best, value);
              return;
            }
            int64_t stage = 0;
            for (int g = from; g < numGaps; ++g) {
              stage += costs[g];
              search(g + 1, std::max(maxSoFar, stage),
                     squares + double(stage) * stage, left - 1);
            }
          };
      search(0, 0, 0.0, stages - 1);

      OwningOpRef<ModuleOp> module = parse(text);
      ASSERT_TRUE(succeeded(partition(*module, stages)));
      std::vector<int64_t> got = stageCosts(getModel(*module));
      double squares = 0;
      for (int64_t c : got)
        squares += double(c) * c;
      EXPECT_EQ(*std::max_element(got.begin(), got.end()), best.first);
      EXPECT_DOUBLE_EQ(squares, best.second);
    }
  }
}

/// A model's own cuts are kept; asking for a different stage count, or for
/// more stages than there are candidate gaps, fails without crashing.
TEST_F(Partition, KeepsUserCutsAndRejectsImpossibleCounts) {
  std::string text = mlpModel(8, {16, 32, 32}, 4);
  // Silence the expected errors.
  context.getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  // Too many stages: linear, relu, linear, relu and the head each end a
  // candidate gap, so at most 6 stages.
  OwningOpRef<ModuleOp> module = parse(text);
  ASSERT_TRUE(module);
  EXPECT_TRUE(failed(partition(*module, 7)));
  EXPECT_EQ(getModel(*module).getNumStages(), 1u);
  OwningOpRef<ModuleOp> cut = parse(text);
  EXPECT_TRUE(succeeded(partition(*cut, 6)));
  EXPECT_EQ(getModel(*cut).getNumStages(), 6u);
  // Already cut: the same count or 0 keeps the cuts, another count fails.
  EXPECT_TRUE(succeeded(partition(*cut, 6)));
  EXPECT_TRUE(succeeded(partition(*cut, 0)));
  EXPECT_EQ(getModel(*cut).getNumStages(), 6u);
  EXPECT_TRUE(failed(partition(*cut, 3)));
  EXPECT_EQ(getModel(*cut).getNumStages(), 6u);
}

} // namespace
