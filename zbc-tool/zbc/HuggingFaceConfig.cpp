//===- HuggingFaceConfig.cpp - a Hugging Face config.json as a zbc model --===//
//
// readHuggingFaceConfig and buildHuggingFaceModel (HuggingFaceConfig.h). The
// defaults are transformers' own (LlamaConfig, MistralConfig, Qwen2Config,
// GPT2Config) for the keys that have one; the sizes must be given.
//
//===----------------------------------------------------------------------===//

#include "HuggingFaceConfig.h"
#include "Options.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <optional>

using namespace llvm;
using namespace zbc;

namespace {


/// A JSON value as config.json writes it, for messages (a number in its
/// shortest form that reads back the same: 0.1, not 0.10000000000000001).
std::string show(const json::Value *value) {
  if (!value)
    return "absent";
  if (value->kind() == json::Value::Number && !value->getAsInteger()) {
    double x = *value->getAsNumber();
    for (int digits = 1; digits <= 17; ++digits) {
      std::string text = formatv("{0}", format("%.*g", digits, x)).str();
      if (std::strtod(text.c_str(), nullptr) == x)
        return text;
    }
  }
  std::string text;
  raw_string_ostream os(text);
  os << *value;
  return text;
}

/// The keys of one config object, read with messages that name the file,
/// the key and its value. The first error sticks; later reads return their
/// defaults.
class ConfigReader {
public:
  ConfigReader(const std::string &path, const json::Object &object,
               std::string prefix = "")
      : path(path), object(object), prefix(std::move(prefix)) {}

  /// A positive integer, required when `fallback` is absent.
  int64_t positive(StringRef key, std::optional<int64_t> fallback = {}) {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null) {
      if (!fallback)
        refuse(key, v, "is required");
      return fallback.value_or(1);
    }
    std::optional<int64_t> n = v->getAsInteger();
    if (!n || *n <= 0) {
      refuse(key, v, "must be a positive integer");
      return 1;
    }
    return *n;
  }
  /// A number; `positive` requires > 0.
  double number(StringRef key, double fallback, bool positive = true) {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return fallback;
    std::optional<double> x = v->getAsNumber();
    if (!x || !std::isfinite(*x) || (positive && !(*x > 0)) || *x < 0) {
      refuse(key, v, positive ? "must be a positive number"
                              : "must be a number >= 0");
      return fallback;
    }
    return *x;
  }
  bool boolean(StringRef key, bool fallback) {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return fallback;
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      refuse(key, v, "must be true or false");
    return b.value_or(fallback);
  }
  std::string string(StringRef key, StringRef fallback) {
    const json::Value *v = object.get(key);
    if (!v || v->kind() == json::Value::Null)
      return fallback.str();
    std::optional<StringRef> s = v->getAsString();
    if (!s)
      refuse(key, v, "must be a string");
    return s.value_or(fallback).str();
  }
  /// Requires `key` to be `expected` (absent counts as `fallback`).
  void expectString(StringRef key, StringRef fallback,
                    ArrayRef<StringRef> accepted, StringRef why) {
    std::string value = string(key, fallback);
    if (!llvm::is_contained(accepted, value))
      refuse(key, object.get(key), why);
  }
  void expectBool(StringRef key, bool fallback, bool expected, StringRef why) {
    if (boolean(key, fallback) != expected)
      refuse(key, object.get(key), why);
  }
  /// Refuses `key` whenever it is present and not null.
  void absent(StringRef key, StringRef why) {
    const json::Value *v = object.get(key);
    if (v && v->kind() != json::Value::Null)
      refuse(key, v, why);
  }
  /// A warning (not an error) about `key`'s value.
  void warn(StringRef key, StringRef why) {
    errs() << formatv("zbc: warning: {0}: '{1}{2}' = {3}: {4}\n", path,
                      prefix, key, show(object.get(key)), why);
  }
  void refuse(StringRef key, const json::Value *value, StringRef why) {
    if (!error)
      error = fail(formatv("{0}: '{1}{2}' = {3}: {4}", path, prefix, key,
                           show(value), why));
  }
  Error take() { return error ? std::move(error) : Error::success(); }

private:
  const std::string &path;
  const json::Object &object;
  std::string prefix;
  Error error = Error::success();
};

/// Dropout: zbc has none, so a probability above 0 trains differently from
/// transformers in training mode; said, not refused (GPT-2's configs all
/// carry 0.1).
void warnDropout(ConfigReader &r, ArrayRef<StringRef> keys) {
  for (StringRef key : keys)
    if (r.number(key, 0.0, /*positive=*/false) > 0)
      r.warn(key, "zbc trains without dropout (as transformers does with "
                  "this probability set to 0)");
}

/// The sequence length: --seq-len, else Note [Default sequence length].
int64_t seqLenFor(const HuggingFaceImportOptions &o, int64_t maxPositions) {
  return o.seqLen ? o.seqLen : std::min(maxPositions, kDefaultSeqLenCap);
}

/// The user's choices applied to a family's config `c`: the sequence and
/// layers checked against the config's bounds, the layers kept (also in the
/// config that travels with the model), the microbatch, no cuts, the dtype.
template <typename Config>
void applyChoices(ConfigReader &r, json::Object &config,
                  const HuggingFaceImportOptions &o, StringRef positionsKey,
                  StringRef layersKey, Config &c) {
  if (o.seqLen > c.maxPositions)
    r.refuse(positionsKey, config.get(positionsKey),
             formatv("--seq-len {0} exceeds the model's {1} positions",
                     o.seqLen, c.maxPositions)
                 .str());
  if (o.layers > c.layers)
    r.refuse(layersKey, config.get(layersKey),
             formatv("--layers {0} exceeds the model's {1} layers", o.layers,
                     c.layers)
                 .str());
  if (o.layers)
    c.layers = o.layers;
  config[layersKey] = c.layers;
  c.batch = o.microbatchSize;
  // Note [Default sequence length].
  c.seq = seqLenFor(o, c.maxPositions);
  c.cuts = false;
  c.dtype = o.dtype;
  c.packed = o.packed;
}

Error readLlama(const std::string &path, json::Object &o,
                const HuggingFaceImportOptions &opt, HuggingFaceModel &model) {
  ConfigReader r(path, o);
  dsl::LlamaConfig &c = model.llama;
  const bool qwen2 = model.architecture == "Qwen2ForCausalLM";
  const bool mistral = model.architecture == "MistralForCausalLM";
  c.hidden = r.positive("hidden_size");
  c.intermediate = r.positive("intermediate_size");
  c.layers = r.positive("num_hidden_layers");
  c.heads = r.positive("num_attention_heads");
  c.kvHeads = r.positive("num_key_value_heads", c.heads);
  c.headDim = r.positive("head_dim", c.hidden / c.heads);
  c.vocab = r.positive("vocab_size");
  c.maxPositions = r.positive("max_position_embeddings", mistral ? 32768 : 2048);
  c.rmsEps = r.number("rms_norm_eps", 1e-6);
  c.ropeTheta = r.number("rope_theta", 10000.0);
  c.tied = r.boolean("tie_word_embeddings", false);
  c.initStd = r.number("initializer_range", 0.02);
  // Qwen2's q, k and v projections always have biases; Llama's follow
  // attention_bias, which also gives o_proj one (not supported).
  c.qkvBias = qwen2;
  if (!qwen2)
    r.expectBool("attention_bias", false, false,
                 "biases on the attention projections (o_proj's among "
                 "them) are not supported");
  r.expectBool("mlp_bias", false, false, "MLP biases are not supported");
  r.expectString("hidden_act", "silu", {"silu"},
                 "zbc's MLP is SwiGLU, silu(gate) * up");
  for (StringRef moe : {"num_local_experts", "num_experts",
                        "n_routed_experts", "num_experts_per_tok"})
    r.absent(moe, "mixture-of-experts layers are not supported");
  warnDropout(r, {"attention_dropout"});
  if (c.heads % c.kvHeads != 0)
    r.refuse("num_key_value_heads", o.get("num_key_value_heads"),
             "must divide num_attention_heads");
  if (c.headDim % 2 != 0 || c.headDim > 256)
    r.refuse("head_dim", o.get("head_dim"),
             formatv("the head dimension {0} must be even and at most 256",
                     c.headDim)
                 .str());
  // A sliding window shorter than the sequence masks keys zbc attends to.
  bool window = mistral || (qwen2 && r.boolean("use_sliding_window", false));
  if (const json::Value *w = o.get("sliding_window");
      window && w && w->kind() != json::Value::Null) {
    std::optional<int64_t> size = w->getAsInteger();
    int64_t seq = seqLenFor(opt, c.maxPositions);
    if (!size || *size < seq)
      r.refuse("sliding_window", w,
               formatv("a sliding window shorter than the sequence ({0} "
                       "tokens, --seq-len) is not supported",
                       seq)
                   .str());
  }
  if (const json::Value *s = o.get("rope_scaling");
      s && s->kind() != json::Value::Null) {
    const json::Object *scaling = s->getAsObject();
    if (!scaling) {
      r.refuse("rope_scaling", s, "must be an object or null");
    } else {
      ConfigReader rs(path, *scaling, "rope_scaling.");
      StringRef typeKey = scaling->get("rope_type") ? "rope_type" : "type";
      std::string type = rs.string(typeKey, "default");
      if (type == "llama3") {
        c.llama3.factor = rs.number("factor", 0);
        c.llama3.lowFreqFactor = rs.number("low_freq_factor", 0);
        c.llama3.highFreqFactor = rs.number("high_freq_factor", 0);
        c.llama3.originalMaxPositions =
            rs.positive("original_max_position_embeddings");
        for (StringRef key : {"factor", "low_freq_factor", "high_freq_factor"})
          if (!scaling->get(key))
            rs.refuse(key, nullptr, "is required by llama3 rope scaling");
        if (!(c.llama3.highFreqFactor > c.llama3.lowFreqFactor))
          rs.refuse("high_freq_factor", scaling->get("high_freq_factor"),
                    "must exceed low_freq_factor");
      } else if (type != "default") {
        rs.refuse(typeKey, scaling->get(typeKey),
                  "zbc supports only \"llama3\" rope scaling");
      }
      if (Error e = rs.take())
        return e;
    }
  }
  applyChoices(r, o, opt, "max_position_embeddings", "num_hidden_layers", c);
  return r.take();
}

Error readGPT2(const std::string &path, json::Object &o,
               const HuggingFaceImportOptions &opt, HuggingFaceModel &model) {
  ConfigReader r(path, o);
  dsl::GPT2Config &c = model.gpt2;
  c.hidden = r.positive("n_embd");
  c.layers = r.positive("n_layer");
  c.heads = r.positive("n_head");
  c.vocab = r.positive("vocab_size");
  c.maxPositions = r.positive("n_positions", 1024);
  c.inner = r.positive("n_inner", 4 * c.hidden);
  c.layerNormEps = r.number("layer_norm_epsilon", 1e-5);
  c.initStd = r.number("initializer_range", 0.02);
  r.expectString("activation_function", "gelu_new",
                 {"gelu_new", "gelu_pytorch_tanh"},
                 "zbc's GELU is the tanh approximation (gelu_new)");
  r.expectBool("scale_attn_weights", true, true,
               "attention scores are always scaled by 1/sqrt(head_dim)");
  r.expectBool("scale_attn_by_inverse_layer_idx", false, false,
               "scaling by the layer index is not supported");
  r.expectBool("add_cross_attention", false, false,
               "cross-attention is not supported");
  r.expectBool("tie_word_embeddings", true, true,
               "GPT-2's head is wte; an untied head is not supported");
  warnDropout(r, {"resid_pdrop", "embd_pdrop", "attn_pdrop"});
  if (c.hidden % c.heads != 0 || (c.hidden / c.heads) % 2 != 0)
    r.refuse("n_head", o.get("n_head"),
             formatv("n_embd {0} must split into heads of an even size",
                     c.hidden)
                 .str());
  applyChoices(r, o, opt, "n_positions", "n_layer", c);
  return r.take();
}

} // namespace

Expected<HuggingFaceModel>
zbc::readHuggingFaceConfig(const std::string &path,
                           const HuggingFaceImportOptions &options) {
  // A file that is not a config.json (the weights named instead of their
  // directory) is said to be one, before a parser says why it is not JSON.
  const char *give = "give the model directory or its config.json";
  for (StringRef weights : {".safetensors", ".bin", ".pt", ".pth", ".gguf",
                            ".h5", ".msgpack", ".npy"})
    if (StringRef(path).ends_with(weights))
      return fail(formatv("'{0}' is a weights file, not a model's config: {1}",
                          path, give));
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return fail(formatv("cannot read {0}: {1} ({2})", path,
                        file.getError().message(), give));
  if (!StringRef((*file)->getBuffer()).ltrim().starts_with("{"))
    return fail(formatv("'{0}' is not a config.json (not a JSON object): {1}",
                        path, give));
  Expected<json::Value> parsed = json::parse((*file)->getBuffer());
  if (!parsed)
    return fail(formatv("{0}: not JSON: {1}", path,
                        toString(parsed.takeError())));
  json::Object *object = parsed->getAsObject();
  if (!object)
    return fail(formatv("{0}: not a JSON object", path));
  if (object->get("weight_map"))
    return fail(formatv("'{0}' is a checkpoint's index, not a model's "
                        "config: {1}",
                        path, give));
  HuggingFaceModel model;
  const json::Array *architectures = object->getArray("architectures");
  std::optional<StringRef> first =
      architectures && !architectures->empty()
          ? architectures->front().getAsString()
          : std::nullopt;
  if (!first)
    return fail(formatv("{0}: 'architectures' = {1}: a list naming the "
                        "model class is required",
                        path, show(object->get("architectures"))));
  model.architecture = first->str();
  // The architectures zbc imports: their family and transformers'
  // model_type (which AutoModel needs in config.json; a config written by
  // hand may lack it).
  struct Architecture {
    StringRef name;
    HuggingFaceModel::Family family;
    StringRef modelType;
  };
  static const Architecture known[] = {
      {"LlamaForCausalLM", HuggingFaceModel::Family::Llama, "llama"},
      {"MistralForCausalLM", HuggingFaceModel::Family::Llama, "mistral"},
      {"Qwen2ForCausalLM", HuggingFaceModel::Family::Llama, "qwen2"},
      {"GPT2LMHeadModel", HuggingFaceModel::Family::GPT2, "gpt2"}};
  const Architecture *architecture = llvm::find_if(
      known, [&](const Architecture &a) { return a.name == model.architecture; });
  if (architecture == std::end(known))
    return fail(formatv("{0}: 'architectures' = {1}: zbc imports "
                        "LlamaForCausalLM, MistralForCausalLM, "
                        "Qwen2ForCausalLM and GPT2LMHeadModel",
                        path, show(object->get("architectures"))));
  model.family = architecture->family;
  Error error = model.family == HuggingFaceModel::Family::Llama
                    ? readLlama(path, *object, options, model)
                    : readGPT2(path, *object, options, model);
  if (error)
    return std::move(error);
  if (!object->get("model_type"))
    (*object)["model_type"] = architecture->modelType;
  model.config = std::move(*object);
  return model;
}

void zbc::buildHuggingFaceModel(dsl::Model &m, const HuggingFaceModel &model) {
  std::string json;
  raw_string_ostream os(json);
  os << json::Value(json::Object(model.config));
  m.setHuggingFaceConfig(json);
  if (model.family == HuggingFaceModel::Family::Llama)
    dsl::buildLlama(m, model.llama);
  else
    dsl::buildGPT2(m, model.gpt2);
}
