//===- Interleaved1F1B.cpp - Megatron-LM's interleaved 1F1B ---------------===//
//
// Interleaved 1F1B (Narayanan et al., SC 2021): each rank holds v chunks,
// stage k on rank k % p (Placement::Interleaved), so chunk c of rank r is
// stage c p + r and a microbatch crosses every rank v times.
//
// Every rank runs its forwards in the same order, Megatron's schedule table:
// microbatches in groups of p, and within a group chunk 0 for the p
// microbatches, then chunk 1 for the same p, ..., chunk v-1:
//   (0,c0) (1,c0) .. (p-1,c0) (0,c1) .. (p-1,c{v-1}) (p,c0) ..
// The k-th backward takes the k-th entry with the chunk mirrored (v-1-c), so
// gradients leave the last chunk first. Rank r warms up with
// 2 (p - r - 1) + (v - 1) p forwards (clamped to the m v in all), then
// alternates the next forward with the next fused backward BW, then cools
// down with the remaining backwards. As in Megatron, m == p puts everything
// in the warm-up; v == 1 is plain 1F1B (p - r - 1 warm-up forwards), the
// schedule Megatron runs when there is one chunk.
//
// Megatron requires m % p == 0. zbc builds any m: it builds the schedule for
// m' = m rounded up to a multiple of p and leaves out the actions of the
// m' - m microbatches that do not exist. Leaving actions out of a valid
// schedule keeps it deadlock-free (each rank's order only loses entries, and
// dependencies stay within a microbatch, so no remaining action waits for a
// removed one), and can only lower memory, so the result is always valid.
// It keeps the padded schedule's fill and drain, so its bubble is larger
// than (p-1)(F+B+W)/v.
// (Newer Megatron lets the last group take the remainder instead; with the
// same warm-up counts that order deadlocks in zbc's simulator for e.g.
// p = 5, m = 7, v = 2, so zbc does not use it.) A note in the report says
// when m was rounded up.
//
// With per-stage (chunk) times F, B, W equal on all stages, no comm and
// m % p == 0, the bubble is (p-1)(F+B+W) in chunk times, i.e.
// (p-1)(F+B+W)/v of a whole rank's layers (checked in
// HandcraftedSchedulesTest); rank 0 holds 2(p-1) + (v-1)p + 1 = v p + p - 1
// chunk activations, p + (p-1)/v full-stage microbatches (v p when m == p).
//
//===----------------------------------------------------------------------===//

#include "Builders/Builders.h"

#include <algorithm>
#include <utility>

using namespace zbc::sched;

namespace {
/// Megatron's schedule table for m a multiple of p: the (microbatch, chunk)
/// of the k-th forward on every rank.
std::vector<std::pair<int, int>> forwardOrder(int m, int v, int p) {
  std::vector<std::pair<int, int>> order;
  order.reserve(static_cast<size_t>(m) * v);
  for (int first = 0; first < m; first += p)
    for (int c = 0; c < v; ++c)
      for (int j = first; j < first + p; ++j)
        order.push_back({j, c});
  return order;
}
} // namespace

llvm::Expected<ScheduleTable>
zbc::sched::buildInterleaved1F1B(const Problem &problem, const BuildOptions &,
                                 BuildReport &report) {
  int p = problem.ranks, m = problem.microbatches, v = problem.virtualStages;
  if (problem.numStages() != p * v)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "interleaved-1f1b needs ranks x virtual stages = %d stages, got %d",
        p * v, problem.numStages());

  int padded = (m + p - 1) / p * p; // m' in the banner
  if (padded != m)
    report.notes.push_back(
        "interleaved-1f1b: m = " + std::to_string(m) +
        " is not a multiple of p = " + std::to_string(p) +
        " (Megatron requires it); built for " + std::to_string(padded) +
        " microbatches without the last " + std::to_string(padded - m) +
        "; expect a bubble above (p-1)(F+B+W)/v");

  std::vector<std::pair<int, int>> order = forwardOrder(padded, v, p);
  int total = static_cast<int>(order.size());

  ScheduleTable table = ScheduleTable::empty(problem, Placement::Interleaved);
  for (int r = 0; r < p; ++r) {
    int warmup;
    if (v == 1)
      warmup = p - r - 1;
    else if (padded == p)
      warmup = total;
    else
      warmup = 2 * (p - r - 1) + (v - 1) * p;
    warmup = std::min(warmup, total);

    std::vector<Action> &actions = table.ranks[r];
    actions.reserve(2 * static_cast<size_t>(m) * v);
    auto forward = [&](int k) {
      auto [j, c] = order[k];
      if (j < m)
        actions.push_back({Kind::F, c * p + r, j});
    };
    auto backward = [&](int k) {
      auto [j, c] = order[k];
      if (j < m)
        actions.push_back({Kind::BW, (v - 1 - c) * p + r, j});
    };
    for (int k = 0; k < warmup; ++k)
      forward(k);
    for (int k = 0; k < total - warmup; ++k) {
      forward(k + warmup);
      backward(k);
    }
    for (int k = total - warmup; k < total; ++k)
      backward(k);
  }
  return table;
}
