//===- gpt.cpp - a GPT-style transformer written with the zbc DSL ---------===//
//
// The same model as examples/gpt.mlir, written as a C++ program: token and
// position embeddings, pre-LayerNorm blocks (causal self-attention and a 4h
// GELU MLP, each with a residual add), a final LayerNorm, an (untied) output
// projection and the cross-entropy loss. One pipeline stage per block; the
// embeddings ride with the first block and the head with the last.
//
//   zbc-dsl-gpt            prints the IR (the configuration of gpt.mlir)
//   zbc-dsl-gpt -o f.mlir  writes it to f.mlir
//   zbc-dsl-gpt --tied     the head is the token embedding's table,
//                          transposed (GPT-2's tying: one parameter used in
//                          the first and the last stage)
//   zbc-dsl-gpt --layers 96 --hidden 8192 --heads 64 --seq 1024 --no-cuts
//                          other sizes; without cuts, for zb-partition
//   zbc-dsl-gpt --bf16     every parameter (so every activation) bf16
//                          (Note [bf16]; the optimizer keeps f32 masters)
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Model.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace zbc::dsl;

namespace {
struct GPTConfig {
  int64_t batch = 2;   // microbatch size
  int64_t seq = 32;    // sequence length
  int64_t hidden = 64; // model width h
  int64_t heads = 4;
  int64_t layers = 4;
  int64_t vocab = 256;
  bool tied = false;        // the head reuses wte (transposed)
  bool cuts = true;         // one stage per block
  bool packed = false;      // a `documents` input masks the attention
  DType dtype = DType::F32; // of the parameters, so of every activation
};

const char *const kUsage =
    "usage: %s [flags] [-o FILE]\n"
    "Prints the zb IR of a GPT-2-style decoder, one stage per block.\n"
    "  --batch N    microbatch size (2)\n"
    "  --seq N      sequence length (32)\n"
    "  --hidden N   hidden size (64)\n"
    "  --heads N    attention heads (4)\n"
    "  --layers N   transformer blocks (4)\n"
    "  --vocab N    vocabulary (256)\n"
    "  --tied       the head is the token embedding (zb.tie)\n"
    "  --no-cuts    no stage cuts: let the partitioner choose\n"
    "  --packed     packed documents: a `documents` input (zbc pack) masks\n"
    "               each token's attention to its own document\n"
    "  --bf16       bf16 parameters and activations\n"
    "  -o FILE      write the IR to FILE (default: stdout)\n";

/// Parses `--NAME VALUE` flags into `c`; returns false on a bad argument.
bool parseArgs(int argc, char **argv, GPTConfig &c, std::string &outPath) {
  struct Flag {
    const char *name;
    int64_t *value;
  } flags[] = {{"--batch", &c.batch},   {"--seq", &c.seq},
               {"--hidden", &c.hidden}, {"--heads", &c.heads},
               {"--layers", &c.layers}, {"--vocab", &c.vocab}};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf(kUsage, argv[0]);
      std::exit(0);
    }
    if (!std::strcmp(argv[i], "--tied")) {
      c.tied = true;
      continue;
    }
    if (!std::strcmp(argv[i], "--packed")) {
      c.packed = true;
      continue;
    }
    if (!std::strcmp(argv[i], "--no-cuts")) {
      c.cuts = false;
      continue;
    }
    if (!std::strcmp(argv[i], "--bf16")) {
      c.dtype = DType::BF16;
      continue;
    }
    if (!std::strcmp(argv[i], "-o") && i + 1 < argc) {
      outPath = argv[++i];
      continue;
    }
    bool known = false;
    for (Flag &flag : flags)
      if (!std::strcmp(argv[i], flag.name) && i + 1 < argc) {
        char *end = nullptr;
        *flag.value = std::strtoll(argv[++i], &end, 10);
        if (*end != '\0' || *flag.value <= 0) {
          std::fprintf(stderr, "%s: error: %s needs a positive integer\n",
                       argv[0], flag.name);
          return false;
        }
        known = true;
      }
    if (!known) {
      std::fprintf(stderr, "%s: error: unknown argument '%s' (see --help)\n",
                   argv[0], argv[i]);
      return false;
    }
  }
  return true;
}

/// One pre-LayerNorm transformer block on x: [batch, seq, hidden].
Tensor block(Model &m, const GPTConfig &c, int layer, Tensor x,
             std::optional<Tensor> documents) {
  std::string p = "h" + std::to_string(layer) + ".";
  int64_t h = c.hidden;

  Tensor ln1g = m.param(p + "ln1.gamma", {h}, Init::ones(), c.dtype);
  Tensor ln1b = m.param(p + "ln1.beta", {h}, Init::zeros(), c.dtype);
  Tensor qkvW =
      m.param(p + "attn.qkv.weight", {h, 3 * h}, Init::normal(0.02), c.dtype);
  Tensor qkvB = m.param(p + "attn.qkv.bias", {3 * h}, Init::zeros(), c.dtype);
  Tensor projW =
      m.param(p + "attn.proj.weight", {h, h}, Init::normal(0.02), c.dtype);
  Tensor projB = m.param(p + "attn.proj.bias", {h}, Init::zeros(), c.dtype);
  Tensor ln2g = m.param(p + "ln2.gamma", {h}, Init::ones(), c.dtype);
  Tensor ln2b = m.param(p + "ln2.beta", {h}, Init::zeros(), c.dtype);
  Tensor fcW =
      m.param(p + "mlp.fc.weight", {h, 4 * h}, Init::normal(0.02), c.dtype);
  Tensor fcB = m.param(p + "mlp.fc.bias", {4 * h}, Init::zeros(), c.dtype);
  Tensor outW =
      m.param(p + "mlp.proj.weight", {4 * h, h}, Init::normal(0.02), c.dtype);
  Tensor outB = m.param(p + "mlp.proj.bias", {h}, Init::zeros(), c.dtype);

  Tensor qkv = m.biasAdd(m.linear(m.layerNorm(x, ln1g, ln1b), qkvW), qkvB);
  Tensor attn = m.causalAttention(qkv, c.heads, documents);
  x = m.add(x, m.biasAdd(m.linear(attn, projW), projB));

  Tensor up = m.gelu(m.biasAdd(m.linear(m.layerNorm(x, ln2g, ln2b), fcW), fcB));
  return m.add(x, m.biasAdd(m.linear(up, outW), outB));
}
} // namespace

int main(int argc, char **argv) {
  GPTConfig c;
  std::string outPath;
  if (!parseArgs(argc, argv, c, outPath))
    return 1;
  Model m("gpt");
  Tensor tokens = m.input("tokens", {c.batch, c.seq}, DType::I64);
  Tensor positions = m.input("positions", {c.batch, c.seq}, DType::I64);
  Tensor targets = m.label("targets", {c.batch, c.seq}, DType::I64);
  std::optional<Tensor> documents;
  if (c.packed)
    documents = m.input("documents", {c.batch, c.seq}, DType::I64);

  Tensor wte = m.param("wte", {c.vocab, c.hidden}, Init::normal(0.02), c.dtype);
  Tensor wpe = m.param("wpe", {c.seq, c.hidden}, Init::normal(0.01), c.dtype);
  // Separate statements fix the op order: C++ leaves the evaluation order of
  // one call's arguments unspecified.
  Tensor tokEmb = m.embedding(tokens, wte);
  Tensor posEmb = m.embedding(positions, wpe);
  Tensor x = m.add(tokEmb, posEmb);

  for (int layer = 0; layer < c.layers; ++layer) {
    x = block(m, c, layer, x, documents);
    if (c.cuts && layer + 1 < c.layers)
      x = m.cut(x); // one pipeline stage per block
  }

  Tensor lnfG = m.param("lnf.gamma", {c.hidden}, Init::ones(), c.dtype);
  Tensor lnfB = m.param("lnf.beta", {c.hidden}, Init::zeros(), c.dtype);
  Tensor head = c.tied ? m.transpose(wte)
                       : m.param("lm_head.weight", {c.hidden, c.vocab},
                                 Init::normal(0.02), c.dtype);
  Tensor logits = m.linear(m.layerNorm(x, lnfG, lnfB), head);
  m.loss(m.crossEntropy(logits, targets));
  return m.emit(outPath);
}
