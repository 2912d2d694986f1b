//===- Llama.cpp - Llama-family decoders written with the zbc DSL ---------===//
//
// buildLlama (Llama.h): Hugging Face's LlamaForCausalLM as DSL calls, one
// statement per op so that the IR's order is the source's.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Llama.h"

#include <string>

namespace zbc::dsl {
namespace {

/// A linear layer in PyTorch's layout: weight [out, in] named NAME.weight,
/// and, with `bias`, NAME.bias [out].
Tensor projection(Model &m, const LlamaConfig &c, const std::string &name,
                  Tensor x, int64_t in, int64_t out, bool bias) {
  Tensor w =
      m.param(name + ".weight", {out, in}, Init::normal(c.initStd), c.dtype);
  Tensor y = m.linear(x, w, WeightLayout::OutIn);
  if (!bias)
    return y;
  Tensor b = m.param(name + ".bias", {out}, Init::zeros(), c.dtype);
  return m.biasAdd(y, b);
}

Tensor rmsNorm(Model &m, const LlamaConfig &c, const std::string &name,
               Tensor x) {
  Tensor w = m.param(name + ".weight", {c.hidden}, Init::ones(), c.dtype);
  return m.rmsNorm(x, w, c.rmsEps);
}

/// One decoder layer (LlamaDecoderLayer) on x [batch, seq, hidden].
Tensor decoderLayer(Model &m, const LlamaConfig &c, int64_t layer, Tensor x,
                    Tensor positions, std::optional<Tensor> documents) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  const int64_t d = c.headSize(), qWidth = c.heads * d, kvWidth = c.kvHeads * d;
  Rope rope;
  rope.headDim = d;
  rope.theta = c.ropeTheta;
  rope.maxPositions = c.maxPositions;
  rope.llama3 = c.llama3;

  Tensor h = rmsNorm(m, c, p + "input_layernorm", x);
  Tensor q = projection(m, c, p + "self_attn.q_proj", h, c.hidden, qWidth,
                        c.qkvBias);
  Tensor k = projection(m, c, p + "self_attn.k_proj", h, c.hidden, kvWidth,
                        c.qkvBias);
  Tensor v = projection(m, c, p + "self_attn.v_proj", h, c.hidden, kvWidth,
                        c.qkvBias);
  Tensor qr = m.rope(q, positions, rope);
  Tensor kr = m.rope(k, positions, rope);
  Tensor attn = m.attention(qr, kr, v, c.heads, c.kvHeads, documents);
  Tensor o = projection(m, c, p + "self_attn.o_proj", attn, qWidth, c.hidden,
                        false);
  x = m.add(x, o);

  h = rmsNorm(m, c, p + "post_attention_layernorm", x);
  Tensor gate = projection(m, c, p + "mlp.gate_proj", h, c.hidden,
                           c.intermediate, false);
  Tensor up = projection(m, c, p + "mlp.up_proj", h, c.hidden, c.intermediate,
                         false);
  Tensor act = m.swiGlu(gate, up);
  Tensor down = projection(m, c, p + "mlp.down_proj", act, c.intermediate,
                           c.hidden, false);
  return m.add(x, down);
}

} // namespace

void buildLlama(Model &m, const LlamaConfig &c) {
  Tensor tokens = m.input("tokens", {c.batch, c.seq}, DType::I64);
  Tensor positions = m.input("positions", {c.batch, c.seq}, DType::I64);
  Tensor targets = m.label("targets", {c.batch, c.seq}, DType::I64);
  std::optional<Tensor> documents;
  if (c.packed)
    documents = m.input("documents", {c.batch, c.seq}, DType::I64);

  Tensor embed = m.param("model.embed_tokens.weight", {c.vocab, c.hidden},
                         Init::normal(c.initStd), c.dtype);
  Tensor x = m.embedding(tokens, embed);
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    x = decoderLayer(m, c, layer, x, positions, documents);
    if (c.cuts && layer + 1 < c.layers)
      x = m.cut(x); // one pipeline stage per layer
  }
  Tensor normed = rmsNorm(m, c, "model.norm", x);
  // Tied: the head is the embedding table itself, [vocab, hidden] being the
  // [out, in] layout of a head (one parameter in the first and last stage).
  Tensor head = c.tied ? embed
                       : m.param("lm_head.weight", {c.vocab, c.hidden},
                                 Init::normal(c.initStd), c.dtype);
  Tensor logits = m.linear(normed, head, WeightLayout::OutIn);
  m.loss(m.crossEntropy(logits, targets));
}

} // namespace zbc::dsl
