//===- CpuDevice.cpp - the CPU backend's Device: host memory, Kernels.h --===//
//
// The arena is host memory; every call runs its kernel of Kernels.h before
// it returns. bf16 tensors (Note [bf16]) are stored as their 16 bits; a
// call on them widens each input into fp32 staging, runs the fp32 kernel
// there, and rounds each output back into the arena: the math of the GPU's
// bf16 kernels (bf16 in, fp32 arithmetic, one rounding out), so the CPU is
// their oracle. The staging is allocated once, for the largest call of the
// program.
//
//===----------------------------------------------------------------------===//

#include "../Device.h"
#include "CopyQueue.h"
#include "kernels/Kernels.h"

#include "zbc/contracts/BFloat16.h"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace zbc::rt {
namespace {

/// The fp32 view of one call's tensors: bf16 inputs widened into staging,
/// bf16 outputs computed in staging and rounded back by `finish`.
class Widened {
public:
  Widened(std::vector<float> &staging, int32_t element)
      : staging_(staging), bf16_(element == ZBC_RT_BF16) {}

  const float *in(const void *data, int64_t n) {
    if (!bf16_)
      return static_cast<const float *>(data);
    float *to = take(n);
    const auto *from = static_cast<const uint16_t *>(data);
    for (int64_t i = 0; i < n; ++i)
      to[i] = fromBFloat16(from[i]);
    return to;
  }
  float *out(void *data, int64_t n) {
    if (!bf16_)
      return static_cast<float *>(data);
    float *to = take(n);
    outputs_[outputCount_++] = {to, static_cast<uint16_t *>(data), n};
    return to;
  }
  /// Scratch of `n` floats (a kernel's workspace, widened).
  float *scratch(void *data, int64_t n) {
    return bf16_ ? take(n) : static_cast<float *>(data);
  }
  void finish() {
    for (int i = 0; i < outputCount_; ++i)
      for (int64_t e = 0; e < outputs_[i].n; ++e)
        outputs_[i].to[e] = toBFloat16(outputs_[i].from[e]);
  }

private:
  float *take(int64_t n) {
    float *at = staging_.data() + used_;
    used_ += n;
    return at; // allocate() sized the staging for every call
  }
  struct Output {
    const float *from;
    uint16_t *to;
    int64_t n;
  };
  std::vector<float> &staging_;
  bool bf16_;
  int64_t used_ = 0;
  Output outputs_[3]; // attention's gradient writes three
  int outputCount_ = 0;
};

/// Calls `body` with the labels' int32 or int64 pointer.
template <typename Body> bool withLabels(Indices labels, Body &&body) {
  return labels.element == ZBC_RT_I32
             ? body(static_cast<const int32_t *>(labels.data))
             : body(static_cast<const int64_t *>(labels.data));
}

std::string indexError(const cpu::IndexError &error, const char *what) {
  return fmt::format("{} {} at position {} is outside [0, {})", what,
                     error.value, error.position, error.bound);
}

/// An attention call's document ids as the kernels take them (none when the
/// op has no `documents`).
cpu::DocumentIds documentIds(Indices documents) {
  return {documents.data, documents.element == ZBC_RT_I64};
}

class CpuDevice final : public Device {
public:
  ~CpuDevice() override {
    copies_.drain(); // no copy may outlive the arenas
    std::free(arena_);
    std::free(hostArena_);
  }
  const char *name() const override { return "cpu"; }

  std::string allocate(const zbc_rt_program &p) override {
    void *memory = std::aligned_alloc(
        64, static_cast<size_t>((p.arena_bytes + 63) / 64 * 64));
    if (!memory)
      return fmt::format("cannot allocate the arena of {} bytes",
                         p.arena_bytes);
    std::memset(memory, 0, static_cast<size_t>(p.arena_bytes));
    arena_ = static_cast<char *>(memory);
    program_ = &p;
    // A call widens at most nine tensors (zb.attention's gradient: dout,
    // q, k, v, dq, dk, dv and two score matrices), none larger than the
    // largest bf16 buffer.
    int64_t largest = 0;
    for (int32_t b = 0; b < p.buffer_count; ++b)
      if (p.buffers[b].element == ZBC_RT_BF16)
        largest = std::max(largest, p.buffers[b].bytes / 2);
    staging_.assign(static_cast<size_t>(10 * largest), 0.0f);
    openblas_set_num_threads(1); // one rank per core
    if (p.host_arena_bytes > 0) {
      hostArena_ = static_cast<char *>(std::aligned_alloc(
          64, static_cast<size_t>((p.host_arena_bytes + 63) / 64 * 64)));
      if (!hostArena_)
        return fmt::format("cannot allocate the host arena of {} bytes",
                           p.host_arena_bytes);
      copies_.start(p.op_count);
    }
    return {};
  }
  char *arena() override { return arena_; }
  std::string write(int64_t offset, const void *host, int64_t bytes) override {
    std::memcpy(arena_ + offset, host, static_cast<size_t>(bytes));
    return {};
  }
  std::string read(int64_t offset, void *host, int64_t bytes) override {
    std::memcpy(host, arena_ + offset, static_cast<size_t>(bytes));
    return {};
  }
  char *dataStaging(int32_t buffer) override {
    return arena_ + program_->buffers[buffer].offset;
  }
  std::string dataStaged(int32_t) override { return {}; }
  std::string synchronize() override {
    copies_.drain();
    return {};
  }

  char *hostArena() override { return hostArena_; }
  std::string startCopy(int32_t op, const CopyPiece *pieces,
                        int32_t count) override {
    return copies_.issue(op, pieces, count);
  }
  std::string waitCopy(int32_t op) override { return copies_.wait(op); }
  void copyInterval(int32_t op, double &begin, double &end) override {
    copies_.interval(op, begin, end);
  }

  std::string linear(int32_t element, const void *x, const void *w, void *y,
                     int64_t rows, int64_t in, int64_t out,
                     int64_t weightOutIn) override {
    Widened f(staging_, element);
    cpu::linear(f.in(x, rows * in), f.in(w, in * out), f.out(y, rows * out),
                rows, in, out, weightOutIn != 0);
    f.finish();
    return {};
  }
  std::string matmul(int32_t element, const void *a, const void *b, void *c,
                     int64_t batch, int64_t m, int64_t k, int64_t n) override {
    Widened f(staging_, element);
    cpu::matmul(f.in(a, batch * m * k), f.in(b, batch * k * n),
                f.out(c, batch * m * n), batch, m, k, n);
    f.finish();
    return {};
  }
  std::string biasAdd(int32_t element, const void *x, const void *bias,
                      void *y, int64_t rows, int64_t n) override {
    Widened f(staging_, element);
    cpu::biasAdd(f.in(x, rows * n), f.in(bias, n), f.out(y, rows * n), rows,
                 n);
    f.finish();
    return {};
  }
  std::string add(int32_t element, const void *a, const void *b, void *y,
                  int64_t n) override {
    Widened f(staging_, element);
    cpu::add(f.in(a, n), f.in(b, n), f.out(y, n), n);
    f.finish();
    return {};
  }
  std::string relu(int32_t element, const void *x, void *y,
                   int64_t n) override {
    Widened f(staging_, element);
    cpu::relu(f.in(x, n), f.out(y, n), n);
    f.finish();
    return {};
  }
  std::string transpose(int32_t element, const void *x, void *y, int64_t rows,
                        int64_t cols) override {
    Widened f(staging_, element);
    cpu::transpose(f.in(x, rows * cols), f.out(y, rows * cols), rows, cols);
    f.finish();
    return {};
  }
  std::string gelu(int32_t element, const void *x, void *y,
                   int64_t n) override {
    Widened f(staging_, element);
    cpu::gelu(f.in(x, n), f.out(y, n), n);
    f.finish();
    return {};
  }
  std::string layerNorm(int32_t element, const void *x, const void *gamma,
                        const void *beta, void *y, int64_t rows, int64_t n,
                        float epsilon) override {
    Widened f(staging_, element);
    cpu::layerNorm(f.in(x, rows * n), f.in(gamma, n), f.in(beta, n),
                   f.out(y, rows * n), rows, n, epsilon);
    f.finish();
    return {};
  }
  std::string swiGlu(int32_t element, const void *gate, const void *up, void *y,
                     int64_t n) override {
    Widened f(staging_, element);
    cpu::swiGlu(f.in(gate, n), f.in(up, n), f.out(y, n), n);
    f.finish();
    return {};
  }
  std::string swiGluGradGate(int32_t element, const void *dy, const void *gate,
                             const void *up, void *dgate, int64_t n) override {
    Widened f(staging_, element);
    cpu::swiGluGradGate(f.in(dy, n), f.in(gate, n), f.in(up, n),
                        f.out(dgate, n), n);
    f.finish();
    return {};
  }
  std::string swiGluGradUp(int32_t element, const void *dy, const void *gate,
                           void *dup, int64_t n) override {
    Widened f(staging_, element);
    cpu::swiGluGradUp(f.in(dy, n), f.in(gate, n), f.out(dup, n), n);
    f.finish();
    return {};
  }
  std::string rmsNorm(int32_t element, const void *x, const void *weight,
                      void *y, int64_t rows, int64_t n,
                      float epsilon) override {
    Widened f(staging_, element);
    cpu::rmsNorm(f.in(x, rows * n), f.in(weight, n), f.out(y, rows * n), rows,
                 n, epsilon);
    f.finish();
    return {};
  }
  std::string rope(int32_t element, const void *x, Indices positions, void *y,
                   int64_t rows, int64_t width, int64_t headDim, float theta,
                   float llama3Factor, float llama3Low, float llama3High,
                   float llama3Original) override {
    return rotate(element, x, positions, y, rows, width, headDim,
                  {theta, llama3Factor, llama3Low, llama3High, llama3Original},
                  /*inverse=*/false);
  }
  std::string ropeGrad(int32_t element, const void *dy, Indices positions,
                       void *dx, int64_t rows, int64_t width, int64_t headDim,
                       float theta, float llama3Factor, float llama3Low,
                       float llama3High, float llama3Original) override {
    return rotate(element, dy, positions, dx, rows, width, headDim,
                  {theta, llama3Factor, llama3Low, llama3High, llama3Original},
                  /*inverse=*/true);
  }
  std::string embedding(int32_t element, Indices indices, const void *table,
                        void *y, int64_t count, int64_t vocab,
                        int64_t h) override {
    Widened f(staging_, element);
    const float *t = f.in(table, vocab * h);
    float *out = f.out(y, count * h);
    cpu::IndexError error;
    bool ok = indices.element == ZBC_RT_I32
                  ? cpu::embedding(static_cast<const int32_t *>(indices.data),
                                   t, out, count, vocab, h, &error)
                  : cpu::embedding(static_cast<const int64_t *>(indices.data),
                                   t, out, count, vocab, h, &error);
    if (!ok)
      return indexError(error, "index");
    f.finish();
    return {};
  }
  std::string causalAttention(int32_t element, const void *qkv,
                              Indices documents, void *out,
                              void *workspace, int64_t workspaceBytes,
                              int64_t batch, int64_t seq, int64_t hidden,
                              int64_t heads) override {
    (void)workspaceBytes; // the plan sized it for Kernels.h's need
    Widened f(staging_, element);
    const float *q = f.in(qkv, batch * seq * 3 * hidden);
    float *o = f.out(out, batch * seq * hidden);
    cpu::causalAttention(
        q, o, f.scratch(workspace, cpu::causalAttentionWorkspace(seq)), batch,
        seq, hidden, heads, documentIds(documents));
    f.finish();
    return {};
  }
  std::string attention(int32_t element, const void *q, const void *k,
                        const void *v, Indices documents, void *out,
                        void *workspace,
                        int64_t workspaceBytes, int64_t batch, int64_t seq,
                        int64_t heads, int64_t kvHeads,
                        int64_t headDim) override {
    (void)workspaceBytes; // the plan sized it for at least Kernels.h's need
    Widened f(staging_, element);
    const int64_t qn = batch * seq * heads * headDim,
                  kvn = batch * seq * kvHeads * headDim;
    const float *qf = f.in(q, qn), *kf = f.in(k, kvn), *vf = f.in(v, kvn);
    float *o = f.out(out, qn);
    cpu::attention(qf, kf, vf, o,
                   f.scratch(workspace, cpu::causalAttentionWorkspace(seq)),
                   batch, seq, heads, kvHeads, headDim,
                   documentIds(documents));
    f.finish();
    return {};
  }
  std::string crossEntropy(int32_t element, const void *logits, Indices labels,
                           void *loss, int64_t rows, int64_t classes,
                           int64_t ignoreIndex) override {
    Widened f(staging_, element);
    const float *l = f.in(logits, rows * classes);
    float *out = f.out(loss, 1);
    cpu::IndexError error;
    bool ok = withLabels(labels, [&](const auto *ids) {
      return cpu::crossEntropy(l, ids, out, rows, classes, ignoreIndex,
                               &error);
    });
    if (!ok)
      return indexError(error, "label");
    f.finish();
    return {};
  }
  std::string fill(int32_t element, void *y, int64_t n, float value) override {
    Widened f(staging_, element);
    cpu::fill(f.out(y, n), n, value);
    f.finish();
    return {};
  }
  std::string linearGradInput(int32_t element, const void *dy, const void *w,
                              void *dx, int64_t rows, int64_t in, int64_t out,
                              int64_t weightOutIn) override {
    Widened f(staging_, element);
    cpu::linearGradInput(f.in(dy, rows * out), f.in(w, in * out),
                         f.out(dx, rows * in), rows, in, out,
                         weightOutIn != 0);
    f.finish();
    return {};
  }
  std::string linearGradWeight(int32_t element, const void *x, const void *dy,
                               void *dw, int64_t rows, int64_t in, int64_t out,
                               int64_t weightOutIn) override {
    Widened f(staging_, element);
    cpu::linearGradWeight(f.in(x, rows * in), f.in(dy, rows * out),
                          f.out(dw, in * out), rows, in, out,
                          weightOutIn != 0);
    f.finish();
    return {};
  }
  std::string matmulGradLhs(int32_t element, const void *dc, const void *b,
                            void *da, int64_t batch, int64_t m, int64_t k,
                            int64_t n) override {
    Widened f(staging_, element);
    cpu::matmulGradLhs(f.in(dc, batch * m * n), f.in(b, batch * k * n),
                       f.out(da, batch * m * k), batch, m, k, n);
    f.finish();
    return {};
  }
  std::string matmulGradRhs(int32_t element, const void *a, const void *dc,
                            void *db, int64_t batch, int64_t m, int64_t k,
                            int64_t n) override {
    Widened f(staging_, element);
    cpu::matmulGradRhs(f.in(a, batch * m * k), f.in(dc, batch * m * n),
                       f.out(db, batch * k * n), batch, m, k, n);
    f.finish();
    return {};
  }
  std::string biasGrad(int32_t element, const void *dy, void *db, int64_t rows,
                       int64_t n) override {
    Widened f(staging_, element);
    cpu::biasGrad(f.in(dy, rows * n), f.out(db, n), rows, n);
    f.finish();
    return {};
  }
  std::string reluGrad(int32_t element, const void *dy, const void *x,
                       void *dx, int64_t n) override {
    Widened f(staging_, element);
    cpu::reluGrad(f.in(dy, n), f.in(x, n), f.out(dx, n), n);
    f.finish();
    return {};
  }
  std::string geluGrad(int32_t element, const void *dy, const void *x,
                       void *dx, int64_t n) override {
    Widened f(staging_, element);
    cpu::geluGrad(f.in(dy, n), f.in(x, n), f.out(dx, n), n);
    f.finish();
    return {};
  }
  std::string layerNormGradInput(int32_t element, const void *dy,
                                 const void *x, const void *gamma, void *dx,
                                 int64_t rows, int64_t n,
                                 float epsilon) override {
    Widened f(staging_, element);
    cpu::layerNormGradInput(f.in(dy, rows * n), f.in(x, rows * n),
                            f.in(gamma, n), f.out(dx, rows * n), rows, n,
                            epsilon);
    f.finish();
    return {};
  }
  std::string layerNormGradGamma(int32_t element, const void *dy,
                                 const void *x, void *dgamma, int64_t rows,
                                 int64_t n, float epsilon) override {
    Widened f(staging_, element);
    cpu::layerNormGradGamma(f.in(dy, rows * n), f.in(x, rows * n),
                            f.out(dgamma, n), rows, n, epsilon);
    f.finish();
    return {};
  }
  std::string rmsNormGradInput(int32_t element, const void *dy, const void *x,
                               const void *weight, void *dx, int64_t rows,
                               int64_t n, float epsilon) override {
    Widened f(staging_, element);
    cpu::rmsNormGradInput(f.in(dy, rows * n), f.in(x, rows * n),
                          f.in(weight, n), f.out(dx, rows * n), rows, n,
                          epsilon);
    f.finish();
    return {};
  }
  std::string rmsNormGradWeight(int32_t element, const void *dy,
                                const void *x, void *dweight, int64_t rows,
                                int64_t n, float epsilon) override {
    Widened f(staging_, element);
    cpu::rmsNormGradWeight(f.in(dy, rows * n), f.in(x, rows * n),
                           f.out(dweight, n), rows, n, epsilon);
    f.finish();
    return {};
  }
  std::string embeddingGrad(int32_t element, Indices indices, const void *dy,
                            void *dtable, int64_t count, int64_t vocab,
                            int64_t h) override {
    Widened f(staging_, element);
    const float *d = f.in(dy, count * h);
    float *out = f.out(dtable, vocab * h);
    cpu::IndexError error;
    bool ok = indices.element == ZBC_RT_I32
                  ? cpu::embeddingGrad(static_cast<const int32_t *>(indices.data),
                                       d, out, count, vocab, h, &error)
                  : cpu::embeddingGrad(static_cast<const int64_t *>(indices.data),
                                       d, out, count, vocab, h, &error);
    if (!ok)
      return indexError(error, "index");
    f.finish();
    return {};
  }
  std::string causalAttentionGrad(int32_t element, const void *dout,
                                  const void *qkv, Indices documents,
                                  void *dqkv, void *workspace,
                                  int64_t workspaceBytes, int64_t batch,
                                  int64_t seq, int64_t hidden,
                                  int64_t heads) override {
    (void)workspaceBytes;
    Widened f(staging_, element);
    const float *d = f.in(dout, batch * seq * hidden);
    const float *q = f.in(qkv, batch * seq * 3 * hidden);
    float *dq = f.out(dqkv, batch * seq * 3 * hidden);
    cpu::causalAttentionGrad(
        d, q, dq, f.scratch(workspace, cpu::causalAttentionGradWorkspace(seq)),
        batch, seq, hidden, heads, documentIds(documents));
    f.finish();
    return {};
  }
  std::string attentionGrad(int32_t element, const void *dout, const void *q,
                            const void *k, const void *v, Indices documents,
                            void *dq, void *dk,
                            void *dv, void *workspace, int64_t workspaceBytes,
                            int64_t batch, int64_t seq, int64_t heads,
                            int64_t kvHeads, int64_t headDim) override {
    (void)workspaceBytes;
    Widened f(staging_, element);
    const int64_t qn = batch * seq * heads * headDim,
                  kvn = batch * seq * kvHeads * headDim;
    const float *dof = f.in(dout, qn), *qf = f.in(q, qn), *kf = f.in(k, kvn),
                *vf = f.in(v, kvn);
    float *dqf = f.out(dq, qn), *dkf = f.out(dk, kvn), *dvf = f.out(dv, kvn);
    cpu::attentionGrad(
        dof, qf, kf, vf, dqf, dkf, dvf,
        f.scratch(workspace, cpu::causalAttentionGradWorkspace(seq)), batch,
        seq, heads, kvHeads, headDim, documentIds(documents));
    f.finish();
    return {};
  }
  std::string crossEntropyGrad(int32_t element, const void *logits,
                               Indices labels, const void *dloss,
                               void *dlogits, int64_t rows, int64_t classes,
                               int64_t ignoreIndex) override {
    Widened f(staging_, element);
    const float *l = f.in(logits, rows * classes);
    const float *d = f.in(dloss, 1);
    float *out = f.out(dlogits, rows * classes);
    cpu::IndexError error;
    bool ok = withLabels(labels, [&](const auto *ids) {
      return cpu::crossEntropyGrad(l, ids, d, out, rows, classes, ignoreIndex,
                                   &error);
    });
    if (!ok)
      return indexError(error, "label");
    f.finish();
    return {};
  }

  // The output layer over a vocabulary shard: the planes [m, l, t, M] of
  // the statistics (KernelTable.h) are the kernels' separate vectors.
  std::string vocabStats(int32_t element, const void *logits, Indices labels,
                         void *stats, int64_t rows, int64_t columns,
                         int64_t first, int64_t vocab,
                         int64_t ignoreIndex) override {
    Widened f(staging_, element);
    const float *l = f.in(logits, rows * columns);
    float *planes = f.out(stats, 4 * rows);
    cpu::IndexError error;
    bool ok = withLabels(labels, [&](const auto *ids) {
      return cpu::vocabShardStats(l, ids, planes, planes + rows,
                                  planes + 2 * rows, rows, columns, first,
                                  vocab, ignoreIndex, &error);
    });
    if (!ok)
      return indexError(error, "label");
    std::copy(planes, planes + rows, planes + 3 * rows);
    f.finish();
    return {};
  }
  std::string vocabLoss(int32_t element, const void *stats, Indices labels,
                        void *loss, int64_t rows, int64_t vocab,
                        int64_t ignoreIndex) override {
    Widened f(staging_, element);
    const float *planes = f.in(stats, 4 * rows);
    float *out = f.out(loss, 1);
    cpu::IndexError error;
    bool ok = withLabels(labels, [&](const auto *ids) {
      return cpu::vocabShardLoss(planes + 3 * rows, planes + rows,
                                 planes + 2 * rows, ids, out, rows, vocab,
                                 ignoreIndex, &error);
    });
    if (!ok)
      return indexError(error, "label");
    f.finish();
    return {};
  }
  std::string vocabGrad(int32_t element, const void *logits, Indices labels,
                        const void *stats, const void *dloss, void *dlogits,
                        int64_t rows, int64_t columns, int64_t first,
                        int64_t vocab, int64_t ignoreIndex) override {
    Widened f(staging_, element);
    const float *l = f.in(logits, rows * columns);
    const float *planes = f.in(stats, 4 * rows);
    const float *d = f.in(dloss, 1);
    float *out = f.out(dlogits, rows * columns);
    cpu::IndexError error;
    bool ok = withLabels(labels, [&](const auto *ids) {
      return cpu::vocabShardGrad(l, ids, planes + 3 * rows, planes + rows, d,
                                 out, rows, columns, first, vocab, ignoreIndex,
                                 &error);
    });
    if (!ok)
      return indexError(error, "label");
    f.finish();
    return {};
  }

  std::string accumulate(float *acc, int32_t element, const void *x,
                         int64_t n) override {
    Widened f(staging_, element);
    cpu::accumulate(acc, f.in(x, n), n);
    return {};
  }
  std::string addLoss(int32_t element, const void *value, float weight,
                      float *accumulator) override {
    float v = weight * (element == ZBC_RT_BF16
                            ? fromBFloat16(*static_cast<const uint16_t *>(value))
                            : *static_cast<const float *>(value));
    stepLoss_ += v;
    *accumulator += v;
    return {};
  }
  double takeStepLoss() override {
    double loss = stepLoss_;
    stepLoss_ = 0;
    return loss;
  }

  std::string sgdMomentum(float *weights, const float *grad, float *momentum,
                          int64_t n, const SgdConfig &config,
                          float gradScale, void *copy,
                          int32_t copyElement) override {
    cpu::sgdMomentum(weights, grad, momentum, n, config, gradScale);
    return copy ? convertFromF32(weights, copy, copyElement, n) : "";
  }
  std::string adamw(float *weights, const float *grad, float *m, float *v,
                    int64_t n, const AdamWConfig &config, int64_t step,
                    float gradScale, void *copy, int32_t copyElement) override {
    cpu::adamw(weights, grad, m, v, n, config, step, gradScale);
    return copy ? convertFromF32(weights, copy, copyElement, n) : "";
  }
  std::string convertFromF32(const float *x, void *y, int32_t element,
                             int64_t n) override {
    if (element == ZBC_RT_F32) {
      std::memcpy(y, x, static_cast<size_t>(n) * 4);
      return {};
    }
    auto *to = static_cast<uint16_t *>(y);
    for (int64_t i = 0; i < n; ++i)
      to[i] = toBFloat16(x[i]);
    return {};
  }
  std::string zero(void *data, int64_t bytes) override {
    std::memset(data, 0, static_cast<size_t>(bytes));
    return {};
  }
  std::string copy(void *to, const void *from, int64_t bytes) override {
    std::memcpy(to, from, static_cast<size_t>(bytes));
    return {};
  }
  std::string addSumOfSquares(const float *grad, int64_t n) override {
    for (int64_t e = 0; e < n; ++e)
      sumOfSquares_ += double(grad[e]) * double(grad[e]);
    return {};
  }
  double takeSumOfSquares() override {
    double sum = sumOfSquares_;
    sumOfSquares_ = 0;
    return sum;
  }

private:
  /// zb.rope and zb.rope_grad: the same rotation, by minus the angle for
  /// the gradient.
  std::string rotate(int32_t element, const void *x, Indices positions,
                     void *y, int64_t rows, int64_t width, int64_t headDim,
                     const math::RopeScaling &scaling, bool inverse) {
    Widened f(staging_, element);
    const float *in = f.in(x, rows * width);
    float *out = f.out(y, rows * width);
    if (positions.element == ZBC_RT_I32)
      cpu::rope(in, static_cast<const int32_t *>(positions.data), out, rows,
                width, headDim, scaling, inverse);
    else
      cpu::rope(in, static_cast<const int64_t *>(positions.data), out, rows,
                width, headDim, scaling, inverse);
    f.finish();
    return {};
  }

  char *arena_ = nullptr;
  char *hostArena_ = nullptr;
  cpu::CopyQueue copies_;
  const zbc_rt_program *program_ = nullptr;
  std::vector<float> staging_;
  double stepLoss_ = 0, sumOfSquares_ = 0;
};

} // namespace

Device *createCpuDevice() { return new CpuDevice(); }

} // namespace zbc::rt
