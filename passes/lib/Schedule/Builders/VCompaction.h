//===- VCompaction.h - squeezing a V pattern's ends -------------*- C++ -*-===//
//
// Private to passes/lib/Schedule: the slot grids VShapes.cpp builds V-Half
// and V-Min in, their timing with the real costs, and the compaction of
// their warm-up and cool-down (VCompaction.cpp says how and why).
//
// A V rank runs six passes per microbatch (Note [V chunks] in ZBV/VShape.h), named
// by the papers' letters: F and f, the forwards of chunk 0 and chunk 1; B and
// b, the input gradients of chunk 1 and chunk 0 (chunk 1 holds the later
// stage, so its backward comes first); W and w, their weight gradients. A
// grid gives each rank a row of unit slots, each holding one pass or none;
// the k-th pass of a kind in a row is microbatch k, so no step here ever
// reorders one kind's microbatches.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_VCOMPACTION_H
#define ZBC_SCHEDULE_VCOMPACTION_H

#include "zbc/Schedule/ScheduleTable.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace zbc::sched::vpass {

enum Pass : uint8_t { F = 0, f = 1, B = 2, b = 3, W = 4, w = 5 };
constexpr int kPasses = 6;
constexpr uint8_t kIdle = 0xff;

/// Per rank, the pass in each unit slot (kIdle: none); rows of one length.
/// A grid is valid when every pass's inputs (Dependences.h's rule) sit in
/// earlier slots: its slot order is then an order the dependences allow,
/// which timingOf relies on. Slot plans, squeezed grids and everything
/// compactions returns are valid.
struct Grid {
  std::vector<std::vector<uint8_t>> rows;
  size_t width() const { return rows.empty() ? 0 : rows[0].size(); }
};

/// A V problem seen per rank and pass: what the timing and the compaction
/// read. `limit` is per rank (the compaction keeps every rank within its
/// own).
struct VRanks {
  int p = 0, m = 0;
  double comm = 0;
  std::vector<std::array<double, kPasses>> time, memory; // [rank][pass]
  std::vector<double> limit;                             // [rank]
};

/// The problem's ranks (2p stages on the V), with no limits yet.
VRanks vRanksOf(const Problem &problem);

/// The span the simulator would report for the grid's order (every rank
/// runs its passes in order, each once its rank is free and its inputs are
/// done, comm on cross-rank inputs; the longest rank's first start to last
/// end), +inf if the grid is not valid; and what each further interval
/// repeated in its middle (repeatMiddle) would add: how much later rank 0
/// starts its chunk-0 forward of microbatch m/2 + 6 than that of m/2, over
/// 6. In the steady phase every rank keeps that pace, so the span with
/// more microbatches follows without timing them. Linear in the slots.
struct Timing {
  double span, perInterval;
};
Timing timingOf(const VRanks &v, const Grid &grid);

/// Per rank, the largest live activation memory along its row.
std::vector<double> peaksOf(const VRanks &v, const Grid &grid);

/// The warm-up and cool-down of the slot plan `plan` compacted within each
/// rank's limit (VCompaction.cpp), in two variants: `keepSteady` leaves the
/// passes between each rank's second b and its last F where the plan put
/// them; the other fills idle slots everywhere. A variant is missing where
/// a step finds no room for what it rearranges. A result breaks a limit
/// only where a step's assumptions fail; the caller checks its peaks.
struct Compaction {
  bool keepSteady;
  Grid grid;
};
std::vector<Compaction> compactions(const VRanks &v, const Grid &plan);

/// `grid`, a schedule of `m` microbatches, as one of m + extra: on every
/// rank the six slots that start at its chunk-0 forward of microbatch m/2
/// repeated `extra` more times there (every later pass then belongs to a
/// microbatch `extra` later). Compaction changes only the first and last
/// microbatches, so a plan compacted with few microbatches and repeated in
/// its middle is the plan compacted with many. None if a rank's row is not
/// periodic there (period 6, every pass once) for two intervals either
/// side.
std::optional<Grid> repeatMiddle(const Grid &grid, int m, int extra);

/// The grid's order as the schedule table's actions (stage: the rank for
/// chunk 0, 2p - 1 - rank for chunk 1).
std::vector<std::vector<Action>> actionsOf(const Grid &grid);

} // namespace zbc::sched::vpass

#endif // ZBC_SCHEDULE_VCOMPACTION_H
