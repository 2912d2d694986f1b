//===- zbc-gradients.cpp - a model's loss and gradients, for outside checks -===//
//
//   zbc-gradients MODEL.mlir [--seed S] [--microbatches M] -o OUT.safetensors
//
// Runs zb-backward (zb-partition, zb-autodiff, zb-split-backward) on a
// zb.model and one training step of the pipeline in float64 with the
// reference interpreter, on the parameters and microbatches the interpreter
// draws from the seed (initParams, randomFeeds(seed + m)), and writes what
// an independent implementation needs to check it: every parameter
// ("param.NAME"), every microbatch's inputs and labels ("mbM.input.NAME",
// "mbM.label.NAME"), each microbatch's loss ("mbM.loss"), and the step's
// gradients ("grad.NAME", the mean over the microbatches, as training uses
// them), floats as F64 and integers as I64. test/torch/llama_semantics.py
// holds the Llama ops to PyTorch with it.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Interpreter/Interpreter.h"
#include "zbc/Passes/Pipelines.h"
#include "zbc/contracts/SafeTensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <cstring>

using namespace mlir;
using namespace zbc;
namespace cl = llvm::cl;

/// The options --help lists (LLVM's own, linked in through MLIR, hidden).
static cl::OptionCategory toolCategory("zbc-gradients options");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir>"),
                                      cl::cat(toolCategory));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the parameters and "
                                       "the data"),
                              cl::init(0), cl::cat(toolCategory));
static cl::opt<int64_t> microbatchCount("microbatches",
                                        cl::desc("Microbatches of the step"),
                                        cl::init(1), cl::cat(toolCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output safetensors"),
                                       cl::Required, cl::cat(toolCategory));

namespace {

/// `t` as a stored tensor: F64 for floats, I64 for integers.
rt::StoredTensor stored(const interp::Tensor &t) {
  rt::StoredTensor s;
  s.shape.assign(t.shape().begin(), t.shape().end());
  s.dtype = t.isInt() ? "I64" : "F64";
  s.data.resize(static_cast<size_t>(t.numElements()) * 8);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (t.isInt()) {
      int64_t v = t.getInt(i);
      std::memcpy(s.data.data() + i * 8, &v, 8);
    } else {
      double v = t.get(i);
      std::memcpy(s.data.data() + i * 8, &v, 8);
    }
  }
  return s;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(toolCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "a zb.model's float64 loss and gradients\n");
  MLIRContext context;
  context.loadDialect<zb::ZBDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module)
    return 1;
  auto models = module->getOps<zb::ModelOp>();
  if (models.empty()) {
    llvm::errs() << "zbc-gradients: error: no zb.model in " << inputFile
                 << "\n";
    return 1;
  }
  const auto f64 = interp::Precision::F64;
  zb::ModelOp model = *models.begin();
  interp::TensorMap params = interp::initParams(model, seed, f64);
  std::vector<interp::TensorMap> microbatches;
  for (int64_t m = 0; m < microbatchCount; ++m)
    microbatches.push_back(interp::randomFeeds(model, seed + m, f64));

  PassManager pm(&context);
  buildBackwardPipeline(pm, BackwardPipelineOptions{});
  if (failed(pm.run(*module)))
    return 1;
  auto pipelines = module->getOps<zb::PipelineOp>();
  FailureOr<interp::StepResult> step =
      interp::runPipelineStep(*pipelines.begin(), microbatches, params, f64);
  if (failed(step))
    return 1;

  rt::TensorFile out;
  for (auto &[key, tensor] : params)
    out[key] = stored(tensor);
  for (auto &[key, tensor] : step->grads)
    out[key] = stored(tensor);
  for (int64_t m = 0; m < microbatchCount; ++m) {
    std::string prefix = "mb" + std::to_string(m) + ".";
    for (auto &[key, tensor] : microbatches[m])
      out[prefix + key] = stored(tensor);
    out[prefix + "loss"] = stored(
        interp::Tensor::fromValues({}, f64, {step->losses[m]}));
  }
  if (std::string e = rt::writeSafeTensors(outputFile, out); !e.empty()) {
    llvm::errs() << "zbc-gradients: error: " << e << "\n";
    return 1;
  }
  return 0;
}
