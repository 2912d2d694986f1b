//===- attention_documents.cpp - masked attention's time against Σ s² -----===//
//
// The claim of Note [Document masks] (dialect/docs/ZB.md), measured: a row
// of packed documents costs the sum of the documents' squared lengths, not
// the square of the row. One row of S positions is cut into documents of
// lognormal lengths (mean S/8, sigma 1: a long tail, as real corpora have;
// seeded), and the CPU kernels' attention F + B (zb.attention and
// zb.attention_grad, grouped-query heads as llama-small's) is timed with
// the documents' mask and without it, on the same q, k, v: median of RUNS
// after one untimed run each, one thread. The prediction is
// Σ s_i (s_i + 1) / (S (S + 1)): each document is a causal attention of its
// own. Prints a markdown row per seed: documents, the prediction, the
// measured ratio, and measured / predicted (1 is the claim; the blocked
// kernel's tiles of 64 rows make short documents cost a little more).
//
//   zbc-bench-attention-documents [RUNS] [SEQ] [HEADS] [KV_HEADS] [HEAD_DIM]
//       [--smoke]
//   (default 9 runs, S = 2048, 8 heads on 4 kv heads of 64; --smoke: 1 run
//    at S = 64, 2 heads on 1 of 8, what ctest's bench family runs)
//
//===----------------------------------------------------------------------===//

#include "BenchArgs.h"
#include "Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

using namespace zbc::rt::cpu;

namespace {

const char *const kUsage =
    "usage: zbc-bench-attention-documents [RUNS] [SEQ] [HEADS] [KV_HEADS] "
    "[HEAD_DIM] [--smoke]\n"
    "Times the CPU's attention F + B over a row of packed documents\n"
    "(lognormal lengths, mean SEQ/8) against the same row unmasked.\n";

/// Document lengths summing to S: lognormal, mean S / 8, sigma 1.
std::vector<int64_t> documentLengths(int64_t S, unsigned seed) {
  std::mt19937 rng(seed);
  const double sigma = 1.0, mean = S / 8.0;
  std::lognormal_distribution<double> length(std::log(mean) - sigma * sigma / 2,
                                             sigma);
  std::vector<int64_t> lengths;
  int64_t left = S;
  while (left > 0) {
    int64_t l = std::max<int64_t>(1, std::llround(length(rng)));
    l = std::min(l, left);
    lengths.push_back(l);
    left -= l;
  }
  return lengths;
}

double medianSeconds(int runs, const std::function<void()> &call) {
  call(); // untimed: caches, pages
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    auto begin = std::chrono::steady_clock::now();
    call();
    times.push_back(std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - begin)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  bool smoke = zbc::bench::takeFlag(argc, argv, "--smoke");
  std::vector<int64_t> v =
      zbc::bench::positionalCounts(argc, argv, kUsage, 5);
  int64_t runs = v.size() > 0 ? v[0] : (smoke ? 1 : 9);
  int64_t S = v.size() > 1 ? v[1] : (smoke ? 64 : 2048);
  int64_t heads = v.size() > 2 ? v[2] : (smoke ? 2 : 8);
  int64_t kvHeads = v.size() > 3 ? v[3] : (smoke ? 1 : 4);
  int64_t d = v.size() > 4 ? v[4] : (smoke ? 8 : 64);
  if (heads % kvHeads) {
    std::fprintf(stderr, "error: KV_HEADS must divide HEADS\n%s", kUsage);
    return 2;
  }
  openblas_set_num_threads(1);

  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto randoms = [&](int64_t n) {
    std::vector<float> x(n);
    for (float &e : x)
      e = normal(rng);
    return x;
  };
  const int64_t qn = S * heads * d, kvn = S * kvHeads * d;
  std::vector<float> q = randoms(qn), k = randoms(kvn), vv = randoms(kvn),
                     dout = randoms(qn), out(qn), dq(qn), dk(kvn), dv(kvn);
  std::vector<float> workspace(causalAttentionGradWorkspace(S));

  std::printf("S = %lld, %lld heads on %lld kv heads of %lld, median of %lld "
              "runs, one thread\n\n",
              (long long)S, (long long)heads, (long long)kvHeads, (long long)d,
              (long long)runs);
  std::printf("| seed | documents | longest | unmasked F+B ms | masked F+B ms "
              "| predicted ratio Σs(s+1)/S(S+1) | measured ratio | measured / "
              "predicted |\n|---|---|---|---|---|---|---|---|\n");
  auto fb = [&](DocumentIds docs) {
    return [&, docs] {
      attention(q.data(), k.data(), vv.data(), out.data(), workspace.data(), 1,
                S, heads, kvHeads, d, docs);
      attentionGrad(dout.data(), q.data(), k.data(), vv.data(), dq.data(),
                    dk.data(), dv.data(), workspace.data(), 1, S, heads,
                    kvHeads, d, docs);
    };
  };
  double unmasked = medianSeconds(static_cast<int>(runs), fb({}));
  for (unsigned seed : {1u, 2u, 3u}) {
    std::vector<int64_t> lengths = documentLengths(S, seed);
    std::vector<int64_t> ids;
    double work = 0;
    for (size_t doc = 0; doc < lengths.size(); ++doc) {
      ids.insert(ids.end(), lengths[doc], static_cast<int64_t>(doc));
      work += double(lengths[doc]) * double(lengths[doc] + 1);
    }
    double predicted = work / (double(S) * double(S + 1));
    double masked = medianSeconds(static_cast<int>(runs),
                                  fb(DocumentIds{ids.data(), true}));
    double measured = masked / unmasked;
    std::printf("| %u | %zu | %lld | %.2f | %.2f | %.3f | %.3f | %.2f |\n",
                seed, lengths.size(),
                (long long)*std::max_element(lengths.begin(), lengths.end()),
                unmasked * 1e3, masked * 1e3, predicted, measured,
                measured / predicted);
  }
  return 0;
}
