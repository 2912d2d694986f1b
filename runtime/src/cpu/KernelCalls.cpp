//===- KernelCalls.cpp - the C ABI's kernel calls on the CPU backend ------===//
//
// Each zbc_rt_<op> resolves its buffer ids (frame slots included), checks
// that each buffer has the element type and size the op's shape says (a
// disagreement between the generated code and its tables is a compiler
// bug, reported rather than run), tells the ledger what the kernel reads
// and writes (Note [Ledger]), and runs the kernel of Kernels.h.
//
//===----------------------------------------------------------------------===//

#include "../Rank.h"
#include "kernels/Kernels.h"


#include <fmt/format.h>

#include <cstring>

using namespace zbc::rt;
using zbc::rt::cpu::IndexError;

namespace {

/// The buffers of one kernel call, checked and recorded.
class Call {
public:
  Call(zbc_rt_rank *rank, const char *kernel) : rank_(rank), kernel_(kernel) {}

  /// A float buffer of `elements` the kernel reads.
  const float *in(int32_t id, int64_t elements) {
    return static_cast<const float *>(access(id, elements, ZBC_RT_F32, false));
  }
  /// A float buffer of `elements` the kernel writes.
  float *out(int32_t id, int64_t elements) {
    return static_cast<float *>(access(id, elements, ZBC_RT_F32, true));
  }
  /// An index buffer (int32 or int64) the kernel reads; its element type.
  const void *indices(int32_t id, int64_t elements, int32_t &element) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return fail();
    element = rank_->program->buffers[b].element;
    if (element != ZBC_RT_I32 && element != ZBC_RT_I64)
      return mismatch(b, "integer indices");
    return access(id, elements, element, false);
  }
  /// The workspace the kernel needs, `elements` floats at least.
  float *workspace(int32_t id, int64_t elements) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return static_cast<float *>(fail());
    const zbc_rt_buffer &buffer = rank_->program->buffers[b];
    if (buffer.bytes < elements * 4)
      return static_cast<float *>(mismatch(b, "a large enough workspace"));
    record(rank_->ledger.write(b, Ledger::Writer::Kernel));
    record(rank_->ledger.read(b));
    return reinterpret_cast<float *>(rank_->arena + buffer.offset);
  }

  bool ok() const { return ok_; }
  /// The checks are done; the kernel runs (its time is the profile's).
  void kernelBegins() { kernelBegin_ = Profile::now(); }
  /// After the kernel ran.
  zbc_rt_status done() {
    stopClock();
    rank_->ledger.tick();
    return ok_ ? ZBC_RT_OK : ZBC_RT_ERROR;
  }
  zbc_rt_status indexError(const IndexError &error, const char *what) {
    stopClock();
    rank_->ledger.tick();
    return zbc::rt::fail(
        rank_, fmt::format("{}: {} {} at position {} is outside [0, {})",
                           kernel_, what, error.value, error.position,
                           error.bound));
  }

private:
  void *access(int32_t id, int64_t elements, int32_t element, bool write) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return fail();
    const zbc_rt_buffer &buffer = rank_->program->buffers[b];
    int64_t width = element == ZBC_RT_I64 ? 8 : 4;
    if (buffer.element != element || buffer.bytes != elements * width)
      return mismatch(b, fmt::format("{} elements of type {}", elements,
                                     element)
                             .c_str());
    record(write ? rank_->ledger.write(b, Ledger::Writer::Kernel)
                 : rank_->ledger.read(b));
    return rank_->arena + buffer.offset;
  }
  void record(const std::string &error) {
    if (!error.empty() && ok_) {
      ok_ = false;
      zbc::rt::fail(rank_, fmt::format("{}: {}", kernel_, error));
    }
  }
  void *mismatch(int32_t b, const std::string &expected) {
    const zbc_rt_buffer &buffer = rank_->program->buffers[b];
    record(fmt::format("buffer {} ({} bytes, element type {}) is not {} (the "
                       "generated code disagrees with its tables)",
                       buffer.name, buffer.bytes, buffer.element, expected));
    return nullptr;
  }
  void *fail() {
    ok_ = false;
    return nullptr;
  }

  void stopClock() {
    if (kernelBegin_ > 0)
      rank_->profile.kernelSeconds += Profile::now() - kernelBegin_;
    kernelBegin_ = 0;
  }

  zbc_rt_rank *rank_;
  const char *kernel_;
  bool ok_ = true;
  double kernelBegin_ = 0;
};

} // namespace

#define ZBC_RT_KERNEL(name) Call call(rank, #name)
#define ZBC_RT_RETURN_IF_BAD()                                                 \
  if (!call.ok())                                                              \
    return call.done();                                                        \
  call.kernelBegins()

extern "C" {

zbc_rt_status zbc_rt_load(zbc_rt_rank *rank, int32_t dst, int32_t dataIndex) {
  const zbc_rt_program &p = *rank->program;
  if (dataIndex < 0 || dataIndex >= p.data_count)
    return fail(rank, fmt::format("zbc_rt_load: no data tensor {}", dataIndex));
  int32_t b = resolve(rank, dst);
  if (b < 0)
    return ZBC_RT_ERROR;
  const zbc_rt_buffer &buffer = p.buffers[b];
  if (std::string error = rank->ledger.write(b, Ledger::Writer::Data);
      !error.empty())
    return fail(rank, "zbc_rt_load: " + error);
  rank->data.fill(dataIndex, batchPosition(rank, p.ops[rank->op].microbatch),
                  rank->arena + buffer.offset, buffer.bytes);
  rank->ledger.tick();
  return ZBC_RT_OK;
}

zbc_rt_status zbc_rt_accumulate(zbc_rt_rank *rank, int32_t grad, int32_t value) {
  ZBC_RT_KERNEL(zbc_rt_accumulate);
  int32_t g = resolve(rank, grad);
  if (g < 0)
    return ZBC_RT_ERROR;
  int64_t n = rank->program->buffers[g].bytes / 4;
  const float *v = call.in(value, n);
  float *acc = call.out(grad, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::accumulate(acc, v, n);
  return call.done();
}

zbc_rt_status zbc_rt_add_loss(zbc_rt_rank *rank, int32_t loss) {
  ZBC_RT_KERNEL(zbc_rt_add_loss);
  const float *v = call.in(loss, 1);
  ZBC_RT_RETURN_IF_BAD();
  rank->lossSum += *v;
  const zbc_rt_program &p = *rank->program;
  if (p.loss >= 0)
    *reinterpret_cast<float *>(rank->arena + p.buffers[p.loss].offset) += *v;
  return call.done();
}

zbc_rt_status zbc_rt_linear(zbc_rt_rank *rank, int32_t x, int32_t w, int32_t y,
                            int64_t rows, int64_t in, int64_t out) {
  ZBC_RT_KERNEL(zbc_rt_linear);
  const float *px = call.in(x, rows * in), *pw = call.in(w, in * out);
  float *py = call.out(y, rows * out);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::linear(px, pw, py, rows, in, out);
  return call.done();
}

zbc_rt_status zbc_rt_matmul(zbc_rt_rank *rank, int32_t a, int32_t b, int32_t c,
                            int64_t batch, int64_t m, int64_t k, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_matmul);
  const float *pa = call.in(a, batch * m * k), *pb = call.in(b, batch * k * n);
  float *pc = call.out(c, batch * m * n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::matmul(pa, pb, pc, batch, m, k, n);
  return call.done();
}

zbc_rt_status zbc_rt_bias_add(zbc_rt_rank *rank, int32_t x, int32_t bias,
                              int32_t y, int64_t rows, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_bias_add);
  const float *px = call.in(x, rows * n), *pb = call.in(bias, n);
  float *py = call.out(y, rows * n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::biasAdd(px, pb, py, rows, n);
  return call.done();
}

zbc_rt_status zbc_rt_add(zbc_rt_rank *rank, int32_t a, int32_t b, int32_t y,
                         int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_add);
  const float *pa = call.in(a, n), *pb = call.in(b, n);
  float *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::add(pa, pb, py, n);
  return call.done();
}

zbc_rt_status zbc_rt_transpose(zbc_rt_rank *rank, int32_t x, int32_t y,
                               int64_t rows, int64_t cols) {
  ZBC_RT_KERNEL(zbc_rt_transpose);
  const float *px = call.in(x, rows * cols);
  float *py = call.out(y, rows * cols);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::transpose(px, py, rows, cols);
  return call.done();
}

zbc_rt_status zbc_rt_relu(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_relu);
  const float *px = call.in(x, n);
  float *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::relu(px, py, n);
  return call.done();
}

zbc_rt_status zbc_rt_gelu(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_gelu);
  const float *px = call.in(x, n);
  float *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::gelu(px, py, n);
  return call.done();
}

zbc_rt_status zbc_rt_layernorm(zbc_rt_rank *rank, int32_t x, int32_t gamma,
                               int32_t beta, int32_t y, int64_t rows, int64_t n,
                               double epsilon) {
  ZBC_RT_KERNEL(zbc_rt_layernorm);
  const float *px = call.in(x, rows * n), *pg = call.in(gamma, n),
              *pb = call.in(beta, n);
  float *py = call.out(y, rows * n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::layerNorm(px, pg, pb, py, rows, n, static_cast<float>(epsilon));
  return call.done();
}

zbc_rt_status zbc_rt_embedding(zbc_rt_rank *rank, int32_t indices,
                               int32_t table, int32_t y, int64_t count,
                               int64_t vocab, int64_t h) {
  ZBC_RT_KERNEL(zbc_rt_embedding);
  int32_t element = ZBC_RT_I64;
  const void *pi = call.indices(indices, count, element);
  const float *pt = call.in(table, vocab * h);
  float *py = call.out(y, count * h);
  ZBC_RT_RETURN_IF_BAD();
  IndexError error;
  bool ok = element == ZBC_RT_I32
                ? zbc::rt::cpu::embedding(static_cast<const int32_t *>(pi), pt,
                                          py, count, vocab, h, &error)
                : zbc::rt::cpu::embedding(static_cast<const int64_t *>(pi), pt,
                                          py, count, vocab, h, &error);
  return ok ? call.done() : call.indexError(error, "index");
}

zbc_rt_status zbc_rt_causal_attention(zbc_rt_rank *rank, int32_t qkv,
                                      int32_t out, int32_t workspace,
                                      int64_t batch, int64_t seq,
                                      int64_t hidden, int64_t heads) {
  ZBC_RT_KERNEL(zbc_rt_causal_attention);
  const float *pq = call.in(qkv, batch * seq * 3 * hidden);
  float *po = call.out(out, batch * seq * hidden);
  float *pw = call.workspace(workspace,
                             zbc::rt::cpu::causalAttentionWorkspace(seq));
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::causalAttention(pq, po, pw, batch, seq, hidden, heads);
  return call.done();
}

zbc_rt_status zbc_rt_cross_entropy(zbc_rt_rank *rank, int32_t logits,
                                   int32_t labels, int32_t loss, int64_t rows,
                                   int64_t classes) {
  ZBC_RT_KERNEL(zbc_rt_cross_entropy);
  int32_t element = ZBC_RT_I64;
  const float *pl = call.in(logits, rows * classes);
  const void *py = call.indices(labels, rows, element);
  float *po = call.out(loss, 1);
  ZBC_RT_RETURN_IF_BAD();
  IndexError error;
  bool ok = element == ZBC_RT_I32
                ? zbc::rt::cpu::crossEntropy(pl, static_cast<const int32_t *>(py),
                                             po, rows, classes, &error)
                : zbc::rt::cpu::crossEntropy(pl, static_cast<const int64_t *>(py),
                                             po, rows, classes, &error);
  return ok ? call.done() : call.indexError(error, "label");
}

zbc_rt_status zbc_rt_fill(zbc_rt_rank *rank, int32_t y, int64_t n,
                          double value) {
  ZBC_RT_KERNEL(zbc_rt_fill);
  float *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::fill(py, n, static_cast<float>(value));
  return call.done();
}

zbc_rt_status zbc_rt_linear_grad_input(zbc_rt_rank *rank, int32_t dy, int32_t w,
                                       int32_t dx, int64_t rows, int64_t in,
                                       int64_t out) {
  ZBC_RT_KERNEL(zbc_rt_linear_grad_input);
  const float *pdy = call.in(dy, rows * out), *pw = call.in(w, in * out);
  float *pdx = call.out(dx, rows * in);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::linearGradInput(pdy, pw, pdx, rows, in, out);
  return call.done();
}

zbc_rt_status zbc_rt_linear_grad_weight(zbc_rt_rank *rank, int32_t x,
                                        int32_t dy, int32_t dw, int64_t rows,
                                        int64_t in, int64_t out) {
  ZBC_RT_KERNEL(zbc_rt_linear_grad_weight);
  const float *px = call.in(x, rows * in), *pdy = call.in(dy, rows * out);
  float *pdw = call.out(dw, in * out);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::linearGradWeight(px, pdy, pdw, rows, in, out);
  return call.done();
}

zbc_rt_status zbc_rt_matmul_grad_lhs(zbc_rt_rank *rank, int32_t dc, int32_t b,
                                     int32_t da, int64_t batch, int64_t m,
                                     int64_t k, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_matmul_grad_lhs);
  const float *pdc = call.in(dc, batch * m * n), *pb = call.in(b, batch * k * n);
  float *pda = call.out(da, batch * m * k);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::matmulGradLhs(pdc, pb, pda, batch, m, k, n);
  return call.done();
}

zbc_rt_status zbc_rt_matmul_grad_rhs(zbc_rt_rank *rank, int32_t a, int32_t dc,
                                     int32_t db, int64_t batch, int64_t m,
                                     int64_t k, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_matmul_grad_rhs);
  const float *pa = call.in(a, batch * m * k), *pdc = call.in(dc, batch * m * n);
  float *pdb = call.out(db, batch * k * n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::matmulGradRhs(pa, pdc, pdb, batch, m, k, n);
  return call.done();
}

zbc_rt_status zbc_rt_bias_grad(zbc_rt_rank *rank, int32_t dy, int32_t db,
                               int64_t rows, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_bias_grad);
  const float *pdy = call.in(dy, rows * n);
  float *pdb = call.out(db, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::biasGrad(pdy, pdb, rows, n);
  return call.done();
}

zbc_rt_status zbc_rt_relu_grad(zbc_rt_rank *rank, int32_t dy, int32_t x,
                               int32_t dx, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_relu_grad);
  const float *pdy = call.in(dy, n), *px = call.in(x, n);
  float *pdx = call.out(dx, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::reluGrad(pdy, px, pdx, n);
  return call.done();
}

zbc_rt_status zbc_rt_gelu_grad(zbc_rt_rank *rank, int32_t dy, int32_t x,
                               int32_t dx, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_gelu_grad);
  const float *pdy = call.in(dy, n), *px = call.in(x, n);
  float *pdx = call.out(dx, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::geluGrad(pdy, px, pdx, n);
  return call.done();
}

zbc_rt_status zbc_rt_layernorm_grad_input(zbc_rt_rank *rank, int32_t dy,
                                          int32_t x, int32_t gamma, int32_t dx,
                                          int64_t rows, int64_t n,
                                          double epsilon) {
  ZBC_RT_KERNEL(zbc_rt_layernorm_grad_input);
  const float *pdy = call.in(dy, rows * n), *px = call.in(x, rows * n),
              *pg = call.in(gamma, n);
  float *pdx = call.out(dx, rows * n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::layerNormGradInput(pdy, px, pg, pdx, rows, n,
                                   static_cast<float>(epsilon));
  return call.done();
}

zbc_rt_status zbc_rt_layernorm_grad_gamma(zbc_rt_rank *rank, int32_t dy,
                                          int32_t x, int32_t dgamma,
                                          int64_t rows, int64_t n,
                                          double epsilon) {
  ZBC_RT_KERNEL(zbc_rt_layernorm_grad_gamma);
  const float *pdy = call.in(dy, rows * n), *px = call.in(x, rows * n);
  float *pdg = call.out(dgamma, n);
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::layerNormGradGamma(pdy, px, pdg, rows, n,
                                   static_cast<float>(epsilon));
  return call.done();
}

zbc_rt_status zbc_rt_embedding_grad(zbc_rt_rank *rank, int32_t indices,
                                    int32_t dy, int32_t dtable, int64_t count,
                                    int64_t vocab, int64_t h) {
  ZBC_RT_KERNEL(zbc_rt_embedding_grad);
  int32_t element = ZBC_RT_I64;
  const void *pi = call.indices(indices, count, element);
  const float *pdy = call.in(dy, count * h);
  float *pdt = call.out(dtable, vocab * h);
  ZBC_RT_RETURN_IF_BAD();
  IndexError error;
  bool ok = element == ZBC_RT_I32
                ? zbc::rt::cpu::embeddingGrad(static_cast<const int32_t *>(pi),
                                              pdy, pdt, count, vocab, h, &error)
                : zbc::rt::cpu::embeddingGrad(static_cast<const int64_t *>(pi),
                                              pdy, pdt, count, vocab, h, &error);
  return ok ? call.done() : call.indexError(error, "index");
}

zbc_rt_status zbc_rt_causal_attention_grad(zbc_rt_rank *rank, int32_t dout,
                                           int32_t qkv, int32_t dqkv,
                                           int32_t workspace, int64_t batch,
                                           int64_t seq, int64_t hidden,
                                           int64_t heads) {
  ZBC_RT_KERNEL(zbc_rt_causal_attention_grad);
  const float *pdo = call.in(dout, batch * seq * hidden),
              *pq = call.in(qkv, batch * seq * 3 * hidden);
  float *pdq = call.out(dqkv, batch * seq * 3 * hidden);
  float *pw = call.workspace(workspace,
                             zbc::rt::cpu::causalAttentionGradWorkspace(seq));
  ZBC_RT_RETURN_IF_BAD();
  zbc::rt::cpu::causalAttentionGrad(pdo, pq, pdq, pw, batch, seq, hidden,
                                    heads);
  return call.done();
}

zbc_rt_status zbc_rt_cross_entropy_grad(zbc_rt_rank *rank, int32_t logits,
                                        int32_t labels, int32_t dloss,
                                        int32_t dlogits, int64_t rows,
                                        int64_t classes) {
  ZBC_RT_KERNEL(zbc_rt_cross_entropy_grad);
  int32_t element = ZBC_RT_I64;
  const float *pl = call.in(logits, rows * classes);
  const void *py = call.indices(labels, rows, element);
  const float *pd = call.in(dloss, 1);
  float *pdl = call.out(dlogits, rows * classes);
  ZBC_RT_RETURN_IF_BAD();
  IndexError error;
  bool ok = element == ZBC_RT_I32
                ? zbc::rt::cpu::crossEntropyGrad(
                      pl, static_cast<const int32_t *>(py), pd, pdl, rows,
                      classes, &error)
                : zbc::rt::cpu::crossEntropyGrad(
                      pl, static_cast<const int64_t *>(py), pd, pdl, rows,
                      classes, &error);
  return ok ? call.done() : call.indexError(error, "label");
}

} // extern "C"
