//===- zbc-gradients.cpp - a model's loss and gradients, for outside checks -===//
//
//   zbc-gradients MODEL.mlir [--seed S] [--microbatches M]
//                 [--data FILE.safetensors] -o OUT.safetensors
//
// Runs zb-backward (zb-partition, zb-autodiff, zb-split-backward) on a
// zb.model and one training step of the pipeline in float64 with the
// reference interpreter, on the parameters the interpreter draws from the
// seed (initParams) and on microbatches it draws too (randomFeeds(seed + m))
// or, with --data, reads: sample m of each tensor of the file feeds
// microbatch m (the layout `zbc run --data` reads, DataFile.h: "input.NAME"
// and "label.NAME" of shape [N, *the microbatch's shape]; --microbatches
// then defaults to N). It writes what an independent implementation needs
// to check it: every parameter ("param.NAME"), every microbatch's inputs
// and labels ("mbM.input.NAME", "mbM.label.NAME"), each microbatch's loss
// ("mbM.loss", its zb.cross_entropy's mean) and weight in the step's loss
// ("mbM.weight", Note [Loss over real tokens] in LossWeights.h), the step's
// loss ("step.loss", the weighted mean) and gradients ("grad.NAME", of the
// step's loss, as training uses them), floats as F64 and integers as I64.
// test/torch/llama_semantics.py holds the Llama ops to PyTorch with it,
// test/torch/packed_semantics.py packed documents.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/PhaseKeys.h"
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
static cl::opt<int64_t> microbatchCount(
    "microbatches",
    cl::desc("Microbatches of the step (1; with --data, the file's samples)"),
    cl::init(1), cl::cat(toolCategory));
static cl::opt<std::string>
    dataFile("data",
             cl::desc("Read microbatch m's inputs and labels from sample m "
                      "of this file's tensors instead of drawing them"),
             cl::value_desc("FILE.safetensors"), cl::cat(toolCategory));
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

/// The value of a stored integer element (I64 or I32).
int64_t storedInt(const rt::StoredTensor &t, int64_t i) {
  if (t.dtype == "I32") {
    int32_t v;
    std::memcpy(&v, t.data.data() + i * 4, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, t.data.data() + i * 8, 8);
  return v;
}

/// The value of a stored float element (F64 or F32).
double storedFloat(const rt::StoredTensor &t, int64_t i) {
  if (t.dtype == "F32") {
    float v;
    std::memcpy(&v, t.data.data() + i * 4, 4);
    return v;
  }
  double v;
  std::memcpy(&v, t.data.data() + i * 8, 8);
  return v;
}

/// Into `microbatches`, `count` microbatches of `model` from the samples in
/// `path`: for each data key of the model ("input.NAME", "label.NAME") a
/// tensor of shape [N, *the key's shape], the same N for every key, I64 or
/// I32 for an integer key, F64 or F32 for a float one; microbatch m is
/// sample m of each. `count` < 0 takes N, else it must be at most N. The
/// values are the interpreter's to check (an index out of range is an
/// error at the op that reads it). An error naming the file and the key,
/// or "".
std::string readMicrobatches(zb::ModelOp model, const std::string &path,
                             int64_t &count,
                             std::vector<interp::TensorMap> &microbatches) {
  rt::TensorFile file;
  if (std::string e = rt::readSafeTensors(path, file); !e.empty())
    return e;
  struct Leaf {
    std::string key;
    RankedTensorType type;
  };
  std::vector<Leaf> leaves;
  int64_t samples = -1;
  std::string countedKey;
  for (Operation &op : model.getBody().front()) {
    if (!isa<zb::InputOp, zb::LabelOp>(op))
      continue;
    std::string key = *zb::getLeafKey(&op);
    auto type = cast<RankedTensorType>(op.getResult(0).getType());
    bool integer = type.getElementType().isInteger();
    auto it = file.find(key);
    if (it == file.end())
      return "'" + path + "' has no tensor '" + key + "' (the model reads it)";
    const rt::StoredTensor &t = it->second;
    bool dtypeMatches = integer ? t.dtype == "I64" || t.dtype == "I32"
                                : t.dtype == "F64" || t.dtype == "F32";
    bool shapeMatches =
        t.shape.size() == static_cast<size_t>(type.getRank()) + 1;
    for (int64_t d = 0; shapeMatches && d < type.getRank(); ++d)
      shapeMatches = t.shape[d + 1] == type.getDimSize(d);
    if (!dtypeMatches || !shapeMatches || t.shape[0] < 1) {
      std::string want = "[N";
      for (int64_t d : type.getShape())
        want += ", " + std::to_string(d);
      std::string have = "[";
      for (size_t d = 0; d < t.shape.size(); ++d)
        have += (d ? ", " : "") + std::to_string(t.shape[d]);
      return "'" + path + "': tensor '" + key + "' must be " +
             (integer ? "I64 (or I32)" : "F64 (or F32)") + " of shape " +
             want + "] (N >= 1 samples of one microbatch each); it is " +
             t.dtype + " of shape " + have + "]";
    }
    if (samples >= 0 && t.shape[0] != samples)
      return "'" + path + "': tensor '" + key + "' has " +
             std::to_string(t.shape[0]) + " samples, '" + countedKey +
             "' has " + std::to_string(samples) +
             ": sample m of each feeds microbatch m";
    samples = t.shape[0];
    countedKey = key;
    leaves.push_back({key, type});
  }
  if (samples < 0)
    return "the model reads no inputs or labels: --data has nothing to feed";
  if (count < 0)
    count = samples;
  if (count < 1 || count > samples)
    return "--microbatches " + std::to_string(count) + " with --data '" +
           path + "' of " + std::to_string(samples) +
           " samples: give 1 to " + std::to_string(samples);
  const auto f64 = interp::Precision::F64;
  microbatches.assign(count, {});
  for (const Leaf &leaf : leaves) {
    const rt::StoredTensor &t = file.at(leaf.key);
    interp::Shape shape(leaf.type.getShape().begin(),
                        leaf.type.getShape().end());
    int64_t perSample = leaf.type.getNumElements();
    for (int64_t m = 0; m < count; ++m) {
      if (leaf.type.getElementType().isInteger()) {
        std::vector<int64_t> values(perSample);
        for (int64_t i = 0; i < perSample; ++i)
          values[i] = storedInt(t, m * perSample + i);
        microbatches[m][leaf.key] = interp::Tensor::fromInts(shape, values);
      } else {
        std::vector<double> values(perSample);
        for (int64_t i = 0; i < perSample; ++i)
          values[i] = storedFloat(t, m * perSample + i);
        microbatches[m][leaf.key] =
            interp::Tensor::fromValues(shape, f64, values);
      }
    }
  }
  return "";
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
  int64_t count = microbatchCount;
  if (!dataFile.empty()) {
    if (!microbatchCount.getNumOccurrences())
      count = -1; // the file's samples
    if (std::string e = readMicrobatches(model, dataFile, count, microbatches);
        !e.empty()) {
      llvm::errs() << "zbc-gradients: error: " << e << "\n";
      return 1;
    }
  } else {
    if (count < 1) {
      llvm::errs() << "zbc-gradients: error: --microbatches must be at "
                      "least 1\n";
      return 1;
    }
    for (int64_t m = 0; m < count; ++m)
      microbatches.push_back(interp::randomFeeds(model, seed + m, f64));
  }

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
  auto scalar = [&](double value) {
    return stored(interp::Tensor::fromValues({}, f64, {value}));
  };
  for (int64_t m = 0; m < count; ++m) {
    std::string prefix = "mb" + std::to_string(m) + ".";
    for (auto &[key, tensor] : microbatches[m])
      out[prefix + key] = stored(tensor);
    out[prefix + "loss"] = scalar(step->losses[m]);
    out[prefix + "weight"] = scalar(step->lossWeights[m]);
  }
  out["step.loss"] = scalar(step->meanLoss());
  if (std::string e = rt::writeSafeTensors(outputFile, out); !e.empty()) {
    llvm::errs() << "zbc-gradients: error: " << e << "\n";
    return 1;
  }
  return 0;
}
