//===- ImportHFCommand.cpp - `zbc import-hf`: a Hugging Face model as zb IR -===//
//
//   zbc import-hf DIR -o MODEL.mlir --microbatch-size B [--seq-len S]
//       [--layers K] [--dtype f32|bf16] [--packed]
//
// Reads DIR/config.json (or DIR itself, a config.json) through
// HuggingFaceConfig.h and writes the model, built with the DSL, as zb IR:
// its parameters named and laid out as the checkpoint's, its data keys
// `tokens`, `positions` and `targets` (int64 [B, S]; with --packed also
// `documents`, the document ids that `zbc pack` writes, which mask every
// layer's attention to each token's document), the config in the
// model's `hf_config` for the export. No weights are read: `--init` loads
// them (and a model without weights, as a Llama-3-8B config, compiles and
// is proven all the same).
//
//===----------------------------------------------------------------------===//

#include "HuggingFaceConfig.h"
#include "Options.h"
#include "OutputFile.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace zbc;

namespace {

cl::opt<std::string> sourceOpt(cl::Positional, cl::Required,
                               cl::desc("<model directory or config.json>"),
                               cl::sub(zbc::importHFCommand()),
                               cl::cat(zbcCategory));
cl::opt<std::string> outputOpt("o", cl::Required,
                               cl::desc("Write the model's IR here"),
                               cl::value_desc("MODEL.mlir"),
                               cl::sub(zbc::importHFCommand()),
                               cl::cat(zbcCategory));
cl::opt<int64_t> seqLenOpt("seq-len",
                           cl::desc("Tokens per sequence (default: the "
                                    "model's positions, at most 2048)"),
                           cl::sub(zbc::importHFCommand()),
                           cl::cat(zbcCategory));
cl::opt<int64_t> microbatchOpt("microbatch-size", cl::Required,
                               cl::desc("Sequences per microbatch"),
                               cl::sub(zbc::importHFCommand()),
                               cl::cat(zbcCategory));
cl::opt<int64_t> layersOpt("layers", cl::init(0),
                           cl::desc("Keep the first K layers (default: all)"),
                           cl::value_desc("K"),
                           cl::sub(zbc::importHFCommand()),
                           cl::cat(zbcCategory));
cl::opt<std::string> dtypeOpt("dtype", cl::init("f32"),
                              cl::desc("Element type of the parameters and "
                                       "activations: f32 or bf16"),
                              cl::sub(zbc::importHFCommand()),
                              cl::cat(zbcCategory));

cl::opt<bool> packedOpt("packed",
                        cl::desc("Packed documents: a `documents` input "
                                 "(zbc pack writes it) masks each token's "
                                 "attention to its own document"),
                        cl::sub(zbc::importHFCommand()),
                        cl::cat(zbcCategory));

} // namespace

int zbc::runImportHFCommand() {
  auto error = [](const Twine &message) {
    errs() << "zbc: error: " << message << "\n";
    return 1;
  };
  if ((seqLenOpt.getNumOccurrences() && seqLenOpt <= 0) || microbatchOpt <= 0)
    return error(formatv("--seq-len and --microbatch-size must be positive, "
                         "got {0} and {1}",
                         seqLenOpt.getValue(), microbatchOpt.getValue()));
  if (layersOpt < 0)
    return error(formatv("--layers must be positive, got {0}",
                         layersOpt.getValue()));
  if (dtypeOpt != "f32" && dtypeOpt != "bf16")
    return error(formatv("--dtype must be f32 or bf16, got '{0}'",
                         dtypeOpt.getValue()));
  std::string config = sourceOpt;
  if (sys::fs::is_directory(config)) {
    SmallString<256> path(config);
    sys::path::append(path, "config.json");
    config = path.str().str();
  }
  HuggingFaceImportOptions options;
  options.seqLen = seqLenOpt;
  options.microbatchSize = microbatchOpt;
  options.layers = layersOpt;
  options.dtype = dtypeOpt == "bf16" ? dsl::DType::BF16 : dsl::DType::F32;
  options.packed = packedOpt;
  Expected<HuggingFaceModel> model = readHuggingFaceConfig(config, options);
  if (!model)
    return error(toString(model.takeError()));
  dsl::Model m(model->family == HuggingFaceModel::Family::Llama ? "llama"
                                                                : "gpt2");
  buildHuggingFaceModel(m, *model);
  std::string text = m.str();
  if (text.empty())
    return 1; // the DSL said why
  if (outputOpt == "-")
    outs() << text;
  else if (Error e = writeFile(outputOpt, StringRef(text)))
    return error(toString(std::move(e)));
  std::string seqLen =
      seqLenOpt.getNumOccurrences()
          ? ""
          : formatv(", sequences of {0} tokens: the model's {1} positions{2}; "
                    "--seq-len sets it",
                    model->seqLen(), model->maxPositions(),
                    model->seqLen() < model->maxPositions()
                        ? formatv(" capped at {0}", kDefaultSeqLenCap).str()
                        : std::string())
                .str();
  errs() << formatv("zbc: imported {0} ({1} layers, {2}{3}) into {4}\n",
                    model->architecture, model->layers(), dtypeOpt.getValue(),
                    seqLen, outputOpt.getValue());
  return 0;
}
