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
// unit costs. The builder keeps only its per-rank order (sorted by slot) and
// lets the simulator time it with the real costs and comm: with unit costs
// and no comm every action then starts no later than its slot.
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
// The reference implementation then squeezes and reorders the warm-up and
// cool-down with a search that takes minutes at p = 32; the plan alone, in
// milliseconds, stays at or under the papers' bubble with equal costs
// (2p/(3m) for V-Min, p/(2m) for V-Half, for m up to 4p) and a little over
// p/(2m) for V-Half at larger m. The interval assumes F, B and W of equal
// length: with the paper's measured F ~ B ~ 2W, V-Min leaves 20-34% bubble
// and V-Half 8-20% (VSchedulePaperRows logs them).
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "Support.h"

#include <algorithm>
#include <array>

using namespace zbc::sched;

namespace {

/// Slot offsets of one rank: F, f, B, b (Note in the file header).
using Offsets = std::array<int, 4>;

Offsets vMinOffsets(int d, int i) {
  int g = d % 3 == 0 ? 2 : 0;
  return {i, 2 * d - i - 1, 2 * d + g + i, 4 * d + g - i - 1};
}

Offsets vHalfOffsets(int d, int i) {
  int g = d % 2 == 0 ? 3 : 0;
  return {2 * i, 3 * d - i - 2, 3 * d + g + 2 * i - 1, 6 * d + g - i - 2};
}

/// The first slot after `from` whose residue mod 6 is not taken; takes it.
int firstFree(int from, std::array<bool, 6> &taken) {
  for (int slot = from + 1;; ++slot)
    if (!taken[slot % 6]) {
      taken[slot % 6] = true;
      return slot;
    }
}

llvm::Expected<ScheduleTable> buildFromSlots(const Problem &problem,
                                             const char *name,
                                             Offsets (*offsets)(int, int)) {
  int d = problem.ranks, m = problem.microbatches;
  if (problem.numStages() != 2 * d)
    return fail(llvm::Twine(name) + " needs 2 stages per rank (the V), got " +
                llvm::Twine(problem.numStages()) + " stages on " +
                llvm::Twine(d) + " ranks");
  ScheduleTable table = ScheduleTable::empty(problem, Placement::V);
  for (int i = 0; i < d; ++i) {
    Offsets o = offsets(d, i);
    std::array<bool, 6> taken{};
    for (int slot : o) {
      if (taken[slot % 6])
        return fail(llvm::Twine(name) + ": rank " + llvm::Twine(i) +
                    " has two passes in one slot of the interval");
      taken[slot % 6] = true;
    }
    int wSlot = firstFree(o[2], taken);  // W after B (chunk 1)
    int w0Slot = firstFree(o[3], taken); // w after b (chunk 0)
    int s0 = i, s1 = 2 * d - 1 - i;
    struct Slotted {
      long slot;
      Action action;
    };
    std::vector<Slotted> slotted;
    slotted.reserve(6 * size_t(m));
    for (int j = 0; j < m; ++j) {
      long base = 6L * j;
      slotted.push_back({base + o[0], {Kind::F, s0, j}});
      slotted.push_back({base + o[1], {Kind::F, s1, j}});
      slotted.push_back({base + o[2], {Kind::B, s1, j}});
      slotted.push_back({base + o[3], {Kind::B, s0, j}});
      slotted.push_back({base + wSlot, {Kind::W, s1, j}});
      slotted.push_back({base + w0Slot, {Kind::W, s0, j}});
    }
    // Residues are distinct, so no two passes share a slot.
    std::sort(
        slotted.begin(), slotted.end(),
        [](const Slotted &a, const Slotted &b) { return a.slot < b.slot; });
    table.ranks[i].reserve(slotted.size());
    for (const Slotted &s : slotted)
      table.ranks[i].push_back(s.action);
  }
  return std::move(table);
}

} // namespace

llvm::Expected<ScheduleTable> zbc::sched::buildVHalf(const Problem &problem,
                                                     const BuildOptions &,
                                                     BuildReport &report) {
  report.notes.push_back(
      "v-half: 6-slot interval per microbatch, offsets F=2i f=3d-i-2 "
      "B=3d+g+2i-1 b=6d+g-i-2 (g=3 if d even); activations bounded by " +
      std::to_string((problem.ranks + 2) / 2) + " full-stage microbatches");
  return buildFromSlots(problem, "v-half", vHalfOffsets);
}

llvm::Expected<ScheduleTable> zbc::sched::buildVMin(const Problem &problem,
                                                    const BuildOptions &,
                                                    BuildReport &report) {
  report.notes.push_back(
      "v-min: 6-slot interval per microbatch, offsets F=i f=2d-i-1 B=2d+g+i "
      "b=4d+g-i-1 (g=2 if 3 divides d); activations bounded by " +
      std::to_string((problem.ranks + 4) / 3) + " full-stage microbatches");
  return buildFromSlots(problem, "v-min", vMinOffsets);
}
