//===- DSLTest.cpp - unit tests of the embedded C++ DSL -------------------===//
//
// Checks that zbc::dsl::Model builds the IR its calls describe, reports shape
// and usage errors at the DSL call site (file:line of this file), and refuses
// to print a model that is incomplete or fails the dialect verifier.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Model.h"

#include <gtest/gtest.h>

#include <string>

using namespace zbc::dsl;

namespace {

/// Runs `fn` and returns what it wrote to stderr (MLIR diagnostics).
template <typename Fn>
std::string stderrOf(Fn fn) {
  testing::internal::CaptureStderr();
  fn();
  return testing::internal::GetCapturedStderr();
}

/// "DSLTest.cpp:<line>", the location prefix a diagnostic must carry.
std::string here(unsigned line) {
  return std::string("DSLTest.cpp:") + std::to_string(line) + ":";
}

TEST(DSL, BuildsOpsInCallOrderWithShapes) {
  Model m("tiny");
  Tensor x = m.input("x", {4, 8});
  Tensor y = m.label("y", {4}, DType::I32);
  Tensor w = m.param("w", {8, 3}, Init::uniform(0.5));
  Tensor h = m.linear(x, w);
  EXPECT_EQ(h.shape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(h.dtype(), DType::F32);
  m.loss(m.crossEntropy(h, y));

  std::string ir = m.str();
  ASSERT_FALSE(ir.empty());
  size_t input = ir.find("zb.input \"x\" : tensor<4x8xf32>");
  size_t param = ir.find("zb.param \"w\" init uniform(5.000000e-01) : tensor<8x3xf32>");
  size_t linear = ir.find("zb.linear %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>");
  size_t loss = ir.find("zb.loss");
  ASSERT_NE(input, std::string::npos) << ir;
  ASSERT_NE(param, std::string::npos) << ir;
  ASSERT_NE(linear, std::string::npos) << ir;
  ASSERT_NE(loss, std::string::npos) << ir;
  EXPECT_LT(input, param);
  EXPECT_LT(param, linear);
  EXPECT_LT(linear, loss);
}

TEST(DSL, CutSplitsStagesAndPassesEveryActivation) {
  Model m("two");
  Tensor x = m.input("x", {2, 4});
  Tensor y = m.label("y", {2});
  Tensor a = m.relu(x);
  Tensor b = m.gelu(x);
  std::vector<Tensor> next = m.cut({a, b});
  ASSERT_EQ(next.size(), 2u);
  Tensor w = m.param("w", {4, 5}, Init::normal(0.02));
  m.loss(m.crossEntropy(m.linear(m.add(next[0], next[1]), w), y));
  std::string ir = m.str();
  EXPECT_NE(ir.find("zb.cut %0, %1 : tensor<2x4xf32>, tensor<2x4xf32>"),
            std::string::npos)
      << ir;
}

TEST(DSL, ShapeErrorPointsAtTheCall) {
  Model m("bad");
  Tensor x = m.input("x", {4, 8});
  Tensor w = m.param("w", {9, 3}, Init::zeros());
  Tensor h;
  std::string err = stderrOf([&] { h = m.linear(x, w); }); unsigned line = __LINE__;
  EXPECT_FALSE(h);
  EXPECT_NE(err.find(here(line)), std::string::npos) << err;
  EXPECT_NE(err.find("error: 'zb.linear' op input has 8 features (last "
                     "dimension) but the weight [in, out] takes 9"),
            std::string::npos)
      << err;
  // Later calls on the failed tensor stay quiet and the model cannot print.
  std::string later = stderrOf([&] { m.relu(h); });
  EXPECT_TRUE(later.empty()) << later;
  std::string ir;
  stderrOf([&] { ir = m.str(); });
  EXPECT_TRUE(ir.empty());
}

TEST(DSL, LinearTakesPyTorchsWeightLayout) {
  Model m("outin");
  Tensor x = m.input("x", {2, 8});
  Tensor w = m.param("w", {4, 8}, Init::normal(0.1));
  Tensor y = m.linear(x, w, WeightLayout::OutIn);
  m.loss(m.crossEntropy(y, m.label("y", {2})));
  std::string ir = m.str();
  EXPECT_NE(ir.find("zb.linear %x, %w {weight_out_in} : (tensor<2x8xf32>, "
                    "tensor<4x8xf32>) -> tensor<2x4xf32>"),
            std::string::npos)
      << ir;
}

TEST(DSL, RmsNormBuildsTheOp) {
  Model m("rms");
  Tensor x = m.input("x", {2, 8});
  Tensor w = m.param("w", {8}, Init::ones());
  m.loss(m.crossEntropy(m.rmsNorm(x, w, 1e-5), m.label("y", {2})));
  std::string ir = m.str();
  EXPECT_NE(ir.find("zb.rmsnorm %x, %w {epsilon = 1.000000e-05 : f64}"),
            std::string::npos)
      << ir;
}

TEST(DSL, RopeBuildsTheOpWithLlama3Scaling) {
  Model m("rope");
  Tensor x = m.input("x", {2, 4, 16});
  Tensor p = m.input("p", {2, 4}, DType::I64);
  Rope rope;
  rope.headDim = 8;
  rope.theta = 5e5;
  rope.maxPositions = 4;
  rope.llama3 = {8.0, 1.0, 4.0, 2};
  Tensor y = m.rope(x, p, rope);
  Tensor w = m.param("w", {16, 3}, Init::normal(0.1));
  m.loss(m.crossEntropy(m.linear(y, w), m.label("y", {2, 4})));
  std::string ir = m.str();
  EXPECT_NE(ir.find("zb.rope %x, %p {head_dim = 8 : i64, llama3_factor = "
                    "8.000000e+00 : f64, llama3_high_freq_factor = "
                    "4.000000e+00 : f64, llama3_low_freq_factor = "
                    "1.000000e+00 : f64, llama3_original_max_positions = 2 : "
                    "i64, max_positions = 4 : i64, theta = 5.000000e+05 : "
                    "f64}"),
            std::string::npos)
      << ir;
}

TEST(DSL, RopeHeadDimMustBeEven) {
  Model m("rope_bad");
  Tensor x = m.input("x", {2, 4, 15});
  Tensor p = m.input("p", {2, 4}, DType::I64);
  Rope rope;
  rope.headDim = 5;
  rope.maxPositions = 4;
  std::string err = stderrOf([&] { m.rope(x, p, rope); });
  EXPECT_NE(err.find("'zb.rope' op head_dim must be even and at most 256, "
                     "got 5"),
            std::string::npos)
      << err;
}

TEST(DSL, AttentionBuildsGroupedQueryAttention) {
  Model m("gqa");
  Tensor q = m.input("q", {2, 4, 16}), k = m.input("k", {2, 4, 8}),
         v = m.input("v", {2, 4, 8});
  Tensor w = m.param("w", {16, 3}, Init::normal(0.1));
  m.loss(m.crossEntropy(m.linear(m.attention(q, k, v, 4, 2), w),
                        m.label("y", {2, 4})));
  std::string ir = m.str();
  EXPECT_NE(ir.find("zb.attention %q, %k, %v {heads = 4 : i64, kv_heads = 2 "
                    ": i64} : (tensor<2x4x16xf32>, tensor<2x4x8xf32>, "
                    "tensor<2x4x8xf32>) -> tensor<2x4x16xf32>"),
            std::string::npos)
      << ir;
}

TEST(DSL, AttentionKvHeadsMustDivideHeads) {
  Model m("gqa_bad");
  Tensor q = m.input("q", {2, 4, 16}), k = m.input("k", {2, 4, 12}),
         v = m.input("v", {2, 4, 12});
  std::string err = stderrOf([&] { m.attention(q, k, v, 4, 3); });
  EXPECT_NE(err.find("'zb.attention' op kv_heads must divide heads, got "
                     "heads = 4 and kv_heads = 3"),
            std::string::npos)
      << err;
}

TEST(DSL, SwiGluNeedsGateAndUpOfOneType) {
  Model m("swiglu");
  Tensor g = m.input("g", {2, 8}), u = m.input("u", {2, 4});
  std::string err = stderrOf([&] { m.swiGlu(g, u); });
  EXPECT_NE(err.find("'zb.swiglu' op gate and up have different types: "
                     "'tensor<2x8xf32>' and 'tensor<2x4xf32>'"),
            std::string::npos)
      << err;
}

TEST(DSL, RmsNormWeightMustMatchTheLastDim) {
  Model m("rms_bad");
  Tensor x = m.input("x", {2, 8});
  Tensor bad = m.param("bad", {4}, Init::ones());
  std::string err = stderrOf([&] { m.rmsNorm(x, bad); });
  EXPECT_NE(err.find("'zb.rmsnorm' op weight has 4 elements but the input's "
                     "last dimension is 8"),
            std::string::npos)
      << err;
}

TEST(DSL, AttentionHeadsMustDivideHidden) {
  Model m("attn");
  Tensor qkv = m.input("qkv", {1, 16, 96});
  std::string err = stderrOf([&] { m.causalAttention(qkv, 5); });
  EXPECT_NE(err.find("hidden size 32 is not divisible by 5 heads"),
            std::string::npos)
      << err;
}

TEST(DSL, AttentionHeadsMustBePositive) {
  // The IR form cannot say heads(0) (ODS rejects it); the DSL can.
  Model m("attn0");
  Tensor qkv = m.input("qkv", {1, 16, 96});
  Tensor out;
  std::string err = stderrOf([&] { out = m.causalAttention(qkv, 0); });
  EXPECT_FALSE(out);
  EXPECT_NE(err.find("'zb.causal_attention' op heads must be positive, got 0"),
            std::string::npos)
      << err;
}

TEST(DSL, BadInitialiserIsRejectedAtTheCall) {
  Model m("init");
  std::string err = stderrOf([&] { m.param("w", {2, 2}, Init::normal(-1.0)); });
  EXPECT_NE(err.find("'zb.param' op scale must be positive"), std::string::npos)
      << err;
  err = stderrOf([&] { m.param("v", {0, 2}, Init::zeros()); });
  EXPECT_NE(err.find("dimensions must be positive, got 0"), std::string::npos)
      << err;
}

TEST(DSL, NullTensorIsAnError) {
  Model m("null");
  Tensor never;
  std::string err = stderrOf([&] { m.relu(never); });
  EXPECT_NE(err.find("'zb.relu' op input is a null Tensor"), std::string::npos)
      << err;
}

TEST(DSL, TensorsOfAnotherModelAreRejected) {
  Model a("a"), b("b");
  Tensor x = a.input("x", {2, 2});
  std::string err = stderrOf([&] { b.relu(x); });
  EXPECT_NE(err.find("belongs to a different model"), std::string::npos) << err;
}

TEST(DSL, ModelWithoutLossDoesNotPrint) {
  Model m("open");
  m.relu(m.input("x", {2, 2}));
  std::string ir;
  std::string err = stderrOf([&] { ir = m.str(); });
  EXPECT_TRUE(ir.empty());
  EXPECT_NE(err.find("model 'open' has no loss"), std::string::npos) << err;
}

TEST(DSL, OpsAfterLossAreRejected) {
  Model m("closed");
  Tensor x = m.input("x", {2, 3});
  Tensor y = m.label("y", {2});
  m.loss(m.crossEntropy(x, y));
  std::string err = stderrOf([&] { m.relu(x); });
  EXPECT_NE(err.find("added after loss()"), std::string::npos) << err;
}

TEST(DSL, StageCrossingWithoutCutFailsVerificationAtTheUse) {
  Model m("leak");
  Tensor x = m.input("x", {2, 3});
  Tensor y = m.label("y", {2});
  Tensor a = m.relu(x);
  Tensor b = m.cut(m.gelu(x));
  Tensor sum = m.add(a, b); unsigned line = __LINE__; // a skips the cut
  m.loss(m.crossEntropy(sum, y));
  std::string ir;
  std::string err = stderrOf([&] { ir = m.str(); });
  EXPECT_TRUE(ir.empty());
  EXPECT_NE(err.find(here(line)), std::string::npos) << err;
  EXPECT_NE(err.find("'zb.add' op in stage 1 uses a value of stage 0"),
            std::string::npos)
      << err;
}

TEST(DSL, DuplicateNamesFailVerification) {
  Model m("dup");
  Tensor x = m.input("x", {2, 3});
  Tensor y = m.label("x", {2});
  m.loss(m.crossEntropy(x, y));
  std::string ir;
  std::string err = stderrOf([&] { ir = m.str(); });
  EXPECT_TRUE(ir.empty());
  EXPECT_NE(err.find("redefines the name 'x'"), std::string::npos) << err;
}

} // namespace
