//===- Llama.h - Llama-family decoders written with the zbc DSL --*- C++ -*-===//
//
// A Llama-family decoder (Llama 2 and 3, Mistral, Qwen2 without a sliding
// window) built on a zbc::dsl::Model from a config, as Hugging Face's
// LlamaForCausalLM computes it: token embeddings; per layer, RMSNorm, q, k
// and v projections (optionally with biases, Qwen2's), rotary embeddings on
// q and k, causal grouped-query attention, the output projection and a
// residual add, then RMSNorm, a SwiGLU MLP (down(silu(gate(x)) * up(x)))
// and a residual add; a final RMSNorm, the head (or the embedding table
// itself when tied) and the cross-entropy loss. Every linear weight is in
// PyTorch's [out, in] layout and every parameter is named as a Hugging Face
// checkpoint names it, so that checkpoints map onto the model one to one.
//
// Data: the inputs `tokens` and `positions` and the label `targets`, int64
// [batch, seq], as in the GPT examples; packed, also the input `documents`
// (a document id per token: `zbc pack` writes all four), which masks every
// layer's attention to each token's own document.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DSL_LLAMA_H
#define ZBC_DSL_LLAMA_H

#include "zbc/DSL/Model.h"

#include <cstdint>

namespace zbc::dsl {

/// The sizes and conventions of a Llama-family model (Hugging Face's
/// config.json names in the comments) and of one microbatch.
struct LlamaConfig {
  int64_t hidden = 64;        // hidden_size
  int64_t intermediate = 160; // intermediate_size
  int64_t layers = 4;         // num_hidden_layers
  int64_t heads = 4;          // num_attention_heads
  int64_t kvHeads = 2;        // num_key_value_heads
  int64_t headDim = 0;        // head_dim; 0: hidden / heads
  int64_t vocab = 256;        // vocab_size
  int64_t maxPositions = 32;  // max_position_embeddings
  double ropeTheta = 10000.0; // rope_theta
  Rope::Llama3Scaling llama3; // rope_scaling of type "llama3"; factor 0: none
  double rmsEps = 1e-5;       // rms_norm_eps
  bool tied = false;          // tie_word_embeddings
  bool qkvBias = false;       // attention_bias (Qwen2: biases on q, k, v)
  double initStd = 0.02;      // initializer_range
  int64_t batch = 2;          // microbatch size
  int64_t seq = 32;           // sequence length
  bool cuts = true;           // one pipeline stage per layer
  bool packed = false;        // a `documents` input masks the attention
  DType dtype = DType::F32;   // of the parameters, so of every activation

  /// The head dimension in use.
  int64_t headSize() const { return headDim ? headDim : hidden / heads; }
};

/// Builds the model of `config` on `m` (which should be empty), ending with
/// its loss. Errors (a size the ops refuse) are reported as the DSL reports
/// them, at the builder's call sites; `m.str()` is then empty.
void buildLlama(Model &m, const LlamaConfig &config);

} // namespace zbc::dsl

#endif // ZBC_DSL_LLAMA_H
