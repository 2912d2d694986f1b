//===- Attention.cu - causal attention, forward and backward --------------===//
//
// causalAttention and causalAttentionGrad (Kernels.h's math: qkv [B, S, 3H]
// packed q | k | v, head hd the slice [hd d, (hd + 1) d), scores q.k * scale,
// scale = 1 / sqrt(d), causal softmax, out [B, S, H]), flash-attention
// style: tiles of queries and keys in shared memory, an online softmax, fp32
// accumulation, no S x S matrix.
//
// Two implementations of the same three kernels:
//  - Tensor cores (bf16, d = 64 or 128, 16-byte aligned pointers): blocks
//    of 4 warps over 64-row tiles, WMMA 16x16x16 bf16 -> fp32 products; the
//    softmax probabilities P and dS are rounded to bf16 to feed the second
//    product (as FlashAttention does), everything else stays fp32.
//  - Generic (fp32, and bf16 of any other d): one warp per query (or key)
//    row, 32-key tiles in shared memory, fp32 CUDA-core arithmetic
//    throughout, so fp32 results match the CPU to rounding.
//
// The backward gets no saved statistics: a first kernel recomputes, per
// query row, lse = max + log(sum) and D = dO . O (O the forward's fp32
// output; D equals Kernels.cpp's rowsum(dP * P)) into the workspace (8 bytes
// a row; (b, head) pairs are processed in as many chunks as the workspace
// needs). Then one kernel per query tile computes dQ = scale * dS K (keys
// j <= i), one per key tile dK = scale * dS^T Q and dV = P^T dO (queries
// i >= j), with P = exp(scale q.k - lse) and dS = P (dO . v - D). No
// atomics; every element of dqkv is written once.
//
// With document ids, every kernel attends each run of equal ids apart and
// skips the tiles outside the runs (Note [Document runs on the GPU]).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <mma.h>

#include <cmath>

namespace zbc::rt::cuda {
namespace {

using namespace detail;
namespace wmma = nvcuda::wmma;

constexpr float kNegInf = -INFINITY;

// Note [Document runs on the GPU]
// With document ids (Note [Document masks] in dialect/docs/ZB.md), query i
// of a row sees the keys [first(i), i], first(i) the first position of the
// run of equal ids that holds i; so key j is seen by the queries
// [j, last(j)), last(j) the end of j's run. `sees` below is that rule, and
// no kernel spells it otherwise. The bounds come from the ids where they
// are needed, with no table and no workspace: a block of query rows finds
// first() of its first row by scanning the ids backward a block's width at
// a time (runFirst), a block of key rows last() of its last key forward
// (runLast), which reads no more ids than the block then attends keys or
// queries; each row's own bound comes from the ids inside the tile
// (tileFirsts, tileLasts). A query block then starts its key loop at
// first(i0) instead of 0, a key block ends its query loop at last() of its
// last key instead of S, and a warp skips a tile that holds none of its
// rows' keys (queries). The work of a row of documents of lengths L_k is
// so ~ sum L_k^2 / 2 plus a tile's width per row of tiles, not S^2 / 2, and
// rows without a key in a tile stay out of the online softmax (maxRef).
// Without ids first(i) = 0 and last(j) = S: the plain causal kernels, the
// same operations in the same order.

/// Sets a kernel's dynamic shared memory limit (once per kernel and size).
template <typename K> cudaError_t allowSharedMemory(K kernel, size_t bytes) {
  if (bytes <= 48 * 1024)
    return cudaSuccess;
  return cudaFuncSetAttribute(kernel,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

//===----------------------------------------------------------------------===//
// Generic kernels: a warp per row
//===----------------------------------------------------------------------===//

constexpr int kRows = 8;  // warps of a block, one row each
constexpr int kKeys = 32; // keys (or queries) of a shared-memory tile
constexpr int kGenericThreads = kRows * 32;

struct Geometry {
  int64_t S, H, d, heads;
  float scale;
  int64_t bhOffset;    // the first (b, head) pair of this launch
  Documents documents; // [B, S] ids, or none
};

//===----------------------------------------------------------------------===//
// Document runs (Note [Document runs on the GPU])
//===----------------------------------------------------------------------===//

/// The document ids of one row of S positions.
struct RowIds {
  const void *ids; // null: the row is one run [0, S)
  bool wide;       // int64 ids, else int32
  int64_t base, S; // the row's first element in `ids`, and its length

  __device__ int64_t id(int64_t p) const {
    return wide ? static_cast<const int64_t *>(ids)[base + p]
                : static_cast<const int32_t *>(ids)[base + p];
  }
  /// Whether a run starts at position p, 0 <= p < S.
  __device__ bool startsRun(int64_t p) const {
    return p == 0 || id(p) != id(p - 1);
  }
};

__device__ __forceinline__ RowIds rowIds(const Geometry &g, int64_t b) {
  return {g.documents.ids, g.documents.type == IndexType::I64, b * g.S, g.S};
}

/// The mask: query i sees key j iff first(i) <= j <= i, equivalently
/// j <= i < last(j) (`first` is first(i), `last` is last(j)).
struct Sees {
  __device__ static bool fromQuery(int64_t i, int64_t j, int64_t first) {
    return first <= j && j <= i;
  }
  __device__ static bool fromKey(int64_t i, int64_t j, int64_t last) {
    return j <= i && i < last;
  }
};

/// first(p) for p < S, in every thread; every thread of the block calls it.
__device__ int64_t runFirst(const RowIds &row, int64_t p) {
  if (!row.ids)
    return 0;
  __shared__ int nearest;
  for (int64_t hi = p;; hi -= blockDim.x) {
    const int64_t q = hi - threadIdx.x;
    const bool starts = q >= 0 && row.startsRun(q); // q = 0 always does
    if (!__syncthreads_or(starts))
      continue;
    if (threadIdx.x == 0)
      nearest = blockDim.x;
    __syncthreads();
    if (starts)
      atomicMin(&nearest, static_cast<int>(threadIdx.x));
    __syncthreads();
    const int64_t found = hi - nearest;
    __syncthreads(); // `nearest` is free again
    return found;
  }
}

/// last(p) for p < S, in every thread; every thread of the block calls it.
__device__ int64_t runLast(const RowIds &row, int64_t p) {
  if (!row.ids)
    return row.S;
  __shared__ int nearest;
  for (int64_t lo = p + 1;; lo += blockDim.x) {
    const int64_t q = lo + threadIdx.x;
    const bool ends = q >= row.S || row.startsRun(q); // q > p
    if (!__syncthreads_or(ends))
      continue;
    if (threadIdx.x == 0)
      nearest = blockDim.x;
    __syncthreads();
    if (ends)
      atomicMin(&nearest, static_cast<int>(threadIdx.x));
    __syncthreads();
    const int64_t found = lo + nearest;
    __syncthreads();
    return found;
  }
}

/// firsts[t] = first(p0 + t) for the T query rows of a tile (shared memory;
/// S for a row past the end, which sees nothing), p0 < S; returns first(p0),
/// the least of them. Every thread of the block calls it.
template <int T>
__device__ int64_t tileFirsts(const RowIds &row, int64_t p0, int64_t *firsts) {
  const int64_t head = runFirst(row, p0);
  for (int t = threadIdx.x; t < T; t += blockDim.x) {
    const int64_t i = p0 + t;
    int64_t first = i < row.S ? head : row.S;
    if (row.ids && i < row.S)
      for (int64_t p = i; p > p0; --p)
        if (row.startsRun(p)) {
          first = p;
          break;
        }
    firsts[t] = first;
  }
  __syncthreads();
  return head;
}

/// lasts[t] = last(p0 + t) for the T keys of a tile (shared memory; p0 + t
/// for a key past the end, which no query sees), p0 < S; returns the
/// greatest of them, last() of the tile's last key. Every thread of the
/// block calls it.
template <int T>
__device__ int64_t tileLasts(const RowIds &row, int64_t p0, int64_t *lasts) {
  const int64_t end = row.S < p0 + T ? row.S : p0 + T;
  const int64_t tail = runLast(row, end - 1);
  for (int t = threadIdx.x; t < T; t += blockDim.x) {
    const int64_t j = p0 + t;
    int64_t last = j < row.S ? tail : j;
    if (row.ids && j < row.S)
      for (int64_t p = j + 1; p < end; ++p)
        if (row.startsRun(p)) {
          last = p;
          break;
        }
    lasts[t] = last;
  }
  __syncthreads();
  return tail;
}

/// Forward (Stats = false: writes out) or the backward's statistics pass
/// (Stats = true: writes {lse, dO . O} per row to `stats`).
template <typename T, bool Stats>
__global__ void __launch_bounds__(kGenericThreads)
    forwardGeneric(const T *qkv, T *out, const T *dout, float2 *stats,
                   Geometry g) {
  extern __shared__ float smem[];
  const int64_t d = g.d, ld = d + 1, row3 = 3 * g.H;
  float *Ks = smem;               // [kKeys][ld]
  float *Vs = Ks + kKeys * ld;    // [kKeys][d]
  float *Qs = Vs + kKeys * d;     // [kRows][d]
  float *Os = Qs + kRows * d;     // [kRows][d]
  float *Ps = Os + kRows * d;     // [kRows][32]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t bh = g.bhOffset + blockIdx.y;
  const int64_t b = bh / g.heads, hd = bh % g.heads;
  const int64_t tiles = (g.S + kRows - 1) / kRows;
  const int64_t i0 = (tiles - 1 - blockIdx.x) * kRows; // long rows first
  const int64_t i = i0 + warp;
  const T *base = qkv + b * g.S * row3 + hd * d;
  float *q = Qs + warp * d, *o = Os + warp * d, *p = Ps + warp * 32;
  for (int64_t k = lane; k < d; k += 32) {
    q[k] = i < g.S ? toFloat(base[i * row3 + k]) : 0.0f;
    o[k] = 0.0f;
  }
  __shared__ int64_t firsts[kRows];
  const int64_t keyBegin = tileFirsts<kRows>(rowIds(g, b), i0, firsts);
  const int64_t first = firsts[warp];
  float m = kNegInf, l = 0.0f;
  const int64_t keyEnd = g.S < i0 + kRows ? g.S : i0 + kRows;
  for (int64_t j0 = keyBegin; j0 < keyEnd; j0 += kKeys) {
    __syncthreads();
    for (int64_t e = threadIdx.x; e < kKeys * d; e += blockDim.x) {
      int64_t t = e / d, k = e % d, j = j0 + t;
      Ks[t * ld + k] = j < keyEnd ? toFloat(base[j * row3 + g.H + k]) : 0.0f;
      Vs[t * d + k] = j < keyEnd ? toFloat(base[j * row3 + 2 * g.H + k]) : 0.0f;
    }
    __syncthreads();
    // Warp-uniform: a tile with none of the row's keys is skipped, so the
    // first one taken holds first(i) and m is finite after it.
    if (i >= g.S || j0 > i || j0 + kKeys <= first)
      continue;
    const int64_t j = j0 + lane;
    const bool seen = Sees::fromQuery(i, j, first);
    float s = kNegInf;
    if (seen) {
      float dot = 0.0f;
      for (int64_t k = 0; k < d; ++k)
        dot += q[k] * Ks[lane * ld + k];
      s = g.scale * dot;
    }
    const float mNew = fmaxf(m, warpMax(s));
    const float pj = seen ? expf(s - mNew) : 0.0f;
    const float alpha = expf(m - mNew);
    l = l * alpha + warpSum(pj);
    m = mNew;
    p[lane] = pj;
    __syncwarp();
    const int64_t count = i - j0 + 1 < kKeys ? i - j0 + 1 : kKeys;
    for (int64_t k = lane; k < d; k += 32) {
      float acc = o[k] * alpha;
      for (int64_t t = 0; t < count; ++t)
        acc += p[t] * Vs[t * d + k];
      o[k] = acc;
    }
    __syncwarp();
  }
  if (i >= g.S)
    return;
  if constexpr (!Stats) {
    T *dst = out + (b * g.S + i) * g.H + hd * d;
    for (int64_t k = lane; k < d; k += 32)
      dst[k] = fromFloat<T>(o[k] / l);
  } else {
    const T *dO = dout + (b * g.S + i) * g.H + hd * d;
    float dsum = 0.0f;
    for (int64_t k = lane; k < d; k += 32)
      dsum += toFloat(dO[k]) * (o[k] / l);
    dsum = warpSum(dsum);
    if (lane == 0)
      stats[(bh - g.bhOffset) * g.S + i] = make_float2(m + logf(l), dsum);
  }
}

template <typename T>
__global__ void __launch_bounds__(kGenericThreads)
    gradQGeneric(const T *qkv, const T *dout, T *dqkv, const float2 *stats,
                 Geometry g) {
  extern __shared__ float smem[];
  const int64_t d = g.d, ld = d + 1, row3 = 3 * g.H;
  float *Ks = smem;              // [kKeys][ld]
  float *Vs = Ks + kKeys * ld;   // [kKeys][ld]
  float *Qs = Vs + kKeys * ld;   // [kRows][d]
  float *dOs = Qs + kRows * d;   // [kRows][d]
  float *dQs = dOs + kRows * d;  // [kRows][d]
  float *Ps = dQs + kRows * d;   // [kRows][32]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t bh = g.bhOffset + blockIdx.y;
  const int64_t b = bh / g.heads, hd = bh % g.heads;
  const int64_t tiles = (g.S + kRows - 1) / kRows;
  const int64_t i0 = (tiles - 1 - blockIdx.x) * kRows;
  const int64_t i = i0 + warp;
  const T *base = qkv + b * g.S * row3 + hd * d;
  const T *dObase = dout + b * g.S * g.H + hd * d;
  float *q = Qs + warp * d, *dO = dOs + warp * d, *dQ = dQs + warp * d,
        *p = Ps + warp * 32;
  for (int64_t k = lane; k < d; k += 32) {
    q[k] = i < g.S ? toFloat(base[i * row3 + k]) : 0.0f;
    dO[k] = i < g.S ? toFloat(dObase[i * g.H + k]) : 0.0f;
    dQ[k] = 0.0f;
  }
  const float2 st =
      i < g.S ? stats[(bh - g.bhOffset) * g.S + i] : make_float2(0.0f, 0.0f);
  __shared__ int64_t firsts[kRows];
  const int64_t keyBegin = tileFirsts<kRows>(rowIds(g, b), i0, firsts);
  const int64_t first = firsts[warp];
  const int64_t keyEnd = g.S < i0 + kRows ? g.S : i0 + kRows;
  for (int64_t j0 = keyBegin; j0 < keyEnd; j0 += kKeys) {
    __syncthreads();
    for (int64_t e = threadIdx.x; e < kKeys * d; e += blockDim.x) {
      int64_t t = e / d, k = e % d, j = j0 + t;
      Ks[t * ld + k] = j < keyEnd ? toFloat(base[j * row3 + g.H + k]) : 0.0f;
      Vs[t * ld + k] = j < keyEnd ? toFloat(base[j * row3 + 2 * g.H + k]) : 0.0f;
    }
    __syncthreads();
    if (i >= g.S || j0 > i || j0 + kKeys <= first) // warp-uniform
      continue;
    const int64_t j = j0 + lane;
    float ds = 0.0f;
    if (Sees::fromQuery(i, j, first)) {
      float dot = 0.0f, dp = 0.0f;
      for (int64_t k = 0; k < d; ++k) {
        dot += q[k] * Ks[lane * ld + k];
        dp += dO[k] * Vs[lane * ld + k];
      }
      const float pj = expf(g.scale * dot - st.x);
      ds = pj * (dp - st.y);
    }
    p[lane] = ds;
    __syncwarp();
    const int64_t count = i - j0 + 1 < kKeys ? i - j0 + 1 : kKeys;
    for (int64_t k = lane; k < d; k += 32) {
      float acc = dQ[k];
      for (int64_t t = 0; t < count; ++t)
        acc += p[t] * Ks[t * ld + k];
      dQ[k] = acc;
    }
    __syncwarp();
  }
  if (i >= g.S)
    return;
  T *dst = dqkv + b * g.S * row3 + i * row3 + hd * d;
  for (int64_t k = lane; k < d; k += 32)
    dst[k] = fromFloat<T>(g.scale * dQ[k]);
}

template <typename T>
__global__ void __launch_bounds__(kGenericThreads)
    gradKVGeneric(const T *qkv, const T *dout, T *dqkv, const float2 *stats,
                  Geometry g) {
  extern __shared__ float smem[];
  const int64_t d = g.d, ld = d + 1, row3 = 3 * g.H;
  float *Qs = smem;              // [kKeys][ld] (queries)
  float *dOs = Qs + kKeys * ld;  // [kKeys][ld]
  float *ks = dOs + kKeys * ld;  // [kRows][d]
  float *vs = ks + kRows * d;    // [kRows][d]
  float *dKs = vs + kRows * d;   // [kRows][d]
  float *dVs = dKs + kRows * d;  // [kRows][d]
  float *Ps = dVs + kRows * d;   // [kRows][32]
  float *dSs = Ps + kRows * 32;  // [kRows][32]
  float2 *sts = reinterpret_cast<float2 *>(dSs + kRows * 32); // [kKeys]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t bh = g.bhOffset + blockIdx.y;
  const int64_t b = bh / g.heads, hd = bh % g.heads;
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int64_t j = j0 + warp;
  const T *base = qkv + b * g.S * row3 + hd * d;
  const T *dObase = dout + b * g.S * g.H + hd * d;
  const float2 *st = stats + (bh - g.bhOffset) * g.S;
  float *kr = ks + warp * d, *vr = vs + warp * d, *dK = dKs + warp * d,
        *dV = dVs + warp * d, *p = Ps + warp * 32, *dsr = dSs + warp * 32;
  for (int64_t k = lane; k < d; k += 32) {
    kr[k] = j < g.S ? toFloat(base[j * row3 + g.H + k]) : 0.0f;
    vr[k] = j < g.S ? toFloat(base[j * row3 + 2 * g.H + k]) : 0.0f;
    dK[k] = 0.0f;
    dV[k] = 0.0f;
  }
  __shared__ int64_t lasts[kRows];
  const int64_t queryEnd = tileLasts<kRows>(rowIds(g, b), j0, lasts);
  const int64_t last = lasts[warp];
  for (int64_t q0 = j0; q0 < queryEnd; q0 += kKeys) {
    __syncthreads();
    for (int64_t e = threadIdx.x; e < kKeys * d; e += blockDim.x) {
      int64_t t = e / d, k = e % d, i = q0 + t;
      Qs[t * ld + k] = i < queryEnd ? toFloat(base[i * row3 + k]) : 0.0f;
      dOs[t * ld + k] = i < queryEnd ? toFloat(dObase[i * g.H + k]) : 0.0f;
    }
    for (int64_t t = threadIdx.x; t < kKeys; t += blockDim.x)
      sts[t] = q0 + t < queryEnd ? st[q0 + t] : make_float2(0.0f, 0.0f);
    __syncthreads();
    if (j >= g.S || q0 >= last) // warp-uniform
      continue;
    const int64_t i = q0 + lane;
    float pi = 0.0f, ds = 0.0f;
    if (Sees::fromKey(i, j, last)) {
      float dot = 0.0f, dp = 0.0f;
      for (int64_t k = 0; k < d; ++k) {
        dot += Qs[lane * ld + k] * kr[k];
        dp += dOs[lane * ld + k] * vr[k];
      }
      pi = expf(g.scale * dot - sts[lane].x);
      ds = pi * (dp - sts[lane].y);
    }
    p[lane] = pi;
    dsr[lane] = ds;
    __syncwarp();
    const int64_t count = queryEnd - q0 < kKeys ? queryEnd - q0 : kKeys;
    for (int64_t k = lane; k < d; k += 32) {
      float accV = dV[k], accK = dK[k];
      for (int64_t t = 0; t < count; ++t) {
        accV += p[t] * dOs[t * ld + k];
        accK += dsr[t] * Qs[t * ld + k];
      }
      dV[k] = accV;
      dK[k] = accK;
    }
    __syncwarp();
  }
  if (j >= g.S)
    return;
  T *dst = dqkv + b * g.S * row3 + j * row3 + hd * d;
  for (int64_t k = lane; k < d; k += 32) {
    dst[g.H + k] = fromFloat<T>(g.scale * dK[k]);
    dst[2 * g.H + k] = fromFloat<T>(dV[k]);
  }
}

size_t forwardGenericBytes(int64_t d) {
  return sizeof(float) *
         static_cast<size_t>(kKeys * (d + 1) + kKeys * d + 2 * kRows * d +
                             kRows * 32);
}
size_t gradQGenericBytes(int64_t d) {
  return sizeof(float) *
         static_cast<size_t>(2 * kKeys * (d + 1) + 3 * kRows * d + kRows * 32);
}
size_t gradKVGenericBytes(int64_t d) {
  return sizeof(float) * static_cast<size_t>(2 * kKeys * (d + 1) +
                                             4 * kRows * d + 2 * kRows * 32 +
                                             2 * kKeys);
}

//===----------------------------------------------------------------------===//
// Tensor-core kernels (bf16, d = D = 64 or 128): 4 warps x 16 rows
//===----------------------------------------------------------------------===//

constexpr int kTile = 64;
constexpr int kWarps = 4;
constexpr int kTcThreads = kWarps * 32;

template <int D> struct Tc {
  static constexpr int LD = D + 8;      // bf16 tiles [64][LD]
  static constexpr int SLD = kTile + 4; // fp32 score rows [16][SLD]
  static constexpr int PLD = kTile + 8; // bf16 probability rows [16][PLD]
  static constexpr int OLD = D + 4;     // fp32 output rows [16][OLD]
  static constexpr size_t tile = sizeof(bf16) * kTile * LD;
  static constexpr size_t scores = sizeof(float) * kWarps * 16 * SLD;
  static constexpr size_t probs = sizeof(bf16) * kWarps * 16 * PLD;
  static constexpr size_t outs = sizeof(float) * kWarps * 16 * OLD;
  static constexpr size_t forwardBytes = 3 * tile + scores + probs + outs;
  static constexpr size_t gradQBytes = 4 * tile + 2 * scores + probs;
  static constexpr size_t gradKVBytes =
      4 * tile + 2 * scores + 2 * probs + sizeof(float2) * kTile;
};

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragBRow =
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBCol =
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// Rows [r0, r0 + 64) of a [S, D] matrix of row stride `stride` (elements)
/// into a [64][LD] tile, 16 bytes at a time, zeros past S.
template <int D>
__device__ __forceinline__ void loadTile(bf16 *tile, const bf16 *src,
                                         int64_t r0, int64_t S,
                                         int64_t stride) {
  constexpr int chunks = D / 8;
  for (int e = threadIdx.x; e < kTile * chunks; e += blockDim.x) {
    const int t = e / chunks, c = e % chunks;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r0 + t < S)
      v = *reinterpret_cast<const uint4 *>(src + (r0 + t) * stride + c * 8);
    *reinterpret_cast<uint4 *>(tile + t * Tc<D>::LD + c * 8) = v;
  }
}

/// out[16][64] (fp32, ld SLD) = A[16 rows of a tile] . B[64 rows of a tile]^T
/// over D: the 16 x 64 block of q.k (or dO.v) products.
template <int D>
__device__ __forceinline__ void rowsTimesTileT(float *out, const bf16 *a,
                                               const bf16 *bt) {
  #pragma unroll
  for (int nb = 0; nb < kTile / 16; ++nb) {
    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
    #pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      FragA fa;
      FragBCol fb;
      wmma::load_matrix_sync(fa, a + kk * 16, Tc<D>::LD);
      wmma::load_matrix_sync(fb, bt + nb * 16 * Tc<D>::LD + kk * 16, Tc<D>::LD);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + nb * 16, acc, Tc<D>::SLD, wmma::mem_row_major);
  }
}

template <int D, bool Stats>
__global__ void __launch_bounds__(kTcThreads)
    forwardTc(const bf16 *qkv, bf16 *out, const bf16 *dout, float2 *stats,
              Geometry g) {
  using L = Tc<D>;
  extern __shared__ __align__(128) unsigned char raw[];
  bf16 *Qs = reinterpret_cast<bf16 *>(raw);
  bf16 *Ks = Qs + kTile * L::LD, *Vs = Ks + kTile * L::LD;
  float *Sall = reinterpret_cast<float *>(Vs + kTile * L::LD);
  bf16 *Pall = reinterpret_cast<bf16 *>(Sall + kWarps * 16 * L::SLD);
  float *Oall = reinterpret_cast<float *>(Pall + kWarps * 16 * L::PLD);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float *Sw = Sall + warp * 16 * L::SLD, *Ow = Oall + warp * 16 * L::OLD;
  bf16 *Pw = Pall + warp * 16 * L::PLD;
  const int64_t row3 = 3 * g.H;
  const int64_t bh = g.bhOffset + blockIdx.y;
  const int64_t b = bh / g.heads, hd = bh % g.heads;
  const int64_t tiles = (g.S + kTile - 1) / kTile;
  const int64_t i0 = (tiles - 1 - blockIdx.x) * kTile;
  const bf16 *base = qkv + b * g.S * row3 + hd * D;
  loadTile<D>(Qs, base, i0, g.S, row3);
  for (int e = lane; e < 16 * L::OLD; e += 32)
    Ow[e] = 0.0f;
  // Lane (r, half) keeps the softmax state of row r and covers half of its
  // columns (keys) and of its output.
  const int r = lane >> 1, half = lane & 1;
  const int64_t row = i0 + warp * 16 + r;
  __shared__ int64_t firsts[kTile];
  const int64_t keyBegin = tileFirsts<kTile>(rowIds(g, b), i0, firsts);
  const int64_t first = firsts[warp * 16 + r];
  // The warp's keys: [first() of its first row, its last row].
  const int64_t warpFirst = firsts[warp * 16], warpLast = i0 + warp * 16 + 15;
  float m = kNegInf, l = 0.0f;
  const int64_t keyEnd = g.S < i0 + kTile ? g.S : i0 + kTile;
  for (int64_t j0 = keyBegin; j0 < keyEnd; j0 += kTile) {
    __syncthreads();
    loadTile<D>(Ks, base + g.H, j0, g.S, row3);
    loadTile<D>(Vs, base + 2 * g.H, j0, g.S, row3);
    __syncthreads();
    if (j0 > warpLast || j0 + kTile <= warpFirst) // none of the warp's keys
      continue;
    rowsTimesTileT<D>(Sw, Qs + warp * 16 * L::LD, Ks);
    __syncwarp();
    float *srow = Sw + r * L::SLD + half * 32;
    float tileMax = kNegInf;
    for (int c = 0; c < 32; ++c) {
      const int64_t j = j0 + half * 32 + c;
      const float s =
          Sees::fromQuery(row, j, first) && j < g.S ? srow[c] * g.scale : kNegInf;
      srow[c] = s;
      tileMax = fmaxf(tileMax, s);
    }
    tileMax = fmaxf(tileMax, __shfl_xor_sync(0xffffffffu, tileMax, 1));
    const float mNew = fmaxf(m, tileMax);
    // A row that has seen no key yet (mNew = -inf: a tile before its
    // document) takes exp(-inf - 0) = 0 from it, not NaN; else mRef = mNew.
    const float mRef = mNew == kNegInf ? 0.0f : mNew;
    const float alpha = expf(m - mRef);
    bf16 *prow = Pw + r * L::PLD + half * 32;
    float psum = 0.0f;
    for (int c = 0; c < 32; ++c) {
      const bf16 pc = __float2bfloat16_rn(expf(srow[c] - mRef));
      prow[c] = pc;
      psum += __bfloat162float(pc);
    }
    psum += __shfl_xor_sync(0xffffffffu, psum, 1);
    l = l * alpha + psum;
    m = mNew;
    float *orow = Ow + r * L::OLD + half * (D / 2);
    for (int c = 0; c < D / 2; ++c)
      orow[c] *= alpha;
    __syncwarp();
    #pragma unroll
    for (int db = 0; db < D / 16; ++db) {
      FragC acc;
      wmma::load_matrix_sync(acc, Ow + db * 16, L::OLD, wmma::mem_row_major);
      #pragma unroll
      for (int kk = 0; kk < kTile / 16; ++kk) {
        FragA fa;
        FragBRow fb;
        wmma::load_matrix_sync(fa, Pw + kk * 16, L::PLD);
        wmma::load_matrix_sync(fb, Vs + kk * 16 * L::LD + db * 16, L::LD);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(Ow + db * 16, acc, L::OLD, wmma::mem_row_major);
    }
    __syncwarp();
  }
  const float *orow = Ow + r * L::OLD + half * (D / 2);
  if constexpr (!Stats) {
    if (row < g.S) {
      bf16 *dst = out + (b * g.S + row) * g.H + hd * D + half * (D / 2);
      for (int c = 0; c < D / 2; ++c)
        dst[c] = __float2bfloat16_rn(orow[c] / l);
    }
  } else {
    float dsum = 0.0f;
    if (row < g.S) {
      const bf16 *dO = dout + (b * g.S + row) * g.H + hd * D + half * (D / 2);
      for (int c = 0; c < D / 2; ++c)
        dsum += __bfloat162float(dO[c]) * (orow[c] / l);
    }
    dsum += __shfl_xor_sync(0xffffffffu, dsum, 1);
    if (row < g.S && half == 0)
      stats[(bh - g.bhOffset) * g.S + row] = make_float2(m + logf(l), dsum);
  }
}

/// Writes a warp's 16 x D accumulators, times `scale`, to rows [r0, r0+16)
/// of dst (row stride `stride`), through the 16 x 16 staging area `stage`.
template <int D>
__device__ __forceinline__ void storeRows(FragC (&acc)[D / 16], float *stage,
                                          bf16 *dst, int64_t r0, int64_t S,
                                          int64_t stride, float scale) {
  const int lane = threadIdx.x & 31, r = lane >> 1, half = lane & 1;
  #pragma unroll
  for (int db = 0; db < D / 16; ++db) {
    wmma::store_matrix_sync(stage, acc[db], Tc<D>::SLD, wmma::mem_row_major);
    __syncwarp();
    if (r0 + r < S)
      for (int c = 0; c < 8; ++c)
        dst[(r0 + r) * stride + db * 16 + half * 8 + c] =
            __float2bfloat16_rn(scale * stage[r * Tc<D>::SLD + half * 8 + c]);
    __syncwarp();
  }
}

template <int D>
__global__ void __launch_bounds__(kTcThreads)
    gradQTc(const bf16 *qkv, const bf16 *dout, bf16 *dqkv, const float2 *stats,
            Geometry g) {
  using L = Tc<D>;
  extern __shared__ __align__(128) unsigned char raw[];
  bf16 *Qs = reinterpret_cast<bf16 *>(raw);
  bf16 *dOs = Qs + kTile * L::LD, *Ks = dOs + kTile * L::LD,
       *Vs = Ks + kTile * L::LD;
  float *Sall = reinterpret_cast<float *>(Vs + kTile * L::LD);
  float *dPall = Sall + kWarps * 16 * L::SLD;
  bf16 *dSall = reinterpret_cast<bf16 *>(dPall + kWarps * 16 * L::SLD);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float *Sw = Sall + warp * 16 * L::SLD, *dPw = dPall + warp * 16 * L::SLD;
  bf16 *dSw = dSall + warp * 16 * L::PLD;
  const int64_t row3 = 3 * g.H;
  const int64_t bh = g.bhOffset + blockIdx.y;
  const int64_t b = bh / g.heads, hd = bh % g.heads;
  const int64_t tiles = (g.S + kTile - 1) / kTile;
  const int64_t i0 = (tiles - 1 - blockIdx.x) * kTile;
  const bf16 *base = qkv + b * g.S * row3 + hd * D;
  const bf16 *dObase = dout + b * g.S * g.H + hd * D;
  loadTile<D>(Qs, base, i0, g.S, row3);
  loadTile<D>(dOs, dObase, i0, g.S, g.H);
  const int r = lane >> 1, half = lane & 1;
  const int64_t row = i0 + warp * 16 + r;
  const float2 st = row < g.S ? stats[(bh - g.bhOffset) * g.S + row]
                              : make_float2(0.0f, 0.0f);
  __shared__ int64_t firsts[kTile];
  const int64_t keyBegin = tileFirsts<kTile>(rowIds(g, b), i0, firsts);
  const int64_t first = firsts[warp * 16 + r];
  const int64_t warpFirst = firsts[warp * 16], warpLast = i0 + warp * 16 + 15;
  FragC dq[D / 16];
  #pragma unroll
  for (int db = 0; db < D / 16; ++db)
    wmma::fill_fragment(dq[db], 0.0f);
  const int64_t keyEnd = g.S < i0 + kTile ? g.S : i0 + kTile;
  for (int64_t j0 = keyBegin; j0 < keyEnd; j0 += kTile) {
    __syncthreads();
    loadTile<D>(Ks, base + g.H, j0, g.S, row3);
    loadTile<D>(Vs, base + 2 * g.H, j0, g.S, row3);
    __syncthreads();
    if (j0 > warpLast || j0 + kTile <= warpFirst) // none of the warp's keys
      continue;
    rowsTimesTileT<D>(Sw, Qs + warp * 16 * L::LD, Ks);
    rowsTimesTileT<D>(dPw, dOs + warp * 16 * L::LD, Vs);
    __syncwarp();
    for (int c = 0; c < 32; ++c) {
      const int col = half * 32 + c;
      const int64_t j = j0 + col;
      float ds = 0.0f;
      if (Sees::fromQuery(row, j, first) && j < g.S) {
        const float p = expf(Sw[r * L::SLD + col] * g.scale - st.x);
        ds = p * (dPw[r * L::SLD + col] - st.y);
      }
      dSw[r * L::PLD + col] = __float2bfloat16_rn(ds);
    }
    __syncwarp();
    #pragma unroll
    for (int db = 0; db < D / 16; ++db)
      #pragma unroll
      for (int kk = 0; kk < kTile / 16; ++kk) {
        FragA fa;
        FragBRow fb;
        wmma::load_matrix_sync(fa, dSw + kk * 16, L::PLD);
        wmma::load_matrix_sync(fb, Ks + kk * 16 * L::LD + db * 16, L::LD);
        wmma::mma_sync(dq[db], fa, fb, dq[db]);
      }
  }
  storeRows<D>(dq, Sw, dqkv + b * g.S * row3 + hd * D, i0 + warp * 16, g.S,
               row3, g.scale);
}

template <int D>
__global__ void __launch_bounds__(kTcThreads)
    gradKVTc(const bf16 *qkv, const bf16 *dout, bf16 *dqkv,
             const float2 *stats, Geometry g) {
  using L = Tc<D>;
  extern __shared__ __align__(128) unsigned char raw[];
  bf16 *Ks = reinterpret_cast<bf16 *>(raw);
  bf16 *Vs = Ks + kTile * L::LD, *Qs = Vs + kTile * L::LD,
       *dOs = Qs + kTile * L::LD;
  float *Sall = reinterpret_cast<float *>(dOs + kTile * L::LD);
  float *dPall = Sall + kWarps * 16 * L::SLD;
  bf16 *Pall = reinterpret_cast<bf16 *>(dPall + kWarps * 16 * L::SLD);
  bf16 *dSall = Pall + kWarps * 16 * L::PLD;
  float2 *sts = reinterpret_cast<float2 *>(dSall + kWarps * 16 * L::PLD);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float *Sw = Sall + warp * 16 * L::SLD, *dPw = dPall + warp * 16 * L::SLD;
  bf16 *Pw = Pall + warp * 16 * L::PLD, *dSw = dSall + warp * 16 * L::PLD;
  const int64_t row3 = 3 * g.H;
  const int64_t bh = g.bhOffset + blockIdx.y;
  const int64_t b = bh / g.heads, hd = bh % g.heads;
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const bf16 *base = qkv + b * g.S * row3 + hd * D;
  const bf16 *dObase = dout + b * g.S * g.H + hd * D;
  const float2 *st = stats + (bh - g.bhOffset) * g.S;
  loadTile<D>(Ks, base + g.H, j0, g.S, row3);
  loadTile<D>(Vs, base + 2 * g.H, j0, g.S, row3);
  const int r = lane >> 1, half = lane & 1;
  const int64_t key = j0 + warp * 16 + r;
  __shared__ int64_t lasts[kTile];
  const int64_t queryEnd = tileLasts<kTile>(rowIds(g, b), j0, lasts);
  const int64_t last = lasts[warp * 16 + r];
  // The warp's queries: [its first key, last() of its last key).
  const int64_t warpKey = j0 + warp * 16;
  const int64_t warpEnd =
      warpKey < g.S ? lasts[warp * 16 + (g.S - warpKey < 16 ? g.S - warpKey - 1
                                                            : 15)]
                    : 0; // keys past the end: no queries
  FragC dk[D / 16], dv[D / 16];
  #pragma unroll
  for (int db = 0; db < D / 16; ++db) {
    wmma::fill_fragment(dk[db], 0.0f);
    wmma::fill_fragment(dv[db], 0.0f);
  }
  for (int64_t q0 = j0; q0 < queryEnd; q0 += kTile) {
    __syncthreads();
    loadTile<D>(Qs, base, q0, queryEnd, row3);
    loadTile<D>(dOs, dObase, q0, queryEnd, g.H);
    for (int t = threadIdx.x; t < kTile; t += blockDim.x)
      sts[t] = q0 + t < queryEnd ? st[q0 + t] : make_float2(0.0f, 0.0f);
    __syncthreads();
    if (q0 >= warpEnd) // none of the warp's queries (q0 + 64 > its keys)
      continue;
    // Transposed scores: row = key, column = query.
    rowsTimesTileT<D>(Sw, Ks + warp * 16 * L::LD, Qs);
    rowsTimesTileT<D>(dPw, Vs + warp * 16 * L::LD, dOs);
    __syncwarp();
    for (int c = 0; c < 32; ++c) {
      const int col = half * 32 + c;
      const int64_t i = q0 + col;
      float p = 0.0f, ds = 0.0f;
      if (Sees::fromKey(i, key, last)) {
        p = expf(Sw[r * L::SLD + col] * g.scale - sts[col].x);
        ds = p * (dPw[r * L::SLD + col] - sts[col].y);
      }
      Pw[r * L::PLD + col] = __float2bfloat16_rn(p);
      dSw[r * L::PLD + col] = __float2bfloat16_rn(ds);
    }
    __syncwarp();
    #pragma unroll
    for (int db = 0; db < D / 16; ++db)
      #pragma unroll
      for (int kk = 0; kk < kTile / 16; ++kk) {
        FragA fp, fds;
        FragBRow fo, fq;
        wmma::load_matrix_sync(fp, Pw + kk * 16, L::PLD);
        wmma::load_matrix_sync(fo, dOs + kk * 16 * L::LD + db * 16, L::LD);
        wmma::mma_sync(dv[db], fp, fo, dv[db]);
        wmma::load_matrix_sync(fds, dSw + kk * 16, L::PLD);
        wmma::load_matrix_sync(fq, Qs + kk * 16 * L::LD + db * 16, L::LD);
        wmma::mma_sync(dk[db], fds, fq, dk[db]);
      }
  }
  bf16 *dst = dqkv + b * g.S * row3 + hd * D;
  storeRows<D>(dk, Sw, dst + g.H, j0 + warp * 16, g.S, row3, g.scale);
  storeRows<D>(dv, Sw, dst + 2 * g.H, j0 + warp * 16, g.S, row3, 1.0f);
}

/// S = 1 with too little workspace for statistics: P = 1, so dS = 0:
/// dQ = dK = 0 and dV = dO (a row of one position is one document).
template <typename T>
__global__ void gradSingleKey(const T *dout, T *dqkv, int64_t B, int64_t H) {
  const int64_t n = B * 3 * H;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < n; e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = e / (3 * H), c = e % (3 * H);
    dqkv[e] = c < 2 * H ? fromFloat<T>(0.0f) : dout[b * H + (c - 2 * H)];
  }
}

/// Which implementation serves a call.
enum class Path { Generic, Tc64, Tc128 };

Path pathFor(Dtype dtype, int64_t d, bool alignedPointers) {
  if (dtype != Dtype::BF16 || !alignedPointers)
    return Path::Generic;
  return d == 64 ? Path::Tc64 : d == 128 ? Path::Tc128 : Path::Generic;
}

constexpr int64_t kMaxGridY = 65535;

template <int D>
cudaError_t forwardTcLaunch(const bf16 *qkv, bf16 *out, const bf16 *dout,
                            float2 *stats, Geometry g, int64_t pairs,
                            cudaStream_t stream, bool withStats) {
  const dim3 grid(static_cast<unsigned>((g.S + kTile - 1) / kTile),
                  static_cast<unsigned>(pairs));
  constexpr size_t bytes = Tc<D>::forwardBytes;
  if (withStats) {
    if (cudaError_t err = allowSharedMemory(forwardTc<D, true>, bytes))
      return err;
    forwardTc<D, true><<<grid, kTcThreads, bytes, stream>>>(qkv, out, dout,
                                                            stats, g);
  } else {
    if (cudaError_t err = allowSharedMemory(forwardTc<D, false>, bytes))
      return err;
    forwardTc<D, false><<<grid, kTcThreads, bytes, stream>>>(qkv, out, dout,
                                                             stats, g);
  }
  return cudaGetLastError();
}

template <int D>
cudaError_t gradTcLaunch(const bf16 *qkv, const bf16 *dout, bf16 *dqkv,
                         float2 *stats, Geometry g, int64_t pairs,
                         cudaStream_t stream) {
  if (cudaError_t err =
          forwardTcLaunch<D>(qkv, nullptr, dout, stats, g, pairs, stream, true))
    return err;
  const dim3 grid(static_cast<unsigned>((g.S + kTile - 1) / kTile),
                  static_cast<unsigned>(pairs));
  if (cudaError_t err = allowSharedMemory(gradQTc<D>, Tc<D>::gradQBytes))
    return err;
  gradQTc<D><<<grid, kTcThreads, Tc<D>::gradQBytes, stream>>>(qkv, dout, dqkv,
                                                              stats, g);
  if (cudaError_t err = allowSharedMemory(gradKVTc<D>, Tc<D>::gradKVBytes))
    return err;
  gradKVTc<D><<<grid, kTcThreads, Tc<D>::gradKVBytes, stream>>>(
      qkv, dout, dqkv, stats, g);
  return cudaGetLastError();
}

template <typename T>
cudaError_t forwardGenericLaunch(const T *qkv, T *out, const T *dout,
                                 float2 *stats, Geometry g, int64_t pairs,
                                 cudaStream_t stream, bool withStats) {
  const dim3 grid(static_cast<unsigned>((g.S + kRows - 1) / kRows),
                  static_cast<unsigned>(pairs));
  const size_t bytes = forwardGenericBytes(g.d);
  if (withStats) {
    if (cudaError_t err = allowSharedMemory(forwardGeneric<T, true>, bytes))
      return err;
    forwardGeneric<T, true><<<grid, kGenericThreads, bytes, stream>>>(
        qkv, out, dout, stats, g);
  } else {
    if (cudaError_t err = allowSharedMemory(forwardGeneric<T, false>, bytes))
      return err;
    forwardGeneric<T, false><<<grid, kGenericThreads, bytes, stream>>>(
        qkv, out, dout, stats, g);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t gradGenericLaunch(const T *qkv, const T *dout, T *dqkv,
                              float2 *stats, Geometry g, int64_t pairs,
                              cudaStream_t stream) {
  if (cudaError_t err = forwardGenericLaunch<T>(qkv, nullptr, dout, stats, g,
                                                pairs, stream, true))
    return err;
  const dim3 grid(static_cast<unsigned>((g.S + kRows - 1) / kRows),
                  static_cast<unsigned>(pairs));
  const size_t qBytes = gradQGenericBytes(g.d), kvBytes = gradKVGenericBytes(g.d);
  if (cudaError_t err = allowSharedMemory(gradQGeneric<T>, qBytes))
    return err;
  gradQGeneric<T><<<grid, kGenericThreads, qBytes, stream>>>(qkv, dout, dqkv,
                                                             stats, g);
  if (cudaError_t err = allowSharedMemory(gradKVGeneric<T>, kvBytes))
    return err;
  gradKVGeneric<T><<<grid, kGenericThreads, kvBytes, stream>>>(
      qkv, dout, dqkv, stats, g);
  return cudaGetLastError();
}

} // namespace

cudaError_t causalAttention(Dtype dtype, const void *qkv, Documents documents,
                            void *out, void * /*workspace*/,
                            int64_t /*workspaceBytes*/, int64_t B, int64_t S,
                            int64_t H, int64_t heads, cudaStream_t stream) {
  if (B <= 0 || S <= 0 || H <= 0 || heads <= 0)
    return cudaSuccess;
  const int64_t d = H / heads, pairs = B * heads;
  Geometry g{S, H, d, heads, 1.0f / std::sqrt(static_cast<float>(d)), 0,
             documents};
  const Path path = pathFor(dtype, d, aligned(16, qkv, out));
  for (int64_t bh0 = 0; bh0 < pairs; bh0 += kMaxGridY) {
    const int64_t count = pairs - bh0 < kMaxGridY ? pairs - bh0 : kMaxGridY;
    g.bhOffset = bh0;
    cudaError_t err = cudaSuccess;
    if (path == Path::Tc64)
      err = forwardTcLaunch<64>(static_cast<const bf16 *>(qkv),
                                static_cast<bf16 *>(out), nullptr, nullptr, g,
                                count, stream, false);
    else if (path == Path::Tc128)
      err = forwardTcLaunch<128>(static_cast<const bf16 *>(qkv),
                                 static_cast<bf16 *>(out), nullptr, nullptr, g,
                                 count, stream, false);
    else
      ZBC_CUDA_DISPATCH(dtype, {
        err = forwardGenericLaunch<T>(static_cast<const T *>(qkv),
                                      static_cast<T *>(out), nullptr, nullptr,
                                      g, count, stream, false);
      });
    if (err != cudaSuccess)
      return err;
  }
  return cudaGetLastError();
}

cudaError_t causalAttentionGrad(Dtype dtype, const void *dout, const void *qkv,
                                Documents documents, void *dqkv,
                                void *workspace, int64_t workspaceBytes,
                                int64_t B, int64_t S, int64_t H, int64_t heads,
                                cudaStream_t stream) {
  if (B <= 0 || S <= 0 || H <= 0 || heads <= 0)
    return cudaSuccess;
  const int64_t d = H / heads, pairs = B * heads;
  const int64_t rowBytes = static_cast<int64_t>(sizeof(float2));
  if (workspaceBytes < S * rowBytes || !aligned(8, workspace)) {
    if (S != 1)
      return cudaErrorInvalidValue;
    ZBC_CUDA_DISPATCH(dtype, {
      gradSingleKey<T><<<gridFor(B * 3 * H, 256), 256, 0, stream>>>(
          static_cast<const T *>(dout), static_cast<T *>(dqkv), B, H);
    });
    return cudaGetLastError();
  }
  int64_t chunk = workspaceBytes / (S * rowBytes);
  chunk = chunk < kMaxGridY ? chunk : kMaxGridY;
  float2 *stats = static_cast<float2 *>(workspace);
  Geometry g{S, H, d, heads, 1.0f / std::sqrt(static_cast<float>(d)), 0,
             documents};
  const Path path = pathFor(dtype, d, aligned(16, qkv, dout, dqkv));
  for (int64_t bh0 = 0; bh0 < pairs; bh0 += chunk) {
    const int64_t count = pairs - bh0 < chunk ? pairs - bh0 : chunk;
    g.bhOffset = bh0;
    cudaError_t err = cudaSuccess;
    if (path == Path::Tc64)
      err = gradTcLaunch<64>(static_cast<const bf16 *>(qkv),
                             static_cast<const bf16 *>(dout),
                             static_cast<bf16 *>(dqkv), stats, g, count,
                             stream);
    else if (path == Path::Tc128)
      err = gradTcLaunch<128>(static_cast<const bf16 *>(qkv),
                              static_cast<const bf16 *>(dout),
                              static_cast<bf16 *>(dqkv), stats, g, count,
                              stream);
    else
      ZBC_CUDA_DISPATCH(dtype, {
        err = gradGenericLaunch<T>(static_cast<const T *>(qkv),
                                   static_cast<const T *>(dout),
                                   static_cast<T *>(dqkv), stats, g, count,
                                   stream);
      });
    if (err != cudaSuccess)
      return err;
  }
  return cudaGetLastError();
}

} // namespace zbc::rt::cuda
