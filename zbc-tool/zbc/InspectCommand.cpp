//===- InspectCommand.cpp - `zbc inspect`: what a file holds, checked -----===//
//
//   zbc inspect PATH [--model MODEL.mlir] [--data-dtype uint16|uint32]
//
// PATH is a checkpoint (a step-N directory, its manifest.json or any
// .json read as one, or a checkpoint directory: every complete step-N in
// it, the latest checked whole), a Hugging Face checkpoint (a directory
// of model.safetensors or model.safetensors.index.json and its shards, as
// --init reads it), a safetensors file (a data file, a --save output, one
// rank's checkpoint file) or a token stream (.npy, .bin or any other file
// as text). Everything is read with the ranks' own readers
// (zbc/runtime: CheckpointManifest.h, SafeTensors.h, DataFile.h,
// TokenData.h, Files.h), so what inspect refuses, a run refuses, with the
// same words, before anything starts. With --model, a safetensors file is
// checked as data for that model's keys (present, dtype, shape, paired
// sample counts, finite floats, indices in range) and a token stream
// against its sequence and vocabulary; a Hugging Face checkpoint (or a
// safetensors file holding the model's parameters and none of its data
// keys) is checked as `zbc run --init` checks it before a run
// (ModelInputs.h). Exit 1 on the first thing wrong.
//
//===----------------------------------------------------------------------===//

#include "ModelInputs.h"
#include "Options.h"

#include "zbc/contracts/CheckpointLayout.h"
#include "zbc/contracts/CheckpointManifest.h"
#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/HuggingFaceCheckpoint.h"
#include "zbc/contracts/SafeTensors.h"
#include "zbc/contracts/TokenData.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <sys/stat.h>

using namespace llvm;
using namespace zbc;

namespace {

cl::opt<std::string> inspectPath(cl::Positional, cl::Required,
                                 cl::desc("<checkpoint, Hugging Face "
                                          "checkpoint, .safetensors, .npy, "
                                          ".bin or text file>"),
                                 cl::sub(zbc::inspectCommand()),
                                 cl::cat(zbcCategory));
cl::opt<std::string> modelOpt("model",
                              cl::desc("Check a data file against this "
                                       "model's data keys, or a Hugging "
                                       "Face checkpoint against its "
                                       "parameters (as zbc run --init)"),
                              cl::value_desc("MODEL.mlir"),
                              cl::sub(zbc::inspectCommand()),
                              cl::cat(zbcCategory));
cl::opt<std::string> dataDtypeOpt("data-dtype",
                                  cl::desc("The ids of a .bin file: uint16 "
                                           "(default) or uint32"),
                                  cl::value_desc("T"), cl::init("uint16"),
                                  cl::sub(zbc::inspectCommand()),
                                  cl::cat(zbcCategory));


std::string shapeOf(const rt::StoredTensor &t) {
  std::string shape;
  for (int64_t d : t.shape)
    shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  return "[" + shape + "]";
}

/// Every tensor of a decoded file, one line each; non-finite floats named.
void listTensors(const rt::TensorFile &file, const std::string &indent) {
  for (const auto &[name, t] : file) {
    outs() << formatv("{0}{1}: {2} {3}", indent, name, t.dtype, shapeOf(t));
    if (int64_t bad = rt::firstNonFinite(t); bad >= 0)
      outs() << formatv("  (not finite at element {0})", bad);
    outs() << "\n";
  }
}

/// One checkpoint: its manifest (`manifestPath`, in `dir`), then each
/// rank's file, checked whole.
Error inspectCheckpoint(const std::string &dir,
                        const std::string &manifestPath) {
  rt::CheckpointManifest m;
  int64_t size = 0;
  std::string text;
  if (std::string e = rt::regularFileError(manifestPath, "the manifest", size);
      !e.empty())
    return fail(e);
  if (size > (int64_t(1) << 20))
    return fail(formatv("'{0}' has {1} bytes: not a checkpoint manifest (at "
                        "most 1 MiB)",
                        manifestPath, size)
                    .str());
  if (std::string e = rt::readFileBytes(manifestPath, text); !e.empty())
    return fail(e);
  if (std::string e = rt::parseCheckpointManifest(manifestPath, text, m);
      !e.empty())
    return fail(e);
  outs() << formatv("checkpoint '{0}': after step {1} of model '{2}' (IR hash "
                    "{3}), {4} on {5} ranks ({6} stages, {7} microbatches, "
                    "{8}), seed {9}\n",
                    dir, m.step, m.model, m.modelHash, m.schedule, m.ranks,
                    m.stages, m.microbatches, m.optimizer, m.seed);
  if (m.shards)
    outs() << formatv("  the optimizer sharded over {0} replicas: a file per "
                      "rank and replica\n",
                      m.shards);
  for (const rt::CheckpointFile &f : m.files) {
    std::string bytes;
    if (std::string e =
            rt::readCheckpointFile(dir, m, f.rank, bytes, f.replica);
        !e.empty())
      return fail(e);
    rt::TensorFile file;
    std::string path = dir + "/" + f.file;
    if (std::string e = rt::decodeSafeTensors(path, bytes, file); !e.empty())
      return fail(e);
    outs() << formatv("  rank {0}{1}: {2}, {3} bytes, checksum ok, {4} "
                      "tensors\n",
                      f.rank,
                      m.shards ? formatv(" replica {0}", f.replica).str()
                               : std::string(),
                      f.file, f.bytes, file.size());
    for (const auto &[name, t] : file)
      if (int64_t bad = rt::firstNonFinite(t); bad >= 0)
        return fail(formatv("'{0}': tensor '{1}' holds a NaN or infinity at "
                            "element {2}",
                            path, name, bad)
                        .str());
  }
  return Error::success();
}

/// A Hugging Face checkpoint (a directory, or one .safetensors file of
/// parameters): its tensors from the headers, and with --model the check
/// `zbc run --init` makes before a run.
Error inspectHuggingFace(const std::string &path) {
  rt::CheckpointLayout layout;
  if (std::string e = rt::readCheckpointLayout(path, layout); !e.empty())
    return fail(e);
  std::vector<std::string> files = layout.files();
  std::map<std::string, rt::TensorLocation> all;
  for (const std::string &file : files) {
    std::map<std::string, rt::TensorLocation> tensors;
    if (std::string e = rt::readSafeTensorsHeader(file, tensors); !e.empty())
      return fail(e);
    all.insert(tensors.begin(), tensors.end());
  }
  outs() << formatv("'{0}': a Hugging Face checkpoint, {1} tensors in {2} "
                    "file{3}\n",
                    path, all.size(), files.size(), files.size() == 1 ? "" : "s");
  if (modelOpt.empty()) {
    for (const auto &[name, t] : all) {
      std::string shape;
      for (int64_t d : t.shape)
        shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      outs() << formatv("  {0}: {1} [{2}]\n", name, t.dtype, shape);
    }
    return Error::success();
  }
  Expected<ModelInputs> inputs = readModelInputs(modelOpt);
  if (!inputs)
    return inputs.takeError();
  if (Error e = checkInitCheckpoint(path, *inputs))
    return e;
  outs() << formatv("  --init for '{0}': each of model '{1}''s {2} "
                    "parameters there, its shape and dtype as the ranks "
                    "read them\n",
                    modelOpt, inputs->model, inputs->params.size());
  return Error::success();
}

Error inspectSafeTensors(const std::string &path) {
  // With a model: a file of its parameters and none of its data keys is a
  // checkpoint for --init, not data.
  std::optional<ModelInputs> inputs;
  if (!modelOpt.empty()) {
    Expected<ModelInputs> read = readModelInputs(modelOpt);
    if (!read)
      return read.takeError();
    inputs = std::move(*read);
    std::map<std::string, rt::TensorLocation> tensors;
    if (std::string e = rt::readSafeTensorsHeader(path, tensors); !e.empty())
      return fail(e);
    bool params = false, data = false;
    for (const auto &entry : tensors)
      params |= inputs->paramNames.count(entry.first) > 0;
    for (const rt::DataKey &key : inputs->dataKeys)
      data |= tensors.count(key.key) > 0;
    if (params && !data)
      return inspectHuggingFace(path);
  }
  rt::TensorFile file;
  if (std::string e = rt::readSafeTensors(path, file); !e.empty())
    return fail(e);
  outs() << formatv("'{0}': safetensors, {1} tensors\n", path, file.size());
  listTensors(file, "  ");
  if (!inputs)
    return Error::success();
  int64_t samples = 0;
  if (std::string e =
          rt::checkSampleTensors(path, file, inputs->dataKeys, samples,
                                 rt::KeyScope::Model);
      !e.empty())
    return fail(e);
  outs() << formatv("  data for '{0}': {1} samples of each of its {2} keys\n",
                    modelOpt, samples, inputs->dataKeys.size());
  return Error::success();
}

Error inspectTokens(const std::string &path) {
  rt::TokenType binTokens;
  if (!rt::parseBinTokenType(dataDtypeOpt, binTokens))
    return fail("--data-dtype needs uint16 or uint32, got '" + dataDtypeOpt +
                "'");
  rt::DataFormat format = rt::dataFormatOf(path);
  // Without a model: the stream read as windows of one token, every id
  // allowed.
  int64_t sequence = 1;
  int64_t vocabulary = std::numeric_limits<int64_t>::max();
  if (!modelOpt.empty()) {
    Expected<ModelInputs> inputs = readModelInputs(modelOpt);
    if (!inputs)
      return inputs.takeError();
    sequence = 0;
    for (const rt::DataKey &key : inputs->dataKeys)
      if (std::string e = rt::checkTokenKey(key, format, sequence, vocabulary);
          !e.empty())
        return fail("'" + path + "': " + e);
  }
  rt::TokenCorpus corpus;
  if (std::string e =
          rt::loadTokenCorpus(path, binTokens, sequence, vocabulary, corpus);
      !e.empty())
    return fail(e);
  if (corpus.type == rt::TokenType::Byte)
    outs() << formatv("'{0}': text data, {1} bytes (bytes are tokens)\n",
                      path, corpus.tokens);
  else
    outs() << formatv("'{0}': a token stream of {1} {2} ids\n", path,
                      corpus.tokens, rt::tokenTypeName(corpus.type));
  if (modelOpt.empty())
    return Error::success();
  outs() << formatv("  data for '{0}': {1} training windows of {2} tokens, "
                    "{3} held out\n",
                    modelOpt, corpus.trainWindows(), sequence,
                    corpus.heldOutWindows());
  return Error::success();
}

Error inspect(std::string path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return fail("cannot read '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) {
    std::vector<rt::CheckpointEntry> found = rt::checkpointsIn(path);
    struct stat hf;
    if (found.empty() &&
        (::stat((path + "/model.safetensors").c_str(), &hf) == 0 ||
         ::stat((path + "/model.safetensors.index.json").c_str(), &hf) == 0))
      return inspectHuggingFace(path);
    if (found.empty())
      return fail("'" + path + "' holds no checkpoint (no manifest.json in it "
                  "or in a step-N under it; no model.safetensors or "
                  "model.safetensors.index.json of a Hugging Face one)");
    if (found.size() > 1) {
      std::string steps;
      for (const rt::CheckpointEntry &c : found)
        steps += (steps.empty() ? "step-" : ", step-") + std::to_string(c.step);
      outs() << formatv("'{0}': {1} complete checkpoints, the latest first: "
                        "{2}\n",
                        path, found.size(), steps);
    }
    return inspectCheckpoint(found.front().dir,
                             rt::checkpointManifest(found.front().dir));
  }
  if (StringRef(path).ends_with("/model.safetensors.index.json") ||
      path == "model.safetensors.index.json") {
    size_t slash = path.rfind('/');
    return inspectHuggingFace(slash == std::string::npos ? std::string(".")
                                                         : path.substr(0, slash));
  }
  if (StringRef(path).ends_with(".json")) {
    size_t slash = path.rfind('/');
    return inspectCheckpoint(slash == std::string::npos ? std::string(".")
                                                        : path.substr(0, slash),
                             path);
  }
  if (rt::isSafeTensorsPath(path))
    return inspectSafeTensors(path);
  return inspectTokens(path);
}

} // namespace

int zbc::runInspectCommand() {
  if (Error e = inspect(inspectPath)) {
    errs() << "zbc: error: " << toString(std::move(e)) << "\n";
    return 1;
  }
  return 0;
}
