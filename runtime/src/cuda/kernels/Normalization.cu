//===- Normalization.cu - LayerNorm, RMSNorm, the column sums of the backward ===//
//
// layerNorm, rmsNorm and their input gradients: one block per row, the row cached in
// shared memory as fp32 when it fits (else re-read), Kernels.cpp's shifted
// two-pass statistics (shift = x[0], mean of x - shift, biased variance of
// (x - shift) - mean; RMSNorm: the mean of x^2) with fp32 block
// reductions, and the CPU's per-element formulas (built with -fmad=false, so
// only the reduction order differs).
//
// biasGrad, layerNormGradGamma and rmsNormGradWeight sum over rows into a
// [n] vector with no
// scratch memory, deterministically: a cluster of kCluster blocks (sm_90
// distributed shared memory) owns a slab of columns; block q of it sums the
// rows of its q-th chunk in row order (the norms' weight gradients recompute
// those rows' statistics first), and the chunks' partial sums are then added in
// chunk order through the cluster's shared memory. No atomics: the same
// inputs give the same bits on every run.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <cooperative_groups.h>

namespace zbc::rt::cuda {
namespace {

using namespace detail;
namespace cg = cooperative_groups;

/// Threads of a row block: a multiple of 32, about 8 elements each.
int rowThreads(int64_t n) {
  int64_t t = (n / 8 + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : t > 512 ? 512 : t);
}

/// Rows cached in shared memory up to this many fp32 values per block.
constexpr int64_t kMaxCachedFloats = 12 * 1024; // 48 KiB

template <typename T, bool Cached>
__global__ void layerNormKernel(const T *x, const T *gamma, const T *beta,
                                T *y, int64_t rows, int64_t n, float epsilon) {
  extern __shared__ float cache[]; // n floats when Cached
  __shared__ float scratch[32];
  const float count = static_cast<float>(n);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * n;
    T *yr = y + r * n;
    if constexpr (Cached) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        cache[i] = toFloat(xr[i]);
      __syncthreads();
    }
    auto X = [&](int64_t i) { return Cached ? cache[i] : toFloat(xr[i]); };
    const float shift = X(0);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      sum += X(i) - shift;
    const float mean = blockSum(sum, scratch) / count;
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      float centered = (X(i) - shift) - mean;
      squares += centered * centered;
    }
    squares = blockSum(squares, scratch);
    const float rstd = 1.0f / sqrtf(squares / count + epsilon);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      yr[i] = fromFloat<T>(toFloat(gamma[i]) * (((X(i) - shift) - mean) * rstd) +
                           toFloat(beta[i]));
    __syncthreads(); // the cache is rewritten by the next row
  }
}

template <typename T, bool Cached>
__global__ void layerNormGradInputKernel(const T *dy, const T *x,
                                         const T *gamma, T *dx, int64_t rows,
                                         int64_t n, float epsilon) {
  extern __shared__ float cache[]; // x then dy, n floats each, when Cached
  __shared__ float scratch[32];
  const float count = static_cast<float>(n);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * n, *dyr = dy + r * n;
    T *dxr = dx + r * n;
    if constexpr (Cached) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        cache[i] = toFloat(xr[i]);
        cache[n + i] = toFloat(dyr[i]);
      }
      __syncthreads();
    }
    auto X = [&](int64_t i) { return Cached ? cache[i] : toFloat(xr[i]); };
    auto DY = [&](int64_t i) {
      return Cached ? cache[n + i] : toFloat(dyr[i]);
    };
    const float shift = X(0);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      sum += X(i) - shift;
    const float mean = blockSum(sum, scratch) / count;
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      float centered = (X(i) - shift) - mean;
      squares += centered * centered;
    }
    squares = blockSum(squares, scratch);
    const float rstd = 1.0f / sqrtf(squares / count + epsilon);
    float sumG = 0.0f, sumGXhat = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      float g = DY(i) * toFloat(gamma[i]);
      sumG += g;
      sumGXhat += g * (((X(i) - shift) - mean) * rstd);
    }
    const float meanG = blockSum(sumG, scratch) / count;
    const float meanGXhat = blockSum(sumGXhat, scratch) / count;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      float g = DY(i) * toFloat(gamma[i]);
      float xhat = ((X(i) - shift) - mean) * rstd;
      dxr[i] = fromFloat<T>(rstd * (g - meanG - xhat * meanGXhat));
    }
    __syncthreads();
  }
}

template <typename T, bool Cached>
__global__ void rmsNormKernel(const T *x, const T *weight, T *y, int64_t rows,
                              int64_t n, float epsilon) {
  extern __shared__ float cache[]; // n floats when Cached
  __shared__ float scratch[32];
  const float count = static_cast<float>(n);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * n;
    T *yr = y + r * n;
    if constexpr (Cached) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        cache[i] = toFloat(xr[i]);
      __syncthreads();
    }
    auto X = [&](int64_t i) { return Cached ? cache[i] : toFloat(xr[i]); };
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      squares += X(i) * X(i);
    squares = blockSum(squares, scratch);
    const float rstd = 1.0f / sqrtf(squares / count + epsilon);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      yr[i] = fromFloat<T>(toFloat(weight[i]) * (X(i) * rstd));
    __syncthreads(); // the cache is rewritten by the next row
  }
}

template <typename T, bool Cached>
__global__ void rmsNormGradInputKernel(const T *dy, const T *x,
                                       const T *weight, T *dx, int64_t rows,
                                       int64_t n, float epsilon) {
  extern __shared__ float cache[]; // x then dy, n floats each, when Cached
  __shared__ float scratch[32];
  const float count = static_cast<float>(n);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * n, *dyr = dy + r * n;
    T *dxr = dx + r * n;
    if constexpr (Cached) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        cache[i] = toFloat(xr[i]);
        cache[n + i] = toFloat(dyr[i]);
      }
      __syncthreads();
    }
    auto X = [&](int64_t i) { return Cached ? cache[i] : toFloat(xr[i]); };
    auto DY = [&](int64_t i) {
      return Cached ? cache[n + i] : toFloat(dyr[i]);
    };
    float squares = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      squares += X(i) * X(i);
    squares = blockSum(squares, scratch);
    const float rstd = 1.0f / sqrtf(squares / count + epsilon);
    float sumGXhat = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      sumGXhat += (DY(i) * toFloat(weight[i])) * (X(i) * rstd);
    const float meanGXhat = blockSum(sumGXhat, scratch) / count;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      float g = DY(i) * toFloat(weight[i]);
      dxr[i] = fromFloat<T>(rstd * (g - (X(i) * rstd) * meanGXhat));
    }
    __syncthreads();
  }
}

//===----------------------------------------------------------------------===//
// Column sums: biasGrad (no statistics), layerNormGradGamma and
// rmsNormGradWeight (each row's statistics recomputed)
//===----------------------------------------------------------------------===//

/// What a column sum multiplies dy by: 1, LayerNorm's xhat or RMSNorm's.
enum class RowStatistics { None, LayerNorm, Rms };

constexpr int kCluster = 8;        // blocks per cluster: row chunks
constexpr int kColumnThreads = 256;
constexpr int kColumnsPerThread = 4;
constexpr int kSlab = kColumnThreads * kColumnsPerThread; // columns a cluster owns
constexpr int kStatRows = 32;      // rows whose statistics are held at once

template <typename T, RowStatistics Stats>
__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(kColumnThreads)
    columnSumKernel(const T *dy, const T *x, T *out, int64_t rows, int64_t n,
                    float epsilon) {
  __shared__ float partial[kSlab];
  __shared__ float shifts[kStatRows], means[kStatRows], rstds[kStatRows];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int64_t slab = blockIdx.x / kCluster;
  const int64_t c0 = slab * kSlab;
  const int64_t chunk = (rows + kCluster - 1) / kCluster;
  const int64_t r0 = rank * chunk;
  const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int warps = kColumnThreads / 32;
  const float count = static_cast<float>(n);

  float acc[kColumnsPerThread];
#pragma unroll
  for (int k = 0; k < kColumnsPerThread; ++k)
    acc[k] = 0.0f;

  for (int64_t s0 = r0; s0 < r1; s0 += kStatRows) {
    const int64_t s1 = s0 + kStatRows < r1 ? s0 + kStatRows : r1;
    if constexpr (Stats != RowStatistics::None) {
      // One warp per row: Kernels.cpp's rowStats (RMSNorm: no shift, no
      // mean, the mean of the squares).
      for (int64_t r = s0 + warp; r < s1; r += warps) {
        const T *xr = x + r * n;
        constexpr bool centred = Stats == RowStatistics::LayerNorm;
        const float shift = centred ? toFloat(xr[0]) : 0.0f;
        float mean = 0.0f;
        if constexpr (centred) {
          float sum = 0.0f;
          for (int64_t i = lane; i < n; i += 32)
            sum += toFloat(xr[i]) - shift;
          mean = warpSum(sum) / count;
        }
        float squares = 0.0f;
        for (int64_t i = lane; i < n; i += 32) {
          float centered = (toFloat(xr[i]) - shift) - mean;
          squares += centered * centered;
        }
        squares = warpSum(squares);
        if (lane == 0) {
          shifts[r - s0] = shift;
          means[r - s0] = mean;
          rstds[r - s0] = 1.0f / sqrtf(squares / count + epsilon);
        }
      }
      __syncthreads();
    }
#pragma unroll 4
    for (int64_t r = s0; r < s1; ++r) {
#pragma unroll
      for (int k = 0; k < kColumnsPerThread; ++k) {
        const int64_t c = c0 + k * kColumnThreads + threadIdx.x;
        if (c < n) {
          float g = toFloat(dy[r * n + c]);
          if constexpr (Stats != RowStatistics::None)
            g = g * (((toFloat(x[r * n + c]) - shifts[r - s0]) - means[r - s0]) *
                     rstds[r - s0]);
          acc[k] += g;
        }
      }
    }
    if constexpr (Stats != RowStatistics::None)
      __syncthreads(); // the statistics are rewritten by the next rows
  }

#pragma unroll
  for (int k = 0; k < kColumnsPerThread; ++k)
    partial[k * kColumnThreads + threadIdx.x] = acc[k];
  cluster.sync();
  // Block q writes the q-th share of the slab: the chunks' sums in order.
  constexpr int share = kSlab / kCluster;
  for (int j = rank * share + threadIdx.x; j < (rank + 1) * share;
       j += kColumnThreads) {
    const int64_t c = c0 + j;
    if (c < n) {
      float total = 0.0f;
      for (int q = 0; q < kCluster; ++q)
        total += cluster.map_shared_rank(partial, q)[j];
      out[c] = fromFloat<T>(total);
    }
  }
  cluster.sync(); // keep this block's partials until every block has read
}

template <RowStatistics Stats>
cudaError_t columnSum(Dtype dtype, const void *dy, const void *x, void *out,
                      int64_t rows, int64_t n, float epsilon,
                      cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  const int64_t slabs = (n + kSlab - 1) / kSlab;
  ZBC_CUDA_DISPATCH(dtype, {
    columnSumKernel<T, Stats>
        <<<static_cast<unsigned>(slabs * kCluster), kColumnThreads, 0,
           stream>>>(static_cast<const T *>(dy), static_cast<const T *>(x),
                     static_cast<T *>(out), rows, n, epsilon);
  });
  return cudaGetLastError();
}

unsigned rowBlocks(int64_t rows) {
  int64_t cap = static_cast<int64_t>(smCount()) * 32;
  return static_cast<unsigned>(rows < cap ? rows : cap);
}

} // namespace

cudaError_t layerNorm(Dtype dtype, const void *x, const void *gamma,
                      const void *beta, void *y, int64_t rows, int64_t n,
                      float epsilon, cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return cudaSuccess;
  const int threads = rowThreads(n);
  ZBC_CUDA_DISPATCH(dtype, {
    const T *px = static_cast<const T *>(x), *pg = static_cast<const T *>(gamma),
            *pb = static_cast<const T *>(beta);
    T *py = static_cast<T *>(y);
    if (n <= kMaxCachedFloats)
      layerNormKernel<T, true>
          <<<rowBlocks(rows), threads, n * sizeof(float), stream>>>(
              px, pg, pb, py, rows, n, epsilon);
    else
      layerNormKernel<T, false><<<rowBlocks(rows), threads, 0, stream>>>(
          px, pg, pb, py, rows, n, epsilon);
  });
  return cudaGetLastError();
}

cudaError_t layerNormGradInput(Dtype dtype, const void *dy, const void *x,
                               const void *gamma, void *dx, int64_t rows,
                               int64_t n, float epsilon, cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return cudaSuccess;
  const int threads = rowThreads(n);
  ZBC_CUDA_DISPATCH(dtype, {
    const T *pdy = static_cast<const T *>(dy), *px = static_cast<const T *>(x),
            *pg = static_cast<const T *>(gamma);
    T *pdx = static_cast<T *>(dx);
    if (2 * n <= kMaxCachedFloats)
      layerNormGradInputKernel<T, true>
          <<<rowBlocks(rows), threads, 2 * n * sizeof(float), stream>>>(
              pdy, px, pg, pdx, rows, n, epsilon);
    else
      layerNormGradInputKernel<T, false>
          <<<rowBlocks(rows), threads, 0, stream>>>(pdy, px, pg, pdx, rows, n,
                                                    epsilon);
  });
  return cudaGetLastError();
}

cudaError_t layerNormGradGamma(Dtype dtype, const void *dy, const void *x,
                               void *dgamma, int64_t rows, int64_t n,
                               float epsilon, cudaStream_t stream) {
  return columnSum<RowStatistics::LayerNorm>(dtype, dy, x, dgamma, rows, n,
                                             epsilon, stream);
}

cudaError_t biasGrad(Dtype dtype, const void *dy, void *db, int64_t rows,
                     int64_t n, cudaStream_t stream) {
  return columnSum<RowStatistics::None>(dtype, dy, nullptr, db, rows, n, 0.0f,
                                        stream);
}

cudaError_t rmsNorm(Dtype dtype, const void *x, const void *weight, void *y,
                    int64_t rows, int64_t n, float epsilon,
                    cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return cudaSuccess;
  const int threads = rowThreads(n);
  ZBC_CUDA_DISPATCH(dtype, {
    const T *px = static_cast<const T *>(x), *pw = static_cast<const T *>(weight);
    T *py = static_cast<T *>(y);
    if (n <= kMaxCachedFloats)
      rmsNormKernel<T, true>
          <<<rowBlocks(rows), threads, n * sizeof(float), stream>>>(
              px, pw, py, rows, n, epsilon);
    else
      rmsNormKernel<T, false><<<rowBlocks(rows), threads, 0, stream>>>(
          px, pw, py, rows, n, epsilon);
  });
  return cudaGetLastError();
}

cudaError_t rmsNormGradInput(Dtype dtype, const void *dy, const void *x,
                             const void *weight, void *dx, int64_t rows,
                             int64_t n, float epsilon, cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return cudaSuccess;
  const int threads = rowThreads(n);
  ZBC_CUDA_DISPATCH(dtype, {
    const T *pdy = static_cast<const T *>(dy), *px = static_cast<const T *>(x),
            *pw = static_cast<const T *>(weight);
    T *pdx = static_cast<T *>(dx);
    if (2 * n <= kMaxCachedFloats)
      rmsNormGradInputKernel<T, true>
          <<<rowBlocks(rows), threads, 2 * n * sizeof(float), stream>>>(
              pdy, px, pw, pdx, rows, n, epsilon);
    else
      rmsNormGradInputKernel<T, false>
          <<<rowBlocks(rows), threads, 0, stream>>>(pdy, px, pw, pdx, rows, n,
                                                    epsilon);
  });
  return cudaGetLastError();
}

cudaError_t rmsNormGradWeight(Dtype dtype, const void *dy, const void *x,
                              void *dweight, int64_t rows, int64_t n,
                              float epsilon, cudaStream_t stream) {
  return columnSum<RowStatistics::Rms>(dtype, dy, x, dweight, rows, n, epsilon,
                                       stream);
}

} // namespace zbc::rt::cuda
