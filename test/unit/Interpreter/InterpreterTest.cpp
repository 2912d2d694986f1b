//===- InterpreterTest.cpp - unit tests of the reference interpreter ------===//
//
// Checks the IR side of zbc/Interpreter/Interpreter.h on models and
// pipelines written as text: runModel against the kernels, runPipelineStep
// on a hand-differentiated two-stage pipeline (stage 0 fused BW, stage 1
// split B/W, every tensor and backward op used once) against central finite
// differences of runModel in F64, grad accumulation in runPhase, the data
// helpers, and that bad feeds are reported at the right op, with the stage
// and microbatch, instead of crashing.
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Interpreter.h"
#include "zbc/Interpreter/Kernels.h"

#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace zbc::interp;
using zbc::failed;
using zbc::FailureOr;
using zbc::succeeded;
namespace zb = zbc::zb;

namespace {

constexpr Precision F64 = Precision::F64;
constexpr Precision F32 = Precision::F32;
constexpr const char *kFileName = "interp-test.mlir";

/// One parsed module and the diagnostics emitted while using it.
struct Parsed {
  struct Diag {
    unsigned line;
    std::string message;
  };

  explicit Parsed(llvm::StringRef text, bool verify = true) {
    context.loadDialect<zb::ZBDialect>();
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
        &context, [this](mlir::Diagnostic &diag) {
          unsigned line = 0;
          auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(diag.getLocation());
          if (loc)
            line = loc.getLine();
          diags.push_back({line, diag.str()});
          return mlir::success();
        });
    mlir::ParserConfig config(&context, verify);
    module = mlir::parseSourceString<mlir::ModuleOp>(text, config, kFileName);
  }

  /// The first op of type OpTy; null if there is none or parsing failed.
  template <typename OpTy> OpTy first() {
    OpTy result;
    if (!module)
      return result;
    module->walk([&](OpTy op) {
      if (!result)
        result = op;
    });
    return result;
  }

  /// All messages, one per line, for failure output.
  std::string allDiags() const {
    std::string s;
    for (const Diag &d : diags)
      s += std::to_string(d.line) + ": " + d.message + "\n";
    return s;
  }

  mlir::MLIRContext context;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<Diag> diags;
};

/// The 1-based line of the first occurrence of `needle` in `text`.
unsigned lineOf(llvm::StringRef text, llvm::StringRef needle) {
  size_t pos = text.find(needle);
  EXPECT_NE(pos, llvm::StringRef::npos) << needle.str();
  return 1 + text.take_front(pos).count('\n');
}

TensorMap merge(TensorMap a, const TensorMap &b) {
  a.insert(b.begin(), b.end());
  return a;
}

/// Random feeds and parameters for one run of `model`, in F64.
TensorMap modelData(zb::ModelOp model) {
  return merge(randomFeeds(model, 1, F64), initParams(model, 2, F64));
}

//===----------------------------------------------------------------------===//
// IR under test
//===----------------------------------------------------------------------===//

// A two-stage model touching every model-level op: B=2, S=3, vocab 5,
// hidden 4 in 2 heads, 5 classes. "unused" has no gradient path.
constexpr const char *kModel = R"mlir(
zb.model @tiny {
  %tok = zb.input "tok" : tensor<2x3xi64>
  %y = zb.label "y" : tensor<2x3xi64>
  %wte = zb.param "wte" init normal(0.5) : tensor<5x4xf32>
  %g = zb.param "ln.g" init uniform(1.0) : tensor<4xf32>
  %b = zb.param "ln.b" init normal(0.1) : tensor<4xf32>
  %wqkv = zb.param "wqkv" init normal(0.5) : tensor<4x12xf32>
  %e = zb.embedding %tok, %wte : (tensor<2x3xi64>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
  %n = zb.layernorm %e, %g, %b : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %qkv = zb.linear %n, %wqkv : (tensor<2x3x4xf32>, tensor<4x12xf32>) -> tensor<2x3x12xf32>
  %a = zb.causal_attention %qkv heads(2) : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  %r = zb.add %a, %e : tensor<2x3x4xf32>
  %c = zb.cut %r : tensor<2x3x4xf32>
  %wp = zb.param "wp" init normal(0.5) : tensor<4x3xf32>
  %w1 = zb.param "w1" init normal(0.5) : tensor<4x6xf32>
  %b1 = zb.param "b1" init normal(0.1) : tensor<6xf32>
  %w2 = zb.param "w2" init normal(0.5) : tensor<6x5xf32>
  %unused = zb.param "unused" init ones : tensor<2xf32>
  %p = zb.linear %c, %wp : (tensor<2x3x4xf32>, tensor<4x3xf32>) -> tensor<2x3x3xf32>
  %m = zb.matmul %p, %c : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %rm = zb.relu %m : tensor<2x3x4xf32>
  %h = zb.linear %rm, %w1 : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
  %hb = zb.bias_add %h, %b1 : (tensor<2x3x6xf32>, tensor<6xf32>) -> tensor<2x3x6xf32>
  %gl = zb.gelu %hb : tensor<2x3x6xf32>
  %o = zb.linear %gl, %w2 : (tensor<2x3x6xf32>, tensor<6x5xf32>) -> tensor<2x3x5xf32>
  %l = zb.cross_entropy %o, %y : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";

// kModel differentiated by hand, as zb-autodiff would: stage 0 fused (F,
// BW), stage 1 split (F, B, W). Stage 1's B reads the labels through the
// saved key F.6 and yields grad.b1 itself.
constexpr const char *kPipeline = R"mlir(
zb.pipeline @tiny_pipeline {
  zb.stage 0 {
    %tok = zb.input "tok" : tensor<2x3xi64>
    %wte = zb.param "wte" init normal(0.5) : tensor<5x4xf32>
    %g = zb.param "ln.g" init uniform(1.0) : tensor<4xf32>
    %b = zb.param "ln.b" init normal(0.1) : tensor<4xf32>
    %wqkv = zb.param "wqkv" init normal(0.5) : tensor<4x12xf32>
    zb.phase F(%t0 = "input.tok" : tensor<2x3xi64>, %wte0 = "param.wte" : tensor<5x4xf32>,
               %g0 = "param.ln.g" : tensor<4xf32>, %b0 = "param.ln.b" : tensor<4xf32>,
               %wqkv0 = "param.wqkv" : tensor<4x12xf32>) {
      %e = zb.embedding %t0, %wte0 : (tensor<2x3xi64>, tensor<5x4xf32>) -> tensor<2x3x4xf32>
      %n = zb.layernorm %e, %g0, %b0 : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
      %qkv = zb.linear %n, %wqkv0 : (tensor<2x3x4xf32>, tensor<4x12xf32>) -> tensor<2x3x12xf32>
      %a = zb.causal_attention %qkv heads(2) : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
      %r = zb.add %a, %e : tensor<2x3x4xf32>
      zb.yield "out.0" = %r, "F.0" = %e, "F.1" = %n, "F.2" = %qkv
          : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x12xf32>
    }
    zb.phase BW(%dr = "d_out.0" : tensor<2x3x4xf32>, %e1 = "F.0" : tensor<2x3x4xf32>,
                %n1 = "F.1" : tensor<2x3x4xf32>, %qkv1 = "F.2" : tensor<2x3x12xf32>,
                %t1 = "input.tok" : tensor<2x3xi64>, %g1 = "param.ln.g" : tensor<4xf32>,
                %wqkv1 = "param.wqkv" : tensor<4x12xf32>) {
      %dqkv = zb.causal_attention_grad %dr, %qkv1 heads(2) : (tensor<2x3x4xf32>, tensor<2x3x12xf32>) -> tensor<2x3x12xf32>
      %dn = zb.linear_grad_input %dqkv, %wqkv1 : (tensor<2x3x12xf32>, tensor<4x12xf32>) -> tensor<2x3x4xf32>
      %dwqkv = zb.linear_grad_weight %n1, %dqkv : (tensor<2x3x4xf32>, tensor<2x3x12xf32>) -> tensor<4x12xf32>
      %de2 = zb.layernorm_grad_input %dn, %e1, %g1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
      %dg = zb.layernorm_grad_gamma %dn, %e1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4xf32>
      %db = zb.bias_grad %dn : tensor<2x3x4xf32> -> tensor<4xf32>
      %de = zb.add %dr, %de2 : tensor<2x3x4xf32>
      %dwte = zb.embedding_grad %t1, %de vocab(5) : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<5x4xf32>
      zb.yield "grad.wte" = %dwte, "grad.ln.g" = %dg, "grad.ln.b" = %db, "grad.wqkv" = %dwqkv
          : tensor<5x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x12xf32>
    }
  }
  zb.stage 1 {
    %y = zb.label "y" : tensor<2x3xi64>
    %wp = zb.param "wp" init normal(0.5) : tensor<4x3xf32>
    %w1 = zb.param "w1" init normal(0.5) : tensor<4x6xf32>
    %b1 = zb.param "b1" init normal(0.1) : tensor<6xf32>
    %w2 = zb.param "w2" init normal(0.5) : tensor<6x5xf32>
    %unused = zb.param "unused" init ones : tensor<2xf32>
    zb.phase F(%c0 = "in.0" : tensor<2x3x4xf32>, %y0 = "label.y" : tensor<2x3xi64>,
               %wp0 = "param.wp" : tensor<4x3xf32>, %w10 = "param.w1" : tensor<4x6xf32>,
               %b10 = "param.b1" : tensor<6xf32>, %w20 = "param.w2" : tensor<6x5xf32>) {
      %p = zb.linear %c0, %wp0 : (tensor<2x3x4xf32>, tensor<4x3xf32>) -> tensor<2x3x3xf32>
      %m = zb.matmul %p, %c0 : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
      %rm = zb.relu %m : tensor<2x3x4xf32>
      %h = zb.linear %rm, %w10 : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
      %hb = zb.bias_add %h, %b10 : (tensor<2x3x6xf32>, tensor<6xf32>) -> tensor<2x3x6xf32>
      %gl = zb.gelu %hb : tensor<2x3x6xf32>
      %o = zb.linear %gl, %w20 : (tensor<2x3x6xf32>, tensor<6x5xf32>) -> tensor<2x3x5xf32>
      %l = zb.cross_entropy %o, %y0 : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
      zb.yield "loss" = %l, "F.0" = %p, "F.1" = %m, "F.2" = %rm, "F.3" = %hb, "F.4" = %gl,
               "F.5" = %o, "F.6" = %y0
          : tensor<f32>, tensor<2x3x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>,
            tensor<2x3x6xf32>, tensor<2x3x6xf32>, tensor<2x3x5xf32>, tensor<2x3xi64>
    }
    zb.phase B(%o1 = "F.5" : tensor<2x3x5xf32>, %y1 = "F.6" : tensor<2x3xi64>,
               %hb1 = "F.3" : tensor<2x3x6xf32>, %m1 = "F.1" : tensor<2x3x4xf32>,
               %p1 = "F.0" : tensor<2x3x3xf32>, %c1 = "in.0" : tensor<2x3x4xf32>,
               %wp1 = "param.wp" : tensor<4x3xf32>, %w11 = "param.w1" : tensor<4x6xf32>,
               %w21 = "param.w2" : tensor<6x5xf32>) {
      %one = zb.fill 1.0 : tensor<f32>
      %do = zb.cross_entropy_grad %o1, %y1, %one : (tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<f32>) -> tensor<2x3x5xf32>
      %dgl = zb.linear_grad_input %do, %w21 : (tensor<2x3x5xf32>, tensor<6x5xf32>) -> tensor<2x3x6xf32>
      %dhb = zb.gelu_grad %dgl, %hb1 : (tensor<2x3x6xf32>, tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
      %drm = zb.linear_grad_input %dhb, %w11 : (tensor<2x3x6xf32>, tensor<4x6xf32>) -> tensor<2x3x4xf32>
      %dm = zb.relu_grad %drm, %m1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
      %dp = zb.matmul_grad_lhs %dm, %c1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
      %dc1 = zb.matmul_grad_rhs %p1, %dm : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
      %dc2 = zb.linear_grad_input %dp, %wp1 : (tensor<2x3x3xf32>, tensor<4x3xf32>) -> tensor<2x3x4xf32>
      %dc = zb.add %dc1, %dc2 : tensor<2x3x4xf32>
      %db1 = zb.bias_grad %dhb : tensor<2x3x6xf32> -> tensor<6xf32>
      zb.yield "d_in.0" = %dc, "B.0" = %do, "B.1" = %dhb, "B.2" = %dp, "grad.b1" = %db1
          : tensor<2x3x4xf32>, tensor<2x3x5xf32>, tensor<2x3x6xf32>, tensor<2x3x3xf32>, tensor<6xf32>
    }
    zb.phase W(%do2 = "B.0" : tensor<2x3x5xf32>, %dhb2 = "B.1" : tensor<2x3x6xf32>,
               %dp2 = "B.2" : tensor<2x3x3xf32>, %gl2 = "F.4" : tensor<2x3x6xf32>,
               %rm2 = "F.2" : tensor<2x3x4xf32>, %c2 = "in.0" : tensor<2x3x4xf32>) {
      %dw2 = zb.linear_grad_weight %gl2, %do2 : (tensor<2x3x6xf32>, tensor<2x3x5xf32>) -> tensor<6x5xf32>
      %dw1 = zb.linear_grad_weight %rm2, %dhb2 : (tensor<2x3x4xf32>, tensor<2x3x6xf32>) -> tensor<4x6xf32>
      %dwp = zb.linear_grad_weight %c2, %dp2 : (tensor<2x3x4xf32>, tensor<2x3x3xf32>) -> tensor<4x3xf32>
      zb.yield "grad.w2" = %dw2, "grad.w1" = %dw1, "grad.wp" = %dwp
          : tensor<6x5xf32>, tensor<4x6xf32>, tensor<4x3xf32>
    }
  }
}
)mlir";

// The MLP of dialect/docs/ZB.md, small.
constexpr const char *kMlp = R"mlir(
zb.model @mlp {
  %x = zb.input "x" : tensor<2x3xf32>
  %y = zb.label "y" : tensor<2xi64>
  %w0 = zb.param "w0" init normal(0.5) : tensor<3x4xf32>
  %b0 = zb.param "b0" init uniform(0.1) : tensor<4xf32>
  %h = zb.linear %x, %w0 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %hb = zb.bias_add %h, %b0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = zb.relu %hb : tensor<2x4xf32>
  %c = zb.cut %r : tensor<2x4xf32>
  %w1 = zb.param "w1" init normal(0.5) : tensor<4x3xf32>
  %o = zb.linear %c, %w1 : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %l = zb.cross_entropy %o, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";

//===----------------------------------------------------------------------===//
// runModel
//===----------------------------------------------------------------------===//

TEST(Interpreter, RunModelComposesTheKernels) {
  Parsed ir(kMlp);
  ASSERT_TRUE(ir.module) << ir.allDiags();
  auto model = ir.first<zb::ModelOp>();
  for (Precision p : {F64, F32}) {
    TensorMap feeds = merge(randomFeeds(model, 1, p), initParams(model, 2, p));
    FailureOr<Tensor> loss = runModel(model, feeds, p);
    ASSERT_TRUE(succeeded(loss)) << ir.allDiags();
    EXPECT_EQ(loss->precision(), p);
    EXPECT_EQ(loss->rank(), 0);

    namespace k = kernels;
    std::string error;
    Tensor h = k::linear(feeds["input.x"], feeds["param.w0"]);
    h = k::relu(k::biasAdd(h, feeds["param.b0"]));
    FailureOr<Tensor> expected = k::crossEntropy(
        k::linear(h, feeds["param.w1"]), feeds["label.y"], -100, error);
    ASSERT_TRUE(succeeded(expected)) << error;
    EXPECT_TRUE(bitwiseEqual(*loss, *expected))
        << loss->toString() << " vs " << expected->toString();
  }
}

TEST(Interpreter, RunModelConvertsFeedsToThePrecision) {
  Parsed ir(kMlp);
  auto model = ir.first<zb::ModelOp>();
  TensorMap feeds64 =
      merge(randomFeeds(model, 3, F64), initParams(model, 4, F64));
  TensorMap feeds32 =
      merge(randomFeeds(model, 3, F32), initParams(model, 4, F32));
  // F32 data is the F64 data rounded, so an F32 run gives one answer.
  FailureOr<Tensor> a = runModel(model, feeds64, F32);
  FailureOr<Tensor> b = runModel(model, feeds32, F32);
  ASSERT_TRUE(succeeded(a) && succeeded(b)) << ir.allDiags();
  EXPECT_TRUE(bitwiseEqual(*a, *b));
}

TEST(Interpreter, RunModelReportsMissingFeed) {
  Parsed ir(kMlp);
  auto model = ir.first<zb::ModelOp>();
  TensorMap feeds = modelData(model);
  feeds.erase("param.w1");
  EXPECT_TRUE(failed(runModel(model, feeds, F64)));
  ASSERT_EQ(ir.diags.size(), 1u) << ir.allDiags();
  EXPECT_EQ(ir.diags[0].message, "'zb.param' op has no feed 'param.w1'");
  EXPECT_EQ(ir.diags[0].line, lineOf(kMlp, "zb.param \"w1\""));
}

TEST(Interpreter, RunModelReportsWrongShapeAndKind) {
  Parsed ir(kMlp);
  auto model = ir.first<zb::ModelOp>();
  TensorMap feeds = modelData(model);
  TensorMap wrongShape = feeds;
  wrongShape["input.x"] = Tensor::zeros({3, 2}, F64);
  EXPECT_TRUE(failed(runModel(model, wrongShape, F64)));
  TensorMap wrongKind = feeds;
  wrongKind["label.y"] = Tensor::zeros({2}, F64);
  EXPECT_TRUE(failed(runModel(model, wrongKind, F64)));
  ASSERT_EQ(ir.diags.size(), 2u) << ir.allDiags();
  EXPECT_EQ(ir.diags[0].message, "'zb.input' op feed 'input.x' has shape "
                                 "[3, 2], expected 'tensor<2x3xf32>'");
  EXPECT_EQ(ir.diags[1].message, "'zb.label' op feed 'label.y' holds floats, "
                                 "expected 'tensor<2xi64>'");
  EXPECT_EQ(ir.diags[1].line, lineOf(kMlp, "zb.label"));
}

TEST(Interpreter, RunModelReportsEmbeddingIndexAtTheOp) {
  Parsed ir(kModel);
  auto model = ir.first<zb::ModelOp>();
  TensorMap feeds = modelData(model);
  feeds["input.tok"].setInt(4, 5); // [1, 1]; vocab is 5
  EXPECT_TRUE(failed(runModel(model, feeds, F64)));
  ASSERT_EQ(ir.diags.size(), 1u) << ir.allDiags();
  EXPECT_EQ(ir.diags[0].message,
            "'zb.embedding' op index 5 at [1, 1] is outside [0, 5)");
  EXPECT_EQ(ir.diags[0].line, lineOf(kModel, "zb.embedding"));
}

TEST(Interpreter, RunModelReportsLabelOutOfRange) {
  Parsed ir(kModel);
  auto model = ir.first<zb::ModelOp>();
  TensorMap feeds = modelData(model);
  feeds["label.y"].setInt(0, -1);
  EXPECT_TRUE(failed(runModel(model, feeds, F32)));
  ASSERT_EQ(ir.diags.size(), 1u) << ir.allDiags();
  EXPECT_EQ(ir.diags[0].message,
            "'zb.cross_entropy' op label -1 at [0, 0] is outside [0, 5)"
            " and is not the ignore_index -100");
  EXPECT_EQ(ir.diags[0].line, lineOf(kModel, "zb.cross_entropy"));
}

TEST(Interpreter, RunModelRefusesInvalidIR) {
  // Parsed without verification: the linear's result type is wrong, which
  // would make the kernel write past its buffer if it ran.
  constexpr const char *bad = R"mlir(
zb.model @bad {
  %x = zb.input "x" : tensor<2x3xf32>
  %w = zb.param "w" init ones : tensor<3x4xf32>
  %h = zb.linear %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x9xf32>
  %y = zb.label "y" : tensor<2xi64>
  %l = zb.cross_entropy %h, %y : (tensor<2x9xf32>, tensor<2xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";
  Parsed ir(bad, /*verify=*/false);
  ASSERT_TRUE(ir.module);
  auto model = ir.first<zb::ModelOp>();
  TensorMap feeds = {{"input.x", Tensor::zeros({2, 3}, F64)},
                     {"param.w", Tensor::zeros({3, 4}, F64)},
                     {"label.y", Tensor::intZeros({2})}};
  EXPECT_TRUE(failed(runModel(model, feeds, F64)));
  ASSERT_FALSE(ir.diags.empty());
  EXPECT_NE(ir.diags[0].message.find("does not match the inferred type"),
            std::string::npos)
      << ir.allDiags();
}

//===----------------------------------------------------------------------===//
// runPipelineStep against the model
//===----------------------------------------------------------------------===//

/// The model and its pipeline in one module, with data for `count`
/// microbatches.
struct TinyPipeline {
  TinyPipeline() : ir(std::string(kModel) + kPipeline) {
    model = ir.first<zb::ModelOp>();
    pipeline = ir.first<zb::PipelineOp>();
  }
  zb::StageOp stage(size_t k) {
    return llvm::to_vector(pipeline.getBody().front().getOps<zb::StageOp>())[k];
  }
  Parsed ir;
  zb::ModelOp model;
  zb::PipelineOp pipeline;
};

/// sum over microbatches of runModel's loss, in F64.
/// The step's loss: the mean of the model's loss over the microbatches.
double modelStepLoss(zb::ModelOp model, const std::vector<TensorMap> &mbs,
                     const TensorMap &params) {
  double sum = 0;
  for (const TensorMap &mb : mbs) {
    FailureOr<Tensor> loss = runModel(model, merge(mb, params), F64);
    EXPECT_TRUE(succeeded(loss));
    sum += succeeded(loss) ? loss->get(0) : NAN;
  }
  return sum / static_cast<double>(mbs.size());
}

TEST(Interpreter, DataHelpersAgreeBetweenModelAndPipeline) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  for (Precision p : {F64, F32}) {
    TensorMap a = initParams(t.model, 7, p), b = initParams(t.pipeline, 7, p);
    ASSERT_EQ(a.size(), 9u);
    ASSERT_EQ(a.size(), b.size());
    for (auto &[key, tensor] : a)
      EXPECT_TRUE(bitwiseEqual(tensor, b[key])) << key;
    std::vector<TensorMap> mbs = randomMicrobatches(t.pipeline, 3, 20, p);
    for (size_t m = 0; m < mbs.size(); ++m) {
      TensorMap feeds = randomFeeds(t.model, 20 + m, p);
      ASSERT_EQ(feeds.size(), 2u);
      for (auto &[key, tensor] : feeds)
        EXPECT_TRUE(bitwiseEqual(tensor, mbs[m][key])) << key << " mb " << m;
    }
  }
  // F32 parameters are the F64 ones rounded; another seed differs.
  TensorMap p64 = initParams(t.model, 7, F64);
  EXPECT_TRUE(bitwiseEqual(initParams(t.model, 7, F32)["param.wte"],
                           p64["param.wte"].cast(F32)));
  EXPECT_FALSE(bitwiseEqual(initParams(t.model, 8, F64)["param.wte"],
                            p64["param.wte"]));
}

TEST(Interpreter, PipelineLossesEqualModelLossesBitwise) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  for (Precision p : {F64, F32}) {
    TensorMap params = initParams(t.pipeline, 1, p);
    std::vector<TensorMap> mbs = randomMicrobatches(t.pipeline, 3, 100, p);
    FailureOr<StepResult> step = runPipelineStep(t.pipeline, mbs, params, p);
    ASSERT_TRUE(succeeded(step)) << t.ir.allDiags();
    ASSERT_EQ(step->losses.size(), 3u);
    for (size_t m = 0; m < mbs.size(); ++m) {
      FailureOr<Tensor> loss = runModel(t.model, merge(mbs[m], params), p);
      ASSERT_TRUE(succeeded(loss)) << t.ir.allDiags();
      // Same ops on the same data in the same order: the same bits.
      EXPECT_EQ(step->losses[m], loss->get(0)) << "microbatch " << m;
    }
  }
}

TEST(Interpreter, PipelineGradsMatchFiniteDifferencesOfTheModel) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  TensorMap params = initParams(t.pipeline, 1, F64);
  std::vector<TensorMap> mbs = randomMicrobatches(t.pipeline, 2, 100, F64);
  FailureOr<StepResult> step = runPipelineStep(t.pipeline, mbs, params, F64);
  ASSERT_TRUE(succeeded(step)) << t.ir.allDiags();
  ASSERT_EQ(step->grads.size(), params.size());

  const double eps = 1e-6;
  for (auto &[key, value] : params) {
    std::string name = key.substr(std::string("param.").size());
    Tensor numeric = Tensor::zeros(value.shape(), F64);
    TensorMap perturbed = params;
    Tensor &slot = perturbed[key];
    for (int64_t i = 0; i < value.numElements(); ++i) {
      double original = slot.get(i);
      slot.set(i, original + eps);
      double plus = modelStepLoss(t.model, mbs, perturbed);
      slot.set(i, original - eps);
      double minus = modelStepLoss(t.model, mbs, perturbed);
      slot.set(i, original);
      numeric.set(i, (plus - minus) / (2 * eps));
    }
    const Tensor &analytic = step->grads["grad." + name];
    EXPECT_LE(relativeError(analytic, numeric), 1e-6)
        << key << "\nanalytic " << analytic.toString() << "\nnumeric  "
        << numeric.toString();
  }
  // No phase yields grad.unused: it is reported as zero.
  EXPECT_TRUE(bitwiseEqual(step->grads["grad.unused"],
                           Tensor::zeros({2}, F64)));
}

TEST(Interpreter, PipelineF32AgreesWithF64) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  std::vector<TensorMap> mbs = randomMicrobatches(t.pipeline, 2, 5, F64);
  TensorMap params = initParams(t.pipeline, 6, F64);
  FailureOr<StepResult> wide = runPipelineStep(t.pipeline, mbs, params, F64);
  FailureOr<StepResult> narrow = runPipelineStep(t.pipeline, mbs, params, F32);
  ASSERT_TRUE(succeeded(wide) && succeeded(narrow)) << t.ir.allDiags();
  for (size_t m = 0; m < 2; ++m)
    EXPECT_NEAR(narrow->losses[m], wide->losses[m],
                1e-5 * std::abs(wide->losses[m]));
  for (auto &[key, grad] : wide->grads) {
    EXPECT_EQ(narrow->grads[key].precision(), F32);
    EXPECT_LE(relativeError(narrow->grads[key], grad), 1e-5) << key;
  }
}

// The step's gradient is the mean over its microbatches: (g1 + g2) / 2,
// bitwise (halving is exact).
TEST(Interpreter, PipelineAveragesGradsOverMicrobatches) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  TensorMap params = initParams(t.pipeline, 1, F64);
  std::vector<TensorMap> mbs = randomMicrobatches(t.pipeline, 2, 9, F64);
  FailureOr<StepResult> both = runPipelineStep(t.pipeline, mbs, params, F64);
  FailureOr<StepResult> first =
      runPipelineStep(t.pipeline, {mbs[0]}, params, F64);
  FailureOr<StepResult> second =
      runPipelineStep(t.pipeline, {mbs[1]}, params, F64);
  ASSERT_TRUE(succeeded(both) && succeeded(first) && succeeded(second));
  for (auto &[key, grad] : both->grads)
  {
    Tensor sum = kernels::add(first->grads[key], second->grads[key]);
    Tensor mean = Tensor::zeros(sum.shape(), F64);
    for (int64_t i = 0; i < sum.numElements(); ++i)
      mean.set(i, sum.get(i) * 0.5);
    EXPECT_TRUE(bitwiseEqual(grad, mean)) << key;
  }
}

TEST(Interpreter, PipelineErrorsNameStageAndMicrobatch) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  TensorMap params = initParams(t.pipeline, 1, F64);
  std::vector<TensorMap> mbs = randomMicrobatches(t.pipeline, 2, 9, F64);
  mbs[1]["label.y"].setInt(3, 9);
  EXPECT_TRUE(failed(runPipelineStep(t.pipeline, mbs, params, F64)));
  ASSERT_EQ(t.ir.diags.size(), 1u) << t.ir.allDiags();
  EXPECT_EQ(t.ir.diags[0].message, "stage 1, microbatch 1: 'zb.cross_entropy' "
                                   "op label 9 at [1, 0] is outside [0, 5)"
                                   " and is not the ignore_index -100");
  EXPECT_EQ(t.ir.diags[0].line, lineOf(std::string(kModel) + kPipeline,
                                       "zb.cross_entropy %o, %y0"));

  t.ir.diags.clear();
  params.erase("param.w2");
  EXPECT_TRUE(failed(runPipelineStep(t.pipeline, mbs, params, F64)));
  ASSERT_EQ(t.ir.diags.size(), 1u) << t.ir.allDiags();
  EXPECT_EQ(t.ir.diags[0].message,
            "stage 1, microbatch 0: 'zb.param' op has no feed 'param.w2'");
}

//===----------------------------------------------------------------------===//
// runPhase
//===----------------------------------------------------------------------===//

TEST(Interpreter, RunPhaseAccumulatesGradKeysAndOverwritesOthers) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  zb::StageOp stage1 = t.stage(1);
  zb::PhaseOp w = stage1.getPhase(zb::ComputeKind::W);
  TensorMap env;
  uint64_t seed = 1;
  for (auto [arg, key] :
       llvm::zip(w.getBodyBlock().getArguments(), w.getArgKeyList())) {
    auto type = llvm::cast<mlir::RankedTensorType>(arg.getType());
    Shape shape(type.getShape().begin(), type.getShape().end());
    Tensor value = Tensor::zeros(shape, F64);
    for (int64_t i = 0; i < value.numElements(); ++i)
      value.set(i, std::sin(double(seed++)));
    env[key.str()] = value;
  }
  ASSERT_TRUE(succeeded(runPhase(w, env, F64))) << t.ir.allDiags();
  Tensor once = env["grad.w2"];
  EXPECT_TRUE(bitwiseEqual(
      once, kernels::linearGradWeight(env["F.4"], env["B.0"])));
  ASSERT_TRUE(succeeded(runPhase(w, env, F64)));
  EXPECT_TRUE(bitwiseEqual(env["grad.w2"], kernels::add(once, once)));

  // F overwrites its saved keys.
  zb::PhaseOp f = stage1.getPhase(zb::ComputeKind::F);
  TensorMap fenv = merge(randomMicrobatches(t.pipeline, 1, 3, F64)[0],
                         initParams(t.pipeline, 4, F64));
  fenv["in.0"] = Tensor::filled({2, 3, 4}, F64, 0.25);
  ASSERT_TRUE(succeeded(runPhase(f, fenv, F64))) << t.ir.allDiags();
  Tensor saved = fenv["F.0"];
  fenv["in.0"] = Tensor::filled({2, 3, 4}, F64, 0.5);
  ASSERT_TRUE(succeeded(runPhase(f, fenv, F64)));
  EXPECT_TRUE(bitwiseEqual(
      fenv["F.0"], kernels::linear(fenv["in.0"], fenv["param.wp"])));
  EXPECT_FALSE(bitwiseEqual(fenv["F.0"], saved));
}

// Note [Softmax over vocabulary shards]: a phase of the vocabulary shard's
// ops over two shards of 3 and 2 columns, merged as zb.reduce softmax
// does, gives zb.cross_entropy and zb.cross_entropy_grad of the whole 5.
TEST(Interpreter, RunPhaseComputesTheVocabularyShardOps) {
  // One F phase does it all: its statistics (F.0), and from the merged
  // ones fed back as input.s, the loss and the shard's gradient (F.1).
  const char *shardPhase = R"mlir(
    zb.pipeline @p {
      zb.stage 0 {
        %z = zb.input "z" : tensor<4x{C}xf64>
        %y = zb.label "y" : tensor<4xi64>
        %s = zb.input "s" : tensor<4x4xf64>
        zb.phase F(%input.z = "input.z" : tensor<4x{C}xf64>, %label.y = "label.y" : tensor<4xi64>, %input.s = "input.s" : tensor<4x4xf64>) {
          %stats = zb.vocab_stats %input.z, %label.y {first = {FIRST} : i64, vocab = 5 : i64} : (tensor<4x{C}xf64>, tensor<4xi64>) -> tensor<4x4xf64>
          %half = zb.fill 0.5 : tensor<f64>
          %l = zb.vocab_loss %input.s, %label.y {vocab = 5 : i64} : (tensor<4x4xf64>, tensor<4xi64>) -> tensor<f64>
          %dz = zb.vocab_grad %input.z, %label.y, %input.s, %half {first = {FIRST} : i64, vocab = 5 : i64} : (tensor<4x{C}xf64>, tensor<4xi64>, tensor<4x4xf64>, tensor<f64>) -> tensor<4x{C}xf64>
          zb.yield "loss" = %l, "F.0" = %stats, "F.1" = %dz : tensor<f64>, tensor<4x4xf64>, tensor<4x{C}xf64>
        }
        zb.phase BW() {
          zb.yield
        }
      }
    })mlir";
  Tensor logits = Tensor::zeros({4, 5}, F64);
  for (int64_t i = 0; i < 20; ++i)
    logits.set(i, std::sin(1.7 * double(i)) * 3);
  Tensor labels = Tensor::fromInts({4}, {4, 0, -100, 2});
  std::vector<Tensor> stats, shards;
  std::vector<TensorMap> envs;
  std::vector<std::unique_ptr<Parsed>> parsed;
  for (auto [first, columns] : {std::pair<int64_t, int64_t>{0, 3}, {3, 2}}) {
    std::string text = shardPhase;
    for (auto [key, value] :
         {std::pair<std::string, int64_t>{"{C}", columns}, {"{FIRST}", first}})
      for (size_t at; (at = text.find(key)) != std::string::npos;)
        text.replace(at, key.size(), std::to_string(value));
    parsed.push_back(std::make_unique<Parsed>(text));
    auto stage = parsed.back()->first<zb::StageOp>();
    ASSERT_TRUE(stage) << parsed.back()->allDiags();
    Tensor shard = Tensor::zeros({4, columns}, F64);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < columns; ++c)
        shard.set(r * columns + c, logits.get(r * 5 + first + c));
    TensorMap env = {{"input.z", shard},
                     {"label.y", labels},
                     {"input.s", Tensor::filled({4, 4}, F64, 1.0)}};
    ASSERT_TRUE(succeeded(
        runPhase(stage.getPhase(zb::ComputeKind::F), env, F64)))
        << parsed.back()->allDiags();
    stats.push_back(env["F.0"]);
    shards.push_back(shard);
    envs.push_back(env);
  }
  std::vector<Tensor> merged = kernels::vocabMerge(stats);
  std::string error;
  Tensor whole = *kernels::crossEntropy(logits, labels, -100, error);
  Tensor wholeGrad = *kernels::crossEntropyGrad(
      logits, labels, Tensor::scalar(0.5, F64), -100, error);
  int64_t firsts[] = {0, 3};
  for (size_t k = 0; k < 2; ++k) {
    envs[k]["input.s"] = merged[k];
    auto stage = parsed[k]->first<zb::StageOp>();
    ASSERT_TRUE(succeeded(
        runPhase(stage.getPhase(zb::ComputeKind::F), envs[k], F64)))
        << parsed[k]->allDiags();
    EXPECT_NEAR(envs[k]["loss"].get(0), whole.get(0), 1e-12);
    const Tensor &dz = envs[k]["F.1"];
    int64_t columns = shards[k].shape()[1];
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < columns; ++c)
        EXPECT_NEAR(dz.get(r * columns + c),
                    wholeGrad.get(r * 5 + firsts[k] + c), 1e-12)
            << "shard " << k << " row " << r << " column " << c;
  }
}

TEST(Interpreter, RunPhaseReportsMissingKeyAndLeavesEnvUnchanged) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  zb::StageOp stage1 = t.stage(1);
  zb::PhaseOp w = stage1.getPhase(zb::ComputeKind::W);
  TensorMap env = {{"grad.w2", Tensor::filled({6, 5}, F64, 1.0)}};
  EXPECT_TRUE(failed(runPhase(w, env, F64)));
  ASSERT_EQ(t.ir.diags.size(), 1u) << t.ir.allDiags();
  EXPECT_EQ(t.ir.diags[0].message,
            "'zb.phase' op W reads 'B.0', which the environment does not hold");
  EXPECT_EQ(env.size(), 1u);

  // A wrong shape under a key is a type error at the phase, too.
  t.ir.diags.clear();
  zb::PhaseOp f = stage1.getPhase(zb::ComputeKind::F);
  TensorMap fenv = merge(randomMicrobatches(t.pipeline, 1, 3, F64)[0],
                         initParams(t.pipeline, 4, F64));
  fenv["in.0"] = Tensor::zeros({2, 3, 5}, F64);
  EXPECT_TRUE(failed(runPhase(f, fenv, F64)));
  ASSERT_EQ(t.ir.diags.size(), 1u) << t.ir.allDiags();
  EXPECT_EQ(t.ir.diags[0].message, "'zb.phase' op F key 'in.0' has shape "
                                   "[2, 3, 5], expected 'tensor<2x3x4xf32>'");
}

TEST(Interpreter, RunPhaseRefusesToAccumulateMismatchedGrad) {
  TinyPipeline t;
  ASSERT_TRUE(t.model && t.pipeline) << t.ir.allDiags();
  zb::StageOp stage1 = t.stage(1);
  zb::PhaseOp w = stage1.getPhase(zb::ComputeKind::W);
  TensorMap env;
  for (auto [arg, key] :
       llvm::zip(w.getBodyBlock().getArguments(), w.getArgKeyList())) {
    auto type = llvm::cast<mlir::RankedTensorType>(arg.getType());
    env[key.str()] = Tensor::filled(
        Shape(type.getShape().begin(), type.getShape().end()), F64, 0.5);
  }
  env["grad.w2"] = Tensor::zeros({5, 6}, F64);
  TensorMap before = env;
  EXPECT_TRUE(failed(runPhase(w, env, F64)));
  ASSERT_EQ(t.ir.diags.size(), 1u) << t.ir.allDiags();
  EXPECT_EQ(t.ir.diags[0].message,
            "'zb.yield' op yields a tensor of shape [6, 5] under 'grad.w2', "
            "which already holds one of shape [5, 6]");
  // Nothing was stored, not even the grads that would have fit.
  EXPECT_EQ(env.size(), before.size());
  EXPECT_EQ(env.count("grad.w1"), 0u);
}

//===----------------------------------------------------------------------===//
// Data helpers
//===----------------------------------------------------------------------===//

TEST(Interpreter, InitParamsFollowsTheDeclaredInit) {
  constexpr const char *text = R"mlir(
zb.model @init {
  %x = zb.input "x" : tensor<2x100xf32>
  %z = zb.param "z" init zeros : tensor<100xf32>
  %o = zb.param "o" init ones : tensor<100xf32>
  %n = zb.param "n" init normal(0.5) : tensor<100x100xf32>
  %u = zb.param "u" init uniform(0.25) : tensor<100x100xf32>
  %y = zb.label "y" : tensor<2xi64>
  %a = zb.bias_add %x, %z : (tensor<2x100xf32>, tensor<100xf32>) -> tensor<2x100xf32>
  %b = zb.bias_add %a, %o : (tensor<2x100xf32>, tensor<100xf32>) -> tensor<2x100xf32>
  %c = zb.linear %b, %n : (tensor<2x100xf32>, tensor<100x100xf32>) -> tensor<2x100xf32>
  %d = zb.linear %c, %u : (tensor<2x100xf32>, tensor<100x100xf32>) -> tensor<2x100xf32>
  %l = zb.cross_entropy %d, %y : (tensor<2x100xf32>, tensor<2xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";
  Parsed ir(text);
  ASSERT_TRUE(ir.module) << ir.allDiags();
  TensorMap params = initParams(ir.first<zb::ModelOp>(), 42, F64);
  EXPECT_TRUE(bitwiseEqual(params["param.z"], Tensor::zeros({100}, F64)));
  EXPECT_TRUE(bitwiseEqual(params["param.o"], Tensor::filled({100}, F64, 1)));
  const Tensor &n = params["param.n"];
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < n.numElements(); ++i) {
    sum += n.get(i);
    squares += n.get(i) * n.get(i);
  }
  double mean = sum / n.numElements();
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(squares / n.numElements() - mean * mean), 0.5, 0.02);
  const Tensor &u = params["param.u"];
  double lo = 1, hi = -1;
  for (int64_t i = 0; i < u.numElements(); ++i) {
    lo = std::min(lo, u.get(i));
    hi = std::max(hi, u.get(i));
  }
  EXPECT_GE(lo, -0.25);
  EXPECT_LT(hi, 0.25);
  EXPECT_LT(lo, -0.24);
  EXPECT_GT(hi, 0.24);
}

TEST(Interpreter, RandomFeedsUseTheRangeTheModelNeeds) {
  // tok feeds an embedding of vocab 3 through a cut; y labels 7 classes;
  // nobody reads "other", so it gets [0, 2).
  constexpr const char *text = R"mlir(
zb.model @ranges {
  %tok = zb.input "tok" : tensor<50x40xi64>
  %other = zb.input "other" : tensor<100xi32>
  %x = zb.input "x" : tensor<50x40x7xf32>
  %y = zb.label "y" : tensor<50x40xi64>
  %r = zb.relu %x : tensor<50x40x7xf32>
  %c:2 = zb.cut %r, %tok : tensor<50x40x7xf32>, tensor<50x40xi64>
  %t = zb.param "t" init ones : tensor<3x7xf32>
  %e = zb.embedding %c#1, %t : (tensor<50x40xi64>, tensor<3x7xf32>) -> tensor<50x40x7xf32>
  %s = zb.add %e, %c#0 : tensor<50x40x7xf32>
  %l = zb.cross_entropy %s, %y : (tensor<50x40x7xf32>, tensor<50x40xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
)mlir";
  Parsed ir(text);
  ASSERT_TRUE(ir.module) << ir.allDiags();
  TensorMap feeds = randomFeeds(ir.first<zb::ModelOp>(), 5, F32);
  using Range = std::pair<int64_t, int64_t>;
  auto range = [](const Tensor &t) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = 0; i < t.numElements(); ++i) {
      lo = std::min(lo, t.getInt(i));
      hi = std::max(hi, t.getInt(i));
    }
    return std::make_pair(lo, hi);
  };
  // 2000 draws each: every value of the range appears.
  EXPECT_EQ(range(feeds["input.tok"]), Range(0, 2));
  EXPECT_EQ(range(feeds["label.y"]), Range(0, 6));
  EXPECT_EQ(range(feeds["input.other"]), Range(0, 1));
  EXPECT_TRUE(feeds["input.x"].isFloat());
  EXPECT_EQ(feeds["input.x"].precision(), F32);
}

} // namespace
