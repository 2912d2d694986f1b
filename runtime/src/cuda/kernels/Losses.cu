//===- Losses.cu - the index-reading ops: embedding, cross entropy --------===//
//
// embedding, embeddingGrad, crossEntropy and crossEntropyGrad, and the
// vocabulary shard's vocabStats, vocabLoss and vocabGrad, for int32 and
// int64 indices. Every index is read through readIndex (Common.cuh): a bad
// one is clamped into range and the first met is recorded in the caller's
// DeviceIndexError. Kernels.cpp's math, fastExp included (-fmad=false):
//  - embedding: one block per position copies its table row.
//  - embeddingGrad: dtable is zeroed, then the block of the first position
//    holding each index sums dy over all positions holding it, in position
//    order, in fp32, and writes the row once: the CPU's sum in the CPU's
//    order, deterministic, with no atomics and no scratch (a block scans the
//    indices: O(count^2) compares, cheap next to the copy at count ~ 10^4).
//  - crossEntropy: the mean over the counted rows (those whose label is not
//    ignore_index) needs a cross-block sum and the op has no scratch, so
//    one cluster of kCluster blocks (sm_90 distributed shared memory) does
//    all rows: block q the rows q, q + kCluster, ..., each counted row by
//    the whole block (max, then the sum of exp), its loss added in double
//    and counted; the blocks' sums and counts are added in order, as the
//    CPU's double total. Deterministic; it uses kCluster SMs only (fine for
//    a loss head, ~0.3 ms at 2048 x 50k bf16). No counted row: loss 0.
//  - crossEntropyGrad: one block counts the labels that are not ignored
//    into the caller's device scalar (__syncthreads_count, exact), then one
//    block per row, no cross-row sum: the full GPU. An ignored row is 0,
//    the others scaled by dloss / count (0 when nothing counts). The count
//    stays on the device: no host synchronisation.
// An ignored label is never read as an index (it is no error).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <cooperative_groups.h>

#include <type_traits>

namespace zbc::rt::cuda {
namespace {

using namespace detail;
namespace cg = cooperative_groups;

constexpr int kThreads = 256;

template <typename T, typename I>
__global__ void embeddingKernel(const I *indices, const T *table, T *y,
                                int64_t count, int64_t vocab, int64_t h,
                                DeviceIndexError *error, int32_t op) {
  for (int64_t p = blockIdx.x; p < count; p += gridDim.x) {
    const int64_t v = readIndex(indices, p, vocab, error, op);
    const T *src = table + v * h;
    T *dst = y + p * h;
    for (int64_t i = threadIdx.x; i < h; i += blockDim.x)
      dst[i] = src[i];
  }
}

/// Block (p, chunk): columns [chunk * blockDim, +blockDim) of the row of
/// index v = indices[p], if p is the first position holding v.
template <typename T, typename I>
__global__ void embeddingGradKernel(const I *indices, const T *dy, T *dtable,
                                    int64_t count, int64_t vocab, int64_t h,
                                    DeviceIndexError *error, int32_t op) {
  __shared__ int64_t tile[kThreads];
  const int64_t p = blockIdx.x;
  const int64_t v = readIndex(indices, p, vocab, error, op);
  auto clamped = [&](int64_t q) {
    int64_t w = static_cast<int64_t>(indices[q]);
    return w < 0 ? 0 : w >= vocab ? vocab - 1 : w;
  };
  // Is an earlier position holding v? Then its block writes the row.
  for (int64_t q0 = 0; q0 < p; q0 += blockDim.x) {
    const int64_t q = q0 + threadIdx.x;
    if (__syncthreads_or(q < p && clamped(q) == v))
      return;
  }
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  float acc = 0.0f; // the zeroed row, then dy rows in position order
  for (int64_t q0 = p; q0 < count; q0 += blockDim.x) {
    const int64_t q = q0 + threadIdx.x;
    tile[threadIdx.x] = q < count ? clamped(q) : -1;
    __syncthreads();
    const int64_t end = count - q0 < blockDim.x ? count - q0 : blockDim.x;
    if (c < h)
      for (int64_t t = 0; t < end; ++t)
        if (tile[t] == v)
          acc += toFloat(dy[(q0 + t) * h + c]);
    __syncthreads();
  }
  if (c < h)
    dtable[v * h + c] = fromFloat<T>(acc);
}

/// Kernels.cpp's logSumExp of one row by the whole block: {max, log(sum)}.
template <typename T>
__device__ float2 rowLogSumExp(const T *row, int64_t n, float *scratch) {
  float max = -__int_as_float(0x7f800000);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    max = fmaxf(max, toFloat(row[i]));
  max = blockMax(max, scratch);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += fastExp(toFloat(row[i]) - max);
  sum = blockSum(sum, scratch);
  return make_float2(max, logf(sum));
}

constexpr int kCluster = 8;

/// Whether row r's label counts (is not ignoreIndex).
template <typename I>
__device__ __forceinline__ bool counts(const I *labels, int64_t r,
                                       int64_t ignoreIndex) {
  return static_cast<int64_t>(labels[r]) != ignoreIndex;
}

template <typename T, typename I>
__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(1024)
    crossEntropyKernel(const T *logits, const I *labels, T *loss, int64_t rows,
                       int64_t classes, int64_t ignoreIndex,
                       DeviceIndexError *error, int32_t op) {
  __shared__ float scratch[32];
  __shared__ double total;
  __shared__ int64_t counted;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  if (threadIdx.x == 0) {
    total = 0.0;
    counted = 0;
  }
  for (int64_t r = rank; r < rows; r += kCluster) {
    if (!counts(labels, r, ignoreIndex)) // block-uniform
      continue;
    const T *row = logits + r * classes;
    float2 lse = rowLogSumExp(row, classes, scratch);
    if (threadIdx.x == 0) {
      const int64_t label = readIndex(labels, r, classes, error, op);
      const float logit = toFloat(row[label]);
      total += static_cast<double>((lse.x - logit) + lse.y);
      ++counted;
    }
  }
  cluster.sync();
  if (rank == 0 && threadIdx.x == 0) {
    double sum = 0.0;
    int64_t count = 0;
    for (int q = 0; q < kCluster; ++q) {
      sum += *cluster.map_shared_rank(&total, q);
      count += *cluster.map_shared_rank(&counted, q);
    }
    *loss = fromFloat<T>(
        count ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f);
  }
  cluster.sync();
}

/// *counted = the labels that are not ignoreIndex; one block.
template <typename I>
__global__ void countLabelsKernel(const I *labels, int64_t rows,
                                  int64_t ignoreIndex, int64_t *counted) {
  int64_t count = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += blockDim.x) {
    const int64_t r = r0 + threadIdx.x;
    count += __syncthreads_count(r < rows && counts(labels, r, ignoreIndex));
  }
  if (threadIdx.x == 0)
    *counted = count;
}

/// Each row's softmax max and log-sum for a cross-entropy's gradient: the
/// row's own (crossEntropyGrad), by the whole block ...
struct OwnSoftmax {
  template <typename T>
  __device__ float2 operator()(const T *row, int64_t, int64_t n,
                               float *scratch) const {
    return rowLogSumExp(row, n, scratch);
  }
};
/// ... or over every shard, from the merged statistics [m, S, T, M]
/// (vocabGrad).
template <typename T> struct MergedSoftmax {
  const T *stats;
  int64_t rows;
  __device__ float2 operator()(const T *, int64_t r, int64_t,
                               float *) const {
    return make_float2(toFloat(stats[3 * rows + r]),
                       logf(toFloat(stats[rows + r])));
  }
};

/// One block per row of the columns [first, first + columns) of `classes`:
/// the rows of ignored labels 0, the others scale (softmax - onehot).
template <typename T, typename I, typename Softmax>
__global__ void crossEntropyGradKernel(const T *logits, const I *labels,
                                       const T *dloss, T *dlogits,
                                       int64_t rows, int64_t columns,
                                       int64_t classes, int64_t first,
                                       int64_t ignoreIndex,
                                       const int64_t *counted,
                                       DeviceIndexError *error, int32_t op,
                                       Softmax softmaxOf) {
  __shared__ float scratch[32];
  const int64_t count = *counted;
  const float scale =
      count ? toFloat(dloss[0]) / static_cast<float>(count) : 0.0f;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *row = logits + r * columns;
    T *out = dlogits + r * columns;
    if (!counts(labels, r, ignoreIndex)) { // block-uniform
      for (int64_t c = threadIdx.x; c < columns; c += blockDim.x)
        out[c] = fromFloat<T>(0.0f);
      continue;
    }
    const int64_t label = readIndex(labels, r, classes, error, op) - first;
    float2 lse = softmaxOf(row, r, columns, scratch);
    for (int64_t c = threadIdx.x; c < columns; c += blockDim.x) {
      float p = fastExp((toFloat(row[c]) - lse.x) - lse.y);
      out[c] = fromFloat<T>(c == label ? scale * (p - 1.0f) : scale * p);
    }
  }
}

// The output layer over a vocabulary shard (Note [Softmax over vocabulary
// shards]; Kernels.cpp's vocabShard*): statistics planes [m, l, t, M] per
// row of `rows`.

/// One block per row: its max, log-sum and target logit, the max twice.
template <typename T, typename I>
__global__ void vocabStatsKernel(const T *logits, const I *labels, T *stats,
                                 int64_t rows, int64_t columns, int64_t first,
                                 int64_t vocab, int64_t ignoreIndex,
                                 DeviceIndexError *error, int32_t op) {
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *row = logits + r * columns;
    float2 lse = rowLogSumExp(row, columns, scratch);
    if (threadIdx.x == 0) {
      float target = 0.0f;
      if (counts(labels, r, ignoreIndex)) {
        const int64_t column = readIndex(labels, r, vocab, error, op) - first;
        if (column >= 0 && column < columns)
          target = toFloat(row[column]);
      }
      stats[r] = stats[3 * rows + r] = fromFloat<T>(lse.x);
      stats[rows + r] = fromFloat<T>(lse.y);
      stats[2 * rows + r] = fromFloat<T>(target);
    }
    __syncthreads(); // scratch is reused by the next row
  }
}

/// One block: each thread's rows summed in double, then the threads' sums
/// in a fixed order, as the CPU's double total (deterministic).
template <typename T, typename I>
__global__ void __launch_bounds__(1024)
    vocabLossKernel(const T *stats, const I *labels, T *loss, int64_t rows,
                    int64_t vocab, int64_t ignoreIndex,
                    DeviceIndexError *error, int32_t op) {
  __shared__ double totals[1024];
  __shared__ int64_t counted[1024];
  double total = 0.0;
  int64_t count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    if (!counts(labels, r, ignoreIndex))
      continue;
    readIndex(labels, r, vocab, error, op);
    total += static_cast<double>(
        (toFloat(stats[3 * rows + r]) - toFloat(stats[2 * rows + r])) +
        logf(toFloat(stats[rows + r])));
    ++count;
  }
  totals[threadIdx.x] = total;
  counted[threadIdx.x] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0.0;
    int64_t n = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) {
      sum += totals[t];
      n += counted[t];
    }
    *loss = fromFloat<T>(n ? static_cast<float>(sum / static_cast<double>(n))
                           : 0.0f);
  }
}

template <typename F>
cudaError_t dispatchIndex(IndexType indexType, F &&body) {
  if (indexType == IndexType::I32)
    body(static_cast<const int32_t *>(nullptr));
  else
    body(static_cast<const int64_t *>(nullptr));
  return cudaGetLastError();
}

unsigned rowBlocks(int64_t rows) {
  int64_t cap = static_cast<int64_t>(smCount()) * 32;
  return static_cast<unsigned>(rows < cap ? rows : cap);
}

int rowThreads(int64_t n) {
  int64_t t = (n / 8 + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : t > 1024 ? 1024 : t);
}

/// crossEntropyGradKernel over the columns [first, first + columns) of
/// `classes`, after counting the labels: each row's softmax its own
/// (`stats` null) or from merged vocabulary statistics.
cudaError_t launchCrossEntropyGrad(Dtype dtype, IndexType indexType,
                                   const void *logits, const void *labels,
                                   const void *stats, const void *dloss,
                                   void *dlogits, int64_t rows,
                                   int64_t columns, int64_t classes,
                                   int64_t first, int64_t ignoreIndex,
                                   int64_t *counted, DeviceIndexError *error,
                                   int32_t op, cudaStream_t stream) {
  if (rows <= 0 || columns <= 0)
    return cudaSuccess;
  return dispatchIndex(indexType, [&](auto tag) {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    countLabelsKernel<I><<<1, 1024, 0, stream>>>(
        static_cast<const I *>(labels), rows, ignoreIndex, counted);
    ZBC_CUDA_DISPATCH(dtype, {
      auto launch = [&](auto softmaxOf) {
        crossEntropyGradKernel<<<rowBlocks(rows), rowThreads(columns), 0,
                                 stream>>>(
            static_cast<const T *>(logits), static_cast<const I *>(labels),
            static_cast<const T *>(dloss), static_cast<T *>(dlogits), rows,
            columns, classes, first, ignoreIndex, counted, error, op,
            softmaxOf);
      };
      if (stats)
        launch(MergedSoftmax<T>{static_cast<const T *>(stats), rows});
      else
        launch(OwnSoftmax{});
    });
  });
}

} // namespace

cudaError_t embedding(Dtype dtype, IndexType indexType, const void *indices,
                      const void *table, void *y, int64_t count, int64_t vocab,
                      int64_t h, DeviceIndexError *error, int32_t op,
                      cudaStream_t stream) {
  if (count <= 0 || h <= 0)
    return cudaSuccess;
  const int threads = rowThreads(h) < kThreads ? rowThreads(h) : kThreads;
  return dispatchIndex(indexType, [&](auto tag) {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    ZBC_CUDA_DISPATCH(dtype, {
      embeddingKernel<T, I><<<rowBlocks(count), threads, 0, stream>>>(
          static_cast<const I *>(indices), static_cast<const T *>(table),
          static_cast<T *>(y), count, vocab, h, error, op);
    });
  });
}

cudaError_t embeddingGrad(Dtype dtype, IndexType indexType,
                          const void *indices, const void *dy, void *dtable,
                          int64_t count, int64_t vocab, int64_t h,
                          DeviceIndexError *error, int32_t op,
                          cudaStream_t stream) {
  if (cudaError_t err = fill(dtype, dtable, vocab * h, 0.0f, stream))
    return err;
  if (count <= 0 || h <= 0)
    return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(count),
                  static_cast<unsigned>((h + kThreads - 1) / kThreads));
  return dispatchIndex(indexType, [&](auto tag) {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    ZBC_CUDA_DISPATCH(dtype, {
      embeddingGradKernel<T, I><<<grid, kThreads, 0, stream>>>(
          static_cast<const I *>(indices), static_cast<const T *>(dy),
          static_cast<T *>(dtable), count, vocab, h, error, op);
    });
  });
}

cudaError_t crossEntropy(Dtype dtype, IndexType indexType, const void *logits,
                         const void *labels, void *loss, int64_t rows,
                         int64_t classes, int64_t ignoreIndex,
                         DeviceIndexError *error, int32_t op,
                         cudaStream_t stream) {
  if (rows <= 0)
    return fill(dtype, loss, 1, 0.0f, stream); // nothing counts: 0, as the CPU
  return dispatchIndex(indexType, [&](auto tag) {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    ZBC_CUDA_DISPATCH(dtype, {
      crossEntropyKernel<T, I><<<kCluster, 1024, 0, stream>>>(
          static_cast<const T *>(logits), static_cast<const I *>(labels),
          static_cast<T *>(loss), rows, classes, ignoreIndex, error, op);
    });
  });
}

cudaError_t crossEntropyGrad(Dtype dtype, IndexType indexType,
                             const void *logits, const void *labels,
                             const void *dloss, void *dlogits, int64_t rows,
                             int64_t classes, int64_t ignoreIndex,
                             int64_t *counted, DeviceIndexError *error,
                             int32_t op, cudaStream_t stream) {
  return launchCrossEntropyGrad(dtype, indexType, logits, labels,
                                /*stats=*/nullptr, dloss, dlogits, rows,
                                classes, classes, 0, ignoreIndex, counted,
                                error, op, stream);
}

cudaError_t vocabStats(Dtype dtype, IndexType indexType, const void *logits,
                       const void *labels, void *stats, int64_t rows,
                       int64_t columns, int64_t first, int64_t vocab,
                       int64_t ignoreIndex, DeviceIndexError *error,
                       int32_t op, cudaStream_t stream) {
  if (rows <= 0 || columns <= 0)
    return cudaSuccess;
  return dispatchIndex(indexType, [&](auto tag) {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    ZBC_CUDA_DISPATCH(dtype, {
      vocabStatsKernel<T, I><<<rowBlocks(rows), rowThreads(columns), 0,
                               stream>>>(
          static_cast<const T *>(logits), static_cast<const I *>(labels),
          static_cast<T *>(stats), rows, columns, first, vocab, ignoreIndex,
          error, op);
    });
  });
}

cudaError_t vocabLoss(Dtype dtype, IndexType indexType, const void *stats,
                      const void *labels, void *loss, int64_t rows,
                      int64_t vocab, int64_t ignoreIndex,
                      DeviceIndexError *error, int32_t op,
                      cudaStream_t stream) {
  return dispatchIndex(indexType, [&](auto tag) {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    ZBC_CUDA_DISPATCH(dtype, {
      vocabLossKernel<T, I><<<1, 1024, 0, stream>>>(
          static_cast<const T *>(stats), static_cast<const I *>(labels),
          static_cast<T *>(loss), rows, vocab, ignoreIndex, error, op);
    });
  });
}

cudaError_t vocabGrad(Dtype dtype, IndexType indexType, const void *logits,
                      const void *labels, const void *stats,
                      const void *dloss, void *dlogits, int64_t rows,
                      int64_t columns, int64_t first, int64_t vocab,
                      int64_t ignoreIndex, int64_t *counted,
                      DeviceIndexError *error, int32_t op,
                      cudaStream_t stream) {
  return launchCrossEntropyGrad(dtype, indexType, logits, labels, stats,
                                dloss, dlogits, rows, columns, vocab, first,
                                ignoreIndex, counted, error, op, stream);
}

} // namespace zbc::rt::cuda
