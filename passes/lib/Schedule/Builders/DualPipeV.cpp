//===- DualPipeV.cpp - DeepSeek's DualPipeV on the V placement ------------===//
//
// DualPipeV (DeepSeek, the V variant of DualPipe from the DeepSeek-V3
// report): ranks hold two chunks in a V, as in ZB-V (chunk 0 = stage r,
// chunk 1 = stage 2p-1-r), and the steady state pairs the forward of one
// chunk with the full backward of the other, so that on hardware the two
// overlap (one's communication hides behind the other's compute). Rank r of
// p runs eight steps, in DeepSeek's order:
//   1. 2(p-r-1) chunk-0 forwards
//   2. r+1 pairs (chunk-0 F, chunk-1 F)
//   3. p-r-1 triples (chunk-1 B, a W, chunk-1 F): zero-bubble style, the W
//      split off its B and run at once
//   4. m-2p+r+1 times: (chunk-0 F & chunk-1 BW), (chunk-1 F & chunk-0 BW)
//   5. p-r-1 times: chunk-1 BW, then (chunk-1 F & chunk-0 BW)
//   6. r+1 pairs (chunk-1 backward, chunk-0 backward), full (BW) in the
//      first half and split (B, W deferred) from the middle on
//   7. p-r-1 times: a deferred W, then a split chunk-0 B
//   8. the r+1 W's still deferred
// where "X & Y" is an overlapped pair and W's are deferred first in, first
// out.
//
// The overlap itself is not modelled: zbc's simulator gives each rank one
// compute stream, so a pair runs as its F followed by its BW, and the
// simulated bubble is the sequential one, without DualPipeV's F&B gain.
// Peak activations are 2p+1 chunk activations per rank with equal chunks,
// within (p+1) full-stage microbatches.
//
// DeepSeek requires m >= 2p. For smaller m this builds the 2p-microbatch
// order and drops the extra microbatches, which keeps it valid: whole
// microbatches vanish, so no dependency can break and no rank's memory can
// grow.
//
//===----------------------------------------------------------------------===//

#include "Builders/Builders.h"
#include "Core/Support.h"

#include <deque>

using namespace zbc::sched;

namespace {

/// Builds one rank's order for n microbatches, keeping those below m.
class RankOrder {
public:
  RankOrder(int p, int r, int m) : m(m), stage{r, 2 * p - 1 - r} {}

  void forward(int c) { add(Kind::F, c, nF[c]++); }
  /// A backward: fused (BW) or split (B now, its W queued).
  void backward(int c, bool split) {
    int j = nB[c]++;
    if (!split) {
      add(Kind::BW, c, j);
      return;
    }
    add(Kind::B, c, j);
    deferred.push_back({c, j});
  }
  /// The oldest deferred W, if any.
  void weight() {
    if (deferred.empty())
      return;
    auto [c, j] = deferred.front();
    deferred.pop_front();
    add(Kind::W, c, j);
  }
  /// An overlapped pair: forward of chunk `fc`, full backward of the other
  /// (both kept: recorded as an OVERLAP_F_B).
  void pair(int fc) {
    size_t at = actions.size();
    forward(fc);
    backward(1 - fc, /*split=*/false);
    if (actions.size() == at + 2)
      overlaps.push_back(static_cast<int>(at));
  }

  std::vector<Action> actions;
  std::vector<int> overlaps; // the first action of each overlapped pair
  std::deque<std::pair<int, int>> deferred;

private:
  void add(Kind kind, int c, int j) {
    if (j < m)
      actions.push_back({kind, stage[c], j});
  }
  int m;
  int stage[2];
  int nF[2] = {0, 0}, nB[2] = {0, 0};
};

} // namespace

llvm::Expected<ScheduleTable> zbc::sched::buildDualPipeV(const Problem &problem,
                                                         const BuildOptions &,
                                                         BuildReport &report) {
  int p = problem.ranks, m = problem.microbatches;
  if (problem.numStages() != 2 * p)
    return fail("dualpipe-v needs 2 stages per rank (the V), got " +
                llvm::Twine(problem.numStages()) + " stages on " +
                llvm::Twine(p) + " ranks");
  // The order is defined for at least 2p microbatches.
  int n = std::max(m, 2 * p);
  ScheduleTable table;
  table.microbatches = m;
  table.rankOfStage = placeStages(Placement::V, p, 2 * p);
  for (int r = 0; r < p; ++r) {
    RankOrder o(p, r, m);
    for (int i = 0; i < 2 * (p - r - 1); ++i) // 1
      o.forward(0);
    for (int i = 0; i < r + 1; ++i) { // 2
      o.forward(0);
      o.forward(1);
    }
    for (int i = 0; i < p - r - 1; ++i) { // 3
      o.backward(1, /*split=*/true);
      o.weight();
      o.forward(1);
    }
    for (int i = 0; i < n - 2 * p + r + 1; ++i) { // 4
      o.pair(0);
      o.pair(1);
    }
    for (int i = 0; i < p - r - 1; ++i) { // 5
      o.backward(1, /*split=*/false);
      o.pair(1);
    }
    // 6: split from the middle pair on; an odd rank (even count) splits
    // both backwards of the middle pair, an even rank only the second.
    bool split = false;
    for (int i = 0, half = (r + 1) / 2; i < r + 1; ++i) {
      if (i == half && r % 2 == 1)
        split = true;
      o.backward(1, split);
      if (i == half && r % 2 == 0)
        split = true;
      o.backward(0, split);
    }
    for (int i = 0; i < p - r - 1; ++i) { // 7
      o.weight();
      o.backward(0, /*split=*/true);
    }
    for (int i = 0; i < r + 1; ++i) // 8
      o.weight();
    if (!o.deferred.empty())
      return fail("dualpipe-v: rank " + llvm::Twine(r) + " ends with " +
                  llvm::Twine(o.deferred.size()) + " W's not run");
    for (int at : o.overlaps)
      table.overlaps.insert({r, at});
    table.ranks.push_back(std::move(o.actions));
  }
  report.notes.push_back(
      "dualpipe-v: each overlapped F&B pair runs as F then BW here (one "
      "compute stream per rank); the overlap gain is not modelled" +
      std::string(m < 2 * p ? "; built for 2p microbatches and truncated to m"
                            : ""));
  return std::move(table);
}
