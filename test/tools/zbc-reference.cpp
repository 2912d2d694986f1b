//===- zbc-reference.cpp - the single-process training oracle -------------===//
//
//   zbc-reference DIR/program.mlir --steps N [--seed S] [--data FILE]
//       [--data-dtype uint16|uint32] [--data-parallel D]
//       [--lr X --eps X --clip-norm X --warmup N --decay-steps N --min-lr X]
//       --compare DIR/saved
//
// Trains the program's pipeline in one process with the reference
// interpreter: the same parameters and data as the compiled ranks draw
// (zbc/contracts/SyntheticData.h, windows of a token stream as
// zbc/contracts/TokenData.h orders them, or the samples of a safetensors
// file in the order of sampleOf in zbc/contracts/DataFile.h), each step the mean gradient over the
// program's microbatches (D x them with --data-parallel D: the whole batch
// of the job's replicas), clipped to a global norm and stepped with the
// step's learning rate as zbc/contracts/OptimizerSchedule.h defines them,
// then the reference optimizer (SGD with momentum or AdamW, the program's;
// the same options as the ranks take). Then compares every
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
#include "zbc/contracts/BFloat16.h"
#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/SafeTensors.h"
#include "zbc/contracts/OptimizerSchedule.h"
#include "zbc/contracts/SyntheticData.h"
#include "zbc/contracts/TokenData.h"

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
#include <limits>
#include <map>

using namespace mlir;
using namespace zbc;
namespace cl = llvm::cl;

/// The options --help lists (LLVM's own, linked in through MLIR, hidden).
static cl::OptionCategory toolCategory("zbc-reference options");

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<program.mlir>"),
                                      cl::cat(toolCategory));
static cl::opt<int> steps("steps", cl::desc("Training steps"), cl::init(1),
                          cl::cat(toolCategory));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed"), cl::init(0),
                              cl::cat(toolCategory));
static cl::opt<std::string> compareDir("compare",
                                       cl::desc("Directory of the ranks' "
                                                "rankN.safetensors"),
                                       cl::Required, cl::cat(toolCategory));
static cl::opt<double> tolerance("tolerance", cl::init(1e-5),
                                 cl::desc("Largest relative error accepted"),
                                 cl::cat(toolCategory));
static cl::opt<std::string> dataFile("data",
                                     cl::desc("Train on this data file (as the "
                                              "ranks' --data): a token stream "
                                              "or a safetensors file of "
                                              "samples"),
                                     cl::cat(toolCategory));
static cl::opt<std::string> dataDtype("data-dtype", cl::init("uint16"),
                                      cl::desc("The ids of a .bin --data "
                                               "file: uint16 or uint32"),
                                      cl::cat(toolCategory));
static cl::opt<double> lr("lr",
                          cl::desc("Learning rate (default: the "
                                   "optimizer's)"),
                          cl::init(-1), cl::cat(toolCategory));
static cl::opt<double> epsilon("eps", cl::desc("AdamW's epsilon"), cl::init(-1),
                               cl::cat(toolCategory));
static cl::opt<double> clipNorm("clip-norm", cl::desc("Global norm clipping"),
                                cl::init(0), cl::cat(toolCategory));
static cl::opt<int64_t> warmup("warmup", cl::desc("Warm-up steps"), cl::init(0),
                               cl::cat(toolCategory));
static cl::opt<int64_t> decaySteps("decay-steps",
                                   cl::desc("Cosine decay until this step"),
                                   cl::init(0), cl::cat(toolCategory));
static cl::opt<int64_t> dataParallel(
    "data-parallel",
    cl::desc("The ranks ran this many replicas: one process trains on all "
             "their microbatches (D x the program's) as one batch"),
    cl::init(1), cl::cat(toolCategory));
static cl::opt<double> minLr("min-lr", cl::desc("Learning rate after the "
                                                "decay (default lr/10)"),
                             cl::init(-1),
    cl::cat(toolCategory));

/// Microbatch j of step s from the token stream: each data key by its role.
static interp::TensorMap tokenFeeds(interp::TensorMap feeds,
                                    const rt::TokenCorpus &corpus,
                                    int64_t step, int64_t m, int64_t j) {
  for (auto &[key, tensor] : feeds) {
    std::optional<rt::TokenRole> role = rt::tokenRoleOf(key);
    if (!role || tensor.shape().size() != 2)
      continue; // zbc run refuses these
    int64_t rows = tensor.shape()[0];
    std::vector<int64_t> values(static_cast<size_t>(rows * corpus.sequence));
    rt::fillTokens(corpus, *role, seed, /*heldOut=*/false,
                   rt::firstSampleOf(step, m, j, rows), rows, values.data());
    tensor = interp::Tensor::fromInts(tensor.shape(), std::move(values));
  }
  return feeds;
}

/// The samples of a safetensors --data file: per data key, its tensor of
/// [N, *microbatch shape] (zbc/contracts/DataFile.h).
struct SampleFile {
  rt::TensorFile tensors;
  int64_t samples = 0;
};

/// Reads `path` for the data keys of `feeds` (one microbatch's, which gives
/// each key's shape and kind): every key present, of shape [N, *shape] with
/// one N, an integer dtype for integer data and F32 or BF16 for float data.
/// The ranks check the values (DataFile.h); this only reads them.
static std::string loadSamples(const std::string &path,
                               const interp::TensorMap &feeds,
                               SampleFile &file) {
  if (std::string e = rt::readSafeTensors(path, file.tensors); !e.empty())
    return e;
  for (const auto &[key, tensor] : feeds) {
    auto it = file.tensors.find(key);
    if (it == file.tensors.end())
      return llvm::formatv("'{0}' has no tensor '{1}' (the model reads it)",
                           path, key);
    const rt::StoredTensor &t = it->second;
    bool shapeMatches = t.shape.size() == tensor.shape().size() + 1 &&
                        t.shape[0] >= 1 &&
                        (file.samples == 0 || t.shape[0] == file.samples);
    for (size_t i = 0; shapeMatches && i < tensor.shape().size(); ++i)
      shapeMatches = t.shape[i + 1] == tensor.shape()[i];
    bool dtypeMatches = tensor.isInt() ? (t.dtype == "I64" || t.dtype == "I32")
                                       : (t.dtype == "F32" || t.dtype == "BF16");
    if (!shapeMatches || !dtypeMatches)
      return llvm::formatv("'{0}': tensor '{1}' of dtype {2} does not hold "
                           "samples of this model's {3}-element microbatches "
                           "(or another key holds another number of them)",
                           path, key, t.dtype, tensor.numElements());
    file.samples = t.shape[0];
  }
  return {};
}

/// Microbatch j of step s (of m in the step) from a file of samples: each
/// data key's row sampleOf(s, m, j, N), as the ranks read it (DataSource.cpp).
static interp::TensorMap sampleFeeds(interp::TensorMap feeds,
                                     const SampleFile &file, int64_t step,
                                     int64_t m, int64_t j,
                                     interp::Precision precision) {
  int64_t sample = rt::sampleOf(step, m, j, file.samples);
  for (auto &[key, tensor] : feeds) {
    const rt::StoredTensor &t = file.tensors.at(key);
    int64_t n = tensor.numElements();
    int64_t width = rt::dtypeBytes(t.dtype);
    const char *row = t.data.data() + sample * n * width;
    if (tensor.isInt()) {
      std::vector<int64_t> values(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        if (width == 4) {
          int32_t v;
          std::memcpy(&v, row + 4 * i, 4);
          values[i] = v;
        } else {
          std::memcpy(&values[i], row + 8 * i, 8);
        }
      }
      tensor = interp::Tensor::fromInts(tensor.shape(), std::move(values));
    } else {
      std::vector<double> values(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        if (width == 2) {
          uint16_t v;
          std::memcpy(&v, row + 2 * i, 2);
          values[i] = rt::fromBFloat16(v);
        } else {
          float v;
          std::memcpy(&v, row + 4 * i, 4);
          values[i] = v;
        }
      }
      tensor = interp::Tensor::fromValues(tensor.shape(), precision, values);
    }
  }
  return feeds;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(toolCategory);
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
  // One process on the whole batch of the job's D replicas.
  int64_t m = program.getMicrobatches() * std::max<int64_t>(1, dataParallel);
  std::string optimizer = program.getOptimizer().value_or("sgd").str();
  auto precision = interp::Precision::F32;

  interp::TensorMap params = interp::initParams(pipeline, seed, precision);
  std::map<std::string, std::vector<interp::Tensor>> state;
  for (auto &[key, tensor] : params)
    state[key] = {interp::Tensor::zeros(tensor.shape(), precision),
                  interp::Tensor::zeros(tensor.shape(), precision)};
  rt::TokenCorpus corpus;
  SampleFile sampleFile;
  bool samples = rt::isSafeTensorsPath(dataFile);
  if (samples) {
    if (std::string e = loadSamples(
            dataFile, interp::randomFeeds(pipeline, seed, precision),
            sampleFile);
        !e.empty()) {
      llvm::errs() << "zbc-reference: error: " << e << "\n";
      return 1;
    }
  } else if (!dataFile.empty()) {
    interp::TensorMap feeds = interp::randomFeeds(pipeline, seed, precision);
    int64_t sequence = feeds.begin()->second.shape().back();
    rt::TokenType binTokens = rt::TokenType::U16;
    if (!rt::parseBinTokenType(dataDtype, binTokens)) {
      llvm::errs() << "zbc-reference: error: --data-dtype needs uint16 or "
                      "uint32\n";
      return 1;
    }
    // The ranks check the ids against the model's vocabulary.
    if (std::string e = rt::loadTokenCorpus(
            dataFile, binTokens, sequence,
            std::numeric_limits<int64_t>::max(), corpus);
        !e.empty()) {
      llvm::errs() << "zbc-reference: error: " << e << "\n";
      return 1;
    }
  }
  interp::SgdConfig sgd;
  interp::AdamWConfig adamw;
  if (lr >= 0)
    sgd.lr = adamw.lr = lr;
  if (epsilon >= 0)
    adamw.epsilon = epsilon;
  double baseLr = optimizer == "adamw" ? adamw.lr : sgd.lr;
  rt::LearningRateSchedule schedule;
  schedule.warmup = warmup;
  schedule.decaySteps = decaySteps;
  schedule.minLr = minLr >= 0 ? minLr.getValue() : baseLr / 10;
  for (int s = 0; s < steps; ++s) {
    std::vector<interp::TensorMap> microbatches;
    for (int64_t j = 0; j < m; ++j) {
      interp::TensorMap feeds = interp::randomFeeds(
          pipeline, rt::dataSeed(seed, s, m, j), precision);
      if (samples)
        feeds = sampleFeeds(std::move(feeds), sampleFile, s, m, j, precision);
      else if (!dataFile.empty())
        feeds = tokenFeeds(std::move(feeds), corpus, s, m, j);
      microbatches.push_back(std::move(feeds));
    }
    FailureOr<interp::StepResult> result =
        interp::runPipelineStep(pipeline, microbatches, params, precision);
    if (failed(result)) {
      llvm::errs() << llvm::formatv("zbc-reference: error: step {0}/{1} "
                                    "cannot run (above)\n",
                                    s + 1, steps.getValue());
      return 1;
    }
    llvm::outs() << llvm::formatv("reference step {0}/{1}  loss {2:F6}\n", s + 1,
                                  steps.getValue(), result->meanLoss());
    // The global norm of the (mean) gradients, and the step's rate.
    double sumOfSquares = 0;
    for (auto &[key, grad] : result->grads)
      if (zb::PhaseKey::parse(key)->kind == zb::KeyKind::Grad)
        for (int64_t i = 0; i < grad.numElements(); ++i)
          sumOfSquares += double(grad.data<float>()[i]) * grad.data<float>()[i];
    double scale = rt::clipCoefficient(std::sqrt(sumOfSquares), clipNorm);
    sgd.lr = adamw.lr = rt::learningRateAt(baseLr, s, schedule);
    for (auto &[key, param] : params) {
      std::string name = zb::PhaseKey::parse(key)->suffix;
      const interp::Tensor &grad =
          result->grads.at(zb::keyOf(zb::KeyKind::Grad, name));
      if (optimizer == "adamw")
        interp::adamwStep(param, state[key][0], state[key][1], grad, adamw,
                          s + 1, scale);
      else
        interp::sgdMomentumStep(param, state[key][0], grad, sgd, scale);
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
