//===- zbc-reference.cpp - the single-process training oracle -------------===//
//
//   zbc-reference DIR/program.mlir --steps N [--seed S] --compare DIR/saved
//
// Trains the program's pipeline in one process with the reference
// interpreter: the same parameters and data as the compiled ranks draw
// (zbc/runtime/SyntheticData.h), each step the mean gradient over the
// program's microbatches, then the reference optimizer (SGD with momentum or
// AdamW, the program's, default hyperparameters). Then compares every
// parameter the ranks saved (--save: DIR/rankN.safetensors) with its own:
// the largest |rank - reference| / max|reference| of each tensor must be at
// most --tolerance (1e-5); prints how many tensors matched bit for bit.
// Exits 1 on any mismatch, missing tensor or unreadable file.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Interpreter/Interpreter.h"
#include "zbc/Interpreter/Optimizers.h"
#include "zbc/runtime/SafeTensors.h"
#include "zbc/runtime/SyntheticData.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <cstring>
#include <map>

using namespace mlir;
using namespace zbc;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<program.mlir>"));
static cl::opt<int> steps("steps", cl::desc("Training steps"), cl::init(1));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed"), cl::init(0));
static cl::opt<std::string> compareDir("compare",
                                       cl::desc("Directory of the ranks' "
                                                "rankN.safetensors"),
                                       cl::Required);
static cl::opt<double> tolerance("tolerance", cl::init(1e-5),
                                 cl::desc("Largest relative error accepted"));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "zbc's single-process oracle\n");
  MLIRContext context;
  context.loadDialect<zb::ZBDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module)
    return 1;
  auto programs = module->getOps<zb::ProgramOp>();
  if (programs.empty()) {
    llvm::errs() << "zbc-reference: error: no zb.program in " << inputFile << "\n";
    return 1;
  }
  zb::ProgramOp program = *programs.begin();
  zb::PipelineOp pipeline = pipelineOfProgram(program);
  int64_t m = program.getMicrobatches();
  std::string optimizer = program.getOptimizer().value_or("sgd").str();
  auto precision = interp::Precision::F32;

  interp::TensorMap params = interp::initParams(pipeline, seed, precision);
  std::map<std::string, std::vector<interp::Tensor>> state;
  for (auto &[key, tensor] : params)
    state[key] = {interp::Tensor::zeros(tensor.shape(), precision),
                  interp::Tensor::zeros(tensor.shape(), precision)};
  for (int s = 0; s < steps; ++s) {
    std::vector<interp::TensorMap> microbatches;
    for (int64_t j = 0; j < m; ++j)
      microbatches.push_back(interp::randomFeeds(
          pipeline, rt::dataSeed(seed, s, m, j), precision));
    FailureOr<interp::StepResult> result =
        interp::runPipelineStep(pipeline, microbatches, params, precision);
    if (failed(result))
      return 1;
    llvm::outs() << llvm::formatv("reference step {0}/{1}  loss {2:F6}\n", s + 1,
                                  steps.getValue(), result->meanLoss());
    for (auto &[key, param] : params) {
      std::string name = zb::PhaseKey::parse(key)->suffix;
      const interp::Tensor &grad =
          result->grads.at(zb::keyOf(zb::KeyKind::Grad, name));
      if (optimizer == "adamw")
        interp::adamwStep(param, state[key][0], state[key][1], grad,
                          interp::AdamWConfig(), s + 1, 1.0);
      else
        interp::sgdMomentumStep(param, state[key][0], grad,
                                interp::SgdConfig(), 1.0);
    }
  }

  // The ranks' parameters, by name.
  int ranks = static_cast<int>(
      std::distance(program.getBody().front().getOps<zb::RankOp>().begin(),
                    program.getBody().front().getOps<zb::RankOp>().end()));
  int compared = 0, bitwise = 0, bad = 0;
  double worst = 0;
  std::map<std::string, bool> seen;
  for (int r = 0; r < ranks; ++r) {
    std::string path = llvm::formatv("{0}/rank{1}.safetensors", compareDir, r);
    rt::TensorFile file;
    if (std::string error = rt::readSafeTensors(path, file); !error.empty()) {
      llvm::errs() << "zbc-reference: error: " << error << "\n";
      return 1;
    }
    for (const auto &[name, stored] : file) {
      auto it = params.find(zb::keyOf(zb::KeyKind::Param, name));
      if (it == params.end() || stored.dtype != "F32" ||
          static_cast<int64_t>(stored.data.size()) != it->second.numElements() * 4) {
        llvm::errs() << "zbc-reference: error: rank " << r << " saved '" << name
                     << "', which the model has not as this f32 shape\n";
        return 1;
      }
      seen[name] = true;
      const float *mine = it->second.data<float>();
      const auto *theirs = reinterpret_cast<const float *>(stored.data.data());
      double scale = 0, error = 0;
      for (int64_t i = 0; i < it->second.numElements(); ++i) {
        scale = std::max(scale, std::fabs(double(mine[i])));
        error = std::max(error, std::fabs(double(theirs[i]) - double(mine[i])));
      }
      double relative = scale > 0 ? error / scale : error;
      worst = std::max(worst, relative);
      ++compared;
      bitwise += std::memcmp(mine, theirs, stored.data.size()) == 0;
      if (!(relative <= tolerance)) {
        ++bad;
        llvm::errs() << llvm::formatv("zbc-reference: rank {0}: '{1}' differs "
                                      "from the reference by {2:e} (relative; "
                                      "tolerance {3:e})\n",
                                      r, name, relative, tolerance.getValue());
      }
    }
  }
  for (const auto &[key, tensor] : params) {
    std::string name = zb::PhaseKey::parse(key)->suffix;
    if (!seen.count(name)) {
      llvm::errs() << "zbc-reference: error: no rank saved '" << name << "'\n";
      ++bad;
    }
  }
  llvm::outs() << llvm::formatv("zbc-reference: {0} parameters on {1} ranks "
                                "after {2} steps: largest relative error "
                                "{3:e}, {4} bitwise equal, {5} over "
                                "tolerance\n",
                                compared, ranks, steps.getValue(), worst,
                                bitwise, bad);
  return bad ? 1 : 0;
}
