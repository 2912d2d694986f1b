//===- ForwardKernels.cpp - math of the zb model-level ops ----------------===//
//
// The forward kernels of Kernels.h. Each public function picks float or
// double from its operands' precision and runs a template written as the
// plain loops of the op's definition; accumulators have the operand type, so
// an F32 run rounds where a float implementation would.
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Kernels.h"

#include "KernelSupport.h"

#include <cmath>

namespace zbc::interp::kernels {
using namespace detail;

Tensor linear(const Tensor &x, const Tensor &w, bool weightOutIn) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), in = w.shape()[weightOutIn ? 1 : 0],
            out = w.shape()[weightOutIn ? 0 : 1];
    Shape shape = x.shape();
    shape.back() = out;
    Tensor y = Tensor::zeros(shape, x.precision());
    const T *xd = x.data<T>(), *wd = w.data<T>();
    T *yd = y.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        T acc = 0;
        for (int64_t i = 0; i < in; ++i)
          acc += xd[r * in + i] * wd[weightOutIn ? o * in + i : i * out + o];
        yd[r * out + o] = acc;
      }
    return y;
  });
}

Tensor matmul(const Tensor &a, const Tensor &b) {
  return byPrecision(a.precision(), [&](auto tag) {
    using T = decltype(tag);
    size_t rank = a.shape().size();
    int64_t batch = leadingSize(a.shape(), 2), M = a.shape()[rank - 2],
            K = a.shape()[rank - 1], N = b.shape()[rank - 1];
    Shape shape = a.shape();
    shape.back() = N;
    Tensor c = Tensor::zeros(shape, a.precision());
    const T *ad = a.data<T>(), *bd = b.data<T>();
    T *cd = c.data<T>();
    for (int64_t n0 = 0; n0 < batch; ++n0)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          T acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += ad[(n0 * M + m) * K + k] * bd[(n0 * K + k) * N + n];
          cd[(n0 * M + m) * N + n] = acc;
        }
    return c;
  });
}

Tensor biasAdd(const Tensor &x, const Tensor &bias) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), n = lastDim(x.shape());
    Tensor y = Tensor::zeros(x.shape(), x.precision());
    const T *xd = x.data<T>(), *bd = bias.data<T>();
    T *yd = y.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i)
        yd[r * n + i] = xd[r * n + i] + bd[i];
    return y;
  });
}

Tensor add(const Tensor &a, const Tensor &b) {
  return byPrecision(a.precision(), [&](auto tag) {
    using T = decltype(tag);
    Tensor c = Tensor::zeros(a.shape(), a.precision());
    const T *ad = a.data<T>(), *bd = b.data<T>();
    T *cd = c.data<T>();
    for (int64_t i = 0; i < a.numElements(); ++i)
      cd[i] = ad[i] + bd[i];
    return c;
  });
}

Tensor transpose(const Tensor &x) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = x.shape()[0], cols = x.shape()[1];
    Tensor y = Tensor::zeros({cols, rows}, x.precision());
    const T *xd = x.data<T>();
    T *yd = y.data<T>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        yd[j * rows + i] = xd[i * cols + j];
    return y;
  });
}

Tensor relu(const Tensor &x) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = Tensor::zeros(x.shape(), x.precision());
    const T *xd = x.data<T>();
    T *yd = y.data<T>();
    for (int64_t i = 0; i < x.numElements(); ++i)
      yd[i] = xd[i] > 0 ? xd[i] : static_cast<T>(0);
    return y;
  });
}

Tensor gelu(const Tensor &x) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    const T c = kGeluScale<T>, a = kGeluCubic<T>;
    Tensor y = Tensor::zeros(x.shape(), x.precision());
    const T *xd = x.data<T>();
    T *yd = y.data<T>();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      T v = xd[i];
      yd[i] = static_cast<T>(0.5) * v *
              (static_cast<T>(1) + std::tanh(c * (v + a * v * v * v)));
    }
    return y;
  });
}

Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                 double epsilon) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), n = lastDim(x.shape());
    Tensor y = Tensor::zeros(x.shape(), x.precision());
    const T *xd = x.data<T>(), *gd = gamma.data<T>(), *bd = beta.data<T>();
    T *yd = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      T mean, rstd;
      rowStats(xd + r * n, n, static_cast<T>(epsilon), mean, rstd);
      for (int64_t i = 0; i < n; ++i)
        yd[r * n + i] = gd[i] * ((xd[r * n + i] - mean) * rstd) + bd[i];
    }
    return y;
  });
}

Tensor rope(const Tensor &x, const Tensor &positions, const RopeParams &params,
            bool inverse) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), width = lastDim(x.shape());
    int64_t d = params.headDim / 2, heads = width / params.headDim;
    Tensor y = Tensor::zeros(x.shape(), x.precision());
    const T *xd = x.data<T>();
    T *yd = y.data<T>();
    std::vector<double> invFreq(static_cast<size_t>(d));
    for (int64_t i = 0; i < d; ++i)
      invFreq[i] = ropeInverseFrequency(i, params);
    for (int64_t r = 0; r < rows; ++r) {
      double p = static_cast<double>(positions.getInt(r));
      for (int64_t i = 0; i < d; ++i) {
        double angle = p * invFreq[i];
        T c = static_cast<T>(std::cos(angle));
        T s = static_cast<T>(inverse ? -std::sin(angle) : std::sin(angle));
        for (int64_t h = 0; h < heads; ++h) {
          int64_t at = r * width + h * params.headDim + i;
          T x1 = xd[at], x2 = xd[at + d];
          yd[at] = x1 * c - x2 * s;
          yd[at + d] = x2 * c + x1 * s;
        }
      }
    }
    return y;
  });
}

Tensor swiGlu(const Tensor &gate, const Tensor &up) {
  return byPrecision(gate.precision(), [&](auto tag) {
    using T = decltype(tag);
    Tensor y = Tensor::zeros(gate.shape(), gate.precision());
    const T *gd = gate.data<T>(), *ud = up.data<T>();
    T *yd = y.data<T>();
    for (int64_t i = 0; i < gate.numElements(); ++i)
      yd[i] = gd[i] * sigmoid(gd[i]) * ud[i];
    return y;
  });
}

Tensor rmsNorm(const Tensor &x, const Tensor &weight, double epsilon) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), n = lastDim(x.shape());
    Tensor y = Tensor::zeros(x.shape(), x.precision());
    const T *xd = x.data<T>(), *wd = weight.data<T>();
    T *yd = y.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      T rstd = rmsRstd(xd + r * n, n, static_cast<T>(epsilon));
      for (int64_t i = 0; i < n; ++i)
        yd[r * n + i] = wd[i] * (xd[r * n + i] * rstd);
    }
    return y;
  });
}

FailureOr<Tensor> embedding(const Tensor &indices, const Tensor &table,
                            std::string &error) {
  int64_t vocab = table.shape()[0], hidden = table.shape()[1];
  if (findOutOfRange(indices, vocab, "index", error))
    return failure();
  return byPrecision(table.precision(), [&](auto tag) {
    using T = decltype(tag);
    Shape shape = indices.shape();
    shape.push_back(hidden);
    Tensor y = Tensor::zeros(shape, table.precision());
    const T *td = table.data<T>();
    T *yd = y.data<T>();
    for (int64_t p = 0; p < indices.numElements(); ++p)
      for (int64_t h = 0; h < hidden; ++h)
        yd[p * hidden + h] = td[indices.getInt(p) * hidden + h];
    return y;
  });
}

Tensor causalAttention(const Tensor &qkv, int64_t heads,
                       const Tensor *documents) {
  return attention(qkvPart(qkv, 0), qkvPart(qkv, 1), qkvPart(qkv, 2), heads,
                   heads, documents);
}

Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 int64_t heads, int64_t kvHeads, const Tensor *documents) {
  return byPrecision(q.precision(), [&](auto tag) {
    using T = decltype(tag);
    GroupedAttentionDims dims(q.shape(), heads, kvHeads);
    int64_t S = dims.seq;
    Tensor out = Tensor::zeros(q.shape(), q.precision());
    const T *qd = q.data<T>(), *kd = k.data<T>(), *vd = v.data<T>();
    T *od = out.data<T>();
    for (int64_t b = 0; b < dims.batch; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        std::vector<T> probs =
            groupedAttentionProbs(qd, kd, dims, b, h, documents);
        for (int64_t i = 0; i < S; ++i)
          for (int64_t t = 0; t < dims.headDim; ++t) {
            T acc = 0;
            for (int64_t j = 0; j <= i; ++j)
              acc += probs[i * S + j] * vd[dims.kv(b, j, h, t)];
            od[dims.q(b, i, h, t)] = acc;
          }
      }
    return out;
  });
}

FailureOr<Tensor> crossEntropy(const Tensor &logits, const Tensor &labels,
                               int64_t ignoreIndex, std::string &error) {
  int64_t classes = lastDim(logits.shape());
  int64_t counted = 0;
  if (findBadLabel(labels, classes, ignoreIndex, counted, error))
    return failure();
  return byPrecision(logits.precision(), [&](auto tag) {
    using T = decltype(tag);
    const T *ld = logits.data<T>();
    int64_t rows = labels.numElements();
    T total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (labels.getInt(r) == ignoreIndex)
        continue;
      const T *row = ld + r * classes;
      total += logSumExp(row, classes) - row[labels.getInt(r)];
    }
    return Tensor::scalar(counted ? total / static_cast<T>(counted) : T(0),
                          logits.precision());
  });
}

} // namespace zbc::interp::kernels
