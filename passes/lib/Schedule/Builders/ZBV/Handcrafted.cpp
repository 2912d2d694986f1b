//===- Handcrafted.cpp - zb-v's handcrafted order -------------------------===//
//
// The order PyTorch's ScheduleZBVZeroBubble runs: warm-up forwards, then
// F B W per chunk in lockstep, then the cool-down. Exact for equal costs; it
// ignores costs and the limit, so it only counts where it stays within it.
//
//===----------------------------------------------------------------------===//

#include "Builders/ZBV/VShape.h"

namespace zbc::sched::zbv {

/// Rank r: 2(p-r)-1 chunk-0 forwards; r pairs (chunk-1 F, chunk-0 F);
/// p-r triples (chunk-1 F, B, W); then (chunk-0 F, B, W, chunk-1 F, B, W)
/// until the forwards run out; r pairs of B (chunk 0, chunk 1); p-r pairs
/// (chunk-0 B, W); the W's still owed. With m < 2p-1 it is built for 2p-1
/// microbatches and the extra ones dropped, which keeps it valid (whole
/// microbatches vanish, so no dependency or memory bound can break).
std::vector<std::vector<Action>> handcrafted(int p, int m) {
  int n = std::max(m, 2 * p - 1);
  std::vector<std::vector<Action>> order(p);
  for (int r = 0; r < p; ++r) {
    int s0 = r, s1 = 2 * p - 1 - r;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    std::vector<Action> &o = order[r];
    auto add = [&](Kind k, int stage, int j) {
      if (j < m)
        o.push_back({k, stage, j});
    };
    for (int i = 0; i < 2 * (p - r) - 1; ++i)
      add(Kind::F, s0, f0++);
    for (int i = 0; i < r; ++i) {
      add(Kind::F, s1, f1++);
      add(Kind::F, s0, f0++);
    }
    for (int i = 0; i < p - r; ++i) {
      add(Kind::F, s1, f1++);
      add(Kind::B, s1, b1);
      add(Kind::W, s1, b1++);
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n)
        add(Kind::F, s0, f0++);
      add(Kind::B, s0, b0);
      add(Kind::W, s0, b0++);
      add(Kind::F, s1, f1++);
      add(Kind::B, s1, b1);
      add(Kind::W, s1, b1++);
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < r; ++i) {
      add(Kind::B, s0, b0++);
      add(Kind::B, s1, b1++);
    }
    for (int i = 0; i < p - r; ++i) {
      add(Kind::B, s0, b0++);
      add(Kind::W, s0, w0++);
    }
    while (w1 < b1)
      add(Kind::W, s1, w1++);
    while (w0 < b0)
      add(Kind::W, s0, w0++);
  }
  return order;
}

} // namespace zbc::sched::zbv
