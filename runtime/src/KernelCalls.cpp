//===- KernelCalls.cpp - the C ABI's kernel calls, on the rank's device ---===//
//
// Each zbc_rt_<op> resolves its buffer ids (frame slots included), checks
// that each buffer has the element type and size the op's shape says (a
// disagreement between the generated code and its tables is a compiler
// bug, reported rather than run), tells the ledger what the kernel reads
// and writes (Note [Ledger]), and calls the kernel on the rank's device
// (Device.h: the CPU's, or a GPU's). The float tensors of one call share
// one element type, f32 or bf16 (Note [bf16]); gradient accumulators and
// the loss accumulator are f32.
//
//===----------------------------------------------------------------------===//

#include "Device.h"
#include "Rank.h"

#include <fmt/format.h>

#include <cstring>

using namespace zbc::rt;

namespace {

/// The buffers of one kernel call, checked and recorded.
class Call {
public:
  Call(zbc_rt_rank *rank, const char *kernel) : rank_(rank), kernel_(kernel) {}

  /// A float buffer of `elements` the kernel reads: f32 or bf16, the type
  /// of the call's other float buffers.
  const void *in(int32_t id, int64_t elements) {
    return access(id, elements, floatElement(id), false);
  }
  /// A float buffer of `elements` the kernel writes.
  void *out(int32_t id, int64_t elements) {
    return access(id, elements, floatElement(id), true);
  }
  /// An f32 buffer (an accumulator) the kernel reads and writes.
  float *accumulator(int32_t id, int64_t elements) {
    return static_cast<float *>(access(id, elements, ZBC_RT_F32, true));
  }
  /// An index buffer (int32 or int64) the kernel reads.
  Indices indices(int32_t id, int64_t elements) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return {fail(), ZBC_RT_I64};
    int32_t element = rank_->program->buffers[b].element;
    if (element != ZBC_RT_I32 && element != ZBC_RT_I64)
      return {mismatch(b, "integer indices"), element};
    return {access(id, elements, element, false), element};
  }
  /// The workspace the kernel needs, `bytes` at least; its size.
  void *workspace(int32_t id, int64_t bytes, int64_t &size) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return fail();
    const zbc_rt_buffer &buffer = rank_->program->buffers[b];
    if (buffer.bytes < bytes)
      return mismatch(b, "a large enough workspace");
    record(rank_->ledger.write(b, Ledger::Writer::Kernel));
    record(rank_->ledger.read(b));
    size = buffer.bytes;
    return rank_->device->arena() + buffer.offset;
  }
  /// The element type of the call's float buffers (f32 until one is seen).
  int32_t element() const { return element_; }
  int64_t elementBytes() const { return zbc_rt_element_bytes(element_); }

  bool ok() const { return ok_; }
  /// The checks are done; the kernel runs (its time is the profile's).
  void kernelBegins() { kernelBegin_ = Profile::now(); }
  /// After the kernel ran (or was queued): its result.
  zbc_rt_status done(const std::string &error = {}) {
    if (kernelBegin_ > 0)
      rank_->profile.kernelSeconds += Profile::now() - kernelBegin_;
    kernelBegin_ = 0;
    rank_->ledger.tick();
    if (!error.empty() && ok_) {
      ok_ = false;
      zbc::rt::fail(rank_, fmt::format("{}: {}", kernel_, error));
    }
    return ok_ ? ZBC_RT_OK : ZBC_RT_ERROR;
  }

private:
  /// The element type buffer `id` must have as a float operand: the first
  /// one's (f32 or bf16) decides the call's.
  int32_t floatElement(int32_t id) {
    if (!floatSeen_) {
      int32_t b = resolve(rank_, id);
      if (b >= 0 && rank_->program->buffers[b].element == ZBC_RT_BF16)
        element_ = ZBC_RT_BF16;
      floatSeen_ = true;
    }
    return element_;
  }
  void *access(int32_t id, int64_t elements, int32_t element, bool write) {
    int32_t b = resolve(rank_, id);
    if (b < 0)
      return fail();
    const zbc_rt_buffer &buffer = rank_->program->buffers[b];
    if (buffer.element != element || buffer.bytes != elements * zbc_rt_element_bytes(element))
      return mismatch(b, fmt::format("{} elements of type {}", elements,
                                     element));
    record(write ? rank_->ledger.write(b, Ledger::Writer::Kernel)
                 : rank_->ledger.read(b));
    return rank_->device->arena() + buffer.offset;
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

  zbc_rt_rank *rank_;
  const char *kernel_;
  bool ok_ = true;
  bool floatSeen_ = false;
  int32_t element_ = ZBC_RT_F32;
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
                  rank->device->dataStaging(b), buffer.bytes);
  if (std::string error = rank->device->dataStaged(b); !error.empty())
    return fail(rank, "zbc_rt_load: " + error);
  rank->ledger.tick();
  return ZBC_RT_OK;
}

zbc_rt_status zbc_rt_accumulate(zbc_rt_rank *rank, int32_t grad, int32_t value) {
  ZBC_RT_KERNEL(zbc_rt_accumulate);
  int32_t g = resolve(rank, grad);
  if (g < 0)
    return ZBC_RT_ERROR;
  int64_t n = rank->program->buffers[g].bytes / 4;
  const void *v = call.in(value, n);
  float *acc = call.accumulator(grad, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->accumulate(acc, call.element(), v, n));
}

zbc_rt_status zbc_rt_copy(zbc_rt_rank *rank, int32_t x, int32_t y,
                          int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_copy);
  const void *from = call.in(x, n);
  void *to = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->copy(to, from, n * call.elementBytes()));
}

zbc_rt_status zbc_rt_add_loss(zbc_rt_rank *rank, int32_t loss) {
  ZBC_RT_KERNEL(zbc_rt_add_loss);
  const void *v = call.in(loss, 1);
  const zbc_rt_program &p = *rank->program;
  ZBC_RT_RETURN_IF_BAD();
  // The accumulator is the rank's own (persistent, outside the ledger's
  // per-step checks), as the loss the progress lines print.
  float discarded = 0; // a rank without the accumulator (never generated)
  float *sum = p.loss >= 0 ? reinterpret_cast<float *>(
                                 rank->device->arena() +
                                 p.buffers[p.loss].offset)
                           : &discarded;
  return call.done(rank->device->addLoss(call.element(), v, sum));
}

zbc_rt_status zbc_rt_linear(zbc_rt_rank *rank, int32_t x, int32_t w, int32_t y,
                            int64_t rows, int64_t in, int64_t out) {
  ZBC_RT_KERNEL(zbc_rt_linear);
  const void *px = call.in(x, rows * in), *pw = call.in(w, in * out);
  void *py = call.out(y, rows * out);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(
      rank->device->linear(call.element(), px, pw, py, rows, in, out));
}

zbc_rt_status zbc_rt_matmul(zbc_rt_rank *rank, int32_t a, int32_t b, int32_t c,
                            int64_t batch, int64_t m, int64_t k, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_matmul);
  const void *pa = call.in(a, batch * m * k), *pb = call.in(b, batch * k * n);
  void *pc = call.out(c, batch * m * n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(
      rank->device->matmul(call.element(), pa, pb, pc, batch, m, k, n));
}

zbc_rt_status zbc_rt_bias_add(zbc_rt_rank *rank, int32_t x, int32_t bias,
                              int32_t y, int64_t rows, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_bias_add);
  const void *px = call.in(x, rows * n), *pb = call.in(bias, n);
  void *py = call.out(y, rows * n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->biasAdd(call.element(), px, pb, py, rows, n));
}

zbc_rt_status zbc_rt_add(zbc_rt_rank *rank, int32_t a, int32_t b, int32_t y,
                         int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_add);
  const void *pa = call.in(a, n), *pb = call.in(b, n);
  void *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->add(call.element(), pa, pb, py, n));
}

zbc_rt_status zbc_rt_transpose(zbc_rt_rank *rank, int32_t x, int32_t y,
                               int64_t rows, int64_t cols) {
  ZBC_RT_KERNEL(zbc_rt_transpose);
  const void *px = call.in(x, rows * cols);
  void *py = call.out(y, rows * cols);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(
      rank->device->transpose(call.element(), px, py, rows, cols));
}

zbc_rt_status zbc_rt_relu(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_relu);
  const void *px = call.in(x, n);
  void *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->relu(call.element(), px, py, n));
}

zbc_rt_status zbc_rt_gelu(zbc_rt_rank *rank, int32_t x, int32_t y, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_gelu);
  const void *px = call.in(x, n);
  void *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->gelu(call.element(), px, py, n));
}

zbc_rt_status zbc_rt_layernorm(zbc_rt_rank *rank, int32_t x, int32_t gamma,
                               int32_t beta, int32_t y, int64_t rows, int64_t n,
                               double epsilon) {
  ZBC_RT_KERNEL(zbc_rt_layernorm);
  const void *px = call.in(x, rows * n), *pg = call.in(gamma, n),
             *pb = call.in(beta, n);
  void *py = call.out(y, rows * n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->layerNorm(call.element(), px, pg, pb, py,
                                           rows, n,
                                           static_cast<float>(epsilon)));
}

zbc_rt_status zbc_rt_embedding(zbc_rt_rank *rank, int32_t indices,
                               int32_t table, int32_t y, int64_t count,
                               int64_t vocab, int64_t h) {
  ZBC_RT_KERNEL(zbc_rt_embedding);
  Indices pi = call.indices(indices, count);
  const void *pt = call.in(table, vocab * h);
  void *py = call.out(y, count * h);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->embedding(call.element(), pi, pt, py, count,
                                           vocab, h));
}

zbc_rt_status zbc_rt_causal_attention(zbc_rt_rank *rank, int32_t qkv,
                                      int32_t out, int32_t workspace,
                                      int64_t batch, int64_t seq,
                                      int64_t hidden, int64_t heads) {
  ZBC_RT_KERNEL(zbc_rt_causal_attention);
  const void *pq = call.in(qkv, batch * seq * 3 * hidden);
  void *po = call.out(out, batch * seq * hidden);
  int64_t size = 0;
  void *pw = call.workspace(workspace, seq * seq * call.elementBytes(), size);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->causalAttention(
      call.element(), pq, po, pw, size, batch, seq, hidden, heads));
}

zbc_rt_status zbc_rt_cross_entropy(zbc_rt_rank *rank, int32_t logits,
                                   int32_t labels, int32_t loss, int64_t rows,
                                   int64_t classes) {
  ZBC_RT_KERNEL(zbc_rt_cross_entropy);
  const void *pl = call.in(logits, rows * classes);
  Indices py = call.indices(labels, rows);
  void *po = call.out(loss, 1);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->crossEntropy(call.element(), pl, py, po, rows,
                                              classes));
}

zbc_rt_status zbc_rt_fill(zbc_rt_rank *rank, int32_t y, int64_t n,
                          double value) {
  ZBC_RT_KERNEL(zbc_rt_fill);
  void *py = call.out(y, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(
      rank->device->fill(call.element(), py, n, static_cast<float>(value)));
}

zbc_rt_status zbc_rt_linear_grad_input(zbc_rt_rank *rank, int32_t dy, int32_t w,
                                       int32_t dx, int64_t rows, int64_t in,
                                       int64_t out) {
  ZBC_RT_KERNEL(zbc_rt_linear_grad_input);
  const void *pdy = call.in(dy, rows * out), *pw = call.in(w, in * out);
  void *pdx = call.out(dx, rows * in);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->linearGradInput(call.element(), pdy, pw, pdx,
                                                 rows, in, out));
}

zbc_rt_status zbc_rt_linear_grad_weight(zbc_rt_rank *rank, int32_t x,
                                        int32_t dy, int32_t dw, int64_t rows,
                                        int64_t in, int64_t out) {
  ZBC_RT_KERNEL(zbc_rt_linear_grad_weight);
  const void *px = call.in(x, rows * in), *pdy = call.in(dy, rows * out);
  void *pdw = call.out(dw, in * out);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->linearGradWeight(call.element(), px, pdy, pdw,
                                                  rows, in, out));
}

zbc_rt_status zbc_rt_matmul_grad_lhs(zbc_rt_rank *rank, int32_t dc, int32_t b,
                                     int32_t da, int64_t batch, int64_t m,
                                     int64_t k, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_matmul_grad_lhs);
  const void *pdc = call.in(dc, batch * m * n), *pb = call.in(b, batch * k * n);
  void *pda = call.out(da, batch * m * k);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->matmulGradLhs(call.element(), pdc, pb, pda,
                                               batch, m, k, n));
}

zbc_rt_status zbc_rt_matmul_grad_rhs(zbc_rt_rank *rank, int32_t a, int32_t dc,
                                     int32_t db, int64_t batch, int64_t m,
                                     int64_t k, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_matmul_grad_rhs);
  const void *pa = call.in(a, batch * m * k), *pdc = call.in(dc, batch * m * n);
  void *pdb = call.out(db, batch * k * n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->matmulGradRhs(call.element(), pa, pdc, pdb,
                                               batch, m, k, n));
}

zbc_rt_status zbc_rt_bias_grad(zbc_rt_rank *rank, int32_t dy, int32_t db,
                               int64_t rows, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_bias_grad);
  const void *pdy = call.in(dy, rows * n);
  void *pdb = call.out(db, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->biasGrad(call.element(), pdy, pdb, rows, n));
}

zbc_rt_status zbc_rt_relu_grad(zbc_rt_rank *rank, int32_t dy, int32_t x,
                               int32_t dx, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_relu_grad);
  const void *pdy = call.in(dy, n), *px = call.in(x, n);
  void *pdx = call.out(dx, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->reluGrad(call.element(), pdy, px, pdx, n));
}

zbc_rt_status zbc_rt_gelu_grad(zbc_rt_rank *rank, int32_t dy, int32_t x,
                               int32_t dx, int64_t n) {
  ZBC_RT_KERNEL(zbc_rt_gelu_grad);
  const void *pdy = call.in(dy, n), *px = call.in(x, n);
  void *pdx = call.out(dx, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->geluGrad(call.element(), pdy, px, pdx, n));
}

zbc_rt_status zbc_rt_layernorm_grad_input(zbc_rt_rank *rank, int32_t dy,
                                          int32_t x, int32_t gamma, int32_t dx,
                                          int64_t rows, int64_t n,
                                          double epsilon) {
  ZBC_RT_KERNEL(zbc_rt_layernorm_grad_input);
  const void *pdy = call.in(dy, rows * n), *px = call.in(x, rows * n),
             *pg = call.in(gamma, n);
  void *pdx = call.out(dx, rows * n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->layerNormGradInput(
      call.element(), pdy, px, pg, pdx, rows, n, static_cast<float>(epsilon)));
}

zbc_rt_status zbc_rt_layernorm_grad_gamma(zbc_rt_rank *rank, int32_t dy,
                                          int32_t x, int32_t dgamma,
                                          int64_t rows, int64_t n,
                                          double epsilon) {
  ZBC_RT_KERNEL(zbc_rt_layernorm_grad_gamma);
  const void *pdy = call.in(dy, rows * n), *px = call.in(x, rows * n);
  void *pdg = call.out(dgamma, n);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->layerNormGradGamma(
      call.element(), pdy, px, pdg, rows, n, static_cast<float>(epsilon)));
}

zbc_rt_status zbc_rt_embedding_grad(zbc_rt_rank *rank, int32_t indices,
                                    int32_t dy, int32_t dtable, int64_t count,
                                    int64_t vocab, int64_t h) {
  ZBC_RT_KERNEL(zbc_rt_embedding_grad);
  Indices pi = call.indices(indices, count);
  const void *pdy = call.in(dy, count * h);
  void *pdt = call.out(dtable, vocab * h);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->embeddingGrad(call.element(), pi, pdy, pdt,
                                               count, vocab, h));
}

zbc_rt_status zbc_rt_causal_attention_grad(zbc_rt_rank *rank, int32_t dout,
                                           int32_t qkv, int32_t dqkv,
                                           int32_t workspace, int64_t batch,
                                           int64_t seq, int64_t hidden,
                                           int64_t heads) {
  ZBC_RT_KERNEL(zbc_rt_causal_attention_grad);
  const void *pdo = call.in(dout, batch * seq * hidden),
             *pq = call.in(qkv, batch * seq * 3 * hidden);
  void *pdq = call.out(dqkv, batch * seq * 3 * hidden);
  int64_t size = 0;
  void *pw =
      call.workspace(workspace, 2 * seq * seq * call.elementBytes(), size);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->causalAttentionGrad(
      call.element(), pdo, pq, pdq, pw, size, batch, seq, hidden, heads));
}

zbc_rt_status zbc_rt_cross_entropy_grad(zbc_rt_rank *rank, int32_t logits,
                                        int32_t labels, int32_t dloss,
                                        int32_t dlogits, int64_t rows,
                                        int64_t classes) {
  ZBC_RT_KERNEL(zbc_rt_cross_entropy_grad);
  const void *pl = call.in(logits, rows * classes);
  Indices py = call.indices(labels, rows);
  const void *pd = call.in(dloss, 1);
  void *pdl = call.out(dlogits, rows * classes);
  ZBC_RT_RETURN_IF_BAD();
  return call.done(rank->device->crossEntropyGrad(call.element(), pl, py, pd,
                                                  pdl, rows, classes));
}

} // extern "C"
