//===- VShapes.cpp - V-Half and V-Min: V schedules at bounded memory ------===//
//
// The controllable-memory V schedules (Qi et al., "Pipeline Parallelism with
// Controllable Memory", 2024). Each rank repeats an interval of 6 slots per
// microbatch; microbatch j on rank i runs, at slot o_X(i) + 6j,
//   F (chunk-0 forward), f (chunk-1 forward),
//   B (chunk-1 backward), b (chunk-0 backward),
// and its W (chunk 1) and w (chunk 0) in the two slots of the interval left
// free, the first free one after B and after b respectively. The offsets,
// for rank i of d ranks, are the reference implementation's:
//   V-Min:  F = i,  f = 2d-i-1, B = 2d+g+i,    b = 4d+g-i-1,
//           g = 2 if d % 3 == 0 else 0
//   V-Half: F = 2i, f = 3d-i-2, B = 3d+g+2i-1, b = 6d+g-i-2,
//           g = 3 if d % 2 == 0 else 0
// They are distinct mod 6 for every d and respect every dependency with at
// least one slot to spare, so the slot plan is itself a valid schedule with
// unit costs.
//
// Memory depends only on the order. A microbatch's two activations live
// from F to w and from f to W: (o_b - o_F) + (o_B - o_f) = 4d + 2g for
// V-Min and 6d + 2g - 1 for V-Half, plus the W delays, out of every 6
// slots, which keeps the peak at (p+4)//3 (V-Min) and (p+2)//2 (V-Half)
// full-stage microbatches (one chunk-0 plus one chunk-1 activation each)
// against 1F1B's p: exactly at the bound for every p up to 64 (checked) and
// in the unit tests. The plan works for any m (fewer microbatches just leave
// slots empty), so neither schedule needs m >= 2p.
//
// The plan alone wastes time at the ends of the step (a rank waits in the
// warm-up with memory to spare; the last backwards trickle in one interval
// apart), and the reference implementation led it by 1-13% at equal memory
// by squeezing and reordering the warm-up and cool-down. So the builder
// also compacts it (VCompaction.cpp) and keeps, timed with the real costs
// and comm, the shortest of:
//  - the plain plan;
//  - for every gap g (0..5) whose offsets stay distinct mod 6 and whose
//    plan fits the memory below, the compacted plan, with its steady phase
//    kept and with holes filled everywhere. A larger g delays each B and b
//    and so costs memory, but where the bound leaves room the delayed plan
//    can compact better (V-Min at p = 8 holds 8 chunk activations with
//    g = 0 and with g = 4, and g = 4 wins; the reference's search, over
//    many more building blocks, lands on the same offsets there).
// Every candidate keeps each rank within the pattern's own memory: the
// larger of the plain plan's peak on that rank as if B freed nothing
// (M_W raised to M_B) and the bound, (p+2)//2 resp. (p+4)//3 times the
// rank's chunk-0 plus chunk-1 M_B, and within the user's limit if one is
// given. So with M_W < M_B a compacted schedule may reach the bound where
// the plan stayed under it (V-Min, p = 8, M_W = M_B/2: 8 chunk activations
// against the plan's 7; the reference's schedule holds 8 there too). On the
// reference implementation's own grid (p in {4, 8, 16}, m in {2p, 4p},
// W = F and W = F/2) the result is at or under its bubble everywhere, and
// under it at p = 16 with W = F/2 (bench/v_reference.py; the yardstick is
// VScheduleVShapes.AtMostTheReference's). With many microbatches only a
// short instance is planned (bestShort). zb-v times the same orders as
// candidates (vShapeCandidate).
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "Support.h"
#include "VCompaction.h"

#include <algorithm>
#include <array>
#include <limits>

using namespace zbc::sched;
using vpass::Grid;

namespace {

/// Slot offsets of one rank: F, f, B, b (Note in the file header).
using Offsets = std::array<int, 4>;

/// One of the two shapes: its offsets for a gap g, the gap the papers use,
/// and its memory bound in full-stage microbatches.
struct Shape {
  const char *name;
  Offsets (*offsets)(int d, int i, int g);
  int (*defaultGap)(int d);
  int (*bound)(int p);
};

const Shape kVMin{"v-min",
                  [](int d, int i, int g) -> Offsets {
                    return {i, 2 * d - i - 1, 2 * d + g + i, 4 * d + g - i - 1};
                  },
                  [](int d) { return d % 3 == 0 ? 2 : 0; },
                  [](int p) { return (p + 4) / 3; }};

const Shape kVHalf{
    "v-half",
    [](int d, int i, int g) -> Offsets {
      return {2 * i, 3 * d - i - 2, 3 * d + g + 2 * i - 1, 6 * d + g - i - 2};
    },
    [](int d) { return d % 2 == 0 ? 3 : 0; },
    [](int p) { return (p + 2) / 2; }};

/// The first slot after `from` whose residue mod 6 is not taken; takes it.
int firstFree(int from, std::array<bool, 6> &taken) {
  for (int slot = from + 1;; ++slot)
    if (!taken[slot % 6]) {
      taken[slot % 6] = true;
      return slot;
    }
}

/// The slot plan with gap g, or none if two passes of a rank share a
/// residue.
std::optional<Grid> planGrid(const Shape &shape, int d, int m, int g) {
  Grid plan;
  plan.rows.resize(d);
  std::vector<std::array<int, vpass::kPasses>> firsts(d);
  int width = 0;
  for (int i = 0; i < d; ++i) {
    Offsets o = shape.offsets(d, i, g);
    std::array<bool, 6> taken{};
    for (int slot : o) {
      if (taken[slot % 6])
        return std::nullopt;
      taken[slot % 6] = true;
    }
    // Per pass (F f B b W w) its first slot.
    std::array<int, vpass::kPasses> &first = firsts[i];
    first = {o[0], o[1], o[2], o[3], 0, 0};
    first[vpass::W] = firstFree(o[2], taken); // W after B (chunk 1)
    first[vpass::w] = firstFree(o[3], taken); // w after b (chunk 0)
    width = std::max(width, *std::max_element(first.begin(), first.end()) +
                                6 * (m - 1) + 1);
  }
  for (int i = 0; i < d; ++i) {
    plan.rows[i].assign(width, vpass::kIdle);
    for (uint8_t t = 0; t < vpass::kPasses; ++t)
      for (int j = 0; j < m; ++j)
        plan.rows[i][firsts[i][t] + 6 * j] = t;
  }
  return plan;
}

/// Per rank, the memory the pattern promises (file comment).
std::vector<double> ownMemory(const vpass::VRanks &v, const Grid &plan,
                              int bound) {
  // The plan's peak as if each B freed nothing.
  vpass::VRanks held = v;
  for (auto &delta : held.memory) {
    double keep1 = std::max(-delta[vpass::W], delta[vpass::f]);
    double keep0 = std::max(-delta[vpass::w], delta[vpass::F]);
    delta[vpass::B] = keep1 - delta[vpass::f];
    delta[vpass::b] = keep0 - delta[vpass::F];
    delta[vpass::W] = -keep1;
    delta[vpass::w] = -keep0;
  }
  std::vector<double> own = vpass::peaksOf(held, plan);
  for (int r = 0; r < v.p; ++r)
    own[r] = std::max(own[r],
                      bound * (v.memory[r][vpass::F] + v.memory[r][vpass::f]));
  return own;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Up to this many microbatches the candidates are built and timed whole;
/// with more, on this many (bestShort): the compaction rearranges at most
/// the first and the last `activations` microbatches (a rank front-loads
/// at most that many forwards, and the cool-down takes at most that many
/// backwards and weight gradients), so twice that and 8 intervals of steady
/// phase either side of the middle are enough. Whole, p = 16 with 48
/// microbatches takes about a millisecond.
int shortMicrobatches(int activations) {
  return std::max(48, 2 * activations + 16);
}

/// The best candidate, planned with m0 microbatches.
struct Best {
  Grid grid;
  int m0;
  std::vector<double> limit; // per rank
  double span;               // projected to the problem's m
  std::string how;
};

/// Whether every rank of `grid` stays within `limit`.
bool fits(const vpass::VRanks &v, const Grid &grid,
          const std::vector<double> &limit) {
  std::vector<double> peaks = vpass::peaksOf(v, grid);
  for (size_t r = 0; r < peaks.size(); ++r)
    if (peaks[r] > limit[r] * (1 + 1e-9))
      return false;
  return true;
}

/// The shortest candidate (file comment) within min(own memory, cap) per
/// rank (cap 0: none); none if no candidate fits.
///
/// Compaction changes only the first and last microbatches, so with many
/// microbatches the candidates are built for m0 = shortMicrobatches of
/// them, each ranked by its span extrapolated to m (the steady phase adds
/// the same time per interval, vpass::Timing); `grown` then repeats the
/// best one's middle up to m. Planning and timing the whole steady phase
/// would cost time linear in m for nothing (at p = 256 and m = 2048 the
/// short instance has a quarter of the slots). Checked against planning
/// whole: the same schedule and span for p in {4, 8, 16, 32, 64}, m in
/// {4p, 8p, 16p}, W = F and W = F/2.
std::optional<Best> bestShort(const Problem &problem, const Shape &shape,
                              double cap) {
  int d = problem.ranks, m = problem.microbatches;
  // The bound in chunk activations (one full-stage microbatch is two).
  int m0 = std::min(m, shortMicrobatches(2 * shape.bound(d)));
  Problem shortProblem = problem;
  shortProblem.microbatches = m0;
  vpass::VRanks v = vpass::vRanksOf(shortProblem);
  std::optional<Grid> plain = planGrid(shape, d, m0, shape.defaultGap(d));
  if (!plain)
    return std::nullopt; // the papers' gaps keep the residues distinct
  std::vector<double> limit = ownMemory(v, *plain, shape.bound(d));
  for (double &l : limit)
    l = cap > 0 ? std::min(l, cap) : l;
  v.limit = limit;
  std::optional<Best> best;
  auto consider = [&](Grid grid, std::string how) {
    if (!fits(v, grid, limit))
      return;
    vpass::Timing timing = vpass::timingOf(v, grid);
    double span = timing.span + (m - m0) * timing.perInterval;
    if (!best || span < best->span)
      best = Best{std::move(grid), m0, limit, span, std::move(how)};
  };
  consider(*plain, "the plain slot plan");
  for (int g = 0; g < 6; ++g) {
    std::optional<Grid> plan = planGrid(shape, d, m0, g);
    // A plan over the limit stays over it: compaction keeps the steady
    // phase's memory.
    if (!plan || !fits(v, *plan, limit))
      continue;
    for (vpass::Compaction &c : vpass::compactions(v, *plan))
      consider(std::move(c.grid),
               "the plan with gap " + std::to_string(g) + " compacted (" +
                   (c.keepSteady ? "steady phase kept" : "holes filled") + ")");
  }
  if (best && best->span == kInf)
    return std::nullopt;
  return best;
}

/// `best` with the problem's m microbatches: its middle repeated
/// (vpass::repeatMiddle), or the plain plan where that refuses (a middle
/// that is not periodic) or, with `verify`, where the repeated one does not
/// time or fit whole; none if the plain plan does not fit either.
std::optional<Best> grown(const Problem &problem, const Shape &shape, Best best,
                          bool verify) {
  int d = problem.ranks, m = problem.microbatches;
  if (best.m0 == m)
    return best;
  vpass::VRanks whole = vpass::vRanksOf(problem);
  std::optional<Grid> longer =
      vpass::repeatMiddle(best.grid, best.m0, m - best.m0);
  if (longer && (!verify || (vpass::timingOf(whole, *longer).span < kInf &&
                             fits(whole, *longer, best.limit)))) {
    best.grid = std::move(*longer);
    return best;
  }
  std::optional<Grid> plain = planGrid(shape, d, m, shape.defaultGap(d));
  if (!plain || !fits(whole, *plain, best.limit))
    return std::nullopt;
  best.grid = std::move(*plain);
  best.how = "the plain slot plan";
  return best;
}

llvm::Expected<ScheduleTable> buildFromShape(const Problem &problem,
                                             const Shape &shape,
                                             BuildReport &report) {
  int d = problem.ranks;
  if (problem.numStages() != 2 * d)
    return fail(llvm::Twine(shape.name) +
                " needs 2 stages per rank (the V), got " +
                llvm::Twine(problem.numStages()) + " stages on " +
                llvm::Twine(d) + " ranks");
  std::optional<Best> best = bestShort(problem, shape, problem.limit());
  if (best)
    best = grown(problem, shape, std::move(*best), /*verify=*/true);
  if (!best) {
    // Nothing fits the user's limit: the plain plan goes to the simulator,
    // whose error says where it goes over.
    std::optional<Grid> plain =
        planGrid(shape, d, problem.microbatches, shape.defaultGap(d));
    if (!plain)
      return fail(llvm::Twine(shape.name) +
                  ": two passes in one slot of the interval");
    best = Best{std::move(*plain),
                problem.microbatches,
                {},
                kInf,
                "the plain slot plan"};
  }
  report.notes.push_back(std::string(shape.name) + ": activations bounded by " +
                         std::to_string(shape.bound(d)) +
                         " full-stage microbatches; kept " + best->how);
  ScheduleTable table = ScheduleTable::empty(problem, Placement::V);
  table.ranks = vpass::actionsOf(best->grid);
  return std::move(table);
}

} // namespace

std::optional<VShapeCandidate>
zbc::sched::vShapeCandidate(const Problem &problem, bool half, double cap) {
  if (problem.numStages() != 2 * problem.ranks)
    return std::nullopt;
  const Shape &shape = half ? kVHalf : kVMin;
  std::optional<Best> best = bestShort(problem, shape, cap);
  if (!best)
    return std::nullopt;
  double span = best->span;
  // Grown unverified: zb-v times the order whole before it keeps it.
  auto order = [problem, &shape, best = std::move(*best)]()
      -> std::optional<std::vector<std::vector<Action>>> {
    std::optional<Best> whole = grown(problem, shape, best, /*verify=*/false);
    if (!whole)
      return std::nullopt;
    return vpass::actionsOf(whole->grid);
  };
  return VShapeCandidate{span, std::move(order)};
}

llvm::Expected<ScheduleTable> zbc::sched::buildVHalf(const Problem &problem,
                                                     const BuildOptions &,
                                                     BuildReport &report) {
  return buildFromShape(problem, kVHalf, report);
}

llvm::Expected<ScheduleTable> zbc::sched::buildVMin(const Problem &problem,
                                                    const BuildOptions &,
                                                    BuildReport &report) {
  return buildFromShape(problem, kVMin, report);
}
