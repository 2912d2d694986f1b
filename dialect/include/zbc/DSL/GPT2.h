//===- GPT2.h - GPT-2 written with the zbc DSL, in Hugging Face's names -*- C++ -*-===//
//
// Hugging Face's GPT2LMHeadModel built on a zbc::dsl::Model from a config:
// token and position embeddings (transformer.wte, transformer.wpe); per
// block, LayerNorm, the fused q|k|v projection (attn.c_attn, a Conv1D:
// weight [in, out], so zbc's own layout), causal multi-head attention on
// it, attn.c_proj, a residual add, LayerNorm, mlp.c_fc, tanh GELU
// ("gelu_new"), mlp.c_proj and a residual add; the final LayerNorm
// (transformer.ln_f) and the head tied to wte, as GPT-2 always ties it.
// Every parameter is named as GPT-2 checkpoints name it.
//
// Data: the inputs `tokens` and `positions` and the label `targets`, int64
// [batch, seq].
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DSL_GPT2_H
#define ZBC_DSL_GPT2_H

#include "zbc/DSL/Model.h"

#include <cstdint>

namespace zbc::dsl {

/// GPT-2's sizes (Hugging Face's config.json names in the comments) and one
/// microbatch's.
struct GPT2Config {
  int64_t hidden = 768;       // n_embd
  int64_t layers = 12;        // n_layer
  int64_t heads = 12;         // n_head
  int64_t inner = 0;          // n_inner; 0: 4 * hidden
  int64_t vocab = 50257;      // vocab_size
  int64_t maxPositions = 1024; // n_positions: wpe's rows
  double layerNormEps = 1e-5; // layer_norm_epsilon
  double initStd = 0.02;      // initializer_range
  int64_t batch = 2;          // microbatch size
  int64_t seq = 32;           // sequence length, at most maxPositions
  bool cuts = false;          // one pipeline stage per block
  bool packed = false;        // a `documents` input masks the attention
  DType dtype = DType::F32;
};

/// Builds GPT2LMHeadModel of `config` on `m`, ending with its loss; errors
/// are reported as the DSL reports them.
void buildGPT2(Model &m, const GPT2Config &config);

} // namespace zbc::dsl

#endif // ZBC_DSL_GPT2_H
