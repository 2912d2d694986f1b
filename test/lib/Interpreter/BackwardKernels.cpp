//===- BackwardKernels.cpp - math of the zb gradient ops ------------------===//
//
// The backward kernels of Kernels.h, one per op of ZBBackwardOps.td, written
// from the formula in each op's description. Where a description says a
// quantity is recomputed (LayerNorm statistics, attention probabilities,
// softmax), it is recomputed with the helper the forward kernel uses
// (KernelSupport.h), so forward and backward agree on every rounding.
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Kernels.h"

#include "KernelSupport.h"

#include <cmath>

namespace zbc::interp::kernels {
using namespace detail;

Tensor fill(const Shape &shape, Precision precision, double value) {
  return Tensor::filled(shape, precision, value);
}

Tensor linearGradInput(const Tensor &dy, const Tensor &w, bool weightOutIn) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(dy.shape()), in = w.shape()[weightOutIn ? 1 : 0],
            out = w.shape()[weightOutIn ? 0 : 1];
    Shape shape = dy.shape();
    shape.back() = in;
    Tensor dx = Tensor::zeros(shape, dy.precision());
    const T *dyd = dy.data<T>(), *wd = w.data<T>();
    T *dxd = dx.data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < in; ++i) {
        T acc = 0;
        for (int64_t o = 0; o < out; ++o)
          acc += dyd[r * out + o] * wd[weightOutIn ? o * in + i : i * out + o];
        dxd[r * in + i] = acc;
      }
    return dx;
  });
}

Tensor linearGradWeight(const Tensor &x, const Tensor &dy, bool weightOutIn) {
  return byPrecision(x.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), in = lastDim(x.shape()),
            out = lastDim(dy.shape());
    Tensor dw = Tensor::zeros(weightOutIn ? Shape{out, in} : Shape{in, out},
                              x.precision());
    const T *xd = x.data<T>(), *dyd = dy.data<T>();
    T *dwd = dw.data<T>();
    for (int64_t i = 0; i < in; ++i)
      for (int64_t o = 0; o < out; ++o) {
        T acc = 0;
        for (int64_t r = 0; r < rows; ++r)
          acc += xd[r * in + i] * dyd[r * out + o];
        dwd[weightOutIn ? o * in + i : i * out + o] = acc;
      }
    return dw;
  });
}

Tensor matmulGradLhs(const Tensor &dc, const Tensor &b) {
  return byPrecision(dc.precision(), [&](auto tag) {
    using T = decltype(tag);
    size_t rank = dc.shape().size();
    int64_t batch = leadingSize(dc.shape(), 2), M = dc.shape()[rank - 2],
            N = dc.shape()[rank - 1], K = b.shape()[rank - 2];
    Shape shape = dc.shape();
    shape.back() = K;
    Tensor da = Tensor::zeros(shape, dc.precision());
    const T *dcd = dc.data<T>(), *bd = b.data<T>();
    T *dad = da.data<T>();
    for (int64_t n0 = 0; n0 < batch; ++n0)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
          T acc = 0;
          for (int64_t n = 0; n < N; ++n)
            acc += dcd[(n0 * M + m) * N + n] * bd[(n0 * K + k) * N + n];
          dad[(n0 * M + m) * K + k] = acc;
        }
    return da;
  });
}

Tensor matmulGradRhs(const Tensor &a, const Tensor &dc) {
  return byPrecision(a.precision(), [&](auto tag) {
    using T = decltype(tag);
    size_t rank = a.shape().size();
    int64_t batch = leadingSize(a.shape(), 2), M = a.shape()[rank - 2],
            K = a.shape()[rank - 1], N = dc.shape()[rank - 1];
    Shape shape = a.shape();
    shape[rank - 2] = K;
    shape[rank - 1] = N;
    Tensor db = Tensor::zeros(shape, a.precision());
    const T *ad = a.data<T>(), *dcd = dc.data<T>();
    T *dbd = db.data<T>();
    for (int64_t n0 = 0; n0 < batch; ++n0)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) {
          T acc = 0;
          for (int64_t m = 0; m < M; ++m)
            acc += ad[(n0 * M + m) * K + k] * dcd[(n0 * M + m) * N + n];
          dbd[(n0 * K + k) * N + n] = acc;
        }
    return db;
  });
}

Tensor biasGrad(const Tensor &dy) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(dy.shape()), n = lastDim(dy.shape());
    Tensor db = Tensor::zeros({n}, dy.precision());
    const T *dyd = dy.data<T>();
    T *dbd = db.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      T acc = 0;
      for (int64_t r = 0; r < rows; ++r)
        acc += dyd[r * n + i];
      dbd[i] = acc;
    }
    return db;
  });
}

Tensor reluGrad(const Tensor &dy, const Tensor &x) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    Tensor dx = Tensor::zeros(x.shape(), dy.precision());
    const T *dyd = dy.data<T>(), *xd = x.data<T>();
    T *dxd = dx.data<T>();
    for (int64_t i = 0; i < x.numElements(); ++i)
      dxd[i] = xd[i] > 0 ? dyd[i] : static_cast<T>(0);
    return dx;
  });
}

Tensor geluGrad(const Tensor &dy, const Tensor &x) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    const T c = kGeluScale<T>, a = kGeluCubic<T>;
    const T half = static_cast<T>(0.5), one = static_cast<T>(1);
    Tensor dx = Tensor::zeros(x.shape(), dy.precision());
    const T *dyd = dy.data<T>(), *xd = x.data<T>();
    T *dxd = dx.data<T>();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      // d/dx 0.5 x (1 + tanh(u)), u = c (x + a x^3):
      //   0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) c (1 + 3 a x^2).
      T v = xd[i];
      T th = std::tanh(c * (v + a * v * v * v));
      T slope = c * (one + static_cast<T>(3) * a * v * v);
      T derivative = half * (one + th) + half * v * (one - th * th) * slope;
      dxd[i] = dyd[i] * derivative;
    }
    return dx;
  });
}

Tensor layerNormGradInput(const Tensor &dy, const Tensor &x,
                          const Tensor &gamma, double epsilon) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), n = lastDim(x.shape());
    Tensor dx = Tensor::zeros(x.shape(), dy.precision());
    const T *dyd = dy.data<T>(), *xd = x.data<T>(), *gd = gamma.data<T>();
    T *dxd = dx.data<T>();
    std::vector<T> g(n), xhat(n);
    for (int64_t r = 0; r < rows; ++r) {
      T mean, rstd;
      rowStats(xd + r * n, n, static_cast<T>(epsilon), mean, rstd);
      T meanG = 0, meanGXhat = 0;
      for (int64_t i = 0; i < n; ++i) {
        xhat[i] = (xd[r * n + i] - mean) * rstd;
        g[i] = dyd[r * n + i] * gd[i];
        meanG += g[i];
        meanGXhat += g[i] * xhat[i];
      }
      meanG /= static_cast<T>(n);
      meanGXhat /= static_cast<T>(n);
      for (int64_t i = 0; i < n; ++i)
        dxd[r * n + i] = rstd * (g[i] - meanG - xhat[i] * meanGXhat);
    }
    return dx;
  });
}

Tensor layerNormGradGamma(const Tensor &dy, const Tensor &x, double epsilon) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), n = lastDim(x.shape());
    Tensor dgamma = Tensor::zeros({n}, dy.precision());
    const T *dyd = dy.data<T>(), *xd = x.data<T>();
    T *dgd = dgamma.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      T mean, rstd;
      rowStats(xd + r * n, n, static_cast<T>(epsilon), mean, rstd);
      for (int64_t i = 0; i < n; ++i)
        dgd[i] += dyd[r * n + i] * ((xd[r * n + i] - mean) * rstd);
    }
    return dgamma;
  });
}

Tensor swiGluGradGate(const Tensor &dy, const Tensor &gate, const Tensor &up) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    Tensor dg = Tensor::zeros(gate.shape(), dy.precision());
    const T *dyd = dy.data<T>(), *gd = gate.data<T>(), *ud = up.data<T>();
    T *dgd = dg.data<T>();
    for (int64_t i = 0; i < gate.numElements(); ++i) {
      T s = sigmoid(gd[i]);
      dgd[i] = dyd[i] * ud[i] * (s * (static_cast<T>(1) +
                                      gd[i] * (static_cast<T>(1) - s)));
    }
    return dg;
  });
}

Tensor swiGluGradUp(const Tensor &dy, const Tensor &gate) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    Tensor du = Tensor::zeros(gate.shape(), dy.precision());
    const T *dyd = dy.data<T>(), *gd = gate.data<T>();
    T *dud = du.data<T>();
    for (int64_t i = 0; i < gate.numElements(); ++i)
      dud[i] = dyd[i] * (gd[i] * sigmoid(gd[i]));
    return du;
  });
}

Tensor rmsNormGradInput(const Tensor &dy, const Tensor &x,
                        const Tensor &weight, double epsilon) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), n = lastDim(x.shape());
    Tensor dx = Tensor::zeros(x.shape(), dy.precision());
    const T *dyd = dy.data<T>(), *xd = x.data<T>(), *wd = weight.data<T>();
    T *dxd = dx.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      T rstd = rmsRstd(xd + r * n, n, static_cast<T>(epsilon));
      T meanGXhat = 0;
      for (int64_t i = 0; i < n; ++i)
        meanGXhat += (dyd[r * n + i] * wd[i]) * (xd[r * n + i] * rstd);
      meanGXhat /= static_cast<T>(n);
      for (int64_t i = 0; i < n; ++i)
        dxd[r * n + i] = rstd * (dyd[r * n + i] * wd[i] -
                                 (xd[r * n + i] * rstd) * meanGXhat);
    }
    return dx;
  });
}

Tensor rmsNormGradWeight(const Tensor &dy, const Tensor &x, double epsilon) {
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = leadingSize(x.shape()), n = lastDim(x.shape());
    Tensor dw = Tensor::zeros({n}, dy.precision());
    const T *dyd = dy.data<T>(), *xd = x.data<T>();
    T *dwd = dw.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      T rstd = rmsRstd(xd + r * n, n, static_cast<T>(epsilon));
      for (int64_t i = 0; i < n; ++i)
        dwd[i] += dyd[r * n + i] * (xd[r * n + i] * rstd);
    }
    return dw;
  });
}

FailureOr<Tensor> embeddingGrad(const Tensor &indices, const Tensor &dy,
                                int64_t vocab, std::string &error) {
  if (findOutOfRange(indices, vocab, "index", error))
    return failure();
  return byPrecision(dy.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t hidden = lastDim(dy.shape());
    Tensor dtable = Tensor::zeros({vocab, hidden}, dy.precision());
    const T *dyd = dy.data<T>();
    T *dtd = dtable.data<T>();
    for (int64_t p = 0; p < indices.numElements(); ++p)
      for (int64_t h = 0; h < hidden; ++h)
        dtd[indices.getInt(p) * hidden + h] += dyd[p * hidden + h];
    return dtable;
  });
}

Tensor causalAttentionGrad(const Tensor &dout, const Tensor &qkv,
                           int64_t heads, const Tensor *documents) {
  AttentionGrads g = attentionGrad(dout, qkvPart(qkv, 0), qkvPart(qkv, 1),
                                   qkvPart(qkv, 2), heads, heads, documents);
  return packQkv(g.dq, g.dk, g.dv);
}

AttentionGrads attentionGrad(const Tensor &dout, const Tensor &q,
                             const Tensor &k, const Tensor &v, int64_t heads,
                             int64_t kvHeads, const Tensor *documents) {
  AttentionGrads grads{Tensor::zeros(q.shape(), q.precision()),
                       Tensor::zeros(k.shape(), k.precision()),
                       Tensor::zeros(v.shape(), v.precision())};
  auto run = [&](auto tag) {
    using T = decltype(tag);
    GroupedAttentionDims dims(q.shape(), heads, kvHeads);
    int64_t S = dims.seq, d = dims.headDim;
    T scale = static_cast<T>(1) / std::sqrt(static_cast<T>(d));
    const T *qd = q.data<T>(), *kd = k.data<T>(), *vd = v.data<T>(),
            *dod = dout.data<T>();
    T *dq = grads.dq.data<T>(), *dk = grads.dk.data<T>(),
      *dv = grads.dv.data<T>();
    for (int64_t b = 0; b < dims.batch; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        // P is 0 outside each query's keys (Note [Document masks]), and so
        // is dS: the sums below over j <= i need no mask of their own.
        std::vector<T> P =
            groupedAttentionProbs(qd, kd, dims, b, h, documents);
        // dP = dO V^T and dS = P * (dP - rowsum(dP * P)), on j <= i.
        std::vector<T> dS(S * S, 0);
        for (int64_t i = 0; i < S; ++i) {
          std::vector<T> dP(S, 0);
          T rowDot = 0;
          for (int64_t j = 0; j <= i; ++j) {
            for (int64_t t = 0; t < d; ++t)
              dP[j] += dod[dims.q(b, i, h, t)] * vd[dims.kv(b, j, h, t)];
            rowDot += dP[j] * P[i * S + j];
          }
          for (int64_t j = 0; j <= i; ++j)
            dS[i * S + j] = P[i * S + j] * (dP[j] - rowDot);
        }
        // The kv head's dV = P^T dO and dK = dS^T Q / sqrt(d) add up over
        // the query heads of its group.
        for (int64_t j = 0; j < S; ++j)
          for (int64_t t = 0; t < d; ++t) {
            T sumV = 0, sumK = 0;
            for (int64_t i = j; i < S; ++i) {
              sumV += P[i * S + j] * dod[dims.q(b, i, h, t)];
              sumK += dS[i * S + j] * qd[dims.q(b, i, h, t)];
            }
            dv[dims.kv(b, j, h, t)] += sumV;
            dk[dims.kv(b, j, h, t)] += sumK * scale;
          }
        for (int64_t i = 0; i < S; ++i)
          for (int64_t t = 0; t < d; ++t) {
            T sum = 0;
            for (int64_t j = 0; j <= i; ++j)
              sum += dS[i * S + j] * kd[dims.kv(b, j, h, t)];
            dq[dims.q(b, i, h, t)] = sum * scale;
          }
      }
  };
  if (q.precision() == Precision::F32)
    run(float{});
  else
    run(double{});
  return grads;
}

namespace {
/// zb.cross_entropy_grad over the columns [first, first + columns) of
/// `classes`: dloss (exp(z - lse) - onehot) / N, N the labels that are not
/// `ignoreIndex` (their rows 0), each row's log-sum-exp from `lseOf(r,
/// row)`: the row's own (crossEntropyGrad), or over every shard
/// (vocabGrad). Fails on a bad label.
template <typename LseOf>
FailureOr<Tensor> softmaxCrossEntropyGrad(const Tensor &logits,
                                          const Tensor &labels,
                                          const Tensor &dloss, int64_t first,
                                          int64_t classes, int64_t ignoreIndex,
                                          std::string &error, LseOf lseOf) {
  int64_t columns = lastDim(logits.shape()), counted = 0;
  if (findBadLabel(labels, classes, ignoreIndex, counted, error))
    return failure();
  return byPrecision(logits.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = labels.numElements();
    Tensor dlogits = Tensor::zeros(logits.shape(), logits.precision());
    const T *ld = logits.data<T>();
    T *dd = dlogits.data<T>();
    T scale = counted ? dloss.data<T>()[0] / static_cast<T>(counted) : T(0);
    for (int64_t r = 0; r < rows; ++r) {
      if (labels.getInt(r) == ignoreIndex)
        continue; // its row stays 0
      const T *row = ld + r * columns;
      T lse = lseOf(r, row, tag);
      for (int64_t c = 0; c < columns; ++c) {
        T onehot = first + c == labels.getInt(r) ? 1 : 0;
        dd[r * columns + c] = scale * (std::exp(row[c] - lse) - onehot);
      }
    }
    return dlogits;
  });
}
} // namespace

FailureOr<Tensor> crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                                   const Tensor &dloss, int64_t ignoreIndex,
                                   std::string &error) {
  int64_t classes = lastDim(logits.shape());
  return softmaxCrossEntropyGrad(
      logits, labels, dloss, /*first=*/0, classes, ignoreIndex, error,
      [&](int64_t, const auto *row, auto) { return logSumExp(row, classes); });
}

//===----------------------------------------------------------------------===//
// The output layer over a vocabulary shard
//===----------------------------------------------------------------------===//

namespace {
/// Planes [4, rows...] of a shard's statistics for `logits` [rows..., R].
Shape statsShape(const Tensor &logits) {
  Shape shape = {4};
  shape.insert(shape.end(), logits.shape().begin(), logits.shape().end() - 1);
  return shape;
}
} // namespace

FailureOr<Tensor> vocabStats(const Tensor &logits, const Tensor &labels,
                             int64_t first, int64_t vocab, int64_t ignoreIndex,
                             std::string &error) {
  int64_t columns = lastDim(logits.shape()), counted = 0;
  if (findBadLabel(labels, vocab, ignoreIndex, counted, error))
    return failure();
  return byPrecision(logits.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = labels.numElements();
    Tensor stats = Tensor::zeros(statsShape(logits), logits.precision());
    T *planes = stats.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T *row = logits.data<T>() + r * columns;
      T max = *std::max_element(row, row + columns);
      int64_t column = labels.getInt(r) - first;
      bool held = labels.getInt(r) != ignoreIndex && column >= 0 &&
                  column < columns;
      planes[r] = planes[3 * rows + r] = max;
      planes[rows + r] = logSumExp(row, columns) - max;
      planes[2 * rows + r] = held ? row[column] : T(0);
    }
    return stats;
  });
}

std::vector<Tensor> vocabMerge(const std::vector<Tensor> &stats) {
  std::vector<Tensor> merged = stats;
  auto merge = [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = stats.front().numElements() / 4;
    for (int64_t r = 0; r < rows; ++r) {
      T max = -std::numeric_limits<T>::infinity(), sum = 0, target = 0;
      for (const Tensor &shard : stats)
        max = std::max(max, shard.data<T>()[r]);
      for (const Tensor &shard : stats) {
        const T *planes = shard.data<T>();
        sum += std::exp(planes[r] + planes[rows + r] - max);
        target += planes[2 * rows + r];
      }
      for (Tensor &shard : merged) {
        T *planes = shard.data<T>();
        planes[rows + r] = sum;
        planes[2 * rows + r] = target;
        planes[3 * rows + r] = max;
      }
    }
  };
  if (stats.front().precision() == Precision::F32)
    merge(float{});
  else
    merge(double{});
  return merged;
}

FailureOr<Tensor> vocabLoss(const Tensor &stats, const Tensor &labels,
                            int64_t vocab, int64_t ignoreIndex,
                            std::string &error) {
  int64_t counted = 0;
  if (findBadLabel(labels, vocab, ignoreIndex, counted, error))
    return failure();
  return byPrecision(stats.precision(), [&](auto tag) {
    using T = decltype(tag);
    int64_t rows = labels.numElements();
    const T *planes = stats.data<T>();
    T total = 0;
    for (int64_t r = 0; r < rows; ++r)
      if (labels.getInt(r) != ignoreIndex)
        total += planes[3 * rows + r] + std::log(planes[rows + r]) -
                 planes[2 * rows + r];
    return Tensor::scalar(counted ? total / static_cast<T>(counted) : T(0),
                          stats.precision());
  });
}

FailureOr<Tensor> vocabGrad(const Tensor &logits, const Tensor &labels,
                            const Tensor &stats, const Tensor &dloss,
                            int64_t first, int64_t vocab, int64_t ignoreIndex,
                            std::string &error) {
  int64_t rows = labels.numElements();
  return softmaxCrossEntropyGrad(
      logits, labels, dloss, first, vocab, ignoreIndex, error,
      [&](int64_t r, const auto *, auto tag) {
        using T = decltype(tag);
        const T *planes = stats.data<T>();
        return planes[3 * rows + r] + std::log(planes[rows + r]);
      });
}

} // namespace zbc::interp::kernels
