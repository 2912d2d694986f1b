//===- ExportHFCommand.cpp - `zbc export-hf`: trained weights as a Hugging Face checkpoint -===//
//
//   zbc export-hf DIR -o HF_DIR [--dtype f32|bf16]
//
// DIR is what a run of an imported model (`zbc import-hf`) saved: a --save
// output (DIR/rankN.safetensors) or a checkpoint (a step-N directory, or a
// checkpoint directory: its latest complete step, each rank's file checked
// against the manifest's checksum). HF_DIR receives what `from_pretrained`
// and `--init` read:
//  - config.json: the config the model was imported with (each rank file's
//    "hf_config" metadata; its layer count the model's), "torch_dtype" set
//    to the written dtype;
//  - model.safetensors: every parameter once, under its name and in its
//    layout (the model's parameters carry the checkpoint's), without the
//    optimizer's state; a tied parameter (the head on the token embedding)
//    is on two ranks, equal bit for bit, and written once, as Hugging Face
//    writes it. Metadata {"format": "pt"}, which transformers requires.
// F32 writes the master weights exactly, so `--init HF_DIR` reads back the
// same bits; BF16 rounds them to nearest even (Note [bf16]).
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include "zbc/contracts/BFloat16.h"
#include "zbc/contracts/CheckpointLayout.h"
#include "zbc/contracts/CheckpointManifest.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/SafeTensors.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace llvm;
using namespace zbc;

namespace {

cl::opt<std::string> sourceOpt(cl::Positional, cl::Required,
                               cl::desc("<--save output or checkpoint>"),
                               cl::sub(zbc::exportHFCommand()),
                               cl::cat(zbcCategory));
cl::opt<std::string> outputOpt("o", cl::Required,
                               cl::desc("Write config.json and "
                                        "model.safetensors here"),
                               cl::value_desc("HF_DIR"),
                               cl::sub(zbc::exportHFCommand()),
                               cl::cat(zbcCategory));
cl::opt<std::string> dtypeOpt("dtype", cl::init("f32"),
                              cl::desc("The written weights: f32 (the "
                                       "master weights, exactly) or bf16"),
                              cl::sub(zbc::exportHFCommand()),
                              cl::cat(zbcCategory));


/// One rank's saved file.
struct RankFile {
  std::string path;
  rt::TensorFile tensors;
  rt::SafeTensorsMetadata metadata;
};

/// What DIR saved: each rank's file, and the optimizer whose state the
/// files hold beside the parameters ("" for a --save output: none).
struct Saved {
  std::vector<RankFile> ranks;
  std::string optimizer;
};

Expected<Saved> readCheckpoint(const std::string &dir) {
  Saved saved;
  rt::CheckpointManifest manifest;
  if (std::string e = rt::readCheckpointManifest(dir, manifest); !e.empty())
    return fail(e);
  saved.optimizer = manifest.optimizer;
  if (manifest.shards)
    return fail(formatv("'{0}' holds an optimizer sharded over {1} replicas "
                        "(--zero 1 or 2): its files are shards; export what "
                        "--save wrote (whole parameters)",
                        dir, manifest.shards));
  for (int64_t r = 0; r < manifest.ranks; ++r) {
    RankFile file;
    file.path = dir + "/" + manifest.files.at(r).file;
    std::string bytes;
    if (std::string e = rt::readCheckpointFile(dir, manifest, r, bytes);
        !e.empty())
      return fail(e);
    if (std::string e = rt::decodeSafeTensors(file.path, bytes, file.tensors,
                                              &file.metadata);
        !e.empty())
      return fail(e);
    saved.ranks.push_back(std::move(file));
  }
  return saved;
}

Expected<Saved> readSaveOutput(const std::string &dir) {
  Saved saved;
  for (int r = 0;; ++r) {
    RankFile file;
    file.path = formatv("{0}/rank{1}.safetensors", dir, r).str();
    if (!rt::isRegularFile(file.path))
      break;
    if (std::string e =
            rt::readSafeTensors(file.path, file.tensors, &file.metadata);
        !e.empty())
      return fail(e);
    saved.ranks.push_back(std::move(file));
  }
  if (saved.ranks.empty())
    return fail("'" + dir + "' holds neither a checkpoint (manifest.json, or "
                "step-N directories with one) nor a --save output "
                "(rank0.safetensors, ...)");
  // Every rank's file: the ranks the files say there were (zbc writes
  // "ranks"; a file without it cannot tell, so the run of files decides).
  const rt::SafeTensorsMetadata &first = saved.ranks.front().metadata;
  if (auto ranks = first.find("ranks"); ranks != first.end() &&
                                        ranks->second !=
                                            std::to_string(saved.ranks.size()))
    return fail(formatv("'{0}' holds only rank0..rank{4}.safetensors, but "
                        "'{2}' was saved by a run of {3} ranks: "
                        "rank{1}.safetensors is missing",
                        dir, saved.ranks.size(), saved.ranks.front().path,
                        ranks->second, saved.ranks.size() - 1));
  return saved;
}

Expected<Saved> readSaved(const std::string &dir) {
  std::vector<rt::CheckpointEntry> checkpoints = rt::checkpointsIn(dir);
  return checkpoints.empty() ? readSaveOutput(dir)
                             : readCheckpoint(checkpoints.front().dir);
}

/// The config every rank file carries; the model's must have come from
/// `zbc import-hf`.
Expected<std::string> configOf(const Saved &saved) {
  const RankFile &first = saved.ranks.front();
  auto config = first.metadata.find("hf_config");
  if (config == first.metadata.end())
    return fail("'" + first.path + "' has no Hugging Face config in its "
                "metadata (\"hf_config\"): export-hf writes models that zbc "
                "import-hf made (model '" +
                (first.metadata.count("model") ? first.metadata.at("model")
                                               : std::string("?")) +
                "')");
  for (const RankFile &file : saved.ranks) {
    auto other = file.metadata.find("hf_config");
    if (other == file.metadata.end() || other->second != config->second)
      return fail("'" + file.path + "' and '" + first.path + "' carry "
                  "different Hugging Face configs: they were not saved by "
                  "one run");
  }
  return config->second;
}

/// Every parameter once: the optimizer's state left out, a tied parameter
/// (on two ranks) checked equal.
Expected<rt::TensorFile> parametersOf(const Saved &saved) {
  rt::TensorFile parameters;
  std::map<std::string, std::string> savedBy; // name -> the file
  std::vector<std::string> suffixes =
      saved.optimizer.empty() ? std::vector<std::string>()
                              : rt::optimizerStateSuffixes(saved.optimizer);
  for (const RankFile &file : saved.ranks)
    for (const auto &[name, tensor] : file.tensors) {
      bool state = false;
      for (const std::string &suffix : suffixes) {
        std::string tail = "." + suffix;
        state |= name.size() > tail.size() &&
                 name.compare(name.size() - tail.size(), tail.size(), tail) ==
                     0 &&
                 file.tensors.count(name.substr(0, name.size() - tail.size()));
      }
      if (state)
        continue;
      if (tensor.dtype != "F32")
        return fail("'" + file.path + "': tensor '" + name + "' is " +
                    tensor.dtype + "; zbc saves parameters as F32");
      auto [it, inserted] = parameters.emplace(name, tensor);
      if (!inserted &&
          (it->second.shape != tensor.shape || it->second.data != tensor.data))
        return fail("'" + file.path + "' and '" + savedBy[name] +
                    "' hold different values of the tied parameter '" + name +
                    "': its copies must stay equal");
      savedBy.emplace(name, file.path);
    }
  return parameters;
}

Error exportHF() {
  if (dtypeOpt != "f32" && dtypeOpt != "bf16")
    return fail("--dtype must be f32 or bf16, got '" + dtypeOpt + "'");
  const bool bf16 = dtypeOpt == "bf16";
  Expected<Saved> saved = readSaved(sourceOpt);
  if (!saved)
    return saved.takeError();
  Expected<std::string> configText = configOf(*saved);
  if (!configText)
    return configText.takeError();
  Expected<json::Value> config = json::parse(*configText);
  if (!config || !config->getAsObject())
    return fail("'" + saved->ranks.front().path + "': its \"hf_config\" "
                "metadata is not a JSON object" +
                (config ? std::string() : ": " + toString(config.takeError())));
  (*config->getAsObject())["torch_dtype"] = bf16 ? "bfloat16" : "float32";
  Expected<rt::TensorFile> parameters = parametersOf(*saved);
  if (!parameters)
    return parameters.takeError();
  if (bf16)
    for (auto &[name, tensor] : *parameters) {
      size_t n = tensor.data.size() / 4;
      std::vector<char> rounded(2 * n);
      for (size_t i = 0; i < n; ++i) {
        float value;
        std::memcpy(&value, tensor.data.data() + 4 * i, 4);
        uint16_t bits = rt::toBFloat16(value);
        std::memcpy(rounded.data() + 2 * i, &bits, 2);
      }
      tensor.dtype = "BF16";
      tensor.data = std::move(rounded);
    }

  const std::string dir = outputOpt;
  if (std::string e = rt::checkWritableDirectory(dir, "-o"); !e.empty())
    return fail(e);
  // An index beside the file would be read first by --init's layout rules
  // and by transformers: it would describe another checkpoint.
  if (rt::isRegularFile(dir + "/model.safetensors.index.json"))
    return fail("'" + dir + "' holds model.safetensors.index.json (a sharded "
                "checkpoint), which readers would take over the exported "
                "model.safetensors: export into another directory");
  std::string configJson = formatv("{0:2}", *config).str() + "\n";
  if (std::string e =
          rt::writeFileAtomically(dir + "/config.json", configJson);
      !e.empty())
    return fail(e);
  if (std::string e = rt::writeSafeTensors(dir + "/model.safetensors",
                                           *parameters, {{"format", "pt"}});
      !e.empty())
    return fail(e);
  int64_t elements = 0;
  for (const auto &[name, tensor] : *parameters)
    elements += static_cast<int64_t>(tensor.data.size()) / (bf16 ? 2 : 4);
  const json::Object &object = *config->getAsObject();
  const json::Array *architectures = object.getArray("architectures");
  outs() << formatv("zbc: exported {0} ({1} tensors, {2} parameters, {3}) "
                    "from {4} rank files into {5}\n",
                    architectures && !architectures->empty()
                        ? architectures->front().getAsString().value_or("?")
                        : StringRef("?"),
                    parameters->size(), elements, bf16 ? "bf16" : "f32",
                    saved->ranks.size(), dir);
  return Error::success();
}

} // namespace

int zbc::runExportHFCommand() {
  if (Error e = exportHF()) {
    errs() << "zbc: error: " << toString(std::move(e)) << "\n";
    return 1;
  }
  return 0;
}
