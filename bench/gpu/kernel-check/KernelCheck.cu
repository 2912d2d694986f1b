//===- KernelCheck.cu - the CUDA kernels against the CPU kernels ----------===//
//
// zbc-cuda-kernel-check: runs every function of CudaKernels.h on seeded
// random inputs and compares it with the CPU kernel of the same name
// (runtime/src/cpu/kernels/Kernels.h, the oracle), in fp32 and bf16, at
// small shapes (an odd one included, and one that takes attention's tensor
// core path with S not a multiple of its tiles) and at one realistic shape
// (h 1024, S 512, heads 8); then times linear, linearGradInput,
// linearGradWeight and attention forward/backward at h 4096, S 2048, bf16,
// unmasked and with a row of packed documents.
//
// Packed documents (issue 44): both attention kernels, forward and
// backward, are also checked with document ids, int32 and int64 (rows of
// several documents of different lengths, one of length 1, documents that
// cross the tensor-core tiles, a row that goes on with the previous row's
// last id), and the cross entropy with labels equal to ignore_index (some
// ignored; all ignored, where the loss and every gradient are 0; an
// ignore_index that is a valid class).
// Prints one "PASS"/"FAIL" line per check (and "TIME" lines), exits 1 on any
// FAIL, 2 when it cannot run: no CUDA device, or an argument it does not
// take (it takes none but --help, which prints its usage and exits 0).
//
// bf16 checks give the CPU kernel the bf16-rounded inputs and round its
// results (Note [bf16]), so both sides compute in fp32 from the same values.
//
// The error of a check is normwise: max |gpu - cpu| / max |cpu|, so that
// elements that cancel to ~0 (GEMM and attention outputs) do not dominate.
// Thresholds, and why:
//  - fp32 elementwise (the same float operations, -fmad=false): 1e-6; the
//    expected error is 0 (logf may differ from glibc's by an ulp).
//  - fp32 reductions (layerNorm, column sums, losses): 1e-5: only the
//    summation order differs, ~sqrt(n) eps.
//  - fp32 GEMMs: 2e-5: cuBLASLt's and OpenBLAS's accumulation orders differ
//    (K up to 1024: ~sqrt(K) eps relative to the output's magnitude).
//  - fp32 attention: 2e-5 forward; 1e-4 backward (dS = P (dP - D) cancels,
//    and D is computed as dO . O rather than rowsum(dP P)).
//  - bf16: one bf16 ulp is 2^-8..2^-7 relative: 2^-8 normwise for the
//    elementwise ops (expected: the same bits), 1e-2 (~2 ulps of the
//    largest element) for reductions, GEMMs and the attention forward, 2e-2
//    for the attention backward, whose tensor-core path rounds P and dS to
//    bf16 before the second products (as FlashAttention does).
//  - optimizers: at most 1 ulp on every element (expected: the same bits).
//
//===----------------------------------------------------------------------===//

#include "CudaKernels.h"
#include "Kernels.h"
#include "zbc/contracts/BFloat16.h"
#include "zbc/runtime/KernelTable.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cpu = zbc::rt::cpu;
namespace gpu = zbc::rt::cuda;
using gpu::Dtype;
using gpu::IndexType;

namespace {

#define CHECK_CUDA(call)                                                       \
  do {                                                                         \
    cudaError_t err_ = (call);                                                 \
    if (err_ != cudaSuccess) {                                                 \
      std::fprintf(stderr, "kernel-check: %s:%d: %s: %s\n", __FILE__,          \
                   __LINE__, #call, cudaGetErrorString(err_));                 \
      std::exit(3);                                                            \
    }                                                                          \
  } while (0)

int failures = 0;
cudaStream_t stream = nullptr;
gpu::Gemm *theGemm = nullptr;

/// A device buffer of `bytes`, freed at scope exit.
struct Buffer {
  void *ptr = nullptr;
  explicit Buffer(size_t bytes) {
    CHECK_CUDA(cudaMalloc(&ptr, bytes < 16 ? 16 : bytes));
    CHECK_CUDA(cudaMemset(ptr, 0, bytes < 16 ? 16 : bytes));
  }
  ~Buffer() { cudaFree(ptr); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  template <typename T> T *as() const { return static_cast<T *>(ptr); }
};

const char *name(Dtype dtype) { return dtype == Dtype::F32 ? "f32" : "bf16"; }

std::vector<float> random(std::mt19937 &rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Rounds every element to bf16 for a bf16 check (the values both sides see).
void roundFor(Dtype dtype, std::vector<float> &v) {
  if (dtype == Dtype::BF16)
    for (float &x : v)
      x = zbc::rt::roundToBFloat16(x);
}

Buffer *upload(Dtype dtype, const std::vector<float> &v) {
  auto *buffer = new Buffer(v.size() * gpu::bytesOf(dtype));
  if (dtype == Dtype::F32) {
    CHECK_CUDA(cudaMemcpy(buffer->ptr, v.data(), v.size() * 4,
                          cudaMemcpyHostToDevice));
  } else {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      bits[i] = zbc::rt::toBFloat16(v[i]);
    CHECK_CUDA(cudaMemcpy(buffer->ptr, bits.data(), v.size() * 2,
                          cudaMemcpyHostToDevice));
  }
  return buffer;
}

std::vector<float> download(Dtype dtype, const void *ptr, int64_t n) {
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> v(static_cast<size_t>(n));
  if (dtype == Dtype::F32) {
    CHECK_CUDA(cudaMemcpy(v.data(), ptr, v.size() * 4, cudaMemcpyDeviceToHost));
  } else {
    std::vector<uint16_t> bits(v.size());
    CHECK_CUDA(
        cudaMemcpy(bits.data(), ptr, v.size() * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = zbc::rt::fromBFloat16(bits[i]);
  }
  return v;
}

template <typename I> Buffer *uploadIndices(const std::vector<I> &v) {
  auto *buffer = new Buffer(v.size() * sizeof(I));
  CHECK_CUDA(cudaMemcpy(buffer->ptr, v.data(), v.size() * sizeof(I),
                        cudaMemcpyHostToDevice));
  return buffer;
}

/// Reports max |gpu - cpu| / max |cpu| against `tolerance` (the CPU result
/// rounded to bf16 first for a bf16 check).
void report(const std::string &what, Dtype dtype, cudaError_t launch,
            const std::vector<float> &got, std::vector<float> want,
            double tolerance) {
  roundFor(dtype, want);
  double maxDiff = 0.0, maxRef = 0.0;
  bool finite = true;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i]) && std::isfinite(want[i]))
      finite = false;
    maxDiff = std::max(maxDiff, std::fabs(double(got[i]) - double(want[i])));
    maxRef = std::max(maxRef, std::fabs(double(want[i])));
  }
  double err = maxRef > 0.0 ? maxDiff / maxRef : maxDiff;
  bool pass = launch == cudaSuccess && finite && err <= tolerance;
  if (!pass)
    ++failures;
  std::printf("%s %-44s %-4s err %.3e (tol %.1e)%s%s\n", pass ? "PASS" : "FAIL",
              what.c_str(), name(dtype), err, tolerance,
              launch == cudaSuccess ? "" : " launch: ",
              launch == cudaSuccess ? "" : cudaGetErrorString(launch));
  std::fflush(stdout);
}

/// Distance in units in the last place between two floats.
int64_t ulps(float a, float b) {
  if (a == b)
    return 0;
  if (std::isnan(a) || std::isnan(b))
    return INT64_MAX;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  int64_t la = ia < 0 ? int64_t(INT32_MIN) - ia : ia;
  int64_t lb = ib < 0 ? int64_t(INT32_MIN) - ib : ib;
  return la > lb ? la - lb : lb - la;
}

void reportUlps(const std::string &what, cudaError_t launch,
                const std::vector<float> &got, const std::vector<float> &want,
                int64_t allowed) {
  int64_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, ulps(got[i], want[i]));
  bool pass = launch == cudaSuccess && worst <= allowed;
  if (!pass)
    ++failures;
  std::printf("%s %-44s f32  max %lld ulp (allowed %lld)\n",
              pass ? "PASS" : "FAIL", what.c_str(),
              static_cast<long long>(worst), static_cast<long long>(allowed));
  std::fflush(stdout);
}

struct Shape {
  const char *label;
  int64_t rows, h, out, heads, B, S, vocab, batch;
};

double tolerance(Dtype dtype, double f32, double bf16) {
  return dtype == Dtype::F32 ? f32 : bf16;
}

//===----------------------------------------------------------------------===//
// The op checks of one (shape, dtype)
//===----------------------------------------------------------------------===//

void checkGemms(const Shape &s, Dtype dt, std::mt19937 &rng) {
  const double tol = tolerance(dt, 2e-5, 1e-2);
  const std::string at = std::string(" ") + s.label;
  const int64_t rows = s.rows, in = s.h, out = s.out;
  auto x = random(rng, rows * in, -1, 1), w = random(rng, in * out, -1, 1),
       dy = random(rng, rows * out, -1, 1);
  roundFor(dt, x), roundFor(dt, w), roundFor(dt, dy);
  std::unique_ptr<Buffer> dX(upload(dt, x)), dW(upload(dt, w)),
      dDy(upload(dt, dy));
  Buffer y(rows * out * 4), dx(rows * in * 4), dw(in * out * 4);
  std::vector<float> ref(rows * out), refDx(rows * in), refDw(in * out);

  // Both weight layouts: [in, out] (zbc's) and [out, in] (PyTorch's).
  cudaError_t e;
  for (bool outIn : {false, true}) {
    const std::string layout = outIn ? " [out, in]" : "";
    e = gpu::linear(*theGemm, dt, dX->ptr, dW->ptr, y.ptr, rows, in, out,
                    outIn, stream);
    cpu::linear(x.data(), w.data(), ref.data(), rows, in, out, outIn);
    report("linear" + layout + at, dt, e, download(dt, y.ptr, rows * out), ref,
           tol);

    e = gpu::linearGradInput(*theGemm, dt, dDy->ptr, dW->ptr, dx.ptr, rows, in,
                             out, outIn, stream);
    cpu::linearGradInput(dy.data(), w.data(), refDx.data(), rows, in, out,
                         outIn);
    report("linearGradInput" + layout + at, dt, e,
           download(dt, dx.ptr, rows * in), refDx, tol);

    e = gpu::linearGradWeight(*theGemm, dt, dX->ptr, dDy->ptr, dw.ptr, rows,
                              in, out, outIn, stream);
    cpu::linearGradWeight(x.data(), dy.data(), refDw.data(), rows, in, out,
                          outIn);
    report("linearGradWeight" + layout + at, dt, e,
           download(dt, dw.ptr, in * out), refDw, tol);
  }

  // Batched: a [batch, M, K] @ b [batch, K, N].
  const int64_t batch = s.batch, M = s.S, K = s.h / s.heads + 1, N = s.S + 1;
  auto a = random(rng, batch * M * K, -1, 1), b = random(rng, batch * K * N, -1, 1),
       dc = random(rng, batch * M * N, -1, 1);
  roundFor(dt, a), roundFor(dt, b), roundFor(dt, dc);
  std::unique_ptr<Buffer> dA(upload(dt, a)), dB(upload(dt, b)),
      dDc(upload(dt, dc));
  Buffer c(batch * M * N * 4), da(batch * M * K * 4), db(batch * K * N * 4);
  std::vector<float> refC(batch * M * N), refDa(batch * M * K),
      refDb(batch * K * N);
  e = gpu::matmul(*theGemm, dt, dA->ptr, dB->ptr, c.ptr, batch, M, K, N,
                  stream);
  cpu::matmul(a.data(), b.data(), refC.data(), batch, M, K, N);
  report("matmul" + at, dt, e, download(dt, c.ptr, batch * M * N), refC, tol);
  e = gpu::matmulGradLhs(*theGemm, dt, dDc->ptr, dB->ptr, da.ptr, batch, M, K,
                         N, stream);
  cpu::matmulGradLhs(dc.data(), b.data(), refDa.data(), batch, M, K, N);
  report("matmulGradLhs" + at, dt, e, download(dt, da.ptr, batch * M * K),
         refDa, tol);
  e = gpu::matmulGradRhs(*theGemm, dt, dA->ptr, dDc->ptr, db.ptr, batch, M, K,
                         N, stream);
  cpu::matmulGradRhs(a.data(), dc.data(), refDb.data(), batch, M, K, N);
  report("matmulGradRhs" + at, dt, e, download(dt, db.ptr, batch * K * N),
         refDb, tol);
}

void checkElementwise(const Shape &s, Dtype dt, std::mt19937 &rng) {
  const double tol = tolerance(dt, 1e-6, 1.0 / 256);
  const std::string at = std::string(" ") + s.label;
  const int64_t rows = s.rows, n = s.h, total = rows * n;
  auto x = random(rng, total, -4, 4), x2 = random(rng, total, -1, 1),
       bias = random(rng, n, -1, 1);
  roundFor(dt, x), roundFor(dt, x2), roundFor(dt, bias);
  std::unique_ptr<Buffer> dX(upload(dt, x)), dX2(upload(dt, x2)),
      dBias(upload(dt, bias));
  Buffer y(total * 4);
  std::vector<float> ref(total);

  cudaError_t e = gpu::biasAdd(dt, dX->ptr, dBias->ptr, y.ptr, rows, n, stream);
  cpu::biasAdd(x.data(), bias.data(), ref.data(), rows, n);
  report("biasAdd" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::add(dt, dX->ptr, dX2->ptr, y.ptr, total, stream);
  cpu::add(x.data(), x2.data(), ref.data(), total);
  report("add" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::relu(dt, dX->ptr, y.ptr, total, stream);
  cpu::relu(x.data(), ref.data(), total);
  report("relu" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::gelu(dt, dX->ptr, y.ptr, total, stream);
  cpu::gelu(x.data(), ref.data(), total);
  report("gelu" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::reluGrad(dt, dX2->ptr, dX->ptr, y.ptr, total, stream);
  cpu::reluGrad(x2.data(), x.data(), ref.data(), total);
  report("reluGrad" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::geluGrad(dt, dX2->ptr, dX->ptr, y.ptr, total, stream);
  cpu::geluGrad(x2.data(), x.data(), ref.data(), total);
  report("geluGrad" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  // SwiGLU: gate x, up x2, and dy x2 again (three inputs).
  e = gpu::swiGlu(dt, dX->ptr, dX2->ptr, y.ptr, total, stream);
  cpu::swiGlu(x.data(), x2.data(), ref.data(), total);
  report("swiGlu" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::swiGluGradGate(dt, dX2->ptr, dX->ptr, dX2->ptr, y.ptr, total,
                          stream);
  cpu::swiGluGradGate(x2.data(), x.data(), x2.data(), ref.data(), total);
  report("swiGluGradGate" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::swiGluGradUp(dt, dX2->ptr, dX->ptr, y.ptr, total, stream);
  cpu::swiGluGradUp(x2.data(), x.data(), ref.data(), total);
  report("swiGluGradUp" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::transpose(dt, dX->ptr, y.ptr, rows, n, stream);
  cpu::transpose(x.data(), ref.data(), rows, n);
  report("transpose" + at, dt, e, download(dt, y.ptr, total), ref, 0.0);
  e = gpu::fill(dt, y.ptr, total, 0.37f, stream);
  cpu::fill(ref.data(), total, 0.37f);
  report("fill" + at, dt, e, download(dt, y.ptr, total), ref, 0.0);
  // In place, as the runtime may run it: y = gelu(y).
  CHECK_CUDA(cudaMemcpy(y.ptr, dX->ptr, total * gpu::bytesOf(dt),
                        cudaMemcpyDeviceToDevice));
  e = gpu::gelu(dt, y.ptr, y.ptr, total, stream);
  cpu::gelu(x.data(), ref.data(), total);
  report("gelu in place" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  // Misaligned by one element: the scalar paths.
  if (total > 2) {
    e = gpu::add(dt, static_cast<char *>(dX->ptr) + gpu::bytesOf(dt),
                 static_cast<char *>(dX2->ptr) + gpu::bytesOf(dt), y.ptr,
                 total - 1, stream);
    cpu::add(x.data() + 1, x2.data() + 1, ref.data(), total - 1);
    report("add misaligned" + at, dt, e, download(dt, y.ptr, total - 1),
           std::vector<float>(ref.begin(), ref.begin() + total - 1), tol);
  }

  // accumulate (acc fp32), convertFromF32, addScalar.
  auto acc = random(rng, total, -1, 1);
  std::unique_ptr<Buffer> dAcc(upload(Dtype::F32, acc));
  e = gpu::accumulate(dAcc->as<float>(), dt, dX->ptr, total, stream);
  std::vector<float> refAcc = acc;
  cpu::accumulate(refAcc.data(), x.data(), total);
  report("accumulate" + at, Dtype::F32, e,
         download(Dtype::F32, dAcc->ptr, total), refAcc, 0.0);
  e = gpu::convertFromF32(dt, dAcc->as<float>(), y.ptr, total, stream);
  report("convertFromF32" + at, dt, e, download(dt, y.ptr, total), refAcc, 0.0);
  std::unique_ptr<Buffer> dSum(upload(Dtype::F32, {1.5f}));
  // Weighted as a microbatch's loss is (Note [Loss over real tokens]).
  e = gpu::addScalar(dSum->as<float>(), dt, dX->ptr, 0.75f, stream);
  report("addScalar" + at, Dtype::F32, e, download(Dtype::F32, dSum->ptr, 1),
         {static_cast<float>(1.5 + double(0.75f * x[0]))}, 0.0);
  Buffer dSq(8);
  double start = 0.25;
  CHECK_CUDA(cudaMemcpy(dSq.ptr, &start, 8, cudaMemcpyHostToDevice));
  e = gpu::addSumOfSquares(dAcc->as<float>(), total, dSq.as<double>(), stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  double got = 0.0, want = start;
  CHECK_CUDA(cudaMemcpy(&got, dSq.ptr, 8, cudaMemcpyDeviceToHost));
  for (float v : refAcc)
    want += double(v * v);
  report("addSumOfSquares" + at, Dtype::F32, e, {float(got - start)},
         {float(want - start)}, 1e-6);
}

void checkNormalization(const Shape &s, Dtype dt, std::mt19937 &rng) {
  const double tol = tolerance(dt, 1e-5, 1e-2);
  const std::string at = std::string(" ") + s.label;
  const int64_t rows = s.rows, n = s.h, total = rows * n;
  const float eps = 1e-5f;
  auto x = random(rng, total, -2, 3), dy = random(rng, total, -1, 1),
       gamma = random(rng, n, 0.5f, 1.5f), beta = random(rng, n, -1, 1);
  for (int64_t i = 0; i < total; ++i) // rows of mean ~ 10: the shift matters
    x[i] += 10.0f;
  roundFor(dt, x), roundFor(dt, dy), roundFor(dt, gamma), roundFor(dt, beta);
  std::unique_ptr<Buffer> dX(upload(dt, x)), dDy(upload(dt, dy)),
      dG(upload(dt, gamma)), dB(upload(dt, beta));
  Buffer y(total * 4), col(n * 4);
  std::vector<float> ref(total), refCol(n);
  cudaError_t e = gpu::layerNorm(dt, dX->ptr, dG->ptr, dB->ptr, y.ptr, rows, n,
                                 eps, stream);
  cpu::layerNorm(x.data(), gamma.data(), beta.data(), ref.data(), rows, n, eps);
  report("layerNorm" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::layerNormGradInput(dt, dDy->ptr, dX->ptr, dG->ptr, y.ptr, rows, n,
                              eps, stream);
  cpu::layerNormGradInput(dy.data(), x.data(), gamma.data(), ref.data(), rows,
                          n, eps);
  report("layerNormGradInput" + at, dt, e, download(dt, y.ptr, total), ref,
         tol);
  e = gpu::layerNormGradGamma(dt, dDy->ptr, dX->ptr, col.ptr, rows, n, eps,
                              stream);
  cpu::layerNormGradGamma(dy.data(), x.data(), refCol.data(), rows, n, eps);
  report("layerNormGradGamma" + at, dt, e, download(dt, col.ptr, n), refCol,
         tol);
  e = gpu::biasGrad(dt, dDy->ptr, col.ptr, rows, n, stream);
  cpu::biasGrad(dy.data(), refCol.data(), rows, n);
  report("biasGrad" + at, dt, e, download(dt, col.ptr, n), refCol, tol);
  // RMSNorm on the same rows (gamma as its weight): not centred, so the
  // mean ~ 10 is part of every square.
  e = gpu::rmsNorm(dt, dX->ptr, dG->ptr, y.ptr, rows, n, eps, stream);
  cpu::rmsNorm(x.data(), gamma.data(), ref.data(), rows, n, eps);
  report("rmsNorm" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::rmsNormGradInput(dt, dDy->ptr, dX->ptr, dG->ptr, y.ptr, rows, n,
                            eps, stream);
  cpu::rmsNormGradInput(dy.data(), x.data(), gamma.data(), ref.data(), rows, n,
                        eps);
  report("rmsNormGradInput" + at, dt, e, download(dt, y.ptr, total), ref, tol);
  e = gpu::rmsNormGradWeight(dt, dDy->ptr, dX->ptr, col.ptr, rows, n, eps,
                             stream);
  cpu::rmsNormGradWeight(dy.data(), x.data(), refCol.data(), rows, n, eps);
  report("rmsNormGradWeight" + at, dt, e, download(dt, col.ptr, n), refCol,
         tol);
}

template <typename I>
void checkIndexOps(const Shape &s, Dtype dt, std::mt19937 &rng) {
  const IndexType it = sizeof(I) == 4 ? IndexType::I32 : IndexType::I64;
  const std::string at = std::string(" ") + s.label +
                         (sizeof(I) == 4 ? " i32" : " i64");
  const double tolR = tolerance(dt, 1e-5, 1e-2);
  const int64_t count = s.rows, vocab = s.vocab, h = s.h;
  std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
  std::vector<I> idx(count);
  for (I &v : idx)
    v = static_cast<I>(pick(rng));
  if (count > 2)
    idx[count - 1] = idx[0]; // a duplicate for embeddingGrad
  auto table = random(rng, vocab * h, -1, 1), dy = random(rng, count * h, -1, 1);
  roundFor(dt, table), roundFor(dt, dy);
  std::unique_ptr<Buffer> dIdx(uploadIndices(idx)), dT(upload(dt, table)),
      dDy(upload(dt, dy));
  Buffer err(sizeof(gpu::DeviceIndexError)), y(count * h * 4),
      dtab(vocab * h * 4);
  auto *error = err.as<gpu::DeviceIndexError>();
  std::vector<float> ref(count * h), refTab(vocab * h);
  cpu::IndexError cpuError;

  cudaError_t e = gpu::embedding(dt, it, dIdx->ptr, dT->ptr, y.ptr, count,
                                 vocab, h, error, 7, stream);
  cpu::embedding(idx.data(), table.data(), ref.data(), count, vocab, h,
                 &cpuError);
  report("embedding" + at, dt, e, download(dt, y.ptr, count * h), ref, 0.0);
  e = gpu::embeddingGrad(dt, it, dIdx->ptr, dDy->ptr, dtab.ptr, count, vocab, h,
                         error, 7, stream);
  cpu::embeddingGrad(idx.data(), dy.data(), refTab.data(), count, vocab, h,
                     &cpuError);
  report("embeddingGrad" + at, dt, e, download(dt, dtab.ptr, vocab * h),
         refTab, tolerance(dt, 0.0, 1.0 / 256));

  // RoPE on `heads` heads of h / heads features at positions up to 8191,
  // with Llama 3's scaling where the row count is even; the gradient
  // rotates back.
  {
    const int64_t headDim = h / s.heads;
    std::uniform_int_distribution<int64_t> position(0, 8191);
    std::vector<I> positions(count);
    for (I &p : positions)
      p = static_cast<I>(position(rng));
    zbc::rt::math::RopeScaling scaling;
    scaling.theta = 500000.0;
    if (s.rows % 2 == 0) {
      scaling.factor = 8.0, scaling.low = 1.0, scaling.high = 4.0;
      scaling.original = 8192.0;
    }
    std::unique_ptr<Buffer> dPos(uploadIndices(positions));
    for (bool inverse : {false, true}) {
      e = gpu::rope(dt, it, dDy->ptr, dPos->ptr, y.ptr, count, h, headDim,
                    scaling, inverse, stream);
      cpu::rope(dy.data(), positions.data(), ref.data(), count, h, headDim,
                scaling, inverse);
      report((inverse ? "ropeGrad" : "rope") + at, dt, e,
             download(dt, y.ptr, count * h), ref, tolerance(dt, 1e-6, 1e-2));
    }
  }

  // Cross entropy over `vocab` classes, labels idx (none ignored), then
  // with ignored labels.
  const int64_t rows = count, classes = vocab;
  auto logits = random(rng, rows * classes, -3, 3);
  roundFor(dt, logits);
  std::unique_ptr<Buffer> dL(upload(dt, logits)), dLoss(upload(dt, {0.0f})),
      dScale(upload(dt, {0.75f}));
  Buffer dlog(rows * classes * 4), counted(sizeof(int64_t));
  const float dloss = 0.75f;
  auto checkLoss = [&](const std::string &what, const std::vector<I> &labels,
                       int64_t ignoreIndex) {
    std::unique_ptr<Buffer> dLabels(uploadIndices(labels));
    float refLoss = 0.0f;
    cudaError_t launch = gpu::crossEntropy(dt, it, dL->ptr, dLabels->ptr,
                                           dLoss->ptr, rows, classes,
                                           ignoreIndex, error, 7, stream);
    cpu::crossEntropy(logits.data(), labels.data(), &refLoss, rows, classes,
                      ignoreIndex, &cpuError);
    report("crossEntropy" + what + at, dt, launch,
           download(dt, dLoss->ptr, 1), {refLoss}, tolR);
    // NaN everywhere first: every row, ignored ones too, must be written.
    std::vector<float> refDlog(rows * classes);
    CHECK_CUDA(cudaMemset(dlog.ptr, 0xff, rows * classes * gpu::bytesOf(dt)));
    launch = gpu::crossEntropyGrad(dt, it, dL->ptr, dLabels->ptr, dScale->ptr,
                                   dlog.ptr, rows, classes, ignoreIndex,
                                   counted.as<int64_t>(), error, 7, stream);
    cpu::crossEntropyGrad(logits.data(), labels.data(), &dloss,
                          refDlog.data(), rows, classes, ignoreIndex,
                          &cpuError);
    report("crossEntropyGrad" + what + at, dt, launch,
           download(dt, dlog.ptr, rows * classes), refDlog, tolR);
  };
  constexpr int64_t kIgnore = -100; // PyTorch's and Hugging Face's
  checkLoss("", idx, kIgnore);
  {
    // Every third label ignored (the first included).
    std::vector<I> some = idx;
    for (int64_t r = 0; r < rows; r += 3)
      some[r] = static_cast<I>(kIgnore);
    checkLoss(" some ignored", some, kIgnore);
    // Every label ignored: loss 0 and a zero gradient, no index error.
    checkLoss(" all ignored", std::vector<I>(rows, static_cast<I>(kIgnore)),
              kIgnore);
    // An ignore_index that is a valid class: its rows are skipped, not
    // read as labels.
    checkLoss(" ignoring a class", idx, static_cast<int64_t>(idx[0]));
  }

  // The output layer over vocabulary shards (Note [Softmax over vocabulary
  // shards]): columns [first, first + columns) of the same logits, every
  // third label ignored; the GPU's statistics against the CPU's, then the
  // loss and the shard's gradient from the CPU's statistics merged with
  // the other shard's (the GPU's merge is the collective's, not here).
  {
    const int64_t first = classes / 3, columns = classes - first;
    std::vector<float> shard(rows * columns), rest(rows * first);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < classes; ++c)
        (c < first ? rest[r * first + c]
                   : shard[r * columns + c - first]) = logits[r * classes + c];
    std::vector<I> some = idx;
    for (int64_t r = 0; r < rows; r += 3)
      some[r] = static_cast<I>(kIgnore);
    std::unique_ptr<Buffer> dShard(upload(dt, shard)),
        dLabels(uploadIndices(some));
    Buffer dStats(4 * rows * 4);
    std::vector<float> stats(4 * rows), other(4 * rows);
    cudaError_t launch =
        gpu::vocabStats(dt, it, dShard->ptr, dLabels->ptr, dStats.ptr, rows,
                        columns, first, classes, kIgnore, error, 7, stream);
    cpu::vocabShardStats(shard.data(), some.data(), stats.data(),
                         stats.data() + rows, stats.data() + 2 * rows, rows,
                         columns, first, classes, kIgnore, &cpuError);
    std::copy_n(stats.data(), rows, stats.data() + 3 * rows);
    report("vocabStats" + at, dt, launch, download(dt, dStats.ptr, 4 * rows),
           stats, tolR);
    // Merge with the shard [0, first), as zb.reduce softmax does.
    cpu::vocabShardStats(rest.data(), some.data(), other.data(),
                         other.data() + rows, other.data() + 2 * rows, rows,
                         first, 0, classes, kIgnore, &cpuError);
    std::vector<float> merged = stats, term(rows);
    for (int64_t r = 0; r < rows; ++r)
      merged[3 * rows + r] = std::max(stats[r], other[r]);
    cpu::vocabShardSums(stats.data(), stats.data() + rows,
                        merged.data() + 3 * rows, merged.data() + rows, rows);
    cpu::vocabShardSums(other.data(), other.data() + rows,
                        merged.data() + 3 * rows, term.data(), rows);
    for (int64_t r = 0; r < rows; ++r) {
      merged[rows + r] += term[r];
      merged[2 * rows + r] += other[2 * rows + r];
    }
    roundFor(dt, merged);
    std::unique_ptr<Buffer> dMerged(upload(dt, merged));
    float refLoss = 0.0f;
    launch = gpu::vocabLoss(dt, it, dMerged->ptr, dLabels->ptr, dLoss->ptr,
                            rows, classes, kIgnore, error, 7, stream);
    cpu::vocabShardLoss(merged.data() + 3 * rows, merged.data() + rows,
                        merged.data() + 2 * rows, some.data(), &refLoss, rows,
                        classes, kIgnore, &cpuError);
    report("vocabLoss" + at, dt, launch, download(dt, dLoss->ptr, 1),
           {refLoss}, tolR);
    std::vector<float> refGrad(rows * columns);
    CHECK_CUDA(cudaMemset(dlog.ptr, 0xff, rows * columns * gpu::bytesOf(dt)));
    launch = gpu::vocabGrad(dt, it, dShard->ptr, dLabels->ptr, dMerged->ptr,
                            dScale->ptr, dlog.ptr, rows, columns, first,
                            classes, kIgnore, counted.as<int64_t>(), error, 7,
                            stream);
    cpu::vocabShardGrad(shard.data(), some.data(), merged.data() + 3 * rows,
                        merged.data() + rows, &dloss, refGrad.data(), rows,
                        columns, first, classes, kIgnore, &cpuError);
    report("vocabGrad" + at, dt, launch,
           download(dt, dlog.ptr, rows * columns), refGrad, tolR);
  }

  // No error was recorded by any of the above.
  gpu::DeviceIndexError host{};
  CHECK_CUDA(cudaMemcpy(&host, error, sizeof host, cudaMemcpyDeviceToHost));
  bool clean = host.found == 0;
  if (!clean)
    ++failures;
  std::printf("%s %-44s %-4s found %d\n", clean ? "PASS" : "FAIL",
              ("no index error" + at).c_str(), name(dt), host.found);

  // A bad label (and a bad embedding index): recorded, clamped, no fault.
  if (rows >= 2) {
    std::vector<I> bad = idx;
    bad[1] = static_cast<I>(classes + 5);
    std::unique_ptr<Buffer> dBad(uploadIndices(bad));
    CHECK_CUDA(cudaMemset(error, 0, sizeof(gpu::DeviceIndexError)));
    e = gpu::crossEntropy(dt, it, dL->ptr, dBad->ptr, dLoss->ptr, rows, classes,
                          kIgnore, error, 42, stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaMemcpy(&host, error, sizeof host, cudaMemcpyDeviceToHost));
    bool ok = e == cudaSuccess && host.found == 1 && host.op == 42 &&
              host.position == 1 && host.value == classes + 5 &&
              host.bound == classes;
    bad[1] = -3;
    std::unique_ptr<Buffer> dBad2(uploadIndices(bad));
    CHECK_CUDA(cudaMemset(error, 0, sizeof(gpu::DeviceIndexError)));
    e = gpu::embedding(dt, it, dBad2->ptr, dT->ptr, y.ptr, count, vocab, h,
                       error, 43, stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    gpu::DeviceIndexError host2{};
    CHECK_CUDA(cudaMemcpy(&host2, error, sizeof host2, cudaMemcpyDeviceToHost));
    ok = ok && e == cudaSuccess && host2.found == 1 && host2.op == 43 &&
         host2.position == 1 && host2.value == -3 && host2.bound == vocab;
    CHECK_CUDA(cudaMemset(error, 0, sizeof(gpu::DeviceIndexError)));
    if (!ok)
      ++failures;
    std::printf("%s %-44s %-4s op %d position %lld value %lld bound %lld; "
                "op %d position %lld value %lld bound %lld\n",
                ok ? "PASS" : "FAIL", ("index error recorded" + at).c_str(),
                name(dt), host.op, (long long)host.position,
                (long long)host.value, (long long)host.bound, host2.op,
                (long long)host2.position, (long long)host2.value,
                (long long)host2.bound);
  }
}

/// The document ids of a masked attention check (Note [Document masks]),
/// on the host for the CPU kernel and on the device for the GPU's; none by
/// default.
struct DocumentMask {
  cpu::DocumentIds host;
  gpu::Documents device;
  std::string label; // " documents i32"
};

/// Document ids [B, S], non-decreasing along each row: row 0 holds a
/// document of length 1 first and another as its third, the others random
/// lengths in [1, max(2, S / 3)] (several, of different lengths, crossing
/// the 64-row tiles where S allows); each later row goes on with the id
/// the previous row ended with (a document split across rows, whose parts
/// are attended apart). Ids start at 7 and step by 1 to 3.
template <typename I>
std::vector<I> documentIds(int64_t B, int64_t S, std::mt19937 &rng) {
  std::uniform_int_distribution<int64_t> length(1, std::max<int64_t>(2, S / 3));
  std::vector<I> ids(static_cast<size_t>(B * S));
  int64_t id = 7;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0, piece = 0; s < S; ++piece) {
      const int64_t n = b == 0 && (piece == 0 || piece == 2) ? 1 : length(rng);
      for (int64_t t = 0; t < n && s < S; ++t, ++s)
        ids[b * S + s] = static_cast<I>(id);
      if (s < S)
        id += 1 + piece % 3;
    }
  return ids;
}

void checkAttention(const Shape &s, Dtype dt, std::mt19937 &rng,
                    const DocumentMask &mask = {}) {
  const std::string at = mask.label + " " + s.label;
  const int64_t B = s.B, S = s.S, H = s.h, heads = s.heads;
  auto qkv = random(rng, B * S * 3 * H, -1, 1),
       dout = random(rng, B * S * H, -1, 1);
  roundFor(dt, qkv), roundFor(dt, dout);
  std::unique_ptr<Buffer> dQkv(upload(dt, qkv)), dDout(upload(dt, dout));
  Buffer out(B * S * H * 4), dqkv(B * S * 3 * H * 4);
  // The kernel table's workspaces (KernelTable.h), as the runtime passes them.
  const int64_t fwdBytes = zbc_rt_causal_attention_workspace(S, gpu::bytesOf(dt)),
                wsBytes =
                    zbc_rt_causal_attention_grad_workspace(S, gpu::bytesOf(dt));
  Buffer ws(wsBytes);
  std::vector<float> cpuWs(cpu::causalAttentionGradWorkspace(S));
  std::vector<float> ref(B * S * H), refD(B * S * 3 * H);
  CHECK_CUDA(cudaMemset(dqkv.ptr, 0xff, B * S * 3 * H * gpu::bytesOf(dt)));
  CHECK_CUDA(cudaMemset(out.ptr, 0xff, B * S * H * gpu::bytesOf(dt)));
  cudaError_t e = gpu::causalAttention(dt, dQkv->ptr, mask.device, out.ptr,
                                       ws.ptr, fwdBytes, B, S, H, heads,
                                       stream);
  cpu::causalAttention(qkv.data(), ref.data(), cpuWs.data(), B, S, H, heads,
                       mask.host);
  report("causalAttention" + at, dt, e, download(dt, out.ptr, B * S * H), ref,
         tolerance(dt, 2e-5, 1e-2));
  e = gpu::causalAttentionGrad(dt, dDout->ptr, dQkv->ptr, mask.device,
                               dqkv.ptr, ws.ptr, wsBytes, B, S, H, heads,
                               stream);
  cpu::causalAttentionGrad(dout.data(), qkv.data(), refD.data(), cpuWs.data(),
                           B, S, H, heads, mask.host);
  report("causalAttentionGrad" + at, dt, e,
         download(dt, dqkv.ptr, B * S * 3 * H), refD,
         tolerance(dt, 1e-4, 2e-2));
}

//===----------------------------------------------------------------------===//
// Optimizers: the host's per-step scalars as Optimizers.cpp computes them
//===----------------------------------------------------------------------===//

/// zb.attention on separate q, k and v, with kv heads that divide the
/// heads (multi-query where heads is odd, groups of two otherwise).
void checkGroupedAttention(const Shape &s, Dtype dt, std::mt19937 &rng,
                           const DocumentMask &mask = {}) {
  const int64_t B = s.B, S = s.S, heads = s.heads, d = s.h / s.heads;
  const int64_t kvHeads = heads % 2 == 0 ? heads / 2 : 1;
  const std::string at = mask.label + " " + s.label + " kv " +
                         std::to_string(kvHeads);
  const int64_t H = heads * d, KV = kvHeads * d;
  auto q = random(rng, B * S * H, -1, 1), k = random(rng, B * S * KV, -1, 1),
       v = random(rng, B * S * KV, -1, 1), dout = random(rng, B * S * H, -1, 1);
  roundFor(dt, q), roundFor(dt, k), roundFor(dt, v), roundFor(dt, dout);
  std::unique_ptr<Buffer> dQ(upload(dt, q)), dK(upload(dt, k)),
      dV(upload(dt, v)), dDout(upload(dt, dout));
  Buffer out(B * S * H * 4), gq(B * S * H * 4), gk(B * S * KV * 4),
      gv(B * S * KV * 4);
  // The kernel table's workspaces (KernelTable.h).
  const int64_t e = gpu::bytesOf(dt);
  const int64_t fwdBytes = zbc_rt_attention_workspace(B, S, heads, d, e),
                gradBytes = zbc_rt_attention_grad_workspace(B, S, heads, d, e);
  Buffer ws(gradBytes);
  std::vector<float> cpuWs(cpu::causalAttentionGradWorkspace(S));
  std::vector<float> ref(B * S * H), refDq(B * S * H), refDk(B * S * KV),
      refDv(B * S * KV);
  CHECK_CUDA(cudaMemset(out.ptr, 0xff, B * S * H * gpu::bytesOf(dt)));
  cudaError_t err = gpu::attention(dt, dQ->ptr, dK->ptr, dV->ptr, mask.device,
                                   out.ptr, ws.ptr, fwdBytes, B, S, heads,
                                   kvHeads, d, stream);
  cpu::attention(q.data(), k.data(), v.data(), ref.data(), cpuWs.data(), B, S,
                 heads, kvHeads, d, mask.host);
  report("attention" + at, dt, err, download(dt, out.ptr, B * S * H), ref,
         tolerance(dt, 2e-5, 1e-2));
  err = gpu::attentionGrad(dt, dDout->ptr, dQ->ptr, dK->ptr, dV->ptr,
                           mask.device, gq.ptr, gk.ptr, gv.ptr, ws.ptr,
                           gradBytes, B, S, heads, kvHeads, d, stream);
  cpu::attentionGrad(dout.data(), q.data(), k.data(), v.data(), refDq.data(),
                     refDk.data(), refDv.data(), cpuWs.data(), B, S, heads,
                     kvHeads, d, mask.host);
  const double tol = tolerance(dt, 1e-4, 2e-2);
  report("attentionGrad dq" + at, dt, err, download(dt, gq.ptr, B * S * H),
         refDq, tol);
  report("attentionGrad dk" + at, dt, err, download(dt, gk.ptr, B * S * KV),
         refDk, tol);
  report("attentionGrad dv" + at, dt, err, download(dt, gv.ptr, B * S * KV),
         refDv, tol);
}

/// Both attention kernels, forward and backward, under documentIds<I>.
template <typename I>
void checkMaskedAttention(const Shape &s, Dtype dt, std::mt19937 &rng) {
  const std::vector<I> ids = documentIds<I>(s.B, s.S, rng);
  std::unique_ptr<Buffer> dIds(uploadIndices(ids));
  DocumentMask mask{
      {ids.data(), sizeof(I) == 8},
      {dIds->ptr, sizeof(I) == 8 ? IndexType::I64 : IndexType::I32},
      sizeof(I) == 8 ? " documents i64" : " documents i32"};
  checkAttention(s, dt, rng, mask);
  checkGroupedAttention(s, dt, rng, mask);
}

void checkOptimizers(std::mt19937 &rng) {
  const int64_t n = 1003;
  auto w = random(rng, n, -1, 1), g = random(rng, n, -1, 1),
       m = random(rng, n, -0.1f, 0.1f), v = random(rng, n, 0.0f, 0.01f);
  const float gradScale = 0.5f;
  for (double wd : {0.0, 0.01}) {
    cpu::SgdConfig config;
    config.weightDecay = wd;
    std::unique_ptr<Buffer> dW(upload(Dtype::F32, w)), dG(upload(Dtype::F32, g)),
        dM(upload(Dtype::F32, m));
    Buffer copy(n * 2);
    gpu::SgdStep step{float(config.lr), float(config.momentum),
                      float(config.weightDecay), gradScale};
    cudaError_t e = gpu::sgdMomentum(dW->as<float>(), dG->as<float>(),
                                     dM->as<float>(), n, step, copy.ptr,
                                     Dtype::BF16, stream);
    std::vector<float> rw = w, rm = m;
    cpu::sgdMomentum(rw.data(), g.data(), rm.data(), n, config, gradScale);
    std::string tag = wd == 0.0 ? "" : " wd";
    reportUlps("sgdMomentum weights" + tag, e, download(Dtype::F32, dW->ptr, n),
               rw, 1);
    reportUlps("sgdMomentum momentum" + tag, e,
               download(Dtype::F32, dM->ptr, n), rm, 1);
    std::vector<float> rc = rw;
    roundFor(Dtype::BF16, rc);
    reportUlps("sgdMomentum bf16 copy" + tag, e,
               download(Dtype::BF16, copy.ptr, n), rc, 0);
  }
  for (int64_t stepNo : {1, 7}) {
    cpu::AdamWConfig config;
    const double steps = double(stepNo);
    const double correction1 = 1.0 - std::pow(config.beta1, steps);
    const double correction2 = 1.0 - std::pow(config.beta2, steps);
    gpu::AdamWStep step{float(1.0 - config.lr * config.weightDecay),
                        float(config.beta1),
                        float(config.beta2),
                        float(1.0 - config.beta1),
                        float(1.0 - config.beta2),
                        float(config.lr / correction1),
                        float(std::sqrt(correction2)),
                        float(config.epsilon),
                        gradScale};
    std::unique_ptr<Buffer> dW(upload(Dtype::F32, w)), dG(upload(Dtype::F32, g)),
        dM(upload(Dtype::F32, m)), dV(upload(Dtype::F32, v));
    Buffer copy(n * 4);
    cudaError_t e = gpu::adamw(dW->as<float>(), dG->as<float>(),
                               dM->as<float>(), dV->as<float>(), n, step,
                               copy.ptr, Dtype::F32, stream);
    std::vector<float> rw = w, rm = m, rv = v;
    cpu::adamw(rw.data(), g.data(), rm.data(), rv.data(), n, config, stepNo,
               gradScale);
    std::string tag = " step " + std::to_string(stepNo);
    reportUlps("adamw weights" + tag, e, download(Dtype::F32, dW->ptr, n), rw,
               1);
    reportUlps("adamw m" + tag, e, download(Dtype::F32, dM->ptr, n), rm, 1);
    reportUlps("adamw v" + tag, e, download(Dtype::F32, dV->ptr, n), rv, 1);
    reportUlps("adamw f32 copy" + tag, e, download(Dtype::F32, copy.ptr, n),
               rw, 1);
  }
}

//===----------------------------------------------------------------------===//
// Timing at the acceptance shape
//===----------------------------------------------------------------------===//

template <typename F> double timeMs(F &&launch, int iterations = 20) {
  for (int i = 0; i < 3; ++i)
    CHECK_CUDA(launch());
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iterations; ++i)
    CHECK_CUDA(launch());
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iterations;
}

void printTime(const char *what, double ms, double flops) {
  std::printf("TIME %-44s %8.3f ms %7.1f TFLOP/s\n", what, ms,
              flops / (ms * 1e-3) / 1e12);
  std::fflush(stdout);
}

void timeLayer() {
  const Dtype dt = Dtype::BF16;
  const int64_t h = 4096, S = 2048, heads = 32, rows = S;
  std::mt19937 rng(7);
  for (int64_t out : {3 * h, h, 4 * h}) {
    const int64_t in = h;
    auto x = random(rng, rows * in, -1, 1), w = random(rng, in * out, -1, 1),
         dy = random(rng, rows * out, -1, 1);
    std::unique_ptr<Buffer> dX(upload(dt, x)), dW(upload(dt, w)),
        dDy(upload(dt, dy));
    Buffer y(rows * out * 2), dx(rows * in * 2), dw(in * out * 2);
    const double flops = 2.0 * rows * in * out;
    char label[96];
    std::snprintf(label, sizeof label, "linear %lldx%lldx%lld", (long long)rows,
                  (long long)in, (long long)out);
    printTime(label, timeMs([&] {
                return gpu::linear(*theGemm, dt, dX->ptr, dW->ptr, y.ptr, rows,
                                   in, out, false, stream);
              }),
              flops);
    std::snprintf(label, sizeof label, "linearGradInput %lldx%lldx%lld",
                  (long long)rows, (long long)in, (long long)out);
    printTime(label, timeMs([&] {
                return gpu::linearGradInput(*theGemm, dt, dDy->ptr, dW->ptr,
                                            dx.ptr, rows, in, out, false,
                                            stream);
              }),
              flops);
    std::snprintf(label, sizeof label, "linearGradWeight %lldx%lldx%lld",
                  (long long)rows, (long long)in, (long long)out);
    printTime(label, timeMs([&] {
                return gpu::linearGradWeight(*theGemm, dt, dX->ptr, dDy->ptr,
                                             dw.ptr, rows, in, out, false,
                                             stream);
              }),
              flops);
  }
  auto qkv = random(rng, S * 3 * h, -1, 1), dout = random(rng, S * h, -1, 1);
  std::unique_ptr<Buffer> dQkv(upload(dt, qkv)), dDout(upload(dt, dout));
  const int64_t fwdBytes = zbc_rt_causal_attention_workspace(S, 2),
                gradBytes = zbc_rt_causal_attention_grad_workspace(S, 2);
  Buffer out(S * h * 2), dqkv(S * 3 * h * 2), ws(gradBytes);
  // Causal: half the S x S products, 2 GEMMs forward, 5 backward (dQ, dK,
  // dV, dP, and S recomputed; this implementation runs 7).
  const double gemmFlops = 2.0 * S * S * (h / heads) * heads / 2;
  const double forwardMs = timeMs([&] {
    return gpu::causalAttention(dt, dQkv->ptr, {}, out.ptr, ws.ptr, fwdBytes,
                                1, S, h, heads, stream);
  });
  printTime("causalAttention B1 S2048 H4096 heads32", forwardMs,
            2 * gemmFlops);
  const double backwardMs = timeMs([&] {
    return gpu::causalAttentionGrad(dt, dDout->ptr, dQkv->ptr, {}, dqkv.ptr,
                                    ws.ptr, gradBytes, 1, S, h, heads, stream);
  });
  printTime("causalAttentionGrad B1 S2048 H4096 heads32", backwardMs,
            5 * gemmFlops);

  // The same row packed with documents of long-tailed lengths (lognormal,
  // mean S / 8, the last one cut to fit): the work is the sum of the
  // squared lengths (Note [Document runs on the GPU]), the TFLOP/s count
  // only the pairs attended, and the time against the unmasked row should
  // follow sum L^2 / S^2.
  std::lognormal_distribution<double> lengths(std::log(S / 8.0) - 0.5, 1.0);
  std::vector<int32_t> ids(S);
  double squares = 0.0;
  int64_t documents = 0;
  for (int64_t s = 0; s < S; ++documents) {
    int64_t n = std::max<int64_t>(1, std::llround(lengths(rng)));
    n = std::min(n, S - s);
    for (int64_t t = 0; t < n; ++t)
      ids[s + t] = static_cast<int32_t>(documents);
    squares += double(n) * double(n);
    s += n;
  }
  std::unique_ptr<Buffer> dIds(uploadIndices(ids));
  const gpu::Documents packed{dIds->ptr, IndexType::I32};
  const double share = squares / (double(S) * double(S));
  char label[96];
  std::snprintf(label, sizeof label, "causalAttention %lld documents",
                static_cast<long long>(documents));
  const double packedForwardMs = timeMs([&] {
    return gpu::causalAttention(dt, dQkv->ptr, packed, out.ptr, ws.ptr,
                                fwdBytes, 1, S, h, heads, stream);
  });
  printTime(label, packedForwardMs, 2 * gemmFlops * share);
  std::snprintf(label, sizeof label, "causalAttentionGrad %lld documents",
                static_cast<long long>(documents));
  const double packedBackwardMs = timeMs([&] {
    return gpu::causalAttentionGrad(dt, dDout->ptr, dQkv->ptr, packed,
                                    dqkv.ptr, ws.ptr, gradBytes, 1, S, h,
                                    heads, stream);
  });
  printTime(label, packedBackwardMs, 5 * gemmFlops * share);
  std::printf("TIME documents: sum L^2 / S^2 = %.3f; time packed / unmasked "
              "= %.3f forward, %.3f backward\n",
              share, packedForwardMs / forwardMs, packedBackwardMs / backwardMs);
  std::fflush(stdout);
}

/// What --help prints: it answers before looking for a device, so that it
/// reads the same on a machine without one.
void printUsage(std::FILE *to) {
  std::fprintf(to,
               "usage: zbc-cuda-kernel-check [--help]\n"
               "Runs every CUDA kernel of the zbc runtime on seeded random "
               "inputs against\n"
               "the CPU kernel of the same name (fp32 and bf16, small and "
               "realistic shapes),\n"
               "then times the layer's GEMMs and attention at h 4096, S "
               "2048, bf16\n"
               "(attention also on a row of packed documents).\n"
               "Prints one PASS/FAIL line per check and TIME lines; exits 0 "
               "when every\n"
               "check passes, 1 on any FAIL, 2 when it cannot run (no CUDA "
               "device, or an\n"
               "argument it does not take).\n");
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      printUsage(stdout);
      return 0;
    }
    std::fprintf(stderr,
                 "kernel-check: error: unknown argument '%s' (see "
                 "zbc-cuda-kernel-check --help)\n",
                 argv[i]);
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "kernel-check: no CUDA device\n");
    return 2;
  }
  CHECK_CUDA(cudaStreamCreate(&stream));
  gpu::Gemm gemm;
  CHECK_CUDA(gemm.init(32 << 20));
  theGemm = &gemm;

  const Shape shapes[] = {
      // label, rows, h, out, heads, B, S, vocab, batch
      {"small", 6, 16, 16, 2, 2, 8, 11, 2},
      {"odd", 5, 12, 7, 3, 3, 7, 13, 3},
      {"tc-tail", 72, 128, 130, 2, 2, 72, 50, 2}, // d = 64, S % 64 != 0
      {"realistic", 512, 1024, 1024, 8, 1, 512, 1000, 4}, // d = 128
  };
  std::mt19937 rng(20240601);
  for (const Shape &s : shapes)
    for (Dtype dt : {Dtype::F32, Dtype::BF16}) {
      checkGemms(s, dt, rng);
      checkElementwise(s, dt, rng);
      checkNormalization(s, dt, rng);
      checkIndexOps<int32_t>(s, dt, rng);
      checkIndexOps<int64_t>(s, dt, rng);
      checkAttention(s, dt, rng);
      checkGroupedAttention(s, dt, rng);
      checkMaskedAttention<int32_t>(s, dt, rng);
      checkMaskedAttention<int64_t>(s, dt, rng);
    }
  checkOptimizers(rng);
  timeLayer();

  gemm.destroy();
  cudaStreamDestroy(stream);
  std::printf("kernel-check: %d failure%s\n", failures, failures == 1 ? "" : "s");
  return failures == 0 ? 0 : 1;
}
