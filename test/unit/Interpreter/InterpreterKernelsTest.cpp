//===- InterpreterKernelsTest.cpp - tests of the interpreter kernels ------===//
//
// Checks the per-op math of the reference interpreter (zbc/Interpreter/
// Kernels.h) without IR: every forward kernel on a case small enough to
// compute by hand, and every backward kernel against central finite
// differences of its forward kernel in F64 (the op-level gradient check:
// relative norm error <= 1e-6). Also checks that F32 really computes in
// float and agrees with F64 to about 1e-5.
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace zbc::interp;
using zbc::failed;
using zbc::FailureOr;
using zbc::succeeded;
namespace k = zbc::interp::kernels;

namespace {

constexpr Precision F64 = Precision::F64;
constexpr Precision F32 = Precision::F32;

Tensor f64(Shape shape, std::vector<double> values) {
  return Tensor::fromValues(std::move(shape), F64, values);
}

/// Expects every element of `actual` within `tol` of `expected`.
void expectValues(const Tensor &actual, const std::vector<double> &expected,
                  double tol = 1e-12) {
  ASSERT_EQ(actual.numElements(), static_cast<int64_t>(expected.size()))
      << actual.toString();
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual.get(i), expected[i], tol)
        << "element " << i << " of " << actual.toString();
}

/// A float tensor of standard-normal values, times `scale`.
Tensor randomTensor(Shape shape, uint64_t seed, double scale = 1.0,
                    Precision precision = F64) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Tensor t = Tensor::zeros(std::move(shape), precision);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, normal(rng));
  return t;
}

/// Values in +-[0.1, 1], so that no ReLU input sits on the kink.
Tensor awayFromZero(Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> magnitude(0.1, 1.0);
  Tensor t = Tensor::zeros(std::move(shape), F64);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, (rng() & 1 ? 1.0 : -1.0) * magnitude(rng));
  return t;
}

double dot(const Tensor &a, const Tensor &b) {
  double sum = 0.0;
  for (int64_t i = 0; i < a.numElements(); ++i)
    sum += a.get(i) * b.get(i);
  return sum;
}

using ForwardFn = std::function<Tensor(const std::vector<Tensor> &)>;

/// d<dy, f(inputs)> / d inputs[which], by central differences: the gradient
/// a backward kernel must produce for the upstream gradient dy.
Tensor numericGrad(const ForwardFn &f, std::vector<Tensor> inputs,
                   size_t which, const Tensor &dy, double eps = 1e-6) {
  Tensor grad = Tensor::zeros(inputs[which].shape(), F64);
  for (int64_t i = 0; i < grad.numElements(); ++i) {
    double original = inputs[which].get(i);
    inputs[which].set(i, original + eps);
    double plus = dot(f(inputs), dy);
    inputs[which].set(i, original - eps);
    double minus = dot(f(inputs), dy);
    inputs[which].set(i, original);
    grad.set(i, (plus - minus) / (2 * eps));
  }
  return grad;
}

/// The op-level gradient check.
void expectMatchesFD(const Tensor &analytic, const ForwardFn &f,
                     const std::vector<Tensor> &inputs, size_t which,
                     const Tensor &dy) {
  Tensor numeric = numericGrad(f, inputs, which, dy);
  EXPECT_LE(relativeError(analytic, numeric), 1e-6)
      << "analytic " << analytic.toString() << "\nnumeric  "
      << numeric.toString();
}

Tensor unwrap(FailureOr<Tensor> result) {
  EXPECT_TRUE(succeeded(result));
  return succeeded(result) ? *result : Tensor();
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

TEST(InterpTensor, AccessCastAndCompare) {
  Tensor t = f64({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(t.at({1, 2}), 5.0);
  EXPECT_EQ(t.flatIndex({1, 0}), 3);
  EXPECT_EQ(formatIndex(t.shape(), 4), "[1, 1]");
  Tensor f = t.cast(F32);
  EXPECT_EQ(f.precision(), F32);
  EXPECT_FALSE(bitwiseEqual(f, t)); // precisions differ
  EXPECT_TRUE(bitwiseEqual(f.cast(F64), t));
  EXPECT_EQ(relativeError(f, t), 0.0);

  Tensor negZero = f64({1}, {-0.0}), posZero = f64({1}, {0.0});
  EXPECT_FALSE(bitwiseEqual(negZero, posZero));
  EXPECT_EQ(relativeError(f64({2}, {3, 4}), f64({2}, {0, 0})), 5.0);
  EXPECT_TRUE(std::isinf(relativeError(f64({2}, {1, 2}), f64({1, 2}, {1, 2}))));

  Tensor ints = Tensor::fromInts({3}, {4, -1, 7});
  EXPECT_TRUE(ints.isInt());
  EXPECT_EQ(ints.getInt(2), 7);
  EXPECT_TRUE(bitwiseEqual(ints, ints.cast(F32)));
}

//===----------------------------------------------------------------------===//
// Forward kernels on hand-computed cases
//===----------------------------------------------------------------------===//

TEST(InterpKernels, Linear2x2) {
  Tensor x = f64({2, 2}, {1, 2, 3, 4});
  Tensor w = f64({2, 2}, {1, 0.5, -1, 2});
  // [1 2] [ 1 .5]   [-1 4.5]
  // [3 4] [-1  2] = [-1 9.5]
  expectValues(k::linear(x, w), {-1, 4.5, -1, 9.5}, 0.0);
  expectValues(k::linear(x.cast(F32), w.cast(F32)), {-1, 4.5, -1, 9.5}, 0.0);
}

TEST(InterpKernels, LinearKeepsLeadingDims) {
  Tensor x = f64({2, 1, 2}, {1, 2, 3, 4});
  Tensor y = k::linear(x, f64({2, 1}, {10, 1}));
  EXPECT_EQ(y.shape(), (Shape{2, 1, 1}));
  expectValues(y, {12, 34}, 0.0);
}

TEST(InterpKernels, F32ComputesInFloat) {
  // 1 + 2^-24 + 2^-24: float rounds each partial sum back to 1; double
  // would give 1 + 2^-23, which float can hold.
  double tiny = std::ldexp(1.0, -24);
  Tensor x = f64({1, 3}, {1, tiny, tiny});
  Tensor w = f64({3, 1}, {1, 1, 1});
  EXPECT_EQ(k::linear(x.cast(F32), w.cast(F32)).get(0), 1.0);
  EXPECT_EQ(k::linear(x, w).get(0), 1.0 + 2 * tiny);
}

TEST(InterpKernels, MatmulBatched) {
  Tensor a = f64({2, 1, 2}, {1, 2, 3, 4});
  Tensor b = f64({2, 2, 1}, {5, 6, 7, 8});
  Tensor c = k::matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 1, 1}));
  expectValues(c, {1 * 5 + 2 * 6, 3 * 7 + 4 * 8}, 0.0);
}

TEST(InterpKernels, Transpose) {
  Tensor y = k::transpose(f64({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expectValues(y, {1, 4, 2, 5, 3, 6}, 0.0);
  expectValues(k::transpose(y), {1, 2, 3, 4, 5, 6}, 0.0);
}

TEST(InterpKernels, ElementwiseOps) {
  Tensor x = f64({2, 2}, {-1, 0, 2, -3});
  expectValues(k::biasAdd(x, f64({2}, {10, 20})), {9, 20, 12, 17}, 0.0);
  expectValues(k::add(x, x), {-2, 0, 4, -6}, 0.0);
  expectValues(k::relu(x), {0, 0, 2, 0}, 0.0);
  expectValues(k::fill({2}, F64, 1.5), {1.5, 1.5}, 0.0);
}

TEST(InterpKernels, GeluAtZeroAndOne) {
  // 0.5 * 1 * (1 + tanh(sqrt(2/pi) * (1 + 0.044715))).
  Tensor y = k::gelu(f64({3}, {0, 1, -1}));
  expectValues(y, {0.0, 0.8411919906082768, -0.15880800939172324}, 1e-15);
  // The tanh form satisfies gelu(x) - gelu(-x) = x.
  EXPECT_NEAR(y.get(1) - y.get(2), 1.0, 1e-15);
  expectValues(k::gelu(f64({1}, {1}).cast(F32)), {0.8411919906082768}, 1e-7);
}

TEST(InterpKernels, LayerNormOverLastDim) {
  // Row [1 2 3 4]: mean 2.5, biased variance 1.25.
  double eps = 1e-5, rstd = 1.0 / std::sqrt(1.25 + eps);
  Tensor y = k::layerNorm(f64({1, 4}, {1, 2, 3, 4}), f64({4}, {1, 2, 1, 1}),
                          f64({4}, {0, 0, 1, 0}), eps);
  expectValues(y, {-1.5 * rstd, 2 * -0.5 * rstd, 0.5 * rstd + 1, 1.5 * rstd});
  // Each row is normalised on its own.
  Tensor two = k::layerNorm(f64({2, 2}, {0, 2, 10, 30}), f64({2}, {1, 1}),
                            f64({2}, {0, 0}), eps);
  expectValues(two, {-1 / std::sqrt(1 + eps), 1 / std::sqrt(1 + eps),
                     -10 / std::sqrt(100 + eps), 10 / std::sqrt(100 + eps)});
}

TEST(InterpKernels, RmsNormOverLastDim) {
  // Row [1 2 3 4]: mean of squares 7.5; the weight scales after.
  double eps = 1e-6, rstd = 1.0 / std::sqrt(7.5 + eps);
  Tensor y = k::rmsNorm(f64({1, 4}, {1, 2, 3, 4}), f64({4}, {1, 2, 1, -1}), eps);
  expectValues(y, {rstd, 2 * 2 * rstd, 3 * rstd, -4 * rstd});
  // Not centred: a constant row stays constant (LayerNorm would give 0).
  expectValues(k::rmsNorm(f64({1, 2}, {3, 3}), f64({2}, {1, 1}), 0.0),
               {1, 1}, 1e-15);
}

TEST(InterpKernels, EmbeddingLooksUpRows) {
  Tensor table = f64({3, 2}, {0, 1, 10, 11, 20, 21});
  std::string error;
  Tensor y = unwrap(
      k::embedding(Tensor::fromInts({2, 2}, {2, 0, 1, 2}), table, error));
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  expectValues(y, {20, 21, 0, 1, 10, 11, 20, 21}, 0.0);
}

TEST(InterpKernels, EmbeddingRejectsIndexOutOfRange) {
  std::string error;
  FailureOr<Tensor> y = k::embedding(Tensor::fromInts({2, 2}, {0, 1, 3, 0}),
                                     Tensor::zeros({3, 2}, F64), error);
  EXPECT_TRUE(failed(y));
  EXPECT_EQ(error, "index 3 at [1, 0] is outside [0, 3)");
  EXPECT_TRUE(failed(k::embeddingGrad(Tensor::fromInts({1}, {-1}),
                                      Tensor::zeros({1, 2}, F64), 3, error)));
  EXPECT_EQ(error, "index -1 at [0] is outside [0, 3)");
}

TEST(InterpKernels, CrossEntropyKnownValues) {
  // Row 0: uniform over 3 classes -> log 3. Row 1: log(e + e^2 + e^3) - 3.
  Tensor logits = f64({2, 3}, {0, 0, 0, 1, 2, 3});
  std::string error;
  Tensor loss = unwrap(
      k::crossEntropy(logits, Tensor::fromInts({2}, {1, 2}), -100, error));
  EXPECT_EQ(loss.rank(), 0);
  double row1 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3;
  expectValues(loss, {(std::log(3.0) + row1) / 2}, 1e-15);
  EXPECT_NEAR(row1, 0.40760596444438, 1e-13);
}

TEST(InterpKernels, CrossEntropyIsStableForLargeLogits) {
  std::string error;
  Tensor logits = f64({2, 3}, {1000, 0, -1000, 1000, 0, -1000});
  Tensor loss = unwrap(
      k::crossEntropy(logits, Tensor::fromInts({2}, {0, 1}), -100, error));
  expectValues(loss, {(0.0 + 1000.0) / 2}, 1e-9);
  Tensor f32 = unwrap(k::crossEntropy(logits.cast(F32),
                                      Tensor::fromInts({2}, {0, 1}), -100, error));
  expectValues(f32, {500.0}, 1e-3);
  Tensor grad = unwrap(k::crossEntropyGrad(
      logits, Tensor::fromInts({2}, {0, 1}), Tensor::scalar(1, F64), -100, error));
  // softmax of row 0 is (1, 0, 0) = onehot: no gradient; row 1 is pushed
  // from class 0 to class 1, halved by the mean.
  expectValues(grad, {0, 0, 0, 0.5, -0.5, 0}, 1e-12);
}

TEST(InterpKernels, CrossEntropyRejectsLabelOutOfRange) {
  std::string error;
  EXPECT_TRUE(failed(k::crossEntropy(Tensor::zeros({2, 3}, F64),
                                     Tensor::fromInts({2}, {0, 3}), -100, error)));
  EXPECT_EQ(error, "label 3 at [1] is outside [0, 3)"
                   " and is not the ignore_index -100");
}

TEST(InterpKernels, CausalAttentionTwoPositionsByHand) {
  // B=1, S=2, H=1, one head of width 1 (scale 1). Position 0 sees only
  // itself: out = v0. Position 1 scores q1*k0 = 0 and q1*k1 = ln 3, so
  // p = (1/4, 3/4) and out = v0/4 + 3 v1/4.
  double ln3 = std::log(3.0);
  Tensor qkv = f64({1, 2, 3}, {/*q0 k0 v0*/ 5, 0, 2, /*q1 k1 v1*/ 1, ln3, 6});
  expectValues(k::causalAttention(qkv, 1), {2, 0.25 * 2 + 0.75 * 6}, 1e-14);
}

TEST(InterpKernels, CausalAttentionHeadsAndScale) {
  // H=2, 2 heads of width 1: head 0 is the case above, head 1 scores
  // (q1 k1 = 0) with equal weight. q | k | v are packed along the last dim.
  double ln3 = std::log(3.0);
  Tensor qkv = f64({1, 2, 6}, {/*q*/ 0, 0, /*k*/ 0, 0, /*v*/ 2, 4,
                               /*q*/ 1, 1, /*k*/ ln3, 0, /*v*/ 6, 8});
  expectValues(k::causalAttention(qkv, 2), {2, 4, 5, 6}, 1e-14);
  // One head of width 2: scores are divided by sqrt(2), so a key of
  // ln3/sqrt(2) in both features against q = (1, 1) scores ln 3 again.
  double kk = ln3 / std::sqrt(2.0);
  Tensor wide = f64({1, 2, 6}, {0, 0, 0, 0, 2, 4, 1, 1, kk, kk, 6, 8});
  expectValues(k::causalAttention(wide, 1), {2, 4, 5, 7}, 1e-14);
}

TEST(InterpKernels, CausalAttentionIsStableForLargeScores) {
  // Scores 0 and 1000: position 1 attends to itself only, no overflow.
  Tensor qkv = f64({1, 2, 3}, {0, 0, 2, 1, 1000, 6});
  expectValues(k::causalAttention(qkv, 1), {2, 6}, 1e-12);
  expectValues(k::causalAttention(qkv.cast(F32), 1), {2, 6}, 1e-6);
}

//===----------------------------------------------------------------------===//
// Backward kernels against finite differences (F64)
//===----------------------------------------------------------------------===//

TEST(InterpFD, LinearGradInputAndWeight) {
  Tensor x = randomTensor({2, 3, 4}, 1), w = randomTensor({4, 5}, 2);
  Tensor dy = randomTensor({2, 3, 5}, 3);
  ForwardFn f = [](const std::vector<Tensor> &in) {
    return k::linear(in[0], in[1]);
  };
  expectMatchesFD(k::linearGradInput(dy, w), f, {x, w}, 0, dy);
  expectMatchesFD(k::linearGradWeight(x, dy), f, {x, w}, 1, dy);
}

TEST(InterpFD, LinearWithAnOutInWeight) {
  // PyTorch's layout: w [out, in], y = x @ w^T; its gradients, and the same
  // values as the [in, out] form with the weight transposed.
  Tensor x = randomTensor({2, 3, 4}, 31), w = randomTensor({5, 4}, 32);
  Tensor dy = randomTensor({2, 3, 5}, 33);
  ForwardFn f = [](const std::vector<Tensor> &in) {
    return k::linear(in[0], in[1], /*weightOutIn=*/true);
  };
  expectMatchesFD(k::linearGradInput(dy, w, true), f, {x, w}, 0, dy);
  expectMatchesFD(k::linearGradWeight(x, dy, true), f, {x, w}, 1, dy);
  Tensor wInOut = k::transpose(w);
  expectValues(k::linear(x, w, true),
               k::linear(x, wInOut).toDoubles(), 1e-15);
  expectValues(k::linearGradWeight(x, dy, true),
               k::transpose(k::linearGradWeight(x, dy)).toDoubles(), 1e-15);
}

TEST(InterpFD, MatmulGradLhsAndRhs) {
  Tensor a = randomTensor({2, 3, 4}, 4), b = randomTensor({2, 4, 5}, 5);
  Tensor dc = randomTensor({2, 3, 5}, 6);
  ForwardFn f = [](const std::vector<Tensor> &in) {
    return k::matmul(in[0], in[1]);
  };
  expectMatchesFD(k::matmulGradLhs(dc, b), f, {a, b}, 0, dc);
  expectMatchesFD(k::matmulGradRhs(a, dc), f, {a, b}, 1, dc);
}

TEST(InterpFD, BiasGrad) {
  Tensor x = randomTensor({2, 3, 4}, 7), bias = randomTensor({4}, 8);
  Tensor dy = randomTensor({2, 3, 4}, 9);
  ForwardFn f = [](const std::vector<Tensor> &in) {
    return k::biasAdd(in[0], in[1]);
  };
  expectMatchesFD(k::biasGrad(dy), f, {x, bias}, 1, dy);
}

TEST(InterpFD, ReluGrad) {
  Tensor x = awayFromZero({3, 5}, 10), dy = randomTensor({3, 5}, 11);
  ForwardFn f = [](const std::vector<Tensor> &in) { return k::relu(in[0]); };
  expectMatchesFD(k::reluGrad(dy, x), f, {x}, 0, dy);
}

TEST(InterpFD, GeluGrad) {
  Tensor x = randomTensor({3, 5}, 12, 2.0), dy = randomTensor({3, 5}, 13);
  ForwardFn f = [](const std::vector<Tensor> &in) { return k::gelu(in[0]); };
  expectMatchesFD(k::geluGrad(dy, x), f, {x}, 0, dy);
}

TEST(InterpFD, LayerNormGradInputGammaAndBeta) {
  Tensor x = randomTensor({2, 3, 5}, 14, 2.0);
  Tensor gamma = randomTensor({5}, 15), beta = randomTensor({5}, 16);
  Tensor dy = randomTensor({2, 3, 5}, 17);
  double eps = 1e-5;
  ForwardFn f = [&](const std::vector<Tensor> &in) {
    return k::layerNorm(in[0], in[1], in[2], eps);
  };
  expectMatchesFD(k::layerNormGradInput(dy, x, gamma, eps), f,
                  {x, gamma, beta}, 0, dy);
  expectMatchesFD(k::layerNormGradGamma(dy, x, eps), f, {x, gamma, beta}, 1,
                  dy);
  // ZBGradients.cpp takes beta's gradient from zb.bias_grad.
  expectMatchesFD(k::biasGrad(dy), f, {x, gamma, beta}, 2, dy);
}

TEST(InterpKernels, SwiGluIsSiluOfTheGateTimesUp) {
  // silu(0) = 0, silu(x) -> x for large x, silu(-x) = silu(x) - x.
  Tensor y = k::swiGlu(f64({4}, {0, 30, 2, -2}), f64({4}, {5, 2, 1, 1}));
  double s2 = 2 / (1 + std::exp(-2.0)), s30 = 30 / (1 + std::exp(-30.0));
  expectValues(y, {0, 2 * s30, s2, s2 - 2}, 1e-12);
  EXPECT_NEAR(s30, 30.0, 1e-11);
}

TEST(InterpFD, SwiGluGradGateAndUp) {
  Tensor gate = randomTensor({2, 3, 4}, 23, 3.0), up = randomTensor({2, 3, 4}, 24);
  Tensor dy = randomTensor({2, 3, 4}, 25);
  ForwardFn f = [](const std::vector<Tensor> &in) {
    return k::swiGlu(in[0], in[1]);
  };
  expectMatchesFD(k::swiGluGradGate(dy, gate, up), f, {gate, up}, 0, dy);
  expectMatchesFD(k::swiGluGradUp(dy, gate), f, {gate, up}, 1, dy);
}

TEST(InterpKernels, RopeRotatesEachPairByPositionTimesFrequency) {
  // One head of 4: pairs (0, 2) and (1, 3), inv_freq 1 and 100^(-1/2).
  k::RopeParams params;
  params.headDim = 4;
  params.theta = 100.0;
  Tensor x = f64({1, 2, 4}, {1, 2, 3, 4, 1, 2, 3, 4});
  Tensor positions = Tensor::fromInts({1, 2}, {0, 1});
  Tensor y = k::rope(x, positions, params);
  double c1 = std::cos(1.0), s1 = std::sin(1.0);
  double c2 = std::cos(0.1), s2 = std::sin(0.1);
  expectValues(y, {1, 2, 3, 4,                          // position 0
                   1 * c1 - 3 * s1, 2 * c2 - 4 * s2,    // x1 cos - x2 sin
                   3 * c1 + 1 * s1, 4 * c2 + 2 * s2});  // x2 cos + x1 sin
  // rope_grad is the rotation back.
  expectValues(k::rope(y, positions, params, /*inverse=*/true),
               {1, 2, 3, 4, 1, 2, 3, 4});
}

TEST(InterpKernels, RopeLlama3ScalingKeepsShortWavelengthsAndDividesLongOnes) {
  // head_dim 8, theta 1e4: inv_freq 1, 0.1, 0.01, 0.001, wavelengths 2 pi
  // times 1, 10, 100, 1000. Original context 1024 with low 1, high 4: a
  // wavelength below 256 keeps its frequency, above 1024 it is divided by
  // the factor 8, and 628 is between: (1 - s) f / 8 + s f, s = (1024 /
  // 628.3 - 1) / 3 (Hugging Face's _compute_llama3_parameters).
  k::RopeParams params;
  params.headDim = 8;
  params.theta = 1e4;
  params.llama3Factor = 8, params.llama3Low = 1, params.llama3High = 4;
  params.llama3Original = 1024;
  const double pi = 3.14159265358979323846;
  double s = (1024 / (2 * pi * 100) - 1) / 3;
  std::vector<double> expected = {1, 0.1, (1 - s) * 0.01 / 8 + s * 0.01,
                                  0.001 / 8};
  // At position 1, x = e_j rotates to (cos f_j, sin f_j) in pair j.
  for (int64_t j = 0; j < 4; ++j) {
    Tensor x = Tensor::zeros({1, 1, 8}, F64);
    x.set(j, 1.0);
    Tensor y = k::rope(x, Tensor::fromInts({1, 1}, {1}), params);
    EXPECT_NEAR(std::atan2(y.get(j + 4), y.get(j)), expected[j], 1e-14)
        << "pair " << j;
  }
}

TEST(InterpFD, RopeGradIsTheTransposedRotation) {
  k::RopeParams params;
  params.headDim = 6;
  params.theta = 50.0;
  Tensor x = randomTensor({2, 3, 12}, 26), dy = randomTensor({2, 3, 12}, 27);
  Tensor positions = Tensor::fromInts({2, 3}, {0, 1, 7, 3, 40, 2});
  ForwardFn f = [&](const std::vector<Tensor> &in) {
    return k::rope(in[0], positions, params);
  };
  expectMatchesFD(k::rope(dy, positions, params, /*inverse=*/true), f, {x}, 0,
                  dy);
}

TEST(InterpKernels, AttentionWithAllHeadsIsCausalAttention) {
  // kv_heads = heads: zb.attention on q, k, v is zb.causal_attention on
  // them packed side by side.
  const int64_t B = 2, S = 5, H = 12, heads = 3;
  Tensor q = randomTensor({B, S, H}, 30), k = randomTensor({B, S, H}, 31),
         v = randomTensor({B, S, H}, 32);
  Tensor qkv = Tensor::zeros({B, S, 3 * H}, F64);
  for (int64_t r = 0; r < B * S; ++r)
    for (int64_t c = 0; c < H; ++c) {
      qkv.set(r * 3 * H + c, q.get(r * H + c));
      qkv.set(r * 3 * H + H + c, k.get(r * H + c));
      qkv.set(r * 3 * H + 2 * H + c, v.get(r * H + c));
    }
  Tensor packed = k::causalAttention(qkv, heads);
  Tensor grouped = k::attention(q, k, v, heads, heads);
  for (int64_t i = 0; i < packed.numElements(); ++i)
    EXPECT_NEAR(grouped.get(i), packed.get(i), 1e-13) << "element " << i;
}

TEST(InterpKernels, AttentionSharesEachKvHeadWithItsGroup) {
  // 4 query heads on 2 kv heads: heads 0, 1 read kv head 0 and heads 2, 3
  // kv head 1, so each equals multi-head attention on k, v with every kv
  // head repeated twice (Hugging Face's repeat_kv).
  const int64_t B = 1, S = 4, d = 2;
  Tensor q = randomTensor({B, S, 4 * d}, 33), k = randomTensor({B, S, 2 * d}, 34),
         v = randomTensor({B, S, 2 * d}, 35);
  Tensor kr = Tensor::zeros({B, S, 4 * d}, F64), vr = kr;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t t = 0; t < d; ++t) {
        kr.set((s * 4 + h) * d + t, k.get((s * 2 + h / 2) * d + t));
        vr.set((s * 4 + h) * d + t, v.get((s * 2 + h / 2) * d + t));
      }
  Tensor grouped = k::attention(q, k, v, 4, 2);
  Tensor multiHead = k::attention(q, kr, vr, 4, 4);
  for (int64_t i = 0; i < grouped.numElements(); ++i)
    EXPECT_NEAR(grouped.get(i), multiHead.get(i), 1e-13) << "element " << i;
}

TEST(InterpFD, AttentionGradOfQKAndV) {
  for (int64_t kvHeads : {1, 2, 4}) {
    SCOPED_TRACE("kv_heads " + std::to_string(kvHeads));
    const int64_t B = 2, S = 4, heads = 4, d = 2;
    Tensor q = randomTensor({B, S, heads * d}, 36),
           k = randomTensor({B, S, kvHeads * d}, 37),
           v = randomTensor({B, S, kvHeads * d}, 38),
           dy = randomTensor({B, S, heads * d}, 39);
    ForwardFn f = [&](const std::vector<Tensor> &in) {
      return k::attention(in[0], in[1], in[2], heads, kvHeads);
    };
    k::AttentionGrads g = k::attentionGrad(dy, q, k, v, heads, kvHeads);
    expectMatchesFD(g.dq, f, {q, k, v}, 0, dy);
    expectMatchesFD(g.dk, f, {q, k, v}, 1, dy);
    expectMatchesFD(g.dv, f, {q, k, v}, 2, dy);
  }
}

TEST(InterpFD, RmsNormGradInputAndWeight) {
  Tensor x = randomTensor({2, 3, 5}, 20, 2.0), w = randomTensor({5}, 21);
  Tensor dy = randomTensor({2, 3, 5}, 22);
  double eps = 1e-6;
  ForwardFn f = [&](const std::vector<Tensor> &in) {
    return k::rmsNorm(in[0], in[1], eps);
  };
  expectMatchesFD(k::rmsNormGradInput(dy, x, w, eps), f, {x, w}, 0, dy);
  expectMatchesFD(k::rmsNormGradWeight(dy, x, eps), f, {x, w}, 1, dy);
}

TEST(InterpFD, EmbeddingGradScatterAddsRepeatedIndices) {
  Tensor indices = Tensor::fromInts({2, 3}, {1, 4, 1, 0, 1, 4});
  Tensor table = randomTensor({5, 3}, 18), dy = randomTensor({2, 3, 3}, 19);
  ForwardFn f = [&](const std::vector<Tensor> &in) {
    std::string error;
    return unwrap(k::embedding(indices, in[0], error));
  };
  std::string error;
  Tensor grad = unwrap(k::embeddingGrad(indices, dy, 5, error));
  expectMatchesFD(grad, f, {table}, 0, dy);
  // Rows 2 and 3 are never looked up.
  for (int64_t h = 0; h < 3; ++h) {
    EXPECT_EQ(grad.at({2, h}), 0.0);
    EXPECT_EQ(grad.at({3, h}), 0.0);
  }
}

TEST(InterpFD, CausalAttentionGrad) {
  for (int64_t heads : {1, 2}) {
    Tensor qkv = randomTensor({2, 4, 12}, 20 + heads);
    Tensor dout = randomTensor({2, 4, 4}, 30 + heads);
    ForwardFn f = [&](const std::vector<Tensor> &in) {
      return k::causalAttention(in[0], heads);
    };
    expectMatchesFD(k::causalAttentionGrad(dout, qkv, heads), f, {qkv}, 0,
                    dout);
  }
}

TEST(InterpFD, CrossEntropyGrad) {
  Tensor logits = randomTensor({2, 3, 5}, 40, 2.0);
  Tensor labels = Tensor::fromInts({2, 3}, {0, 4, 2, 2, 1, 3});
  Tensor dloss = Tensor::scalar(0.7, F64);
  ForwardFn f = [&](const std::vector<Tensor> &in) {
    std::string error;
    return unwrap(k::crossEntropy(in[0], labels, -100, error));
  };
  std::string error;
  expectMatchesFD(unwrap(k::crossEntropyGrad(logits, labels, dloss, -100, error)), f,
                  {logits}, 0, dloss);
}

//===----------------------------------------------------------------------===//
// F32 against F64
//===----------------------------------------------------------------------===//

TEST(InterpKernels, F32AgreesWithF64) {
  Tensor qkv = randomTensor({2, 4, 12}, 50), dout = randomTensor({2, 4, 4}, 51);
  Tensor x = randomTensor({2, 4, 6}, 52), gamma = randomTensor({6}, 53);
  Tensor beta = randomTensor({6}, 54), dy = randomTensor({2, 4, 6}, 55);
  auto both = [](auto fn) {
    Tensor wide = fn(F64), narrow = fn(F32);
    EXPECT_EQ(narrow.precision(), F32);
    EXPECT_LE(relativeError(narrow, wide), 1e-5)
        << narrow.toString() << "\n" << wide.toString();
  };
  both([&](Precision p) { return k::causalAttention(qkv.cast(p), 2); });
  both([&](Precision p) {
    return k::causalAttentionGrad(dout.cast(p), qkv.cast(p), 2);
  });
  both([&](Precision p) {
    return k::layerNorm(x.cast(p), gamma.cast(p), beta.cast(p), 1e-5);
  });
  both([&](Precision p) {
    return k::layerNormGradInput(dy.cast(p), x.cast(p), gamma.cast(p), 1e-5);
  });
  both([&](Precision p) { return k::geluGrad(dy.cast(p), x.cast(p)); });
}

} // namespace
