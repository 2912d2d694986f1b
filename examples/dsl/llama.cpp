//===- llama.cpp - a Llama-family decoder written with the zbc DSL --------===//
//
// The model of zbc/DSL/Llama.h (Hugging Face's LlamaForCausalLM: RMSNorm,
// rotary embeddings with Llama 3's scaling, grouped-query attention, a
// SwiGLU MLP, parameters named and laid out as in its checkpoints) at sizes
// given on the command line; the defaults are examples/llama.mlir's.
//
//   zbc-dsl-llama            prints the IR (examples/llama.mlir)
//   zbc-dsl-llama --help     the flags
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace zbc::dsl;

namespace {

const char *const kUsage =
    "usage: %s [flags] [-o FILE]\n"
    "Prints the zb IR of a Llama-family decoder (zbc/DSL/Llama.h); the\n"
    "defaults are examples/llama.mlir's.\n"
    "  --batch N          microbatch size (2)\n"
    "  --seq N            sequence length (32)\n"
    "  --hidden N         hidden_size (64)\n"
    "  --intermediate N   intermediate_size (160)\n"
    "  --layers N         num_hidden_layers (4)\n"
    "  --heads N          num_attention_heads (4)\n"
    "  --kv-heads N       num_key_value_heads (2)\n"
    "  --head-dim N       head_dim (hidden / heads)\n"
    "  --vocab N          vocab_size (256)\n"
    "  --max-positions N  max_position_embeddings (32)\n"
    "  --rope-theta X     rope_theta (10000)\n"
    "  --llama3 F,L,H,O   rope_scaling \"llama3\": factor, low_freq_factor,\n"
    "                     high_freq_factor, original_max_position_embeddings\n"
    "                     (8,1,8,64)\n"
    "  --no-rope-scaling  plain rope_theta frequencies\n"
    "  --rms-eps X        rms_norm_eps (1e-5)\n"
    "  --tied             tie_word_embeddings: the head is the embedding\n"
    "  --qkv-bias         attention_bias: biases on q, k and v (Qwen2)\n"
    "  --packed           packed documents: a `documents` input (zbc pack)\n"
    "                     masks each token's attention to its own document\n"
    "  --no-cuts          no stage boundaries (for zb-partition)\n"
    "  --bf16             bf16 parameters and activations\n"
    "  -o FILE            write the IR to FILE instead of stdout\n";

bool parsePositive(const char *text, int64_t &value) {
  char *end = nullptr;
  value = std::strtoll(text, &end, 10);
  return *text && *end == '\0' && value > 0;
}

bool parseReal(const char *text, double &value) {
  char *end = nullptr;
  value = std::strtod(text, &end);
  return *text && *end == '\0' && value > 0;
}

/// Parses the flags into `c`; 0 to go on, else the exit code (0 after
/// --help is returned as -1).
int parseArgs(int argc, char **argv, LlamaConfig &c, std::string &outPath) {
  struct IntFlag {
    const char *name;
    int64_t *value;
  } ints[] = {{"--batch", &c.batch},
              {"--seq", &c.seq},
              {"--hidden", &c.hidden},
              {"--intermediate", &c.intermediate},
              {"--layers", &c.layers},
              {"--heads", &c.heads},
              {"--kv-heads", &c.kvHeads},
              {"--head-dim", &c.headDim},
              {"--vocab", &c.vocab},
              {"--max-positions", &c.maxPositions}};
  struct RealFlag {
    const char *name;
    double *value;
  } reals[] = {{"--rope-theta", &c.ropeTheta}, {"--rms-eps", &c.rmsEps}};
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s (see --help)\n", argv[0],
                 message.c_str());
    return 1;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool hasValue = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      std::printf(kUsage, argv[0]);
      return -1;
    }
    if (arg == "--tied") {
      c.tied = true;
    } else if (arg == "--qkv-bias") {
      c.qkvBias = true;
    } else if (arg == "--packed") {
      c.packed = true;
    } else if (arg == "--no-cuts") {
      c.cuts = false;
    } else if (arg == "--bf16") {
      c.dtype = DType::BF16;
    } else if (arg == "--no-rope-scaling") {
      c.llama3 = {};
    } else if (arg == "-o" && hasValue) {
      outPath = argv[++i];
    } else if (arg == "--llama3" && hasValue) {
      Rope::Llama3Scaling &s = c.llama3;
      long long original = 0;
      char tail = 0;
      if (std::sscanf(argv[++i], "%lf,%lf,%lf,%lld%c", &s.factor,
                      &s.lowFreqFactor, &s.highFreqFactor, &original,
                      &tail) != 4 ||
          original <= 0)
        return fail("--llama3 takes FACTOR,LOW,HIGH,ORIGINAL, got '" +
                    std::string(argv[i]) + "'");
      s.originalMaxPositions = original;
    } else {
      bool known = false;
      for (IntFlag &flag : ints)
        if (arg == flag.name && hasValue) {
          if (!parsePositive(argv[++i], *flag.value))
            return fail(arg + " needs a positive integer, got '" + argv[i] +
                        "'");
          known = true;
        }
      for (RealFlag &flag : reals)
        if (arg == flag.name && hasValue) {
          if (!parseReal(argv[++i], *flag.value))
            return fail(arg + " needs a positive number, got '" + argv[i] +
                        "'");
          known = true;
        }
      if (!known)
        return fail("unknown argument '" + arg + "'");
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  LlamaConfig c;
  c.llama3 = {8.0, 1.0, 8.0, 64}; // examples/llama.mlir's
  std::string outPath;
  if (int code = parseArgs(argc, argv, c, outPath))
    return code < 0 ? 0 : code;
  Model m("llama");
  buildLlama(m, c);
  return m.emit(outPath);
}
