//===- BackwardFlopsTest.cpp - zbc's F/B/W accounting vs the paper --------===//
//
// For a standard GPT layer (pre-LN, 4h MLP, attention counted dense) in a
// middle pipeline stage, the F, B and W matmul FLOPs that zbc computes after
// zb-autodiff and zb-split-backward must equal the Zero Bubble paper's
// Table 1: F = sbh(24h + 4s), B = sbh(24h + 8s), W = 24sbh^2. Also pins the
// activation memory of such a stage (see docs/backward.md for the
// derivation and the comparison with the paper's M_B and M_W).
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/StageAnalysis.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;

namespace {

struct Shape {
  int64_t b, s, h, heads;
};

std::string t(std::initializer_list<int64_t> dims, const char *elt = "f32") {
  std::string out = "tensor<";
  for (int64_t d : dims)
    out += std::to_string(d) + "x";
  return out + elt + ">";
}

/// Three stages: a bias add feeding the cut, one GPT layer, and a head with the
/// loss. The layer sits between two cuts, as every middle stage does.
std::string gptLayerModel(const Shape &c, bool fuseLayerNormGrads = false) {
  int64_t b = c.b, s = c.s, h = c.h;
  std::string x = t({b, s, h}), v = t({h}), qkv = t({b, s, 3 * h}),
              up = t({b, s, 4 * h});
  auto linear = [&](const std::string &out, const std::string &in,
                    const std::string &w, const std::string &inT,
                    const std::string &wT, const std::string &outT) {
    return "  " + out + " = zb.linear " + in + ", " + w + " : (" + inT + ", " +
           wT + ") -> " + outT + "\n";
  };
  auto bias = [&](const std::string &out, const std::string &in,
                  const std::string &bb, const std::string &inT,
                  const std::string &bT) {
    return "  " + out + " = zb.bias_add " + in + ", " + bb + " : (" + inT +
           ", " + bT + ") -> " + inT + "\n";
  };
  auto ln = [&](const std::string &out, const std::string &in,
                const std::string &g, const std::string &bb) {
    return "  " + out + " = zb.layernorm " + in + ", " + g + ", " + bb +
           (fuseLayerNormGrads ? " {zb.fuse_weight_grad}" : "") + " : (" +
           x + ", " + v + ", " + v + ") -> " + x + "\n";
  };
  std::string m = "zb.model @layer {\n";
  m += "  %x = zb.input \"x\" : " + x + "\n";
  m += "  %y = zb.label \"y\" : " + t({b, s}, "i64") + "\n";
  // Stage 0 has a parameter, so the layer's input gradient is needed (a
  // middle stage, as in the paper), not dropped (Note [No gradient upstream]).
  m += "  %bx = zb.param \"bx\" init zeros : " + v + "\n";
  m += "  %x0 = zb.bias_add %x, %bx : (" + x + ", " + v + ") -> " + x + "\n";
  m += "  %in = zb.cut %x0 : " + x + "\n";
  m += "  %g1 = zb.param \"g1\" init ones : " + v + "\n";
  m += "  %b1 = zb.param \"b1\" init zeros : " + v + "\n";
  m += "  %wqkv = zb.param \"wqkv\" init normal(0.02) : " + t({h, 3 * h}) + "\n";
  m += "  %bqkv = zb.param \"bqkv\" init zeros : " + t({3 * h}) + "\n";
  m += "  %wo = zb.param \"wo\" init normal(0.02) : " + t({h, h}) + "\n";
  m += "  %bo = zb.param \"bo\" init zeros : " + v + "\n";
  m += "  %g2 = zb.param \"g2\" init ones : " + v + "\n";
  m += "  %b2 = zb.param \"b2\" init zeros : " + v + "\n";
  m += "  %wfc = zb.param \"wfc\" init normal(0.02) : " + t({h, 4 * h}) + "\n";
  m += "  %bfc = zb.param \"bfc\" init zeros : " + t({4 * h}) + "\n";
  m += "  %wpr = zb.param \"wpr\" init normal(0.02) : " + t({4 * h, h}) + "\n";
  m += "  %bpr = zb.param \"bpr\" init zeros : " + v + "\n";
  m += ln("%n1", "%in", "%g1", "%b1");
  m += linear("%q0", "%n1", "%wqkv", x, t({h, 3 * h}), qkv);
  m += bias("%q", "%q0", "%bqkv", qkv, t({3 * h}));
  m += "  %a = zb.causal_attention %q heads(" + std::to_string(c.heads) +
       ") : " + qkv + " -> " + x + "\n";
  m += linear("%o0", "%a", "%wo", x, t({h, h}), x);
  m += bias("%o", "%o0", "%bo", x, v);
  m += "  %r1 = zb.add %in, %o : " + x + "\n";
  m += ln("%n2", "%r1", "%g2", "%b2");
  m += linear("%f0", "%n2", "%wfc", x, t({h, 4 * h}), up);
  m += bias("%f", "%f0", "%bfc", up, t({4 * h}));
  m += "  %gl = zb.gelu %f : " + up + "\n";
  m += linear("%p0", "%gl", "%wpr", up, t({4 * h, h}), x);
  m += bias("%p", "%p0", "%bpr", x, v);
  m += "  %r2 = zb.add %r1, %p : " + x + "\n";
  m += "  %out = zb.cut %r2 : " + x + "\n";
  m += "  %wh = zb.param \"wh\" init normal(0.02) : " + t({h, 16}) + "\n";
  m += linear("%logits", "%out", "%wh", x, t({h, 16}), t({b, s, 16}));
  m += "  %l = zb.cross_entropy %logits, %y : (" + t({b, s, 16}) + ", " +
       t({b, s}, "i64") + ") -> tensor<f32>\n";
  m += "  zb.loss %l : tensor<f32>\n}\n";
  return m;
}

/// Runs partition, autodiff and the split, and returns the layer stage's
/// figures.
zbc::StageFigures analyzeLayer(const std::string &ir) {
  MLIRContext context;
  context.loadDialect<zbc::zb::ZBDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &context);
  EXPECT_TRUE(module);
  if (!module)
    return {};
  PassManager pm(&context);
  zbc::buildBackwardPipeline(pm, {});
  EXPECT_TRUE(succeeded(pm.run(*module)));
  auto pipeline = *module->getOps<zbc::zb::PipelineOp>().begin();
  auto stages =
      llvm::to_vector(pipeline.getBody().front().getOps<zbc::zb::StageOp>());
  EXPECT_EQ(stages.size(), 3u);
  zbc::StageFigures layer = zbc::analyzeStage(stages[1]);
  EXPECT_TRUE(layer.split);
  return layer;
}

class BackwardFlops : public testing::TestWithParam<Shape> {};

TEST_P(BackwardFlops, MiddleStageMatchesZeroBubblePaperTable1) {
  const Shape c = GetParam();
  zbc::StageFigures layer = analyzeLayer(gptLayerModel(c));

  int64_t s = c.s, b = c.b, h = c.h;
  EXPECT_EQ(layer.forward.matmulFlops, s * b * h * (24 * h + 4 * s));
  EXPECT_EQ(layer.inputGrad.matmulFlops, s * b * h * (24 * h + 8 * s));
  EXPECT_EQ(layer.weightGrad.matmulFlops, 24 * s * b * h * h);

  // Activation memory in float32 (docs/backward.md): after F the stage keeps
  // x, ln1(x), qkv, attn, x1, ln2(x1), fc, gelu(fc): 16 sbh elements. After B,
  // W keeps the inputs of its four linears (7 sbh), the gradients of their
  // outputs, which the bias gradients sum too (9 sbh), and the LayerNorm
  // inputs and output gradients for the gains (4 sbh): 20 sbh.
  EXPECT_EQ(layer.bytesAfterF, 4 * 16 * s * b * h);
  EXPECT_EQ(layer.bytesAfterB, 4 * 20 * s * b * h);
}

TEST_P(BackwardFlops, LayerNormGainsInBMatchThePapersWeightMemory) {
  // With the LayerNorm gain gradients kept in B (as Megatron's fused
  // LayerNorm backward computes them), W keeps 16 sbh elements: in the
  // paper's 16-bit accounting 32 sbh bytes, its M_W exactly. The FLOPs that
  // move are elementwise, so the matmul split is unchanged.
  const Shape c = GetParam();
  zbc::StageFigures layer = analyzeLayer(gptLayerModel(c, true));
  int64_t s = c.s, b = c.b, h = c.h;
  EXPECT_EQ(layer.bytesAfterB, 4 * 16 * s * b * h);
  EXPECT_EQ(layer.bytesAfterF, 4 * 16 * s * b * h);
  EXPECT_EQ(layer.weightGrad.matmulFlops, 24 * s * b * h * h);
}

INSTANTIATE_TEST_SUITE_P(Shapes, BackwardFlops,
                         testing::Values(Shape{1, 8, 16, 2}, Shape{2, 32, 64, 4},
                                         Shape{4, 16, 96, 3},
                                         Shape{1, 128, 32, 8}));

} // namespace
