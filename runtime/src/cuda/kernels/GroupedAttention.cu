//===- GroupedAttention.cu - zb.attention through the packed kernels -----===//
//
// attention and attentionGrad (Kernels.h: causal grouped-query attention on
// separate q [B, S, heads d], k and v [B, S, kvHeads d]) by way of
// Attention.cu's tested causal kernels: q, k and v are packed into
// causalAttention's layout [B, S, 3 heads d] in the workspace, each kv head
// repeated for every query head of its group (Hugging Face's repeat_kv);
// the backward then unpacks dqkv, copying dq and summing each kv head's dk
// and dv over its group's query heads in head order (deterministic, no
// atomics). The packing costs 3 B S heads d elements of workspace forward
// and twice that backward (the op's row in KernelTable.h asks for it, with
// 64 elements to spare for alignment), and
// two passes over q, k and v: a native grouped flash kernel would save
// both. fp32 results agree with the CPU to rounding, as the packed kernels
// do. Document ids [B, S] go to the packed kernels as they are: every head
// of a row shares them (Note [Document runs on the GPU] in Attention.cu).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

namespace zbc::rt::cuda {
namespace {

using namespace detail;

constexpr int kThreads = 256;

/// qkv[b, s, part * H + h d + t] = (q, k, v)[b, s, head(h) d + t], with
/// head(h) = h for q and h / group for k and v.
template <typename T>
__global__ void packKernel(const T *q, const T *k, const T *v, T *qkv,
                           int64_t rows, int64_t heads, int64_t kvHeads,
                           int64_t d) {
  const int64_t H = heads * d, group = heads / kvHeads;
  const int64_t work = rows * 3 * H;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < work; e += stride) {
    const int64_t r = e / (3 * H), c = e % (3 * H);
    const int64_t part = c / H, h = (c % H) / d, t = c % d;
    if (part == 0)
      qkv[e] = q[r * H + c];
    else
      qkv[e] = (part == 1 ? k : v)[(r * kvHeads + h / group) * d + t];
  }
}

/// dq = dqkv's q part; dk and dv of kv head g = the sum over its group's
/// query heads of dqkv's k and v parts, in head order, in fp32.
template <typename T>
__global__ void unpackKernel(const T *dqkv, T *dq, T *dk, T *dv, int64_t rows,
                             int64_t heads, int64_t kvHeads, int64_t d) {
  const int64_t H = heads * d, KV = kvHeads * d, group = heads / kvHeads;
  const int64_t work = rows * (H + 2 * KV);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < work; e += stride) {
    const int64_t r = e / (H + 2 * KV), c = e % (H + 2 * KV);
    const T *row = dqkv + r * 3 * H;
    if (c < H) {
      dq[r * H + c] = row[c];
      continue;
    }
    const bool isK = c < H + KV;
    const int64_t kc = isK ? c - H : c - H - KV; // within the kv row
    const int64_t g = kc / d, t = kc % d;
    const T *part = row + (isK ? H : 2 * H);
    float sum = 0.0f;
    for (int64_t h = g * group; h < (g + 1) * group; ++h)
      sum += toFloat(part[h * d + t]);
    (isK ? dk : dv)[r * KV + kc] = fromFloat<T>(sum);
  }
}

/// Packs q, k and v into `qkv` (packKernel) on `stream`.
cudaError_t pack(Dtype dtype, const void *q, const void *k, const void *v,
                 void *qkv, int64_t rows, int64_t heads, int64_t kvHeads,
                 int64_t d, cudaStream_t stream) {
  const int64_t elements = rows * 3 * heads * d;
  ZBC_CUDA_DISPATCH(dtype, {
    packKernel<T><<<gridFor(elements, kThreads), kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<T *>(qkv), rows, heads,
        kvHeads, d);
  });
  return cudaGetLastError();
}

/// The packed tensor's bytes rounded up to 64, so that what follows it (the
/// packed gradient, the causal kernels' statistics) is aligned for them;
/// the workspace's 64 spare elements (KernelTable.h) pay for the rounding.
int64_t alignedPackedBytes(Dtype dtype, int64_t B, int64_t S, int64_t heads,
                           int64_t d) {
  const int64_t bytes = attentionPackedElements(B, S, heads, d) * bytesOf(dtype);
  return (bytes + 63) / 64 * 64;
}

} // namespace

int64_t attentionPackedElements(int64_t B, int64_t S, int64_t heads,
                                int64_t d) {
  return B * S * 3 * heads * d;
}

cudaError_t attention(Dtype dtype, const void *q, const void *k, const void *v,
                      Documents documents, void *out, void *workspace,
                      int64_t workspaceBytes, int64_t B, int64_t S,
                      int64_t heads, int64_t kvHeads, int64_t d,
                      cudaStream_t stream) {
  if (B <= 0 || S <= 0 || heads <= 0 || kvHeads <= 0 || d <= 0)
    return cudaSuccess;
  const int64_t packedBytes = alignedPackedBytes(dtype, B, S, heads, d);
  if (workspaceBytes < packedBytes)
    return cudaErrorInvalidValue;
  if (cudaError_t err =
          pack(dtype, q, k, v, workspace, B * S, heads, kvHeads, d, stream))
    return err;
  return causalAttention(dtype, workspace, documents, out,
                         static_cast<char *>(workspace) + packedBytes,
                         workspaceBytes - packedBytes, B, S, heads * d, heads,
                         stream);
}

cudaError_t attentionGrad(Dtype dtype, const void *dout, const void *q,
                          const void *k, const void *v, Documents documents,
                          void *dq, void *dk, void *dv, void *workspace,
                          int64_t workspaceBytes, int64_t B, int64_t S,
                          int64_t heads, int64_t kvHeads, int64_t d,
                          cudaStream_t stream) {
  if (B <= 0 || S <= 0 || heads <= 0 || kvHeads <= 0 || d <= 0)
    return cudaSuccess;
  const int64_t packedBytes = alignedPackedBytes(dtype, B, S, heads, d);
  if (workspaceBytes < 2 * packedBytes)
    return cudaErrorInvalidValue;
  char *qkv = static_cast<char *>(workspace), *dqkv = qkv + packedBytes;
  if (cudaError_t err =
          pack(dtype, q, k, v, qkv, B * S, heads, kvHeads, d, stream))
    return err;
  if (cudaError_t err = causalAttentionGrad(
          dtype, dout, qkv, documents, dqkv, dqkv + packedBytes,
          workspaceBytes - 2 * packedBytes, B, S, heads * d, heads, stream))
    return err;
  const int64_t unpacked = B * S * (heads + 2 * kvHeads) * d;
  ZBC_CUDA_DISPATCH(dtype, {
    unpackKernel<T><<<gridFor(unpacked, kThreads), kThreads, 0, stream>>>(
        reinterpret_cast<const T *>(dqkv), static_cast<T *>(dq),
        static_cast<T *>(dk), static_cast<T *>(dv), B * S, heads, kvHeads, d);
  });
  return cudaGetLastError();
}

} // namespace zbc::rt::cuda
