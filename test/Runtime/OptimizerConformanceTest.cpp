//===- OptimizerConformanceTest.cpp - optimizer kernels vs the oracle -----===//
//
// The runtime's SGD-momentum and AdamW kernels (zbc::rt::cpu::sgdMomentum,
// adamw) against the reference optimizers (zbc/Interpreter/Optimizers.h)
// over several steps, and both against trajectories recorded from PyTorch.
//
// Runtime vs reference, both fp32: the same bits, every step. Both round the
// per-step scalars from double once and then do the same IEEE float
// operations (mul, add, div, sqrt, each correctly rounded) in the same order
// on each element; nothing is reassociated (no -ffast-math) and baseline
// x86-64 has no FMA to contract into, so there is nothing to differ. (A
// target whose compiler contracts a * b + c into an FMA in one library and
// not the other would break this; it would then be ~1 ulp.)
//
// Against the F64 reference: within 1e-5 * (1 + |ref|) after 10 steps.
//
// Against PyTorch 1.13 (torch.optim.SGD / AdamW, single-tensor path, fp32
// CPU), recorded trajectories (see the comment above kTorchParams): within
// 1e-6 * (1 + |torch|), a few float roundings, and most elements the same
// bits. Not all: the runtime performs PyTorch's tensor ops in PyTorch's order
// with PyTorch's scalars, but PyTorch's AVX2 kernels evaluate `a + alpha * b`
// (add_ with alpha, addcmul_, addcdiv_) as one FMA, rounding once where
// baseline x86-64 code without FMA rounds twice (measured: 1 ulp on 6 of 72
// recorded values, more ulps only where a result cancels to far below its
// operands).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "zbc/Interpreter/Optimizers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace zbc::interp;
namespace rt = zbc::rt::cpu;

namespace {

constexpr Precision F32 = Precision::F32;
constexpr Precision F64 = Precision::F64;

std::vector<float> floats(const Tensor &t) {
  const float *data = t.data<float>();
  return std::vector<float>(data, data + t.numElements());
}

Tensor randomF32(int64_t n, std::mt19937_64 &rng, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  Tensor t = Tensor::zeros({n}, F32);
  for (int64_t i = 0; i < n; ++i)
    t.set(i, normal(rng));
  return t;
}

/// Whether `actual` holds exactly the bits of the F32 tensor `expected`.
bool sameBits(const std::vector<float> &actual, const Tensor &expected) {
  return static_cast<int64_t>(actual.size()) == expected.numElements() &&
         std::memcmp(actual.data(), expected.data<float>(),
                     actual.size() * sizeof(float)) == 0;
}

/// Worst |actual - expected| / (1 + |expected|).
double worstError(const std::vector<float> &actual, const Tensor &expected) {
  double worst = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double e = expected.get(static_cast<int64_t>(i));
    double error = std::abs(actual[i] - e) / (1.0 + std::abs(e));
    worst = std::isnan(error) ? INFINITY : std::max(worst, error);
  }
  return worst;
}

constexpr int64_t kN = 1037; // odd: the vector loops' remainders run too
constexpr int kSteps = 10;

rt::SgdConfig toRuntime(const SgdConfig &c) {
  return {c.lr, c.momentum, c.weightDecay};
}
rt::AdamWConfig toRuntime(const AdamWConfig &c) {
  return {c.lr, c.beta1, c.beta2, c.epsilon, c.weightDecay};
}

//===----------------------------------------------------------------------===//
// Runtime vs reference
//===----------------------------------------------------------------------===//

TEST(OptimizerConformance, DefaultsMatch) {
  SgdConfig sgd;
  rt::SgdConfig rtSgd;
  EXPECT_EQ(sgd.lr, rtSgd.lr);
  EXPECT_EQ(sgd.momentum, rtSgd.momentum);
  EXPECT_EQ(sgd.weightDecay, rtSgd.weightDecay);
  AdamWConfig adamw;
  rt::AdamWConfig rtAdamw;
  EXPECT_EQ(adamw.lr, rtAdamw.lr);
  EXPECT_EQ(adamw.beta1, rtAdamw.beta1);
  EXPECT_EQ(adamw.beta2, rtAdamw.beta2);
  EXPECT_EQ(adamw.epsilon, rtAdamw.epsilon);
  EXPECT_EQ(adamw.weightDecay, rtAdamw.weightDecay);
  EXPECT_EQ(sgd.lr, 0.01);
  // PyTorch's default: plain SGD unless --momentum is given.
  EXPECT_EQ(sgd.momentum, 0.0);
  EXPECT_EQ(sgd.weightDecay, 0.0);
  EXPECT_EQ(adamw.lr, 1e-3);
  EXPECT_EQ(adamw.beta1, 0.9);
  EXPECT_EQ(adamw.beta2, 0.999);
  EXPECT_EQ(adamw.epsilon, 1e-8);
  EXPECT_EQ(adamw.weightDecay, 0.01);
}

struct SgdCase {
  SgdConfig config;
  double gradScale;
};

TEST(OptimizerConformance, SgdMomentum) {
  const SgdCase cases[] = {
      {SgdConfig{}, 1.0},
      {SgdConfig{0.05, 0.5, 0.1}, 1.0},
      {SgdConfig{0.1, 0.0, 0.0}, 0.25},  // plain SGD
      {SgdConfig{0.01, 0.99, 1e-4}, 0.125}, // 1 / 8 microbatches
  };
  std::mt19937_64 rng(31);
  for (const SgdCase &c : cases) {
    SCOPED_TRACE("lr " + std::to_string(c.config.lr) + " momentum " +
                 std::to_string(c.config.momentum) + " wd " +
                 std::to_string(c.config.weightDecay));
    Tensor param32 = randomF32(kN, rng, 1.0);
    Tensor param64 = param32.cast(F64);
    Tensor buf32 = Tensor::zeros({kN}, F32), buf64 = Tensor::zeros({kN}, F64);
    std::vector<float> param = floats(param32), buf(kN, 0.0f);
    for (int step = 1; step <= kSteps; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      Tensor grad = randomF32(kN, rng, 1.0);
      sgdMomentumStep(param32, buf32, grad, c.config, c.gradScale);
      sgdMomentumStep(param64, buf64, grad.cast(F64), c.config, c.gradScale);
      rt::sgdMomentum(param.data(), grad.data<float>(), buf.data(), kN,
                      toRuntime(c.config), static_cast<float>(c.gradScale));
      ASSERT_TRUE(sameBits(param, param32));
      ASSERT_TRUE(sameBits(buf, buf32));
    }
    EXPECT_LE(worstError(param, param64), 1e-5);
  }
}

struct AdamWCase {
  AdamWConfig config;
  double gradScale;
};

TEST(OptimizerConformance, AdamW) {
  const AdamWCase cases[] = {
      {AdamWConfig{}, 1.0},
      {AdamWConfig{0.01, 0.8, 0.99, 1e-6, 0.1}, 1.0},
      {AdamWConfig{3e-4, 0.9, 0.95, 1e-8, 0.0}, 0.25},
  };
  std::mt19937_64 rng(32);
  for (const AdamWCase &c : cases) {
    SCOPED_TRACE("lr " + std::to_string(c.config.lr) + " beta2 " +
                 std::to_string(c.config.beta2));
    Tensor param32 = randomF32(kN, rng, 1.0);
    Tensor param64 = param32.cast(F64);
    Tensor m32 = Tensor::zeros({kN}, F32), v32 = Tensor::zeros({kN}, F32);
    Tensor m64 = Tensor::zeros({kN}, F64), v64 = Tensor::zeros({kN}, F64);
    std::vector<float> param = floats(param32), m(kN, 0.0f), v(kN, 0.0f);
    for (int step = 1; step <= kSteps; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      // Gradients of mixed magnitudes, so that sqrt(vhat) and eps both
      // matter somewhere.
      Tensor grad = randomF32(kN, rng, step % 2 ? 1.0 : 1e-3);
      adamwStep(param32, m32, v32, grad, c.config, step, c.gradScale);
      adamwStep(param64, m64, v64, grad.cast(F64), c.config, step,
                c.gradScale);
      rt::adamw(param.data(), grad.data<float>(), m.data(), v.data(), kN,
                toRuntime(c.config), step, static_cast<float>(c.gradScale));
      ASSERT_TRUE(sameBits(param, param32));
      ASSERT_TRUE(sameBits(m, m32));
      ASSERT_TRUE(sameBits(v, v32));
    }
    EXPECT_LE(worstError(param, param64), 1e-5);
  }
}

//===----------------------------------------------------------------------===//
// Against PyTorch
//===----------------------------------------------------------------------===//

// Recorded with Debian's torch 1.13.1 (CPU, fp32, one thread):
//
//   p0 = [0.5, -1.25, 0.03125, 2.0, -0.75, 1e-3]
//   grads = [[0.1, -0.2, 0.3, -0.4, 0.5, 1e-4],
//            [-0.05, 0.25, 0.125, 0.0, -1.5, -2e-4],
//            [0.3, 0.3, -0.6, 0.2, 0.01, 3e-4]]
//   p = torch.nn.Parameter(torch.tensor(p0)); opt = <optimizer>([p])
//   for g in grads:
//       p.grad = torch.tensor(g); opt.step(); print([x.hex() for x in p])
//
// with the optimizers torch.optim.AdamW(), AdamW(lr=0.01, betas=(0.8, 0.99),
// eps=1e-6, weight_decay=0.1), SGD(lr=0.01, momentum=0.9) and SGD(lr=0.05,
// momentum=0.5, weight_decay=0.1). torch.tensor rounds each Python float to
// the nearest float, as the float literals below do.
constexpr int kTorchN = 6, kTorchSteps = 3;
const float kTorchParams[kTorchN] = {0.5f, -1.25f, 0.03125f,
                                     2.0f, -0.75f, 1e-3f};
const float kTorchGrads[kTorchSteps][kTorchN] = {
    {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, 1e-4f},
    {-0.05f, 0.25f, 0.125f, 0.0f, -1.5f, -2e-4f},
    {0.3f, 0.3f, -0.6f, 0.2f, 0.01f, 3e-4f},
};
using Trajectory = float[kTorchSteps][kTorchN];
const Trajectory kTorchAdamWDefault = {
    {0x1.fef88cp-2f, -0x1.3fbda4p+0f, 0x1.ef9c62p-6f, 0x1.00201cp+1f,
     -0x1.808216p-1f, 0x1.83p-24f},
    {0x1.feb16ap-2f, -0x1.3fc77cp+0f, 0x1.e0c81cp-6f, 0x1.003568p+1f,
     -0x1.804054p-1f, 0x1.7ff528p-12f},
    {0x1.fe0056p-2f, -0x1.3fe95p+0f, 0x1.e4872p-6f, 0x1.003a9p+1f,
     -0x1.800dcep-1f, 0x1.80e5ap-16f},
};
const Trajectory kTorchAdamWTuned = {
    {0x1.f53f84p-2f, -0x1.3d1eb8p+0f, 0x1.5ba608p-6f, 0x1.010624p+1f,
     -0x1.84bc6ap-1f, -0x1.23b34ep-7f},
    {0x1.f295b8p-2f, -0x1.3d5e34p+0f, 0x1.94f44ep-7f, 0x1.0192d2p+1f,
     -0x1.818de8p-1f, -0x1.34a3f6p-8f},
    {0x1.eac244p-2f, -0x1.3e96e2p+0f, 0x1.fd3c2ap-7f, 0x1.016e18p+1f,
     -0x1.7f2bp-1f, -0x1.180abap-7f},
};
const Trajectory kTorchSgd = {
    {0x1.fef9dcp-2f, -0x1.3f7ceep+0f, 0x1.ced916p-6f, 0x1.008312p+1f,
     -0x1.828f5cp-1f, 0x1.05e1c2p-10f},
    {0x1.fe91p-2f, -0x1.3faacep+0f, 0x1.8e2196p-6f, 0x1.00f908p+1f,
     -0x1.7d2f1ap-1f, 0x1.062b94p-10f},
    {0x1.fb2032p-2f, -0x1.4098b4p+0f, 0x1.b630a8p-6f, 0x1.0121aap+1f,
     -0x1.786594p-1f, 0x1.05a4bp-10f},
};
const Trajectory kTorchSgdDecay = {
    {0x1.f851ecp-2f, -0x1.3bd70ap+0f, 0x1.07ae12p-6f, 0x1.0147aep+1f,
     -0x1.8ae148p-1f, 0x1.0385c8p-10f},
    {0x1.f484b6p-2f, -0x1.3b617cp+0f, 0x1.1e698ep-9f, 0x1.00a234p+1f,
     -0x1.67f214p-1f, 0x1.038922p-10f},
    {0x1.e0c148p-2f, -0x1.3d6a1p+0f, 0x1.9d340ep-6f, 0x1.fb7e96p+0f,
     -0x1.54ef48p-1f, 0x1.fc9ff2p-11f},
};

/// Runs `step(param, grad, stepNumber)` over the recorded gradients and
/// expects the recorded parameters after every step, within 1e-6 * (1 +
/// |torch|) (see the file comment for why not bit for bit).
template <typename Step>
void expectTorchTrajectory(const Trajectory &expected, Step step) {
  std::vector<float> param(kTorchParams, kTorchParams + kTorchN);
  for (int s = 0; s < kTorchSteps; ++s) {
    step(param.data(), kTorchGrads[s], s + 1);
    for (int i = 0; i < kTorchN; ++i) {
      double torch = expected[s][i];
      EXPECT_LE(std::abs(param[i] - torch), 1e-6 * (1.0 + std::abs(torch)))
          << "step " << s + 1 << " element " << i << ": " << std::hexfloat
          << param[i] << " vs " << expected[s][i];
    }
  }
}

TEST(OptimizerConformance, AdamWMatchesPyTorch) {
  for (const auto &[config, expected] :
       {std::pair<rt::AdamWConfig, const Trajectory *>{rt::AdamWConfig{},
                                                       &kTorchAdamWDefault},
        {rt::AdamWConfig{0.01, 0.8, 0.99, 1e-6, 0.1}, &kTorchAdamWTuned}}) {
    std::vector<float> m(kTorchN, 0.0f), v(kTorchN, 0.0f);
    expectTorchTrajectory(*expected, [&, &config = config](
                                         float *param, const float *grad,
                                         int64_t step) {
      rt::adamw(param, grad, m.data(), v.data(), kTorchN, config, step, 1.0f);
    });
  }
}

TEST(OptimizerConformance, SgdMatchesPyTorch) {
  for (const auto &[config, expected] :
       {std::pair<rt::SgdConfig, const Trajectory *>{
            rt::SgdConfig{0.01, 0.9, 0.0}, &kTorchSgd},
        {rt::SgdConfig{0.05, 0.5, 0.1}, &kTorchSgdDecay}}) {
    std::vector<float> buf(kTorchN, 0.0f);
    expectTorchTrajectory(
        *expected, [&, &config = config](float *param, const float *grad,
                                         int64_t) {
          rt::sgdMomentum(param, grad, buf.data(), kTorchN, config, 1.0f);
        });
  }
}

} // namespace
