//===- VocabShards.h - each pipeline rank's rows of the vocabulary -*- C++ -*-===//
//
// Note [Vocabulary shards]
// Vocabulary parallelism (Yeung, Qi, Lin, Wan, MLSys 2025) splits the
// input embedding table and the output layer's weight by vocabulary rows
// over the p ranks of the pipeline. Rank r holds rows [first, first +
// rows): the first V mod p ranks floor(V / p) + 1 rows each, the others
// floor(V / p), as PyTorch's torch.tensor_split(weight, p) splits them, so
// that an outside implementation names the same rows. Every rank holds at
// least one row (p <= V), no shard is padded, and two ranks' row counts
// differ by at most one: 128,256 over 16 ranks is 8,016 each; 50,257 over
// 4 is 12,565, 12,564, 12,564, 12,564. A tied embedding and head split the
// same way, so a rank's rows of both are one tensor.
//
// Note [Softmax over vocabulary shards]
// The cross-entropy of a token whose logits are split over the shards, in
// the online-softmax form, without gathering the logits: each rank r, from
// its logits z_r of the token,
//   m_r = max z_r,   l_r = log sum exp(z_r - m_r),
//   t_r = z_r[label - first] where the label is one of its rows, else 0;
// then over the ranks M = max_r m_r (an all-reduce max), and
//   S = sum_r exp(m_r + l_r - M),   T = sum_r t_r   (an all-reduce sum of
// each rank's pair), so that the token's loss is M + log S - T, as
// logsumexp(z) - z[label] of the whole row, and its logits' gradient on
// rank r is g (exp(z_r - M - log S) - [column is the label]), g the
// token's weight in the loss. Only the summation order differs from the
// unsplit softmax (the terms of S are grouped by shard), so the loss and
// every gradient agree to rounding. An ignored label (-100) adds nothing:
// its t_r is 0 everywhere and its gradient row 0.
// In the IR a rank's zb.vocab_stats writes the planes [m, l, t, m] of its
// rows; one zb.reduce softmax over the ranks merges them in place into
// [m, S, T, M] (an all-reduce max of the last plane, each rank's rescale
// of the second, exp(m + l - M), and an all-reduce sum of the second and
// third); zb.vocab_loss and zb.vocab_grad read those. The CPU kernels
// (runtime/src/cpu/kernels/Kernels.h: vocabShardStats, vocabShardSums,
// vocabShardLoss, vocabShardGrad) compute each step;
// test/Runtime/VocabShardsTest.cpp holds them to the unsplit kernels, and
// the kernel conformance suite the ops' kernels to the oracle.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_CONTRACTS_VOCABSHARDS_H
#define ZBC_CONTRACTS_VOCABSHARDS_H

#include <cstdint>

namespace zbc {

/// The rows of the vocabulary one rank holds (Note [Vocabulary shards]).
struct VocabRows {
  int64_t first = 0, rows = 0;
  /// Whether token `id` is one of them.
  constexpr bool holds(int64_t id) const {
    return id >= first && id < first + rows;
  }
};

/// Rank `rank`'s rows of a vocabulary of `vocab` over `ranks` ranks; needs
/// 0 <= rank < ranks <= vocab.
constexpr VocabRows vocabRowsOf(int64_t vocab, int64_t ranks, int64_t rank) {
  int64_t base = vocab / ranks, extra = vocab % ranks;
  int64_t first = rank * base + (rank < extra ? rank : extra);
  return {first, base + (rank < extra ? 1 : 0)};
}

} // namespace zbc

#endif // ZBC_CONTRACTS_VOCABSHARDS_H
