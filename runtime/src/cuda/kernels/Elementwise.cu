//===- Elementwise.cu - elementwise ops, transpose, fill, conversions -----===//
//
// The ops that map elements independently (biasAdd, add, relu, gelu, swiglu
// and their gradients, fill, accumulate, convertFromF32), transpose, and the two
// scalar reductions (addScalar, addSumOfSquares). Each elementwise kernel is
// a grid-stride loop over 16-byte vectors (4 fp32 or 8 bf16), a scalar loop
// for the tail, and falls back to scalar accesses when a pointer is not
// 16-byte aligned. Inputs are read as fp32 and each result rounded once.
// Built with -fmad=false (CMakeLists.txt): the arithmetic is Kernels.cpp's,
// operation for operation, so fp32 results are the CPU's bits (GELU
// included: fastExp is ported exactly). In place is allowed, as on the CPU:
// every element is read before it is written, by the same thread.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

namespace zbc::rt::cuda {
namespace detail {

int smCount() {
  static const int count = [] {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) !=
            cudaSuccess)
      sms = 132;
    return sms > 0 ? sms : 132;
  }();
  return count;
}

} // namespace detail

namespace {

using namespace detail;

constexpr int kThreads = 256;

//===----------------------------------------------------------------------===//
// The generic map: y[i] = op(a[i], b[i]) (b unused by unary ops)
//===----------------------------------------------------------------------===//

template <typename T, int V, bool Binary, class Op>
__global__ void mapKernel(const T *a, const T *b, T *y, int64_t n, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                        threadIdx.x;
  const int64_t chunks = n / V;
  for (int64_t c = first; c < chunks; c += stride) {
    Vec<T, V> va = reinterpret_cast<const Vec<T, V> *>(a)[c], vb, vy;
    if constexpr (Binary)
      vb = reinterpret_cast<const Vec<T, V> *>(b)[c];
#pragma unroll
    for (int k = 0; k < V; ++k)
      vy.v[k] = fromFloat<T>(
          op(toFloat(va.v[k]), Binary ? toFloat(vb.v[k]) : 0.0f));
    reinterpret_cast<Vec<T, V> *>(y)[c] = vy;
  }
  for (int64_t i = chunks * V + first; i < n; i += stride)
    y[i] = fromFloat<T>(op(toFloat(a[i]), Binary ? toFloat(b[i]) : 0.0f));
}

template <bool Binary, class Op>
cudaError_t map(Dtype dtype, const void *a, const void *b, void *y, int64_t n,
                cudaStream_t stream, Op op) {
  if (n <= 0)
    return cudaSuccess;
  ZBC_CUDA_DISPATCH(dtype, {
    const T *pa = static_cast<const T *>(a);
    const T *pb = static_cast<const T *>(b);
    T *py = static_cast<T *>(y);
    if (aligned(16, a, Binary ? b : a, y)) {
      constexpr int V = kVec<T>;
      mapKernel<T, V, Binary><<<gridFor(n / V + 1, kThreads), kThreads, 0,
                                stream>>>(pa, pb, py, n, op);
    } else {
      mapKernel<T, 1, Binary>
          <<<gridFor(n, kThreads), kThreads, 0, stream>>>(pa, pb, py, n, op);
    }
  });
  return cudaGetLastError();
}

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct ReluOp {
  __device__ float operator()(float x, float) const {
    return x > 0.0f ? x : 0.0f;
  }
};
struct ReluGradOp { // (dy, x)
  __device__ float operator()(float g, float x) const {
    return x > 0.0f ? g : 0.0f;
  }
};
// Kernels.cpp's gelu and geluGrad, through the logistic function.
struct GeluOp {
  __device__ float operator()(float v, float) const { return geluOf(v); }
};
struct GeluGradOp { // (dy, x)
  __device__ float operator()(float g, float v) const {
    return g * geluDerivativeOf(v);
  }
};

// Kernels.cpp's swiGlu and swiGluGradUp, through KernelMath.h's siluOf.
struct SwiGluOp { // (gate, up)
  __device__ float operator()(float g, float u) const { return siluOf(g) * u; }
};
struct SwiGluGradUpOp { // (dy, gate)
  __device__ float operator()(float d, float g) const { return d * siluOf(g); }
};

/// dgate = dy * up * silu'(gate): three inputs, one scalar grid-stride loop
/// (Kernels.cpp's order of the products).
template <typename T>
__global__ void swiGluGradGateKernel(const T *dy, const T *gate, const T *up,
                                     T *dgate, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    dgate[i] = fromFloat<T>(toFloat(dy[i]) * toFloat(up[i]) *
                            siluDerivativeOf(toFloat(gate[i])));
}

//===----------------------------------------------------------------------===//
// biasAdd, fill, accumulate, convertFromF32
//===----------------------------------------------------------------------===//

/// y[r, i] = x[r, i] + bias[i]; V divides n when V > 1.
template <typename T, int V>
__global__ void biasAddKernel(const T *x, const T *bias, T *y, int64_t rows,
                              int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t chunks = rows * n / V, rowChunks = n / V;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       c < chunks; c += stride) {
    Vec<T, V> vx = reinterpret_cast<const Vec<T, V> *>(x)[c];
    Vec<T, V> vb = reinterpret_cast<const Vec<T, V> *>(bias)[c % rowChunks];
    Vec<T, V> vy;
#pragma unroll
    for (int k = 0; k < V; ++k)
      vy.v[k] = fromFloat<T>(toFloat(vx.v[k]) + toFloat(vb.v[k]));
    reinterpret_cast<Vec<T, V> *>(y)[c] = vy;
  }
}

template <typename T, int V>
__global__ void fillKernel(T *y, int64_t n, T value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                        threadIdx.x;
  const int64_t chunks = n / V;
  Vec<T, V> vv;
#pragma unroll
  for (int k = 0; k < V; ++k)
    vv.v[k] = value;
  for (int64_t c = first; c < chunks; c += stride)
    reinterpret_cast<Vec<T, V> *>(y)[c] = vv;
  for (int64_t i = chunks * V + first; i < n; i += stride)
    y[i] = value;
}

/// acc[i] += x[i] (Accumulate) or y[i] = round(x[i]) (!Accumulate, x fp32).
template <typename T, int V>
__global__ void accumulateKernel(float *acc, const T *x, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                        threadIdx.x;
  const int64_t chunks = n / V;
  for (int64_t c = first; c < chunks; c += stride) {
    Vec<float, V> va = reinterpret_cast<Vec<float, V> *>(acc)[c];
    Vec<T, V> vx = reinterpret_cast<const Vec<T, V> *>(x)[c];
#pragma unroll
    for (int k = 0; k < V; ++k)
      va.v[k] += toFloat(vx.v[k]);
    reinterpret_cast<Vec<float, V> *>(acc)[c] = va;
  }
  for (int64_t i = chunks * V + first; i < n; i += stride)
    acc[i] += toFloat(x[i]);
}

template <typename T, int V>
__global__ void convertKernel(const float *x, T *y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                        threadIdx.x;
  const int64_t chunks = n / V;
  for (int64_t c = first; c < chunks; c += stride) {
    Vec<float, V> vx = reinterpret_cast<const Vec<float, V> *>(x)[c];
    Vec<T, V> vy;
#pragma unroll
    for (int k = 0; k < V; ++k)
      vy.v[k] = fromFloat<T>(vx.v[k]);
    reinterpret_cast<Vec<T, V> *>(y)[c] = vy;
  }
  for (int64_t i = chunks * V + first; i < n; i += stride)
    y[i] = fromFloat<T>(x[i]);
}

//===----------------------------------------------------------------------===//
// transpose: 32 x 32 tiles through shared memory (both sides coalesced)
//===----------------------------------------------------------------------===//

constexpr int kTile = 32, kTileRows = 8;

template <typename T>
__global__ void transposeKernel(const T *x, T *y, int64_t rows, int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t tilesAcross = (cols + kTile - 1) / kTile;
  const int64_t tiles = tilesAcross * ((rows + kTile - 1) / kTile);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t i0 = (t / tilesAcross) * kTile, j0 = (t % tilesAcross) * kTile;
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int64_t i = i0 + r, j = j0 + threadIdx.x;
      if (i < rows && j < cols)
        tile[r][threadIdx.x] = x[i * cols + j];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      int64_t j = j0 + r, i = i0 + threadIdx.x; // y[j, i] = x[i, j]
      if (i < rows && j < cols)
        y[j * rows + i] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

//===----------------------------------------------------------------------===//
// Scalar reductions
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void addScalarKernel(float *sum, const T *x, float weight) {
  *sum = static_cast<float>(static_cast<double>(*sum) +
                            static_cast<double>(weight * toFloat(x[0])));
}

__global__ void sumOfSquaresKernel(const float *grad, int64_t n,
                                   double *sumOfSquares) {
  __shared__ double partial[32];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  double sum = 0.0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    float g = grad[i];
    sum += static_cast<double>(g * g);
  }
  for (int o = 16; o > 0; o >>= 1)
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    partial[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1)
      sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0)
      atomicAdd(sumOfSquares, sum);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

cudaError_t add(Dtype dtype, const void *a, const void *b, void *y, int64_t n,
                cudaStream_t stream) {
  return map<true>(dtype, a, b, y, n, stream, AddOp{});
}

cudaError_t relu(Dtype dtype, const void *x, void *y, int64_t n,
                 cudaStream_t stream) {
  return map<false>(dtype, x, nullptr, y, n, stream, ReluOp{});
}

cudaError_t gelu(Dtype dtype, const void *x, void *y, int64_t n,
                 cudaStream_t stream) {
  return map<false>(dtype, x, nullptr, y, n, stream, GeluOp{});
}

cudaError_t swiGlu(Dtype dtype, const void *gate, const void *up, void *y,
                   int64_t n, cudaStream_t stream) {
  return map<true>(dtype, gate, up, y, n, stream, SwiGluOp{});
}

cudaError_t swiGluGradUp(Dtype dtype, const void *dy, const void *gate,
                         void *dup, int64_t n, cudaStream_t stream) {
  return map<true>(dtype, dy, gate, dup, n, stream, SwiGluGradUpOp{});
}

cudaError_t swiGluGradGate(Dtype dtype, const void *dy, const void *gate,
                           const void *up, void *dgate, int64_t n,
                           cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  ZBC_CUDA_DISPATCH(dtype, {
    swiGluGradGateKernel<T><<<gridFor(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T *>(dy), static_cast<const T *>(gate),
        static_cast<const T *>(up), static_cast<T *>(dgate), n);
  });
  return cudaGetLastError();
}

cudaError_t reluGrad(Dtype dtype, const void *dy, const void *x, void *dx,
                     int64_t n, cudaStream_t stream) {
  return map<true>(dtype, dy, x, dx, n, stream, ReluGradOp{});
}

cudaError_t geluGrad(Dtype dtype, const void *dy, const void *x, void *dx,
                     int64_t n, cudaStream_t stream) {
  return map<true>(dtype, dy, x, dx, n, stream, GeluGradOp{});
}

cudaError_t biasAdd(Dtype dtype, const void *x, const void *bias, void *y,
                    int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows <= 0 || n <= 0)
    return cudaSuccess;
  ZBC_CUDA_DISPATCH(dtype, {
    constexpr int V = kVec<T>;
    const T *px = static_cast<const T *>(x), *pb = static_cast<const T *>(bias);
    T *py = static_cast<T *>(y);
    if (n % V == 0 && aligned(16, x, bias, y))
      biasAddKernel<T, V><<<gridFor(rows * n / V, kThreads), kThreads, 0,
                            stream>>>(px, pb, py, rows, n);
    else
      biasAddKernel<T, 1><<<gridFor(rows * n, kThreads), kThreads, 0,
                            stream>>>(px, pb, py, rows, n);
  });
  return cudaGetLastError();
}

cudaError_t fill(Dtype dtype, void *y, int64_t n, float value,
                 cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  ZBC_CUDA_DISPATCH(dtype, {
    T v = dtype == Dtype::F32 ? T(value) : T(__float2bfloat16_rn(value));
    if (aligned(16, y))
      fillKernel<T, kVec<T>><<<gridFor(n / kVec<T> + 1, kThreads), kThreads,
                               0, stream>>>(static_cast<T *>(y), n, v);
    else
      fillKernel<T, 1><<<gridFor(n, kThreads), kThreads, 0, stream>>>(
          static_cast<T *>(y), n, v);
  });
  return cudaGetLastError();
}

cudaError_t transpose(Dtype dtype, const void *x, void *y, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return cudaSuccess;
  int64_t tiles = ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
  unsigned blocks = gridFor(tiles, 1);
  ZBC_CUDA_DISPATCH(dtype, {
    transposeKernel<T><<<blocks, dim3(kTile, kTileRows), 0, stream>>>(
        static_cast<const T *>(x), static_cast<T *>(y), rows, cols);
  });
  return cudaGetLastError();
}

cudaError_t accumulate(float *acc, Dtype dtype, const void *x, int64_t n,
                       cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  ZBC_CUDA_DISPATCH(dtype, {
    const T *px = static_cast<const T *>(x);
    if (aligned(16, acc) && aligned(4 * sizeof(T), x))
      accumulateKernel<T, 4><<<gridFor(n / 4 + 1, kThreads), kThreads, 0,
                               stream>>>(acc, px, n);
    else
      accumulateKernel<T, 1>
          <<<gridFor(n, kThreads), kThreads, 0, stream>>>(acc, px, n);
  });
  return cudaGetLastError();
}

cudaError_t addScalar(float *sum, Dtype dtype, const void *x, float weight,
                      cudaStream_t stream) {
  ZBC_CUDA_DISPATCH(dtype, {
    addScalarKernel<T><<<1, 1, 0, stream>>>(sum, static_cast<const T *>(x),
                                            weight);
  });
  return cudaGetLastError();
}

cudaError_t convertFromF32(Dtype dtype, const float *x, void *y, int64_t n,
                           cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  ZBC_CUDA_DISPATCH(dtype, {
    T *py = static_cast<T *>(y);
    if (aligned(16, x) && aligned(4 * sizeof(T), y))
      convertKernel<T, 4><<<gridFor(n / 4 + 1, kThreads), kThreads, 0,
                            stream>>>(x, py, n);
    else
      convertKernel<T, 1>
          <<<gridFor(n, kThreads), kThreads, 0, stream>>>(x, py, n);
  });
  return cudaGetLastError();
}

cudaError_t addSumOfSquares(const float *grad, int64_t n, double *sumOfSquares,
                            cudaStream_t stream) {
  if (n <= 0)
    return cudaSuccess;
  sumOfSquaresKernel<<<gridFor(n, kThreads), kThreads, 0, stream>>>(
      grad, n, sumOfSquares);
  return cudaGetLastError();
}

} // namespace zbc::rt::cuda
