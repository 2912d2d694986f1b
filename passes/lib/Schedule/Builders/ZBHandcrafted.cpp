//===- ZBHandcrafted.cpp - the Zero Bubble paper's ZB-H1 and ZB-H2 --------===//
//
// The two handcrafted schedules of Qi et al., "Zero Bubble Pipeline
// Parallelism" (ICLR 2024), which split the backward into B (input gradient,
// on the critical path) and W (weight gradient, free to move). Both are 1F1B
// with W held back to fill what would be bubbles:
//
//   rank r: `warmup` forwards; then for each microbatch i = 0..m-1:
//             F (while forwards remain), B(i), and W(i - lag) if i >= lag;
//           then the W's still owed.
//
// ZB-H1: warmup = p - r - 1 and lag = r. Rank 0 runs W right after each B;
// rank r keeps r W's pending and runs them in the tail, where 1F1B would
// idle. Memory: rank r (0-based) holds p - r activations plus r W-pending
// microbatches, (p-r) M_B + r M_W when M_W <= M_B, i.e. p M_B on rank 0
// as in 1F1B.
//
// ZB-H2: warmup = 2(p - r - 1) and lag = 2r: the reference code's
// (p - r - 1) c warm-up forwards with c = 2, and a W after the B of step i
// once warm-up plus steps exceed (p-1) c. The extra forwards keep rank 0
// busy until its first B can start, and every rank's tail is its pending
// W's: with F = B = W no rank idles between its first and last action.
// Rank r holds (2p-2r-1) M_B + 2r M_W (M_W <= M_B), (2p-1) M_B on rank 0.
//
// The reference code needs m >= 2p. With fewer microbatches, clamping the
// warm-up to m alone is not the best ZB-H2: for m <= p its deeper lag piles
// W's into tails that ZB-H1 interleaves. zbc gives ZB-H2
// e = min(p - 1, max(0, m - p)) extra forwards and lags:
//   warmup = min(p - r - 1 + min(p - r - 1, e), m),  lag = r + min(r, e),
// exactly ZB-H2 for m >= 2p - 1, exactly ZB-H1 for m <= p, and in between
// rank 0 forwards every microbatch before its first B. Every variant is
// deadlock-free: the warm-up never grows with r, so an F on rank r never
// waits (through rank r-1's B's and rank r's B's) for a later F of its own
// rank, and a W waits only for its own B, earlier on the same rank.
//
// What the simulator measures (stages of equal cost, no comm; bubble =
// makespan - m (F+B+W), makespan = the longest rank span; checked in
// HandcraftedSchedulesTest):
//   ZB-H1, m >= p:       (p-1)(F + B - min(W, F)),
//                        i.e. the paper's (p-1)(F+B-W) when W <= F;
//   ZB-H2, m >= 2p - 1:  (p-1) max(0, F + B - 2 min(W, F)),
//                        i.e. the paper's (p-1)(F+B-2W) when W <= F and
//                        2W <= F + B;
//   both, m <= p:        makespan (m+p-1)(F+B) + W when W <= F (the
//                        zero-bubble bound: the F chain, the B chain, one W);
//   ZB-H2, m < 2p - 1,   bubble 2p - 1 - m, the least possible (rank 0
//   F = B = W:           cannot start a B before 2p - 1 and has m F's).
// When W > F a rank cannot hide a W between two B's that arrive F + B apart,
// so the paper's forms (which assume T_W < T_F) no longer hold.
//
//===----------------------------------------------------------------------===//

#include "Builders/Builders.h"

#include <algorithm>

using namespace zbc::sched;

/// ZB-H1, or ZB-H2 if `h2`: see the banner.
static ScheduleTable buildZB(const Problem &problem, bool h2) {
  int p = problem.ranks, m = problem.microbatches;
  int extra = h2 ? std::clamp(m - p, 0, p - 1) : 0;

  ScheduleTable table = ScheduleTable::empty(problem, Placement::Linear);
  for (int r = 0; r < p; ++r) {
    int warmup = std::min(p - r - 1 + std::min(p - r - 1, extra), m);
    int lag = r + std::min(r, extra);
    std::vector<Action> &order = table.ranks[r];
    order.reserve(3 * static_cast<size_t>(m));
    int forwards = 0, weights = 0; // issued so far
    for (; forwards < warmup; ++forwards)
      order.push_back({Kind::F, r, forwards});
    for (int i = 0; i < m; ++i) {
      if (forwards < m)
        order.push_back({Kind::F, r, forwards++});
      order.push_back({Kind::B, r, i});
      if (i >= lag)
        order.push_back({Kind::W, r, weights++});
    }
    for (; weights < m; ++weights)
      order.push_back({Kind::W, r, weights});
  }
  return table;
}

llvm::Expected<ScheduleTable> zbc::sched::buildZBH1(const Problem &problem,
                                                    const BuildOptions &,
                                                    BuildReport &) {
  return buildZB(problem, /*h2=*/false);
}

llvm::Expected<ScheduleTable> zbc::sched::buildZBH2(const Problem &problem,
                                                    const BuildOptions &,
                                                    BuildReport &) {
  return buildZB(problem, /*h2=*/true);
}
