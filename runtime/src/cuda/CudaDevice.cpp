//===- CudaDevice.cpp - the CUDA backend's Device: one GPU per rank -------===//
//
// The arena is one cudaMalloc at start-up (the memory plan's offsets are
// device offsets); with it come the GEMM's workspace, the compute stream,
// one pair of timing events per compute op and a few device scalars (the
// step's loss, the gradient norm's sum, the first bad index). Nothing is
// allocated on the device after that. Kernel calls queue on the compute
// stream in call order and return the launch's status; `synchronize` waits
// for the stream and reports the first failure, including an index that a
// kernel found out of range (DeviceIndexError, read back then).
//
// Offloaded stashes (Note [Offload in the IR]) go through a copy stream of
// their own and a pinned host arena: a copy waits on the compute stream's
// work so far (an event recorded there), runs its pieces as cudaMemcpyAsync,
// and records its own event, which waitCopy makes the compute stream wait
// for. The copy engine thus overlaps the kernels, and the order is the
// program's.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"

#include "CudaCheck.h"
#include "kernels/CudaKernels.h"

#include <fmt/format.h>

#include <cmath>
#include <thread>
#include <vector>

namespace zbc::rt::cuda {
namespace {

/// A failed launch's words, or nothing.
std::string launched(cudaError_t code, const char *kernel) {
  if (code == cudaSuccess)
    return {};
  return fmt::format("launching {} failed: {} ({})", kernel,
                     cudaGetErrorString(code), cudaGetErrorName(code));
}

Dtype dtypeOf(int32_t element) {
  return element == ZBC_RT_BF16 ? Dtype::BF16 : Dtype::F32;
}

IndexType indexTypeOf(const Indices &indices) {
  return indices.element == ZBC_RT_I32 ? IndexType::I32 : IndexType::I64;
}

/// An attention call's document ids (none when the op has no `documents`).
Documents documentsOf(const Indices &documents) {
  return {documents.data, indexTypeOf(documents)};
}

/// The device scalars of a rank, in one allocation.
struct Scalars {
  float stepLoss;
  double sumOfSquares;
  DeviceIndexError indexError;
  int64_t countedLabels; // cross_entropy_grad's and vocab_grad's count, written before read
};

constexpr int64_t kGemmWorkspaceBytes = 32 << 20;

class CudaDevice final : public Device {
public:
  explicit CudaDevice(int gpu) : gpu_(gpu) {}
  ~CudaDevice() override {
    for (cudaEvent_t event : copied_)
      cudaEventDestroy(event);
    if (copyIssued_)
      cudaEventDestroy(copyIssued_);
    if (copyStream_)
      cudaStreamDestroy(copyStream_);
    cudaFreeHost(hostArena_);
    for (cudaEvent_t event : begins_)
      cudaEventDestroy(event);
    for (cudaEvent_t event : ends_)
      cudaEventDestroy(event);
    for (cudaEvent_t event : updates_)
      cudaEventDestroy(event);
    gemm_.destroy();
    if (drained_)
      cudaEventDestroy(drained_);
    if (stream_)
      cudaStreamDestroy(stream_);
    cudaFree(scalars_);
    cudaFreeHost(hostScalars_);
    cudaFreeHost(staging_);
    cudaFree(arena_);
  }
  const char *name() const override { return "cuda"; }
  cudaStream_t stream() const { return stream_; }

  std::string allocate(const zbc_rt_program &p) override {
    ZBC_CUDA_TRY(cudaSetDevice(gpu_));
    ZBC_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ZBC_CUDA_TRY(cudaEventCreateWithFlags(&drained_, cudaEventDisableTiming));
    void *memory = nullptr;
    cudaError_t code = cudaMalloc(&memory, static_cast<size_t>(p.arena_bytes));
    if (code != cudaSuccess)
      return fmt::format("cannot allocate the arena of {} bytes on GPU {}: "
                         "{}",
                         p.arena_bytes, gpu_, cudaGetErrorString(code));
    arena_ = static_cast<char *>(memory);
    ZBC_CUDA_TRY(cudaMemsetAsync(arena_, 0, static_cast<size_t>(p.arena_bytes),
                                 stream_));
    ZBC_CUDA_TRY(cudaMalloc(&scalars_, sizeof(Scalars)));
    ZBC_CUDA_TRY(cudaMemsetAsync(scalars_, 0, sizeof(Scalars), stream_));
    ZBC_CUDA_TRY(cudaMallocHost(&hostScalars_, sizeof(Scalars)));
    ZBC_CUDA_TRY(gemm_.init(kGemmWorkspaceBytes));
    // Pinned mirrors of the data buffers (dataStaging).
    program_ = &p;
    stagingAt_.assign(static_cast<size_t>(p.buffer_count), -1);
    int64_t stagingBytes = 0;
    for (int32_t b = 0; b < p.buffer_count; ++b)
      if (p.buffers[b].kind == ZBC_RT_DATA) {
        stagingAt_[b] = stagingBytes;
        stagingBytes += (p.buffers[b].bytes + 63) / 64 * 64;
      }
    if (stagingBytes)
      ZBC_CUDA_TRY(cudaMallocHost(&staging_, static_cast<size_t>(stagingBytes)));
    begins_.assign(static_cast<size_t>(p.op_count), nullptr);
    ends_.assign(static_cast<size_t>(p.op_count), nullptr);
    timed_.assign(static_cast<size_t>(p.op_count), 0);
    for (int32_t op = 0; op < p.op_count; ++op) {
      if (!zbc_rt_op_is_compute(p.ops[op].what))
        continue;
      ZBC_CUDA_TRY(cudaEventCreate(&begins_[op]));
      ZBC_CUDA_TRY(cudaEventCreate(&ends_[op]));
    }
    // One pair per parameter: a step updates each once.
    updates_.assign(static_cast<size_t>(2 * p.param_count), nullptr);
    for (cudaEvent_t &event : updates_)
      ZBC_CUDA_TRY(cudaEventCreate(&event));
    if (p.host_arena_bytes > 0) {
      void *host = nullptr;
      ZBC_CUDA_TRY(cudaMallocHost(&host, static_cast<size_t>(p.host_arena_bytes)));
      hostArena_ = static_cast<char *>(host);
      ZBC_CUDA_TRY(cudaStreamCreateWithFlags(&copyStream_, cudaStreamNonBlocking));
      ZBC_CUDA_TRY(cudaEventCreateWithFlags(&copyIssued_, cudaEventDisableTiming));
      copied_.assign(static_cast<size_t>(p.op_count), nullptr);
      copyState_.assign(static_cast<size_t>(p.op_count), 0);
      for (int32_t op = 0; op < p.op_count; ++op)
        if (zbc_rt_op_is_copy(p.ops[op].what))
          ZBC_CUDA_TRY(cudaEventCreateWithFlags(&copied_[op],
                                                cudaEventDisableTiming));
    }
    ZBC_CUDA_TRY(cudaStreamSynchronize(stream_));
    return {};
  }

  char *hostArena() override { return hostArena_; }
  std::string startCopy(int32_t op, const CopyPiece *pieces,
                        int32_t count) override {
    if (!copyStream_ || !copied_[op] || copyState_[op])
      return fmt::format("copy op {} issued again before its wait, or the "
                         "program has no host arena",
                         op);
    // After every kernel queued so far (the F that wrote the stash)...
    ZBC_CUDA_TRY(cudaEventRecord(copyIssued_, stream_));
    ZBC_CUDA_TRY(cudaStreamWaitEvent(copyStream_, copyIssued_, 0));
    for (int32_t i = 0; i < count; ++i)
      ZBC_CUDA_TRY(cudaMemcpyAsync(pieces[i].to, pieces[i].from,
                                   static_cast<size_t>(pieces[i].bytes),
                                   cudaMemcpyDefault, copyStream_));
    // ...and before what waits for it.
    ZBC_CUDA_TRY(cudaEventRecord(copied_[op], copyStream_));
    copyState_[op] = 1;
    return {};
  }
  std::string waitCopy(int32_t op) override {
    if (!copyStream_ || !copyState_[op])
      return fmt::format("waits for copy op {}, which was not issued or was "
                         "waited for already",
                         op);
    ZBC_CUDA_TRY(cudaStreamWaitEvent(stream_, copied_[op], 0));
    copyState_[op] = 0;
    return {};
  }
  char *arena() override { return arena_; }
  std::string write(int64_t offset, const void *host, int64_t bytes) override {
    ZBC_CUDA_TRY(cudaMemcpyAsync(arena_ + offset, host,
                                 static_cast<size_t>(bytes),
                                 cudaMemcpyHostToDevice, stream_));
    ZBC_CUDA_TRY(cudaStreamSynchronize(stream_));
    return {};
  }
  std::string read(int64_t offset, void *host, int64_t bytes) override {
    ZBC_CUDA_TRY(cudaMemcpyAsync(host, arena_ + offset,
                                 static_cast<size_t>(bytes),
                                 cudaMemcpyDeviceToHost, stream_));
    ZBC_CUDA_TRY(cudaStreamSynchronize(stream_));
    return {};
  }

  char *dataStaging(int32_t buffer) override {
    return staging_ + stagingAt_[buffer];
  }
  std::string dataStaged(int32_t buffer) override {
    const zbc_rt_buffer &b = program_->buffers[buffer];
    ZBC_CUDA_TRY(cudaMemcpyAsync(arena_ + b.offset, staging_ + stagingAt_[buffer],
                                 static_cast<size_t>(b.bytes),
                                 cudaMemcpyHostToDevice, stream_));
    return {};
  }

  std::string synchronize() override {
    ZBC_CUDA_TRY(cudaMemcpyAsync(hostScalars_, scalars_, sizeof(Scalars),
                                 cudaMemcpyDeviceToHost, stream_));
    // The copy stream's work too: the compute stream waits for its last
    // copy before the mark.
    if (copyStream_) {
      ZBC_CUDA_TRY(cudaEventRecord(copyIssued_, copyStream_));
      ZBC_CUDA_TRY(cudaStreamWaitEvent(stream_, copyIssued_, 0));
    }
    // Polled, not blocking: a stream stuck behind a transfer whose peer is
    // gone stays under the watchdog's --timeout (the caller marks the wait).
    ZBC_CUDA_TRY(cudaEventRecord(drained_, stream_));
    for (;;) {
      cudaError_t state = cudaEventQuery(drained_);
      if (state == cudaSuccess)
        break;
      if (state != cudaErrorNotReady)
        return cudaFailure(state, "cudaEventQuery", __FILE__, __LINE__);
      std::this_thread::yield();
    }
    const DeviceIndexError &bad = hostScalars_->indexError;
    if (bad.found)
      return fmt::format("op {} read the index {} at position {}, outside "
                         "[0, {})",
                         bad.op, bad.value, bad.position, bad.bound);
    return {};
  }

  bool timesComputes() const override { return true; }
  void computeBegins(int32_t op) override {
    op_ = op;
    if (!timed_[op]) // a fused BW's W continues the op its B began
      cudaEventRecord(begins_[op], stream_);
    timed_[op] = 1;
  }
  void computeEnds(int32_t op) override { cudaEventRecord(ends_[op], stream_); }
  void takeComputeSeconds(void (*add)(void *, int32_t, double),
                          void *context) override {
    for (size_t op = 0; op < timed_.size(); ++op) {
      if (!timed_[op])
        continue;
      timed_[op] = 0;
      float ms = 0;
      if (cudaEventElapsedTime(&ms, begins_[op], ends_[op]) == cudaSuccess)
        add(context, static_cast<int32_t>(op), ms / 1e3);
    }
    double optimizer = 0;
    for (size_t u = 0; u < updatesTimed_; ++u) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, updates_[2 * u], updates_[2 * u + 1]) ==
          cudaSuccess)
        optimizer += ms / 1e3;
    }
    if (updatesTimed_)
      add(context, -1, optimizer);
    updatesTimed_ = 0;
  }

  std::string linear(int32_t element, const void *x, const void *w, void *y,
                     int64_t rows, int64_t in, int64_t out,
                     int64_t weightOutIn) override {
    return launched(cuda::linear(gemm_, dtypeOf(element), x, w, y, rows, in,
                                 out, weightOutIn != 0, stream_),
                    "linear");
  }
  std::string matmul(int32_t element, const void *a, const void *b, void *c,
                     int64_t batch, int64_t m, int64_t k, int64_t n) override {
    return launched(cuda::matmul(gemm_, dtypeOf(element), a, b, c, batch, m, k,
                                 n, stream_),
                    "matmul");
  }
  std::string biasAdd(int32_t element, const void *x, const void *bias,
                      void *y, int64_t rows, int64_t n) override {
    return launched(
        cuda::biasAdd(dtypeOf(element), x, bias, y, rows, n, stream_),
        "bias_add");
  }
  std::string add(int32_t element, const void *a, const void *b, void *y,
                  int64_t n) override {
    return launched(cuda::add(dtypeOf(element), a, b, y, n, stream_), "add");
  }
  std::string relu(int32_t element, const void *x, void *y,
                   int64_t n) override {
    return launched(cuda::relu(dtypeOf(element), x, y, n, stream_), "relu");
  }
  std::string transpose(int32_t element, const void *x, void *y, int64_t rows,
                        int64_t cols) override {
    return launched(
        cuda::transpose(dtypeOf(element), x, y, rows, cols, stream_),
        "transpose");
  }
  std::string gelu(int32_t element, const void *x, void *y,
                   int64_t n) override {
    return launched(cuda::gelu(dtypeOf(element), x, y, n, stream_), "gelu");
  }
  std::string layerNorm(int32_t element, const void *x, const void *gamma,
                        const void *beta, void *y, int64_t rows, int64_t n,
                        float epsilon) override {
    return launched(cuda::layerNorm(dtypeOf(element), x, gamma, beta, y, rows,
                                    n, epsilon, stream_),
                    "layernorm");
  }
  std::string swiGlu(int32_t element, const void *gate, const void *up, void *y,
                     int64_t n) override {
    return launched(cuda::swiGlu(dtypeOf(element), gate, up, y, n, stream_),
                    "swiglu");
  }
  std::string swiGluGradGate(int32_t element, const void *dy, const void *gate,
                             const void *up, void *dgate, int64_t n) override {
    return launched(cuda::swiGluGradGate(dtypeOf(element), dy, gate, up, dgate,
                                         n, stream_),
                    "swiglu_grad_gate");
  }
  std::string swiGluGradUp(int32_t element, const void *dy, const void *gate,
                           void *dup, int64_t n) override {
    return launched(
        cuda::swiGluGradUp(dtypeOf(element), dy, gate, dup, n, stream_),
        "swiglu_grad_up");
  }
  std::string rmsNorm(int32_t element, const void *x, const void *weight,
                      void *y, int64_t rows, int64_t n,
                      float epsilon) override {
    return launched(cuda::rmsNorm(dtypeOf(element), x, weight, y, rows, n,
                                  epsilon, stream_),
                    "rmsnorm");
  }
  std::string rope(int32_t element, const void *x, Indices positions, void *y,
                   int64_t rows, int64_t width, int64_t headDim, float theta,
                   float llama3Factor, float llama3Low, float llama3High,
                   float llama3Original) override {
    return launched(
        cuda::rope(dtypeOf(element), indexTypeOf(positions), x, positions.data,
                   y, rows, width, headDim,
                   {theta, llama3Factor, llama3Low, llama3High, llama3Original},
                   /*inverse=*/false, stream_),
        "rope");
  }
  std::string ropeGrad(int32_t element, const void *dy, Indices positions,
                       void *dx, int64_t rows, int64_t width, int64_t headDim,
                       float theta, float llama3Factor, float llama3Low,
                       float llama3High, float llama3Original) override {
    return launched(
        cuda::rope(dtypeOf(element), indexTypeOf(positions), dy,
                   positions.data, dx, rows, width, headDim,
                   {theta, llama3Factor, llama3Low, llama3High, llama3Original},
                   /*inverse=*/true, stream_),
        "rope_grad");
  }
  std::string embedding(int32_t element, Indices indices, const void *table,
                        void *y, int64_t count, int64_t vocab,
                        int64_t h) override {
    return launched(cuda::embedding(dtypeOf(element), indexTypeOf(indices),
                                    indices.data, table, y, count, vocab, h,
                                    &scalars_->indexError, currentOp(),
                                    stream_),
                    "embedding");
  }
  std::string causalAttention(int32_t element, const void *qkv,
                              Indices documents, void *out, void *workspace,
                              int64_t workspaceBytes, int64_t batch,
                              int64_t seq, int64_t hidden,
                              int64_t heads) override {
    return launched(cuda::causalAttention(dtypeOf(element), qkv,
                                          documentsOf(documents), out,
                                          workspace, workspaceBytes, batch,
                                          seq, hidden, heads, stream_),
                    "causal_attention");
  }
  std::string attention(int32_t element, const void *q, const void *k,
                        const void *v, Indices documents, void *out,
                        void *workspace, int64_t workspaceBytes,
                        int64_t batch, int64_t seq, int64_t heads,
                        int64_t kvHeads, int64_t headDim) override {
    return launched(cuda::attention(dtypeOf(element), q, k, v,
                                    documentsOf(documents), out, workspace,
                                    workspaceBytes, batch, seq, heads, kvHeads,
                                    headDim, stream_),
                    "attention");
  }
  std::string crossEntropy(int32_t element, const void *logits, Indices labels,
                           void *loss, int64_t rows, int64_t classes,
                           int64_t ignoreIndex) override {
    return launched(cuda::crossEntropy(dtypeOf(element), indexTypeOf(labels),
                                       logits, labels.data, loss, rows,
                                       classes, ignoreIndex,
                                       &scalars_->indexError, currentOp(),
                                       stream_),
                    "cross_entropy");
  }
  std::string fill(int32_t element, void *y, int64_t n, float value) override {
    return launched(cuda::fill(dtypeOf(element), y, n, value, stream_),
                    "fill");
  }
  std::string linearGradInput(int32_t element, const void *dy, const void *w,
                              void *dx, int64_t rows, int64_t in, int64_t out,
                              int64_t weightOutIn) override {
    return launched(cuda::linearGradInput(gemm_, dtypeOf(element), dy, w, dx,
                                          rows, in, out, weightOutIn != 0,
                                          stream_),
                    "linear_grad_input");
  }
  std::string linearGradWeight(int32_t element, const void *x, const void *dy,
                               void *dw, int64_t rows, int64_t in, int64_t out,
                               int64_t weightOutIn) override {
    return launched(cuda::linearGradWeight(gemm_, dtypeOf(element), x, dy, dw,
                                           rows, in, out, weightOutIn != 0,
                                           stream_),
                    "linear_grad_weight");
  }
  std::string matmulGradLhs(int32_t element, const void *dc, const void *b,
                            void *da, int64_t batch, int64_t m, int64_t k,
                            int64_t n) override {
    return launched(cuda::matmulGradLhs(gemm_, dtypeOf(element), dc, b, da,
                                        batch, m, k, n, stream_),
                    "matmul_grad_lhs");
  }
  std::string matmulGradRhs(int32_t element, const void *a, const void *dc,
                            void *db, int64_t batch, int64_t m, int64_t k,
                            int64_t n) override {
    return launched(cuda::matmulGradRhs(gemm_, dtypeOf(element), a, dc, db,
                                        batch, m, k, n, stream_),
                    "matmul_grad_rhs");
  }
  std::string biasGrad(int32_t element, const void *dy, void *db, int64_t rows,
                       int64_t n) override {
    return launched(cuda::biasGrad(dtypeOf(element), dy, db, rows, n, stream_),
                    "bias_grad");
  }
  std::string reluGrad(int32_t element, const void *dy, const void *x,
                       void *dx, int64_t n) override {
    return launched(cuda::reluGrad(dtypeOf(element), dy, x, dx, n, stream_),
                    "relu_grad");
  }
  std::string geluGrad(int32_t element, const void *dy, const void *x,
                       void *dx, int64_t n) override {
    return launched(cuda::geluGrad(dtypeOf(element), dy, x, dx, n, stream_),
                    "gelu_grad");
  }
  std::string layerNormGradInput(int32_t element, const void *dy,
                                 const void *x, const void *gamma, void *dx,
                                 int64_t rows, int64_t n,
                                 float epsilon) override {
    return launched(cuda::layerNormGradInput(dtypeOf(element), dy, x, gamma,
                                             dx, rows, n, epsilon, stream_),
                    "layernorm_grad_input");
  }
  std::string layerNormGradGamma(int32_t element, const void *dy,
                                 const void *x, void *dgamma, int64_t rows,
                                 int64_t n, float epsilon) override {
    return launched(cuda::layerNormGradGamma(dtypeOf(element), dy, x, dgamma,
                                             rows, n, epsilon, stream_),
                    "layernorm_grad_gamma");
  }
  std::string rmsNormGradInput(int32_t element, const void *dy, const void *x,
                               const void *weight, void *dx, int64_t rows,
                               int64_t n, float epsilon) override {
    return launched(cuda::rmsNormGradInput(dtypeOf(element), dy, x, weight,
                                           dx, rows, n, epsilon, stream_),
                    "rmsnorm_grad_input");
  }
  std::string rmsNormGradWeight(int32_t element, const void *dy,
                                const void *x, void *dweight, int64_t rows,
                                int64_t n, float epsilon) override {
    return launched(cuda::rmsNormGradWeight(dtypeOf(element), dy, x, dweight,
                                            rows, n, epsilon, stream_),
                    "rmsnorm_grad_weight");
  }
  std::string embeddingGrad(int32_t element, Indices indices, const void *dy,
                            void *dtable, int64_t count, int64_t vocab,
                            int64_t h) override {
    return launched(cuda::embeddingGrad(dtypeOf(element), indexTypeOf(indices),
                                        indices.data, dy, dtable, count, vocab,
                                        h, &scalars_->indexError, currentOp(),
                                        stream_),
                    "embedding_grad");
  }
  std::string causalAttentionGrad(int32_t element, const void *dout,
                                  const void *qkv, Indices documents,
                                  void *dqkv, void *workspace,
                                  int64_t workspaceBytes, int64_t batch,
                                  int64_t seq, int64_t hidden,
                                  int64_t heads) override {
    if (documents.data)
      return "document masks are not on the GPU yet";
    return launched(cuda::causalAttentionGrad(
                        dtypeOf(element), dout, qkv, documentsOf(documents),
                        dqkv, workspace, workspaceBytes, batch, seq, hidden,
                        heads, stream_),
                    "causal_attention_grad");
  }
  std::string attentionGrad(int32_t element, const void *dout, const void *q,
                            const void *k, const void *v, Indices documents,
                            void *dq, void *dk, void *dv, void *workspace,
                            int64_t workspaceBytes, int64_t batch, int64_t seq,
                            int64_t heads, int64_t kvHeads,
                            int64_t headDim) override {
    return launched(cuda::attentionGrad(dtypeOf(element), dout, q, k, v,
                                        documentsOf(documents), dq, dk, dv,
                                        workspace, workspaceBytes, batch, seq,
                                        heads, kvHeads, headDim, stream_),
                    "attention_grad");
  }
  std::string crossEntropyGrad(int32_t element, const void *logits,
                               Indices labels, const void *dloss,
                               void *dlogits, int64_t rows, int64_t classes,
                               int64_t ignoreIndex) override {
    return launched(cuda::crossEntropyGrad(
                        dtypeOf(element), indexTypeOf(labels), logits,
                        labels.data, dloss, dlogits, rows, classes,
                        ignoreIndex, &scalars_->countedLabels,
                        &scalars_->indexError, currentOp(), stream_),
                    "cross_entropy_grad");
  }

  std::string vocabStats(int32_t element, const void *logits, Indices labels,
                         void *stats, int64_t rows, int64_t columns,
                         int64_t first, int64_t vocab,
                         int64_t ignoreIndex) override {
    return launched(cuda::vocabStats(dtypeOf(element), indexTypeOf(labels),
                                     logits, labels.data, stats, rows, columns,
                                     first, vocab, ignoreIndex,
                                     &scalars_->indexError, currentOp(),
                                     stream_),
                    "vocab_stats");
  }
  std::string vocabLoss(int32_t element, const void *stats, Indices labels,
                        void *loss, int64_t rows, int64_t vocab,
                        int64_t ignoreIndex) override {
    return launched(cuda::vocabLoss(dtypeOf(element), indexTypeOf(labels),
                                    stats, labels.data, loss, rows, vocab,
                                    ignoreIndex, &scalars_->indexError,
                                    currentOp(), stream_),
                    "vocab_loss");
  }
  std::string vocabGrad(int32_t element, const void *logits, Indices labels,
                        const void *stats, const void *dloss, void *dlogits,
                        int64_t rows, int64_t columns, int64_t first,
                        int64_t vocab, int64_t ignoreIndex) override {
    return launched(cuda::vocabGrad(dtypeOf(element), indexTypeOf(labels),
                                    logits, labels.data, stats, dloss, dlogits,
                                    rows, columns, first, vocab, ignoreIndex,
                                    &scalars_->countedLabels,
                                    &scalars_->indexError, currentOp(),
                                    stream_),
                    "vocab_grad");
  }

  std::string accumulate(float *acc, int32_t element, const void *x,
                         int64_t n) override {
    return launched(cuda::accumulate(acc, dtypeOf(element), x, n, stream_),
                    "accumulate");
  }
  std::string addLoss(int32_t element, const void *value, float weight,
                      float *accumulator) override {
    std::string error = launched(
        cuda::addScalar(accumulator, dtypeOf(element), value, weight, stream_),
        "add_loss");
    if (error.empty())
      error = launched(cuda::addScalar(&scalars_->stepLoss, dtypeOf(element),
                                       value, weight, stream_),
                       "add_loss");
    return error;
  }
  double takeStepLoss() override {
    // synchronize() brought the scalars back; the next step starts at 0.
    double loss = hostScalars_->stepLoss;
    hostScalars_->stepLoss = 0;
    cudaMemsetAsync(&scalars_->stepLoss, 0, sizeof(float), stream_);
    return loss;
  }

  std::string sgdMomentum(float *weights, const float *grad, float *momentum,
                          int64_t n, const SgdConfig &config,
                          float gradScale, void *copy,
                          int32_t copyElement) override {
    // The scalars as Optimizers.cpp rounds them.
    SgdStep step{static_cast<float>(config.lr),
                 static_cast<float>(config.momentum),
                 static_cast<float>(config.weightDecay), gradScale};
    UpdateTimer timer(*this);
    return launched(cuda::sgdMomentum(weights, grad, momentum, n, step, copy,
                                      dtypeOf(copyElement), stream_),
                    "sgd_momentum");
  }
  std::string adamw(float *weights, const float *grad, float *m, float *v,
                    int64_t n, const AdamWConfig &config, int64_t step,
                    float gradScale, void *copy, int32_t copyElement) override {
    // The per-step scalars exactly as Optimizers.cpp computes them.
    const double steps = static_cast<double>(step);
    const double correction1 = 1.0 - std::pow(config.beta1, steps);
    const double correction2 = 1.0 - std::pow(config.beta2, steps);
    AdamWStep s;
    s.decay = static_cast<float>(1.0 - config.lr * config.weightDecay);
    s.b1 = static_cast<float>(config.beta1);
    s.b2 = static_cast<float>(config.beta2);
    s.oneMinusB1 = static_cast<float>(1.0 - config.beta1);
    s.oneMinusB2 = static_cast<float>(1.0 - config.beta2);
    s.stepSize = static_cast<float>(config.lr / correction1);
    s.sqrtCorrection2 = static_cast<float>(std::sqrt(correction2));
    s.eps = static_cast<float>(config.epsilon);
    s.gradScale = gradScale;
    UpdateTimer timer(*this);
    return launched(cuda::adamw(weights, grad, m, v, n, s, copy,
                                dtypeOf(copyElement), stream_),
                    "adamw");
  }
  std::string convertFromF32(const float *x, void *y, int32_t element,
                             int64_t n) override {
    return launched(cuda::convertFromF32(dtypeOf(element), x, y, n, stream_),
                    "convert");
  }
  std::string zero(void *data, int64_t bytes) override {
    ZBC_CUDA_TRY(
        cudaMemsetAsync(data, 0, static_cast<size_t>(bytes), stream_));
    return {};
  }
  std::string copy(void *to, const void *from, int64_t bytes) override {
    ZBC_CUDA_TRY(cudaMemcpyAsync(to, from, static_cast<size_t>(bytes),
                                 cudaMemcpyDeviceToDevice, stream_));
    return {};
  }
  std::string addSumOfSquares(const float *grad, int64_t n) override {
    return launched(
        cuda::addSumOfSquares(grad, n, &scalars_->sumOfSquares, stream_),
        "sum_of_squares");
  }
  double takeSumOfSquares() override {
    double sum = 0;
    if (synchronize().empty())
      sum = hostScalars_->sumOfSquares;
    hostScalars_->sumOfSquares = 0;
    cudaMemsetAsync(&scalars_->sumOfSquares, 0, sizeof(double), stream_);
    return sum;
  }

private:
  /// Brackets one optimizer step with the next pair of timing events.
  struct UpdateTimer {
    explicit UpdateTimer(CudaDevice &device) : device(device) {
      timed = device.updatesTimed_ < device.updates_.size() / 2;
      if (timed)
        cudaEventRecord(device.updates_[2 * device.updatesTimed_],
                        device.stream_);
    }
    ~UpdateTimer() {
      if (timed)
        cudaEventRecord(device.updates_[2 * device.updatesTimed_++ + 1],
                        device.stream_);
    }
    CudaDevice &device;
    bool timed;
  };

  /// The compute op running, which a kernel names with a bad index.
  int32_t currentOp() const { return op_; }

  int gpu_;
  char *arena_ = nullptr;
  const zbc_rt_program *program_ = nullptr;
  char *staging_ = nullptr;          // pinned, the data buffers' mirrors
  std::vector<int64_t> stagingAt_;   // per buffer: its mirror's offset
  cudaStream_t stream_ = nullptr;
  cudaEvent_t drained_ = nullptr; // synchronize's mark
  // The copy queue: its stream, the mark it starts each copy after, and
  // per copy op its end and whether it is issued and not yet waited for.
  char *hostArena_ = nullptr; // pinned
  cudaStream_t copyStream_ = nullptr;
  cudaEvent_t copyIssued_ = nullptr;
  std::vector<cudaEvent_t> copied_;
  std::vector<uint8_t> copyState_;
  Gemm gemm_;
  Scalars *scalars_ = nullptr, *hostScalars_ = nullptr;
  std::vector<cudaEvent_t> begins_, ends_;
  std::vector<uint8_t> timed_;
  std::vector<cudaEvent_t> updates_; // per parameter: begin, end
  size_t updatesTimed_ = 0;
  int32_t op_ = -1;
};

} // namespace

Device *createCudaDevice(int localRank, std::string &error) {
  int count = 0;
  cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess || count == 0) {
    error = code == cudaSuccess
                ? "no CUDA device: this machine has no GPU (the CUDA backend "
                  "needs one per rank; compile with --backend cpu to run on "
                  "CPUs)"
                : fmt::format("no CUDA device: cudaGetDeviceCount says {} "
                              "({}); the CUDA backend needs a GPU and its "
                              "driver (compile with --backend cpu to run on "
                              "CPUs)",
                              cudaGetErrorString(code), cudaGetErrorName(code));
    return nullptr;
  }
  int gpu = localRank % count;
  // Before NCCL starts: its communicators belong to the current device.
  if ((code = cudaSetDevice(gpu)) != cudaSuccess) {
    error = cudaFailure(code, "cudaSetDevice", __FILE__, __LINE__);
    return nullptr;
  }
  return new CudaDevice(gpu);
}

cudaStream_t computeStreamOf(Device *device) {
  return static_cast<CudaDevice *>(device)->stream();
}

} // namespace zbc::rt::cuda
