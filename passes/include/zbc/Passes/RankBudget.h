//===- RankBudget.h - a rank's whole memory limit as a schedule's budget -*- C++ -*-===//
//
// A memory limit (zb-schedule's memory-limit, `zbc compile --mem-limit`) is
// what each rank may hold in all: its parameters, gradients and optimizer
// state, the temporaries of the op it runs and the buffers it keeps (Note
// [Program memory]). A schedule plans only the activations it keeps (M_B,
// M_W: its activation budget); fitActivationBudget turns the one into the
// other (Note [Rank budget]); zb-schedule calls it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_RANKBUDGET_H
#define ZBC_PASSES_RANKBUDGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace zbc {

/// What the fit found: the activation budget to schedule with, the
/// whole-rank peaks the schedule built at it gives and the arenas its
/// memory plan allocates (Note [Memory plan]; empty where it was not
/// planned), whether every arena is within the limit, the tries it took,
/// and the makespan the schedule predicts at it.
struct RankBudget {
  double activations = 0;
  /// Built at the schedule's own default budget instead (the last resort
  /// of the fit: Note [Rank budget]); `activations` is then unused.
  bool scheduleDefault = false;
  std::vector<int64_t> peaks;
  std::vector<int64_t> arenas;
  /// Per rank, where planned: its parameters, gradients, optimizer state
  /// and loss, the arena's part for the whole run.
  std::vector<int64_t> persistent;
  bool withinLimit = false;
  int attempts = 0;
  double makespan = 0;
};

/// Note [Rank budget]
/// A schedule's memory limit counts the activations it keeps; a rank holds
/// more besides (its parameters, their gradients and optimizer state, the
/// running op's temporaries, buffers in flight), and how much more depends
/// on the rank and a little on the order; and what a rank allocates is its
/// arena, the peak plus what the memory plan loses to packing (Note [Memory
/// plan]). The limit bounds the arena: that is the one allocation a rank
/// makes, at start-up. So zb-schedule schedules a copy of the module at a
/// budget, proves it without a limit to learn every rank's peak, and lowers
/// the budget by the worst rank's excess, from the whole limit down, until
/// every rank fits or the schedule refuses the budget (where a step changes
/// no peak, the budget did not bind, and the next step is twice as long).
/// Activations come a microbatch at a time, so that step may overshoot: the
/// tries left bisect between the fit and the miss above it, keeping the
/// largest budget that fits. Planning is the costly part of a try (a
/// second and more for a Llama-3-8B shape), so tries count peaks plus each
/// rank's packing loss as the last plan measured it (none at first), and
/// only the budget a round settles on is planned: where an arena is then
/// over the limit, the next round goes on from there with the loss that
/// plan showed; at most kRankBudgetRounds rounds of kRankBudgetAttempts
/// tries.
/// The lowering then runs once more at the budget found (or, where none
/// fits, the closest miss), with the limit on the program, so the proof
/// holds the peak to it and zb-plan-memory the arena, or they name the rank.
/// *Why 16:* the last excess before a fit may be far below one microbatch's
/// stash (60 KB against 2 MB for gpt-small at 64 MiB), and the doubling
/// steps from it need about as many tries as the ratio has bits; with 8, a
/// limit could fail where a smaller one fitted. Last, where no budget fits,
/// the order at the schedule's own default budget is planned and taken if
/// it fits: a builder need not take every budget between its default and
/// the limit (zb-v refuses some), and a larger limit must not refuse what
/// the default order fits.
constexpr int kRankBudgetAttempts = 16;
constexpr int kRankBudgetRounds = 4;

/// `schedule(module, budget)` orders `module` (a copy of the pipeline
/// without a program) at an activation budget in bytes (nullopt: the
/// schedule's default), writing its
/// program, and returns the order's predicted makespan. Fails only if the
/// schedule refuses the whole limit as a budget; the diagnostics of the
/// tries are not shown.
llvm::FailureOr<RankBudget> fitActivationBudget(
    mlir::ModuleOp module, int64_t limit,
    llvm::function_ref<llvm::FailureOr<double>(mlir::ModuleOp, std::optional<double>)>
        schedule);

/// Where no budget fits a limit, what would: `module` at the smallest
/// activation budget `schedule` takes (bisected to within 1% of it, up
/// from 0 and, where it refuses `start`, beyond), planned: its arenas are
/// the least that order allocates, its persistent bytes what no budget
/// lowers. Fails where the schedule takes no budget up to 256 x `start`.
llvm::FailureOr<RankBudget> leastArena(
    mlir::ModuleOp module, int64_t start,
    llvm::function_ref<llvm::FailureOr<double>(mlir::ModuleOp, std::optional<double>)>
        schedule);

} // namespace zbc

#endif // ZBC_PASSES_RANKBUDGET_H
