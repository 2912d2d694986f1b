//===- Model.h - the zbc embedded DSL: models written in C++ -----*- C++ -*-===//
//
// The one header a user includes to write a model as a C++ program. A
// `zbc::dsl::Model` records inputs, labels, parameters and tensor ops in
// program order and produces the same `zb.model` IR as a hand-written .mlir
// file. Shapes are checked as each op is added, by the same rules the dialect
// verifier uses, and every op carries the file:line:col of the DSL call that
// made it, so an error points into the user's source:
//
//   zbc::dsl::Model m("mlp");
//   auto x  = m.input("x", {8, 16});
//   auto y  = m.label("y", {8}, DType::I64);
//   auto w0 = m.param("w0", {16, 32}, Init::normal(0.02));
//   auto h  = m.cut(m.relu(m.linear(x, w0)));   // stage boundary
//   auto w1 = m.param("w1", {32, 4}, Init::normal(0.02));
//   m.loss(m.crossEntropy(m.linear(h, w1), y));
//   return m.emit(argc, argv);                   // prints the IR
//
// Ops are appended in call order. C++ does not specify the order in which one
// call's arguments are evaluated, so `m.add(m.f(a), m.g(b))` may emit g before
// f; write such calls as separate statements when the IR order matters.
//
// The header deliberately includes no MLIR headers, so model programs build in
// seconds; the implementation lives in dialect/lib/DSL/Model.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DSL_MODEL_H
#define ZBC_DSL_MODEL_H

#include <cstdint>
#include <optional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace zbc::dsl {

/// Element types of model tensors.
enum class DType { F16, BF16, F32, F64, I32, I64 };

/// How a linear layer's weight is stored: [in, out] (zbc's, x @ W) or
/// [out, in] (PyTorch's nn.Linear and Hugging Face checkpoints, x @ W^T).
enum class WeightLayout { InOut, OutIn };

/// Rotary position embeddings (zb.rope): Hugging Face Llama's rotate-half
/// convention, inv_freq = theta^(-2i / headDim), and optionally Llama 3's
/// frequency scaling (`rope_scaling` of type "llama3"; factor 0: none).
struct Rope {
  int64_t headDim = 0;
  double theta = 10000.0;
  int64_t maxPositions = 0; // max_position_embeddings: the positions' bound
  struct Llama3Scaling {
    double factor = 0.0, lowFreqFactor = 0.0, highFreqFactor = 0.0;
    int64_t originalMaxPositions = 0;
  } llama3;
};

#if defined(__has_builtin)
#if __has_builtin(__builtin_COLUMN)
#define ZBC_DSL_CALLER_COLUMN __builtin_COLUMN()
#endif
#endif
#ifndef ZBC_DSL_CALLER_COLUMN
#define ZBC_DSL_CALLER_COLUMN 0 // GCC 12 knows file and line only.
#endif

/// The place in the user's source that made a DSL call. Every DSL method
/// takes one as its last argument, defaulted to the caller's position.
struct SourceLoc {
  const char *file;
  unsigned line;
  unsigned column;
  static SourceLoc current(const char *file = __builtin_FILE(),
                           unsigned line = __builtin_LINE(),
                           unsigned column = ZBC_DSL_CALLER_COLUMN) {
    return {file, line, column};
  }
};

/// How a parameter is initialised (see `zb.param`).
struct Init {
  enum class Kind { Zeros, Ones, Normal, Uniform };
  Kind kind;
  double scale; // std for Normal, bound for Uniform; unused otherwise.
  static Init zeros() { return {Kind::Zeros, 0.0}; }
  static Init ones() { return {Kind::Ones, 0.0}; }
  static Init normal(double std) { return {Kind::Normal, std}; }
  static Init uniform(double bound) { return {Kind::Uniform, bound}; }
};

class Model;

/// A tensor value of a model under construction. A default-constructed (or
/// failed) Tensor is null: using it in an op reports an error.
class Tensor {
public:
  Tensor() = default;
  explicit operator bool() const { return value != nullptr; }
  /// The shape, microbatch dimension included; empty for a null tensor.
  std::vector<int64_t> shape() const;
  DType dtype() const;

private:
  friend class Model;
  Tensor(const Model *owner, void *value) : owner(owner), value(value) {}
  const Model *owner = nullptr;
  void *value = nullptr; // mlir::Value, as its opaque pointer
};

/// A model being written: call the methods in program order, end with
/// `loss`, then `emit`/`str`/`write` the IR.
class Model {
public:
  explicit Model(const std::string &name);
  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  // Leaves: per-microbatch data and trainable parameters.
  Tensor input(const std::string &name, const std::vector<int64_t> &shape,
               DType dtype = DType::F32, SourceLoc loc = SourceLoc::current());
  Tensor label(const std::string &name, const std::vector<int64_t> &shape,
               DType dtype = DType::I64, SourceLoc loc = SourceLoc::current());
  Tensor param(const std::string &name, const std::vector<int64_t> &shape,
               Init init, DType dtype = DType::F32,
               SourceLoc loc = SourceLoc::current());

  // Tensor ops; each mirrors the zb op of the same name.
  Tensor linear(Tensor input, Tensor weight, SourceLoc loc = SourceLoc::current());
  /// With WeightLayout::OutIn the weight is [out, in], PyTorch's nn.Linear
  /// layout (zb.linear {weight_out_in}): x @ W^T.
  Tensor linear(Tensor input, Tensor weight, WeightLayout layout,
                SourceLoc loc = SourceLoc::current());
  Tensor matmul(Tensor lhs, Tensor rhs, SourceLoc loc = SourceLoc::current());
  Tensor biasAdd(Tensor input, Tensor bias, SourceLoc loc = SourceLoc::current());
  Tensor add(Tensor lhs, Tensor rhs, SourceLoc loc = SourceLoc::current());
  Tensor relu(Tensor input, SourceLoc loc = SourceLoc::current());
  /// silu(gate) * up, elementwise (zb.swiglu: the gate of a SwiGLU MLP).
  Tensor swiGlu(Tensor gate, Tensor up, SourceLoc loc = SourceLoc::current());
  /// [A, B] -> [B, A] (zb.transpose).
  Tensor transpose(Tensor input, SourceLoc loc = SourceLoc::current());
  Tensor gelu(Tensor input, SourceLoc loc = SourceLoc::current());
  Tensor layerNorm(Tensor input, Tensor gamma, Tensor beta,
                   double epsilon = 1e-5, SourceLoc loc = SourceLoc::current());
  /// weight * (x * rsqrt(mean(x^2) + epsilon)) over the last dimension
  /// (zb.rmsnorm; Llama's default epsilon is 1e-5 or 1e-6: the config says).
  Tensor rmsNorm(Tensor input, Tensor weight, double epsilon = 1e-6,
                 SourceLoc loc = SourceLoc::current());
  /// The heads of `input` [B, S, heads * headDim] rotated by the angles of
  /// `positions` [B, S] (zb.rope: q and k of attention).
  Tensor rope(Tensor input, Tensor positions, const Rope &rope,
              SourceLoc loc = SourceLoc::current());
  Tensor embedding(Tensor indices, Tensor table,
                   SourceLoc loc = SourceLoc::current());
  /// Causal attention over packed q | k | v (zb.causal_attention); with
  /// `documents` [B, S] (packed documents), each position attends within
  /// its own document only (Note [Document masks]).
  Tensor causalAttention(Tensor qkv, int64_t heads,
                         std::optional<Tensor> documents = std::nullopt,
                         SourceLoc loc = SourceLoc::current());
  /// Causal grouped-query attention (zb.attention): q [B, S, heads * d], k
  /// and v [B, S, kvHeads * d], each kv head shared by heads / kvHeads
  /// consecutive query heads; scores scaled by 1 / sqrt(d); with
  /// `documents`, within each position's document.
  Tensor attention(Tensor q, Tensor k, Tensor v, int64_t heads,
                   int64_t kvHeads,
                   std::optional<Tensor> documents = std::nullopt,
                   SourceLoc loc = SourceLoc::current());
  Tensor crossEntropy(Tensor logits, Tensor labels,
                      SourceLoc loc = SourceLoc::current());

  /// Ends the current pipeline stage; `xs` are the activations the next
  /// stage needs. Returns them as the next stage sees them.
  std::vector<Tensor> cut(const std::vector<Tensor> &xs,
                          SourceLoc loc = SourceLoc::current());
  Tensor cut(Tensor x, SourceLoc loc = SourceLoc::current());

  /// Ends the model with the scalar to minimise.
  void loss(Tensor value, SourceLoc loc = SourceLoc::current());
  /// Records the Hugging Face config.json (JSON text) this model is built
  /// from, as the model's `hf_config` attribute.
  void setHuggingFaceConfig(const std::string &json);

  /// Verifies the model and prints its IR to `os`. On error, prints the
  /// diagnostics (with the DSL call sites) to stderr and returns false.
  bool print(std::ostream &os);
  /// The IR as text, or "" after an error (diagnostics go to stderr).
  std::string str();
  /// For a model program's main(): prints the IR to stdout, or to the file
  /// after `-o`. Returns the process exit code (0, or 1 on any error).
  int emit(int argc, char **argv);
  /// Prints the IR to `path` ("" or "-": stdout). Returns 0, or 1 on error.
  int emit(const std::string &path);

  struct Impl;

private:
  /// A Tensor of this model for an opaque mlir::Value (null stays null).
  Tensor wrap(void *value) const {
    return value ? Tensor(this, value) : Tensor();
  }
  std::unique_ptr<Impl> impl;
};

} // namespace zbc::dsl

#endif // ZBC_DSL_MODEL_H
