//===- Anneal.h - zb-auto's simulated annealing over orders ----*- C++ -*-===//
//
// zb-auto's last phase (Build.cpp): simulated annealing over per-rank
// orders, from the orders the searches found. A move takes one op of a
// rank to another place within a few of its own, keeping what every
// zb-auto order keeps (shiftRange) and the memory limit. Moves that leave
// the makespan alone but lengthen other spans are taken now and then (the
// Metropolis rule on a cost of the makespan plus a small share of the mean
// span), which is how the walk crosses the wide plateaus where the repair
// stops: what shortens a pipeline is mostly a different spread of W's and
// B's over several ranks at once.
//
// What makes it cheap enough to run tens of thousands of moves (Note
// [zb-auto timing]): a move is timed by Evaluator::retime from where it
// can first change anything, until the rest of the last timing stands
// (about a tenth of the order for a move that is taken); and the
// Metropolis rule is drawn before the timing, so that a move it will turn
// down is stopped as soon as one op's start plus its tail (the longest
// path from it to a rank's end, kept for the current order by
// Evaluator::retail) shows its makespan too long.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_ZBAUTO_ANNEAL_H
#define ZBC_SCHEDULE_ZBAUTO_ANNEAL_H

#include "ZBAuto.h"

#include <chrono>
#include <cstdint>
#include <optional>

namespace zbc::sched::zbauto {

/// Anneals `order` (valid, within the limit) for about `visits` of work
/// (Evaluator::timed), until its makespan meets `lower`, or (where given,
/// the exact mode's wall-clock) until `stopAt`, from a temperature of `hot`
/// times the makespan; returns the shortest order it passed through (by
/// keyLess, so never longer than `order`) and adds the work it did to
/// `used`.
Order anneal(const Instance &in, const Order &order, double lower,
             double hot, long visits, long &used, uint64_t seed,
             std::optional<std::chrono::steady_clock::time_point> stopAt =
                 std::nullopt);

} // namespace zbc::sched::zbauto

#endif // ZBC_SCHEDULE_ZBAUTO_ANNEAL_H
