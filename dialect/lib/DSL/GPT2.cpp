//===- GPT2.cpp - GPT-2 written with the zbc DSL, in Hugging Face's names ---===//
//
// buildGPT2 (GPT2.h): Hugging Face's GPT2LMHeadModel as DSL calls, one
// statement per op so that the IR's order is the source's.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/GPT2.h"

#include <string>

namespace zbc::dsl {
namespace {

/// A Conv1D of GPT-2: x @ weight + bias, weight [in, out] named
/// NAME.weight, bias NAME.bias.
Tensor conv1d(Model &m, const GPT2Config &c, const std::string &name, Tensor x,
              int64_t in, int64_t out) {
  Tensor w = m.param(name + ".weight", {in, out}, Init::normal(c.initStd),
                     c.dtype);
  Tensor b = m.param(name + ".bias", {out}, Init::zeros(), c.dtype);
  Tensor y = m.linear(x, w);
  return m.biasAdd(y, b);
}

Tensor layerNorm(Model &m, const GPT2Config &c, const std::string &name,
                 Tensor x) {
  Tensor g = m.param(name + ".weight", {c.hidden}, Init::ones(), c.dtype);
  Tensor b = m.param(name + ".bias", {c.hidden}, Init::zeros(), c.dtype);
  return m.layerNorm(x, g, b, c.layerNormEps);
}

/// One GPT2Block on x [batch, seq, hidden].
Tensor block(Model &m, const GPT2Config &c, int64_t layer, Tensor x,
             std::optional<Tensor> documents) {
  const std::string p = "transformer.h." + std::to_string(layer) + ".";
  const int64_t h = c.hidden, inner = c.inner ? c.inner : 4 * c.hidden;
  Tensor a = layerNorm(m, c, p + "ln_1", x);
  Tensor qkv = conv1d(m, c, p + "attn.c_attn", a, h, 3 * h);
  Tensor attn = m.causalAttention(qkv, c.heads, documents);
  Tensor proj = conv1d(m, c, p + "attn.c_proj", attn, h, h);
  x = m.add(x, proj);
  Tensor n = layerNorm(m, c, p + "ln_2", x);
  Tensor fc = conv1d(m, c, p + "mlp.c_fc", n, h, inner);
  Tensor act = m.gelu(fc);
  Tensor out = conv1d(m, c, p + "mlp.c_proj", act, inner, h);
  return m.add(x, out);
}

} // namespace

void buildGPT2(Model &m, const GPT2Config &c) {
  Tensor tokens = m.input("tokens", {c.batch, c.seq}, DType::I64);
  Tensor positions = m.input("positions", {c.batch, c.seq}, DType::I64);
  Tensor targets = m.label("targets", {c.batch, c.seq}, DType::I64);
  std::optional<Tensor> documents;
  if (c.packed)
    documents = m.input("documents", {c.batch, c.seq}, DType::I64);

  Tensor wte = m.param("transformer.wte.weight", {c.vocab, c.hidden},
                       Init::normal(c.initStd), c.dtype);
  Tensor wpe = m.param("transformer.wpe.weight", {c.maxPositions, c.hidden},
                       Init::normal(c.initStd), c.dtype);
  Tensor tok = m.embedding(tokens, wte);
  Tensor pos = m.embedding(positions, wpe);
  Tensor x = m.add(tok, pos);
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    x = block(m, c, layer, x, documents);
    if (c.cuts && layer + 1 < c.layers)
      x = m.cut(x);
  }
  Tensor normed = layerNorm(m, c, "transformer.ln_f", x);
  // The head is wte itself: [vocab, hidden] is a head's [out, in].
  Tensor logits = m.linear(normed, wte, WeightLayout::OutIn);
  m.loss(m.crossEntropy(logits, targets));
}

} // namespace zbc::dsl
