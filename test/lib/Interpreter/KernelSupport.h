//===- KernelSupport.h - helpers shared by the kernels ----------*- C++ -*-===//
//
// Precision dispatch, shape arithmetic and the pieces of math that a forward
// kernel and its backward kernel both need (LayerNorm row statistics,
// attention probabilities, log-sum-exp, index checks). Sharing them is what
// makes a backward kernel recompute *exactly* what its forward computed, as
// the backward op descriptions require ("recomputed from x").
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_LIB_INTERPRETER_KERNELSUPPORT_H
#define ZBC_LIB_INTERPRETER_KERNELSUPPORT_H

#include "zbc/Interpreter/Kernels.h"
#include "zbc/Interpreter/Tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace zbc::interp::detail {

/// Calls `fn(T{})` with T the C++ type of `precision`: the whole kernel body
/// is then instantiated for float and for double.
template <typename Fn>
Tensor byPrecision(Precision precision, Fn &&fn) {
  if (precision == Precision::F32)
    return fn(float{});
  return fn(double{});
}

/// Product of all but the last `dropped` dimensions (1 for too short shapes).
inline int64_t leadingSize(const Shape &shape, size_t dropped = 1) {
  int64_t n = 1;
  for (size_t d = 0; d + dropped < shape.size(); ++d)
    n *= shape[d];
  return n;
}

inline int64_t lastDim(const Shape &shape) {
  return shape.empty() ? 1 : shape.back();
}

/// The constants of the tanh form of GELU, 0.5 x (1 + tanh(c (x + a x^3))):
/// c = sqrt(2 / pi) and a = 0.044715, rounded once to T.
template <typename T>
constexpr T kGeluScale = static_cast<T>(0.7978845608028654);
template <typename T> constexpr T kGeluCubic = static_cast<T>(0.044715);

/// Mean and 1/sqrt(biased variance + epsilon) of one LayerNorm row.
template <typename T>
void rowStats(const T *row, int64_t n, T epsilon, T &mean, T &rstd) {
  T sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += row[i];
  mean = sum / static_cast<T>(n);
  T squares = 0;
  for (int64_t i = 0; i < n; ++i)
    squares += (row[i] - mean) * (row[i] - mean);
  T variance = squares / static_cast<T>(n);
  rstd = static_cast<T>(1) / std::sqrt(variance + epsilon);
}

/// The oracle's own inverse frequency of rotary pair i (the runtime's is
/// KernelMath.h's, Note [RoPE frequencies]; this copy is written from
/// Hugging Face's definition, so that the two check each other):
/// theta^(-2i/d), and Llama 3's piecewise scaling of the wavelengths.
inline double ropeInverseFrequency(int64_t i, const kernels::RopeParams &p) {
  double inv = std::pow(p.theta, -2.0 * static_cast<double>(i) /
                                     static_cast<double>(p.headDim));
  if (p.llama3Factor <= 0)
    return inv;
  const double pi = 3.14159265358979323846;
  double wavelength = 2 * pi / inv;
  double lowWavelength = p.llama3Original / p.llama3Low;
  double highWavelength = p.llama3Original / p.llama3High;
  double scaled = wavelength > lowWavelength ? inv / p.llama3Factor : inv;
  bool medium = !(wavelength < highWavelength) && !(wavelength > lowWavelength);
  if (!medium)
    return scaled;
  double smooth = (p.llama3Original / wavelength - p.llama3Low) /
                  (p.llama3High - p.llama3Low);
  return (1 - smooth) * scaled / p.llama3Factor + smooth * scaled;
}

/// The logistic function 1 / (1 + e^-x).
template <typename T> T sigmoid(T x) {
  return static_cast<T>(1) / (static_cast<T>(1) + std::exp(-x));
}

/// 1/sqrt(mean of squares + epsilon) of one RMSNorm row.
template <typename T> T rmsRstd(const T *row, int64_t n, T epsilon) {
  T squares = 0;
  for (int64_t i = 0; i < n; ++i)
    squares += row[i] * row[i];
  return static_cast<T>(1) / std::sqrt(squares / static_cast<T>(n) + epsilon);
}

/// log(sum(exp(row))), shifted by the row's maximum so that no exp overflows.
template <typename T> T logSumExp(const T *row, int64_t n) {
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i)
    max = std::max(max, row[i]);
  T sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(row[i] - max);
  return max + std::log(sum);
}

/// zb.causal_attention's packed qkv [B, S, 3H] split into q, k and v [B, S,
/// H] (part 0, 1, 2 of each row), and back: the packed op is zb.attention
/// with kv_heads = heads on the parts.
inline Tensor qkvPart(const Tensor &qkv, int64_t part) {
  const int64_t H = qkv.shape()[2] / 3, rows = qkv.numElements() / (3 * H);
  Tensor t = Tensor::zeros({qkv.shape()[0], qkv.shape()[1], H},
                           qkv.precision());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < H; ++c)
      t.set(r * H + c, qkv.get(r * 3 * H + part * H + c));
  return t;
}
inline Tensor packQkv(const Tensor &q, const Tensor &k, const Tensor &v) {
  const int64_t H = q.shape()[2], rows = q.numElements() / H;
  Tensor qkv = Tensor::zeros({q.shape()[0], q.shape()[1], 3 * H},
                             q.precision());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < H; ++c) {
      qkv.set(r * 3 * H + c, q.get(r * H + c));
      qkv.set(r * 3 * H + H + c, k.get(r * H + c));
      qkv.set(r * 3 * H + 2 * H + c, v.get(r * H + c));
    }
  return qkv;
}

/// zb.attention's layout: q [B, S, heads * d], k and v [B, S, kvHeads * d];
/// query head h reads kv head h / (heads / kvHeads).
struct GroupedAttentionDims {
  int64_t batch, seq, heads, kvHeads, headDim;
  GroupedAttentionDims(const Shape &q, int64_t heads, int64_t kvHeads)
      : batch(q[0]), seq(q[1]), heads(heads), kvHeads(kvHeads),
        headDim(q[2] / heads) {}
  /// Offset of feature t of query head h at (b, s) in q (and the output).
  int64_t q(int64_t b, int64_t s, int64_t h, int64_t t) const {
    return ((b * seq + s) * heads + h) * headDim + t;
  }
  /// Offset of feature t of the kv head query head h reads, in k and v.
  int64_t kv(int64_t b, int64_t s, int64_t h, int64_t t) const {
    return ((b * seq + s) * kvHeads + h / (heads / kvHeads)) * headDim + t;
  }
};

/// Softmax in place over row[0..keys), the row maximum subtracted first.
template <typename T> void softmaxRow(T *row, int64_t keys) {
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < keys; ++j)
    max = std::max(max, row[j]);
  T sum = 0;
  for (int64_t j = 0; j < keys; ++j) {
    row[j] = std::exp(row[j] - max);
    sum += row[j];
  }
  for (int64_t j = 0; j < keys; ++j)
    row[j] /= sum;
}

/// The first key query i of row b attends to (Note [Document masks]): 0
/// without document ids [B, S], else the first position of the run of ids
/// equal to i's that ends at i.
inline int64_t firstKey(const Tensor *documents, int64_t b, int64_t S,
                        int64_t i) {
  if (!documents)
    return 0;
  int64_t j = i;
  while (j > 0 && documents->getInt(b * S + j - 1) == documents->getInt(b * S + i))
    --j;
  return j;
}

/// The causal attention probabilities of batch b, query head h (with its
/// group's kv head): P[i * S + j] for key position firstKey(i) <= j <= i,
/// 0 elsewhere. Scores are q.k / sqrt(d); each row's softmax subtracts the
/// row maximum first.
template <typename T>
std::vector<T> groupedAttentionProbs(const T *q, const T *k,
                                     const GroupedAttentionDims &dims,
                                     int64_t b, int64_t h,
                                     const Tensor *documents) {
  int64_t S = dims.seq;
  T scale = static_cast<T>(1) / std::sqrt(static_cast<T>(dims.headDim));
  std::vector<T> probs(S * S, 0);
  for (int64_t i = 0; i < S; ++i) {
    int64_t first = firstKey(documents, b, S, i);
    T *row = &probs[i * S + first];
    for (int64_t j = first; j <= i; ++j) {
      T score = 0;
      for (int64_t t = 0; t < dims.headDim; ++t)
        score += q[dims.q(b, i, h, t)] * k[dims.kv(b, j, h, t)];
      row[j - first] = score * scale;
    }
    softmaxRow(row, i + 1 - first);
  }
  return probs;
}

/// The first position of `indices` whose value is outside [0, bound), with
/// a message naming it; false if all are inside.
inline bool findOutOfRange(const Tensor &indices, int64_t bound,
                           const char *what, std::string &error) {
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    int64_t value = indices.getInt(i);
    if (value >= 0 && value < bound)
      continue;
    error = std::string(what) + " " + std::to_string(value) + " at " +
            formatIndex(indices.shape(), i) + " is outside [0, " +
            std::to_string(bound) + ")";
    return true;
  }
  return false;
}

/// findOutOfRange for class labels, where `ignoreIndex` is also allowed;
/// `counted` is the number of labels that are not it.
inline bool findBadLabel(const Tensor &labels, int64_t classes,
                         int64_t ignoreIndex, int64_t &counted,
                         std::string &error) {
  counted = 0;
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    int64_t value = labels.getInt(i);
    if (value == ignoreIndex)
      continue;
    if (value < 0 || value >= classes) {
      error = "label " + std::to_string(value) + " at " +
              formatIndex(labels.shape(), i) + " is outside [0, " +
              std::to_string(classes) + ") and is not the ignore_index " +
              std::to_string(ignoreIndex);
      return true;
    }
    ++counted;
  }
  return false;
}

} // namespace zbc::interp::detail

#endif // ZBC_LIB_INTERPRETER_KERNELSUPPORT_H
