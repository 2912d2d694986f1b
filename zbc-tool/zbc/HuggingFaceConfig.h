//===- HuggingFaceConfig.h - a Hugging Face config.json as a zbc model -*- C++ -*-===//
//
// Reads a Hugging Face model's config.json into the DSL builder's config of
// its family (zbc/DSL/Llama.h for LlamaForCausalLM, MistralForCausalLM and
// Qwen2ForCausalLM; zbc/DSL/GPT2.h for GPT2LMHeadModel), checking that zbc
// computes what transformers computes for it: anything zbc cannot represent
// (another rope scaling, a sliding window shorter than the sequence, MoE,
// dropout, another activation, an unknown architecture, a missing key) is
// an error naming the key and its value. `zbc import-hf` uses it; the config
// it returns is the one the imported model describes (its layer count the
// model's), to travel in the model for the export.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_HUGGINGFACECONFIG_H
#define ZBC_TOOL_HUGGINGFACECONFIG_H

#include "zbc/DSL/GPT2.h"
#include "zbc/DSL/Llama.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace zbc {

/// Note [Default sequence length]
/// Without --seq-len, a model trains on sequences of its positions
/// (max_position_embeddings; GPT-2's n_positions), at most
/// kDefaultSeqLenCap: recent configs give 32768 to 131072 positions, whose
/// activations a first run on a few ranks does not want; a longer one is
/// asked for with --seq-len.
constexpr int64_t kDefaultSeqLenCap = 2048;

/// What the user chose beside the config: the microbatch's shape (seqLen
/// 0: Note [Default sequence length]), the layers kept (0: all), the
/// element type of the parameters.
struct HuggingFaceImportOptions {
  int64_t seqLen = 0;
  int64_t microbatchSize = 0;
  int64_t layers = 0;
  dsl::DType dtype = dsl::DType::F32;
  bool packed = false; // a `documents` input masks the attention
};

/// A config.json as a zbc model.
struct HuggingFaceModel {
  enum class Family { Llama, GPT2 } family = Family::Llama;
  std::string architecture; // "LlamaForCausalLM", ...
  dsl::LlamaConfig llama;   // for Family::Llama
  dsl::GPT2Config gpt2;     // for Family::GPT2
  llvm::json::Object config; // config.json, with the kept layer count
  int64_t layers() const {
    return family == Family::Llama ? llama.layers : gpt2.layers;
  }
  int64_t seqLen() const {
    return family == Family::Llama ? llama.seq : gpt2.seq;
  }
  int64_t maxPositions() const {
    return family == Family::Llama ? llama.maxPositions : gpt2.maxPositions;
  }
};

/// Reads and checks `path` (a config.json). Errors name the file, the key
/// and its value; a file that is not a config (the weights, their index,
/// anything but JSON) is refused as such.
llvm::Expected<HuggingFaceModel>
readHuggingFaceConfig(const std::string &path,
                      const HuggingFaceImportOptions &options);

/// Builds `model` on `m`, recording its config (Model::setHuggingFaceConfig).
void buildHuggingFaceModel(dsl::Model &m, const HuggingFaceModel &model);

} // namespace zbc

#endif // ZBC_TOOL_HUGGINGFACECONFIG_H
