//===- ModelInputs.cpp - what the files a run reads must hold for a model -===//
//
// ModelInputs.h: the model's data keys and parameters, and the checks of a
// data file and an --init checkpoint against them.
//
//===----------------------------------------------------------------------===//

#include "ModelInputs.h"
#include "Input.h"
#include "Options.h"

#include "zbc/Dialect/ZB/CountedLabels.h"
#include "zbc/Dialect/ZB/DataBounds.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Pipelines.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/SafeTensors.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include <sys/stat.h>

using namespace llvm;
using namespace mlir;
using namespace zbc;

namespace {

/// The safetensors dtype of a data key's elements ("" for one the runtime
/// does not read; code generation refuses those).
std::string safeTensorsDtypeOf(Type element) {
  if (element.isF32())
    return "F32";
  if (element.isBF16())
    return "BF16";
  if (element.isInteger(32))
    return "I32";
  if (element.isInteger(64))
    return "I64";
  return "";
}

/// Every input and label key the pipeline's phases read, once each.
std::vector<rt::DataKey> dataKeysOf(zb::PipelineOp pipeline) {
  std::vector<rt::DataKey> keys;
  std::set<std::string> seen;
  pipeline.walk([&](zb::PhaseOp phase) {
    for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                     phase.getArgKeyList())) {
      std::optional<zb::PhaseKey> parsed = zb::PhaseKey::parse(key);
      if (!parsed || (parsed->kind != zb::KeyKind::Input &&
                      parsed->kind != zb::KeyKind::Label) ||
          !seen.insert(key.str()).second)
        continue;
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      rt::DataKey k;
      k.key = key.str();
      k.integer = type && type.getElementType().isInteger();
      if (type)
        k.dtype = safeTensorsDtypeOf(type.getElementType());
      k.bound = k.integer ? zb::indexDataBound(pipeline, key) : 0;
      if (type)
        k.shape.assign(type.getShape().begin(), type.getShape().end());
      keys.push_back(std::move(k));
    }
  });
  // The labels the loss counts may hold its ignore_index, as the rank that
  // reads them takes them (its program's counted_labels).
  if (std::optional<zb::CountedLabels> counted = zb::countedLabelsOf(pipeline))
    for (rt::DataKey &k : keys)
      if (k.key == counted->key)
        k.ignoreIndex = counted->ignoreIndex;
  return keys;
}

/// What kind of thing is at `path`: 'd' a directory, 'f' anything else
/// that exists, 0 nothing (errno says why).
char kindOf(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return 0;
  return S_ISDIR(info.st_mode) ? 'd' : 'f';
}

} // namespace

ModelInputs zbc::modelInputsOf(zb::PipelineOp pipeline) {
  ModelInputs inputs;
  inputs.model = pipeline.getSymName().str();
  inputs.dataKeys = dataKeysOf(pipeline);
  pipeline.walk([&](zb::ParamOp param) {
    std::string name = param.getName().str();
    if (!inputs.paramNames.insert(name).second)
      return;
    auto type = cast<RankedTensorType>(param.getType());
    inputs.params.push_back(
        {name, std::vector<int64_t>(type.getShape().begin(),
                                    type.getShape().end())});
  });
  return inputs;
}

Expected<ModelInputs> zbc::readModelInputs(const std::string &modelPath) {
  MLIRContext context;
  setUpContext(context);
  SourceMgr sourceMgr;
  zbc::DiagnosticPrinter diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseInputFile(modelPath, context, sourceMgr);
  if (!module)
    return fail("cannot read the model '" + modelPath + "' (the error is above)");
  if (!module->getOps<zb::ModelOp>().empty()) {
    PassManager pm(&context);
    buildBackwardPipeline(pm, BackwardPipelineOptions());
    if (failed(pm.run(*module)))
      return fail("cannot split the model '" + modelPath +
                  "' (the error is above)");
  }
  auto pipelines = module->getOps<zb::PipelineOp>();
  if (pipelines.empty())
    return fail("'" + modelPath + "' holds no 'zb.model' or 'zb.pipeline'");
  return modelInputsOf(*pipelines.begin());
}

Error zbc::checkDataFile(const std::string &path,
                         const std::vector<rt::DataKey> &keys,
                         rt::TokenType binTokens, bool evaluates) {
  // A missing file, a directory, a FIFO or a device: in the ranks' own
  // words (Files.h), before the keys are held against a format that the
  // file's name suggests.
  int64_t size = 0;
  if (std::string e = rt::regularFileError(path, "the data file", size);
      !e.empty())
    return fail(e);
  rt::DataFormat format = rt::dataFormatOf(path);
  if (format == rt::DataFormat::SafeTensors) {
    if (evaluates)
      return fail("--eval-every needs held-out data: a token stream (--data "
                  "FILE: text, .npy or .bin, whose last tenth is held out) or "
                  "--eval-data FILE.safetensors beside a .safetensors --data");
    if (keys.empty())
      return Error::success();
    rt::TensorFile file;
    int64_t samples = 0;
    if (std::string e = rt::readSafeTensors(path, file); !e.empty())
      return fail(e);
    if (std::string e = rt::checkSampleTensors(path, file, keys, samples,
                                               rt::KeyScope::Model);
        !e.empty())
      return fail(e);
    return Error::success();
  }
  int64_t sequence = 0;
  int64_t vocabulary = std::numeric_limits<int64_t>::max();
  for (const rt::DataKey &key : keys)
    if (std::string e = rt::checkTokenKey(key, format, sequence, vocabulary);
        !e.empty())
      return fail("'" + path + "': " + e);
  rt::TokenCorpus corpus;
  if (std::string e = rt::loadTokenCorpus(path, binTokens, sequence,
                                          vocabulary, corpus);
      !e.empty())
    return fail(e);
  // Token keys are [rows, sequence] (checkTokenKey).
  if (evaluates && !keys.empty())
    if (std::string e =
            rt::checkEvaluation(corpus, keys.front().shape.front(), path);
        !e.empty())
      return fail(e);
  return Error::success();
}

namespace {
/// The buffers a Hugging Face checkpoint may hold beside its parameters,
/// which transformers itself ignores on load, by the end of their names;
/// each with why it is no parameter, for the note that skips it.
struct KnownBuffer {
  const char *suffix;
  const char *why;
};
constexpr KnownBuffer kKnownBuffers[] = {
    {".attn.bias", "GPT-2's causal masks"},
    {".attn.masked_bias", "GPT-2's causal masks"},
    {".rotary_emb.inv_freq",
     "rotary frequencies, saved by transformers before 4.31 and computed "
     "from the config"},
};
} // namespace

Error zbc::checkInitCheckpoint(const std::string &path,
                               const ModelInputs &inputs, bool quiet) {
  if (char kind = kindOf(path); !kind)
    return fail("--init '" + path + "': " + std::strerror(errno));
  else if (kind == 'f' && !StringRef(path).ends_with(".safetensors"))
    return fail("--init '" + path + "' is not a .safetensors file: give the "
                "checkpoint's directory (model.safetensors, or "
                "model.safetensors.index.json and its shards) or one "
                ".safetensors file");
  rt::CheckpointLayout layout;
  if (std::string e = rt::readCheckpointLayout(path, layout); !e.empty())
    return fail(e);
  rt::CheckpointHeaders headers;
  // The layer of a layer's tensor ("model.layers.7.", "transformer.h.7."),
  // or "": a layer the model lacks was left out by import-hf --layers.
  auto layerOf = [](StringRef name) -> std::string {
    for (StringRef prefix : {"model.layers.", "transformer.h."})
      if (name.starts_with(prefix)) {
        StringRef rest = name.drop_front(prefix.size());
        return (prefix + rest.take_until([](char c) { return c == '.'; }))
            .str();
      }
    return "";
  };
  std::set<std::string> layers;
  for (const std::string &name : inputs.paramNames)
    layers.insert(layerOf(name));
  auto leftOut = [&](StringRef name) {
    std::string layer = layerOf(name);
    return (name == "lm_head.weight" && !inputs.paramNames.count(name.str())) ||
           (!layer.empty() && !layers.count(layer));
  };
  // Buffers skipped, by kind: how many, and the first's name.
  std::map<const KnownBuffer *, std::pair<int64_t, std::string>> skipped;
  for (const std::string &file : layout.files()) {
    auto [it, fresh] = headers.try_emplace(file);
    if (fresh)
      if (std::string e = rt::readSafeTensorsHeader(file, it->second);
          !e.empty())
        return fail(e);
    for (const auto &entry : it->second) {
      StringRef name = entry.first;
      if (inputs.paramNames.count(entry.first) || leftOut(name))
        continue;
      const KnownBuffer *buffer = nullptr;
      for (const KnownBuffer &known : kKnownBuffers)
        if (name.ends_with(known.suffix))
          buffer = &known;
      if (!buffer)
        return fail(formatv("--init: tensor '{0}' in '{1}' is not a "
                            "parameter of model '{2}' (a checkpoint of "
                            "another model?)",
                            entry.first, file, inputs.model));
      auto &[count, first] = skipped[buffer];
      if (count++ == 0)
        first = entry.first;
    }
  }
  if (!quiet)
    for (const auto &[buffer, seen] : skipped)
      llvm::errs() << formatv("zbc: note: --init: skipped {0} buffer{1} "
                              "named *{2} ({3}; no parameter), e.g. '{4}'\n",
                              seen.first, seen.first == 1 ? "" : "s",
                              buffer->suffix, buffer->why, seen.second);
  // Every parameter, as the ranks will look for it (Note [Initial
  // weights]).
  for (const rt::InitParam &param : inputs.params) {
    std::string file;
    rt::TensorLocation tensor;
    if (std::string e =
            rt::locateInitTensor(layout, param, headers, file, tensor);
        !e.empty())
      return fail(e);
  }
  return Error::success();
}
