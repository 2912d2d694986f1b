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
// short instance is planned (Candidates). zb-v times the same orders as
// candidates (vShapeCandidate).
//
// Between and above the two patterns' memory no fixed pattern is the
// answer, so zb-v also takes the best of the paper's whole family of
// building blocks within its limit (Block, vBlockCandidate): the forward
// and backward steps from rank to rank (1 for V-Min, 2 for V-Half, up to
// 5, in two runs) and the gaps at the V's turns, each plan compacted the
// same way. The reference's v_auto_schedule.py searches the same family;
// zb-v is at or under its bubble on every limit of bench/v_reference.py
// --between (VScheduleZBV.AtMostTheReferenceBetweenThePatterns).
//
//===----------------------------------------------------------------------===//

#include "Builders/Builders.h"
#include "Core/Support.h"
#include "Builders/VCompaction.h"

#include <algorithm>
#include <array>
#include <limits>

using namespace zbc::sched;
using vpass::Grid;

namespace {
/// Slot offsets of one rank: F, f, B, b (Note in the file header); a slot
/// plan has one per rank.
using Offsets = std::array<int, 4>;
using PlanOffsets = std::vector<Offsets>;

/// One of the two shapes: its offsets for a gap g, the gap the papers use,
/// and its memory bound in full-stage microbatches.
struct Shape {
  const char *name;
  Offsets (*offsets)(int d, int i, int g);
  int (*defaultGap)(int d);
  int (*bound)(int p);

  PlanOffsets plan(int d, int g) const {
    PlanOffsets all(d);
    for (int i = 0; i < d; ++i)
      all[i] = offsets(d, i, g);
    return all;
  }
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

/// A building block of the Controllable Memory paper's family (its Section
/// 3.1 and Appendix A; the reference's v_auto_schedule.py searches the same
/// family): the chunk-0 forward and the chunk-1 backward move `step0` slots
/// on from each rank to the next for the first `len0` ranks and `step1`
/// after, the chunk-1 forward and the chunk-0 backward one slot back, and
/// the turns at the V's ends wait `fGap` (rank p-1's f after its F), `gap`
/// (rank 0's B after its f) and `bGap` (rank p-1's b after its B) slots
/// more than the dependence needs. Steps 1 and 2 everywhere are V-Min's and
/// V-Half's blocks (with their gaps); a larger step holds each activation
/// longer, so memory grows with the steps, and mixed steps land between.
struct Block {
  int step0, step1, len0, gap, fGap, bGap;
};

/// The block's offsets (planGrid checks their residues).
PlanOffsets blockOffsets(int d, const Block &block) {
  PlanOffsets o(d);
  auto step = [&](int i) { return i < block.len0 ? block.step0 : block.step1; };
  for (int i = 1; i < d; ++i)
    o[i][0] = o[i - 1][0] + step(i - 1);
  o[d - 1][1] = o[d - 1][0] + 1 + block.fGap;
  for (int i = d - 2; i >= 0; --i)
    o[i][1] = o[i + 1][1] + 1;
  o[0][2] = o[0][1] + 1 + block.gap;
  for (int i = 1; i < d; ++i)
    o[i][2] = o[i - 1][2] + step(i - 1);
  o[d - 1][3] = o[d - 1][2] + 1 + block.bGap;
  for (int i = d - 2; i >= 0; --i)
    o[i][3] = o[i + 1][3] + 1;
  return o;
}

/// The first slot after `from` whose residue mod 6 is not taken; takes it.
int firstFree(int from, std::array<bool, 6> &taken) {
  for (int slot = from + 1;; ++slot)
    if (!taken[slot % 6]) {
      taken[slot % 6] = true;
      return slot;
    }
}

/// Per rank and pass (F f B b W w), the slot of microbatch 0: the offsets,
/// then each weight gradient in the first free residue after its backward;
/// none if two of a rank's offsets share a residue mod 6.
using FirstSlots = std::vector<std::array<int, vpass::kPasses>>;
std::optional<FirstSlots> firstSlotsOf(const PlanOffsets &offsets) {
  FirstSlots firsts(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    const Offsets &o = offsets[i];
    std::array<bool, 6> taken{};
    for (int slot : o) {
      if (taken[slot % 6])
        return std::nullopt;
      taken[slot % 6] = true;
    }
    std::array<int, vpass::kPasses> &first = firsts[i];
    first = {o[0], o[1], o[2], o[3], 0, 0};
    first[vpass::W] = firstFree(o[2], taken); // W after B (chunk 1)
    first[vpass::w] = firstFree(o[3], taken); // w after b (chunk 0)
  }
  return firsts;
}

/// The slot plan of these offsets, or none if two passes of a rank share a
/// residue.
std::optional<Grid> planGrid(const PlanOffsets &offsets, int m) {
  std::optional<FirstSlots> firsts = firstSlotsOf(offsets);
  if (!firsts)
    return std::nullopt;
  int width = 0;
  for (const auto &first : *firsts)
    width = std::max(width, *std::max_element(first.begin(), first.end()) +
                                6 * (m - 1) + 1);
  Grid plan;
  plan.rows.assign(offsets.size(), std::vector<uint8_t>(width, vpass::kIdle));
  for (size_t i = 0; i < offsets.size(); ++i)
    for (uint8_t t = 0; t < vpass::kPasses; ++t)
      for (int j = 0; j < m; ++j)
        plan.rows[i][(*firsts)[i][t] + 6 * j] = t;
  return plan;
}

/// Per rank, the plan's peak as if it never ran out of microbatches, from
/// one interval of 6 slots and without planning the grid: the cheap test of
/// whether a plan can fit. The memory after slot t is the sum, over the
/// microbatches started by then, of what each still holds (never below 0),
/// so 6 slots later it has grown by what the newest one holds; once
/// microbatch 0's last pass is done (from the rank's latest first slot on)
/// that sum repeats every 6 slots, and no slot, in any plan of these
/// offsets, holds more.
///
/// A plan of m microbatches reaches that interval if its last microbatch
/// has not started all its passes by then; its peak is then exactly this,
/// and that is what planPeaks returns, planning the grid only where m is
/// too short.
std::vector<double> planPeaks(const vpass::VRanks &v, const PlanOffsets &offsets,
                              const FirstSlots &firsts, int m) {
  std::vector<double> peaks(firsts.size(), 0);
  for (size_t i = 0; i < firsts.size(); ++i) {
    int start = *std::max_element(firsts[i].begin(), firsts[i].end());
    int earliest = *std::min_element(firsts[i].begin(), firsts[i].end());
    if (start + 5 - earliest > 6 * m - 1)
      return vpass::peaksOf(v, *planGrid(offsets, m));
    for (int t = start; t < start + 6; ++t) {
      double live = 0;
      for (int x = 0; x < vpass::kPasses; ++x)
        live += v.memory[i][x] * ((t - firsts[i][x]) / 6 + 1);
      peaks[i] = std::max(peaks[i], live);
    }
  }
  return peaks;
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
/// with more, on this many (the Candidates comment): the compaction
/// rearranges at most the first and the last `activations` microbatches (a
/// rank front-loads at most that many forwards, and the cool-down takes at
/// most that many backwards and weight gradients), so twice that and 8
/// intervals of steady phase either side of the middle are enough. Whole,
/// p = 16 with 48 microbatches takes about a millisecond.
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
  PlanOffsets fallback; // its plain plan, where the middle does not repeat
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

/// The candidates of one search: slot plans, each timed as it is and
/// compacted, all within one per-rank limit, the shortest kept.
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
struct Candidates {
  int m, m0;
  vpass::VRanks v; // the short problem's, with the limit
  std::optional<Best> best;

  Candidates(const Problem &problem, int activations)
      : m(problem.microbatches),
        m0(std::min(m, shortMicrobatches(activations))) {
    Problem shortProblem = problem;
    shortProblem.microbatches = m0;
    v = vpass::vRanksOf(shortProblem);
  }

  /// The plan of `offsets`, as it is (with `plain`) and compacted; none of
  /// them if the plan does not fit.
  void consider(const PlanOffsets &offsets, const std::string &name,
                bool plain) {
    std::optional<Grid> plan = planGrid(offsets, m0);
    // A plan over the limit stays over it: compaction keeps the steady
    // phase's memory.
    if (!plan || !fits(v, *plan, v.limit))
      return;
    if (plain)
      record(*plan, name, offsets);
    for (vpass::Compaction &c : vpass::compactions(v, *plan))
      keep(std::move(c.grid),
           name + " compacted (" +
               (c.keepSteady ? "steady phase kept" : "holes filled") + ")",
           offsets);
  }

  /// `grid` if it fits and is the shortest so far.
  void keep(Grid grid, const std::string &how, const PlanOffsets &offsets) {
    if (fits(v, grid, v.limit))
      record(std::move(grid), how, offsets);
  }

  /// `grid`, known to fit, if it is the shortest so far.
  void record(Grid grid, const std::string &how, const PlanOffsets &offsets) {
    vpass::Timing timing = vpass::timingOf(v, grid);
    double span = timing.span + (m - m0) * timing.perInterval;
    if (span < kInf && (!best || span < best->span))
      best = Best{std::move(grid), m0, v.limit, span, how, offsets};
  }
};

/// The shortest of the shape's plans within min(own memory, cap) per rank
/// (cap 0: none): the plain plan with the papers' gap, then the plan with
/// every gap g (0..5) compacted; none if no candidate fits.
std::optional<Best> bestShort(const Problem &problem, const Shape &shape,
                              double cap) {
  int d = problem.ranks;
  // The bound in chunk activations (one full-stage microbatch is two).
  Candidates candidates(problem, 2 * shape.bound(d));
  PlanOffsets plain = shape.plan(d, shape.defaultGap(d));
  std::optional<Grid> plainGrid = planGrid(plain, candidates.m0);
  if (!plainGrid)
    return std::nullopt; // the papers' gaps keep the residues distinct
  std::vector<double> &limit = candidates.v.limit;
  limit = ownMemory(candidates.v, *plainGrid, shape.bound(d));
  for (double &l : limit)
    l = cap > 0 ? std::min(l, cap) : l;
  candidates.keep(*plainGrid, "the plain slot plan", plain);
  for (int g = 0; g < 6; ++g)
    candidates.consider(shape.plan(d, g),
                        "the plan with gap " + std::to_string(g),
                        /*plain=*/false);
  return std::move(candidates.best);
}

/// The blocks bestBlock tries, most memory first (they tend to run faster),
/// until this many slots have been planned and compacted, and always the
/// first: about 340 blocks at p = 8, 26 at p = 32 with m >= 144, one at
/// p = 256. On bench/v_reference.py --between four times as many changed
/// no bubble and doubled the time (p = 16, m = 64: 0.23 s against 0.43 s);
/// at p = 64, m = 512 they gain 0.07%.
constexpr double kBlockSlots = 1 << 20;

/// The longest step: the reference's uniform offsets go up to 5.
constexpr int kMaxStep = 5;

/// The run lengths of a block's first step tried: with one step, the
/// whole V; with two, every length that leaves a rank to the second up to
/// 16 of them, 16 spread evenly beyond, which keeps the search linear in p
/// (the memory a block holds moves with len0 in steps of about the step
/// difference, small beside the limit at large p). No two blocks tried
/// have the same offsets.
std::vector<int> runLengths(int d, bool oneStep) {
  if (oneStep)
    return {d - 1};
  constexpr int kRuns = 16;
  int most = d - 2; // len0 = d - 1 would be the one-step block
  std::vector<int> lengths;
  for (int k = 1; k <= std::min(kRuns, most); ++k)
    lengths.push_back(most <= kRuns ? k : (k * most + kRuns - 1) / kRuns);
  return lengths;
}

/// The shortest building block (Block) within `cap` per rank: steps 1 to
/// kMaxStep in at most two runs, every gap 0..5 (each residue once), none
/// where every rank can hold 2p chunk activations (zb-v's own orders are
/// the zero-bubble V there).
std::optional<Best> bestBlock(const Problem &problem, double cap) {
  int d = problem.ranks;
  Candidates candidates(problem, 2 * d);
  bool roomy = true;
  for (const auto &memory : candidates.v.memory)
    roomy &= cap >= 2 * d * std::max(memory[vpass::F], memory[vpass::f]);
  if (roomy)
    return std::nullopt;
  candidates.v.limit.assign(d, cap);
  struct Plan {
    PlanOffsets offsets;
    double peak; // the highest rank's, as a share of the cap
    std::string name;
  };
  std::vector<Plan> plans;
  for (int step0 = 1; step0 <= kMaxStep; ++step0)
    for (int step1 = 1; step1 <= step0; ++step1)
      for (int len0 : runLengths(d, step1 == step0))
        for (int gap = 0; gap < 6; ++gap)
          for (int fGap = 0; fGap < 6; ++fGap)
            for (int bGap = 0; bGap < 6; ++bGap) {
              Block block{step0, step1, len0, gap, fGap, bGap};
              PlanOffsets offsets = blockOffsets(d, block);
              std::optional<FirstSlots> firsts = firstSlotsOf(offsets);
              if (!firsts)
                continue;
              std::vector<double> peaks =
                  planPeaks(candidates.v, offsets, *firsts, candidates.m0);
              double peak = 0;
              bool over = false;
              for (int r = 0; r < d; ++r) {
                over |= peaks[r] > cap * (1 + 1e-9);
                peak = std::max(peak, peaks[r] / cap);
              }
              if (!over)
                plans.push_back(
                    {std::move(offsets), peak,
                     "the block with steps " + std::to_string(step0) + "/" +
                         std::to_string(step1) + " (after " +
                         std::to_string(len0) + " ranks), gaps " +
                         std::to_string(fGap) + "/" + std::to_string(gap) +
                         "/" + std::to_string(bGap)});
            }
  std::stable_sort(plans.begin(), plans.end(),
                   [](const Plan &a, const Plan &b) { return a.peak > b.peak; });
  double slots = 0, perPlan = double(d) * 6 * (candidates.m0 + 2 * d);
  for (const Plan &plan : plans) {
    if (slots > 0 && slots + perPlan > kBlockSlots)
      break; // the first always (at p = 256 it is the one)
    slots += perPlan;
    candidates.consider(plan.offsets, plan.name, /*plain=*/true);
  }
  return std::move(candidates.best);
}

/// `best` with the problem's m microbatches: its middle repeated
/// (vpass::repeatMiddle), or its plain plan where that refuses (a middle
/// that is not periodic) or, with `verify`, where the repeated one does not
/// time or fit whole; none if the plain plan does not fit either.
std::optional<Best> grown(const Problem &problem, Best best, bool verify) {
  int m = problem.microbatches;
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
  std::optional<Grid> plain = planGrid(best.fallback, m);
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
  std::optional<Best> best = bestShort(problem, shape, problem.budget());
  if (best)
    best = grown(problem, std::move(*best), /*verify=*/true);
  if (!best) {
    // Nothing fits the user's limit: the plain plan goes to the simulator,
    // whose error says where it goes over.
    std::optional<Grid> plain =
        planGrid(shape.plan(d, shape.defaultGap(d)), problem.microbatches);
    if (!plain)
      return fail(llvm::Twine(shape.name) +
                  ": two passes in one slot of the interval");
    best = Best{std::move(*plain), problem.microbatches, {}, kInf,
                "the plain slot plan", {}};
  }
  report.notes.push_back(std::string(shape.name) + ": activations bounded by " +
                         std::to_string(shape.bound(d)) +
                         " full-stage microbatches; kept " + best->how);
  ScheduleTable table = ScheduleTable::empty(problem, Placement::V);
  table.ranks = vpass::actionsOf(best->grid);
  return std::move(table);
}

/// A found plan as zb-v's candidate: its projected span, its order grown
/// only if zb-v keeps it (unverified: zb-v times the order whole).
std::optional<VShapeCandidate> candidateOf(const Problem &problem,
                                           std::optional<Best> best) {
  if (!best)
    return std::nullopt;
  double span = best->span;
  std::string how = best->how;
  auto order = [problem, best = std::move(*best)]()
      -> std::optional<std::vector<std::vector<Action>>> {
    std::optional<Best> whole = grown(problem, best, /*verify=*/false);
    if (!whole)
      return std::nullopt;
    return vpass::actionsOf(whole->grid);
  };
  return VShapeCandidate{span, std::move(order), std::move(how)};
}

} // namespace

std::optional<VShapeCandidate>
zbc::sched::vShapeCandidate(const Problem &problem, bool half, double cap) {
  if (problem.numStages() != 2 * problem.ranks)
    return std::nullopt;
  return candidateOf(problem, bestShort(problem, half ? kVHalf : kVMin, cap));
}

std::optional<VShapeCandidate>
zbc::sched::vBlockCandidate(const Problem &problem, double cap) {
  if (problem.numStages() != 2 * problem.ranks || cap <= 0)
    return std::nullopt;
  return candidateOf(problem, bestBlock(problem, cap));
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
