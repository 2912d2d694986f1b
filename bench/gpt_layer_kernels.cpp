//===- gpt_layer_kernels.cpp - the kernels of one GPT block, one by one ---===//
//
// Times every kernel call of stage 1's F, B and W phases (one pre-LayerNorm
// GPT block, the calls and shapes convert-zb-to-emitc emits for it) straight
// on zbc_rt_kernels, without the runtime: median of RUNS timed calls after
// one untimed one, each call on its own buffers, one thread. Shows where a
// phase's time goes when bench/gpt_layer.py finds it slower than PyTorch's
// (bench/gpt_layer_torch.py). Prints a markdown table: phase, kernel, shape,
// median ms, GFLOP/s of the GEMMs, and the phase totals.
//
//   zbc-bench-gpt-layer-kernels [RUNS] [HIDDEN SEQ MICROBATCH HEADS] [--smoke]
//   (default 21 runs at h = 512, S = 256, microbatch 4, 8 heads;
//    pin it to a quiet core: taskset -c 1 ...; --smoke: 1 run at h = 32,
//    S = 8, microbatch 1, 2 heads, what ctest's bench family runs to check
//    that it runs)
//
//===----------------------------------------------------------------------===//

#include "BenchArgs.h"
#include "Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace zbc::rt::cpu;

namespace {

struct Buffer {
  std::vector<float> data;
  explicit Buffer(int64_t n, std::mt19937 &rng) : data(n) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float &v : data)
      v = normal(rng) * 0.5f;
  }
  float *operator()() { return data.data(); }
};

struct Row {
  std::string phase, kernel, shape;
  double ms, gflops; // gflops < 0: not a GEMM
};

double medianMs(const std::function<void()> &call, int runs) {
  call(); // untimed: first touch, caches
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const char *usage =
      "usage: zbc-bench-gpt-layer-kernels [RUNS] [HIDDEN SEQ MICROBATCH "
      "HEADS] [--smoke]\n"
      "  times one GPT block's kernels (default 21 runs at h = 512, S = 256, "
      "microbatch 4, 8 heads;\n"
      "  --smoke: 1 run at h = 32, S = 8, microbatch 1, 2 heads)\n";
  bool smoke = zbc::bench::takeFlag(argc, argv, "--smoke");
  std::vector<int64_t> args =
      zbc::bench::positionalCounts(argc, argv, usage, 5);
  if (smoke)
    args = {1, 32, 8, 1, 2};
  if (args.size() > 1 && args.size() < 5) {
    std::fprintf(stderr, "%s: error: give all of HIDDEN SEQ MICROBATCH "
                 "HEADS, or none\n%s", argv[0], usage);
    return 2;
  }
  bool sized = args.size() == 5;
  int runs = args.empty() ? 21 : static_cast<int>(args[0]);
  int64_t h = sized ? args[1] : 512;
  int64_t S = sized ? args[2] : 256;
  int64_t mb = sized ? args[3] : 4;
  int64_t heads = sized ? args[4] : 8;
  if (h % heads) {
    std::fprintf(stderr, "%s: error: HIDDEN %lld is not a multiple of HEADS "
                 "%lld\n", argv[0], static_cast<long long>(h),
                 static_cast<long long>(heads));
    return 2;
  }
  int64_t R = mb * S; // rows
  const float eps = 1e-5f;
  openblas_set_num_threads(1);
  std::mt19937 rng(0);
  auto buf = [&](int64_t n) { return Buffer(n, rng); };

  // Parameters.
  Buffer g1 = buf(h), b1 = buf(h), g2 = buf(h), b2 = buf(h);
  Buffer wqkv = buf(h * 3 * h), bqkv = buf(3 * h), wproj = buf(h * h),
         bproj = buf(h), wfc = buf(h * 4 * h), bfc = buf(4 * h),
         wout = buf(4 * h * h), bout = buf(h);
  // Forward values (as the generated F names them).
  Buffer x = buf(R * h), a = buf(R * h), qkv0 = buf(R * 3 * h),
         qkv = buf(R * 3 * h), att = buf(R * h), p0 = buf(R * h),
         p = buf(R * h), x1 = buf(R * h), m = buf(R * h),
         f0 = buf(R * 4 * h), f = buf(R * 4 * h), g = buf(R * 4 * h),
         o0 = buf(R * h), o = buf(R * h), y = buf(R * h);
  Buffer attWs = buf(causalAttentionWorkspace(S)),
         attGradWs = buf(causalAttentionGradWorkspace(S));
  // Backward values.
  Buffer dy = buf(R * h), dg = buf(R * 4 * h), df = buf(R * 4 * h),
         dm = buf(R * h), dx1a = buf(R * h), dx1 = buf(R * h),
         datt = buf(R * h), dqkv = buf(R * 3 * h), da = buf(R * h),
         dxa = buf(R * h), dx = buf(R * h);
  // Weight gradients and their accumulators.
  Buffer dwqkv = buf(h * 3 * h), dbqkv = buf(3 * h), dwproj = buf(h * h),
         dbproj = buf(h), dwfc = buf(h * 4 * h), dbfc = buf(4 * h),
         dwout = buf(4 * h * h), dbout = buf(h), dg1 = buf(h), db1 = buf(h),
         dg2 = buf(h), db2 = buf(h);
  Buffer acc = buf(4 * h * h);

  std::vector<Row> rows;
  auto time = [&](const char *phase, const char *kernel, std::string shape,
                  double flops, const std::function<void()> &call) {
    double ms = medianMs(call, runs);
    rows.push_back({phase, kernel, shape, ms,
                    flops > 0 ? flops / (ms * 1e-3) / 1e9 : -1.0});
  };
  auto gemmShape = [](int64_t r, int64_t i, int64_t o) {
    return std::to_string(r) + "x" + std::to_string(i) + " @ " +
           std::to_string(i) + "x" + std::to_string(o);
  };
  auto n = [](int64_t v) { return std::to_string(v); };
  double R2 = 2.0 * static_cast<double>(R);
  int64_t d = h / heads;
  // Attention GEMM flops with the kernel's 64-row causal blocking: block k of
  // rows [64k, 64k + 64) covers keys < 64 (k + 1).
  double attBlocks = 0;
  for (int64_t r0 = 0; r0 < S; r0 += 64)
    attBlocks += static_cast<double>(std::min<int64_t>(64, S - r0)) *
                 static_cast<double>(std::min(r0 + 64, S));
  double attF = 2.0 * 2.0 * mb * heads * attBlocks * d; // QK^T and PV
  double attB = attF / 2 * 5; // QK^T again, dP, dQ, dV, dK

  // F, in the generated order.
  time("F", "layerNorm", n(R) + "x" + n(h), 0, [&] { layerNorm(x(), g1(), b1(), a(), R, h, eps); });
  time("F", "linear (qkv)", gemmShape(R, h, 3 * h), R2 * h * 3 * h, [&] { linear(a(), wqkv(), qkv0(), R, h, 3 * h); });
  time("F", "biasAdd", n(R) + "x" + n(3 * h), 0, [&] { biasAdd(qkv0(), bqkv(), qkv(), R, 3 * h); });
  time("F", "causalAttention", n(mb) + "x" + n(S) + "x" + n(3 * h) + ", " + n(heads) + " heads", attF, [&] { causalAttention(qkv(), att(), attWs(), mb, S, h, heads); });
  time("F", "linear (proj)", gemmShape(R, h, h), R2 * h * h, [&] { linear(att(), wproj(), p0(), R, h, h); });
  time("F", "biasAdd", n(R) + "x" + n(h), 0, [&] { biasAdd(p0(), bproj(), p(), R, h); });
  time("F", "add", n(R * h), 0, [&] { add(x(), p(), x1(), R * h); });
  time("F", "layerNorm", n(R) + "x" + n(h), 0, [&] { layerNorm(x1(), g2(), b2(), m(), R, h, eps); });
  time("F", "linear (fc)", gemmShape(R, h, 4 * h), R2 * h * 4 * h, [&] { linear(m(), wfc(), f0(), R, h, 4 * h); });
  time("F", "biasAdd", n(R) + "x" + n(4 * h), 0, [&] { biasAdd(f0(), bfc(), f(), R, 4 * h); });
  time("F", "gelu", n(R * 4 * h), 0, [&] { gelu(f(), g(), R * 4 * h); });
  time("F", "linear (fc proj)", gemmShape(R, 4 * h, h), R2 * 4 * h * h, [&] { linear(g(), wout(), o0(), R, 4 * h, h); });
  time("F", "biasAdd", n(R) + "x" + n(h), 0, [&] { biasAdd(o0(), bout(), o(), R, h); });
  time("F", "add", n(R * h), 0, [&] { add(x1(), o(), y(), R * h); });

  // B.
  time("B", "linearGradInput (fc proj)", gemmShape(R, h, 4 * h) + "^T", R2 * 4 * h * h, [&] { linearGradInput(dy(), wout(), dg(), R, 4 * h, h); });
  time("B", "geluGrad", n(R * 4 * h), 0, [&] { geluGrad(dg(), f(), df(), R * 4 * h); });
  time("B", "linearGradInput (fc)", gemmShape(R, 4 * h, h) + "^T", R2 * h * 4 * h, [&] { linearGradInput(df(), wfc(), dm(), R, h, 4 * h); });
  time("B", "layerNormGradInput", n(R) + "x" + n(h), 0, [&] { layerNormGradInput(dm(), x1(), g2(), dx1a(), R, h, eps); });
  time("B", "add", n(R * h), 0, [&] { add(dy(), dx1a(), dx1(), R * h); });
  time("B", "linearGradInput (proj)", gemmShape(R, h, h) + "^T", R2 * h * h, [&] { linearGradInput(dx1(), wproj(), datt(), R, h, h); });
  time("B", "causalAttentionGrad", n(mb) + "x" + n(S) + "x" + n(3 * h) + ", " + n(heads) + " heads", attB, [&] { causalAttentionGrad(datt(), qkv(), dqkv(), attGradWs(), mb, S, h, heads); });
  time("B", "linearGradInput (qkv)", gemmShape(R, 3 * h, h) + "^T", R2 * h * 3 * h, [&] { linearGradInput(dqkv(), wqkv(), da(), R, h, 3 * h); });
  time("B", "layerNormGradInput", n(R) + "x" + n(h), 0, [&] { layerNormGradInput(da(), x(), g1(), dxa(), R, h, eps); });
  time("B", "add", n(R * h), 0, [&] { add(dx1(), dxa(), dx(), R * h); });

  // W.
  time("W", "biasGrad", n(R) + "x" + n(h), 0, [&] { biasGrad(dy(), dbout(), R, h); });
  time("W", "linearGradWeight (fc proj)", n(4 * h) + "x" + n(R) + " @ " + n(R) + "x" + n(h), R2 * 4 * h * h, [&] { linearGradWeight(g(), dy(), dwout(), R, 4 * h, h); });
  time("W", "biasGrad", n(R) + "x" + n(4 * h), 0, [&] { biasGrad(df(), dbfc(), R, 4 * h); });
  time("W", "linearGradWeight (fc)", n(h) + "x" + n(R) + " @ " + n(R) + "x" + n(4 * h), R2 * h * 4 * h, [&] { linearGradWeight(m(), df(), dwfc(), R, h, 4 * h); });
  time("W", "layerNormGradGamma", n(R) + "x" + n(h), 0, [&] { layerNormGradGamma(dm(), x1(), dg2(), R, h, eps); });
  time("W", "biasGrad", n(R) + "x" + n(h), 0, [&] { biasGrad(dm(), db2(), R, h); });
  time("W", "biasGrad", n(R) + "x" + n(h), 0, [&] { biasGrad(dx1(), dbproj(), R, h); });
  time("W", "linearGradWeight (proj)", n(h) + "x" + n(R) + " @ " + n(R) + "x" + n(h), R2 * h * h, [&] { linearGradWeight(att(), dx1(), dwproj(), R, h, h); });
  time("W", "biasGrad", n(R) + "x" + n(3 * h), 0, [&] { biasGrad(dqkv(), dbqkv(), R, 3 * h); });
  time("W", "linearGradWeight (qkv)", n(h) + "x" + n(R) + " @ " + n(R) + "x" + n(3 * h), R2 * h * 3 * h, [&] { linearGradWeight(a(), dqkv(), dwqkv(), R, h, 3 * h); });
  time("W", "layerNormGradGamma", n(R) + "x" + n(h), 0, [&] { layerNormGradGamma(da(), x(), dg1(), R, h, eps); });
  time("W", "biasGrad", n(R) + "x" + n(h), 0, [&] { biasGrad(da(), db1(), R, h); });
  // The 12 accumulates: 4 weight matrices (12 h^2 floats) and 8 vectors.
  time("W", "accumulate x12", n(12 * h * h + 13 * h) + " floats", 0, [&] {
    accumulate(acc(), dwqkv(), 3 * h * h);
    accumulate(acc(), dwproj(), h * h);
    accumulate(acc(), dwfc(), 4 * h * h);
    accumulate(acc(), dwout(), 4 * h * h);
    for (float *v : {dbqkv(), dbproj(), dbout(), dg1(), db1(), dg2(), db2()})
      accumulate(acc(), v, h);
    accumulate(acc(), dbfc(), 4 * h);
  });

  std::printf("One GPT block, h=%lld S=%lld microbatch %lld heads %lld; "
              "median of %d calls\n\n",
              (long long)h, (long long)S, (long long)mb, (long long)heads,
              runs);
  std::printf("| phase | kernel | shape | ms | GFLOP/s |\n|---|---|---|---|---|\n");
  std::map<std::string, double> total, gemm;
  for (const Row &r : rows) {
    char gf[32] = "";
    if (r.gflops > 0)
      std::snprintf(gf, sizeof gf, "%.1f", r.gflops);
    std::printf("| %s | %s | %s | %.3f | %s |\n", r.phase.c_str(),
                r.kernel.c_str(), r.shape.c_str(), r.ms, gf);
    total[r.phase] += r.ms;
    if (r.gflops > 0)
      gemm[r.phase] += r.ms;
  }
  std::printf("\n| phase | sum of kernels ms | of which GEMMs (attention's "
              "included) ms |\n|---|---|---|\n");
  for (const char *ph : {"F", "B", "W"})
    std::printf("| %s | %.3f | %.3f |\n", ph, total[ph], gemm[ph]);
  return 0;
}
