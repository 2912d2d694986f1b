//===- Registry.cpp - the named schedules ---------------------------------===//
//
// One sorted line per schedule. buildSchedule is the single way in: problem
// validation, the builder, ScheduleTable::verify and the simulator, in that
// order, so every schedule is checked the same way.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Registry.h"
#include "zbc/Schedule/VocabPasses.h"
#include "Core/Support.h"

#include "Builders/Builders.h"
#include "Builders/ZBAuto/ZBAuto.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <limits>

using namespace zbc::sched;

namespace {
/// A memory limit no schedule reaches: the bound of the work alone.
constexpr double kUnlimitedMemory = 1e300;

/// zb-auto's bound of its own plan does not hold for a levered order (R
/// and copies change what it planned). This one does: every levered order
/// is an order of the same F, B and W (R and copies only add time) in
/// which each microbatch between its F and its backward holds at least the
/// least a lever leaves on the device (M_keep until its R, M_B - M_offload
/// between its copies, M_B else), so it fits the budget of the problem
/// whose M_B is that least, and zb-auto's bound of that problem (valid for
/// any order, LowerBound.cpp) is below its makespan.
std::string leveredBoundNote(const Problem &problem, const BuildOptions &options,
                             double makespan) {
  Problem relaxed = problem;
  for (StageCost &stage : relaxed.stages) {
    double least = stage.memB;
    if (options.recompute != RecomputeMode::None)
      least = std::min(least, stage.memKeep);
    if (options.offload != OffloadMode::None)
      least = std::min(least, stage.memB - stage.offloaded());
    stage.memB = std::max(0.0, least);
  }
  double budget = problem.budget() > 0 ? problem.budget() : kUnlimitedMemory;
  double bound =
      zbauto::lowerBound(zbauto::Instance::from(relaxed, budget));
  double gap = std::max(0.0, std::round(1e4 * (makespan - bound) / makespan) / 1e2);
  return "with the levers: makespan " + formatNumber(makespan) +
         ", lower bound " + formatNumber(bound) +
         " (any order holding at least what a lever leaves of each stash; "
         "gap " + formatNumber(gap) + "%)";
}

std::vector<ScheduleInfo> &mutableRegistry() {
  static std::vector<ScheduleInfo> schedules = {
      {"1f1b", "one forward, one fused backward (PipeDream-Flush)",
       "Narayanan et al., PipeDream-2BW / Megatron-LM, 2021",
       "(p-1)(F+B+W)", "p M_B", Placement::Linear, false, buildOneFOneB},
      {"dualpipe-v",
       "DualPipe on the V placement: the F of one microbatch overlapped with "
       "the B of another",
       "DeepSeek-V3 technical report, 2024 (DualPipe); the V variant from "
       "deepseek-ai/DualPipe",
       "(p/2-1)(F&B + B - 3W) with F&B overlapped; zbc's simulator runs "
       "each pair as F then BW (no overlap gain)",
       "(p+1) M_B (full-stage microbatches)",
       Placement::V, false, buildDualPipeV},
      {"gpipe", "all forwards, then all fused backwards",
       "Huang et al., GPipe, NeurIPS 2019", "(p-1)(F+B+W)", "m M_B",
       Placement::Linear, false, buildGPipe},
      {"interleaved-1f1b",
       "1F1B over v stages per rank, placed round-robin",
       "Narayanan et al., Megatron-LM, SC 2021",
       "(p-1)(F+B+W)/v with a full stage's F, B, W (m % p == 0)",
       "p M_B + (p-1) M_B / v (full-stage microbatches)",
       Placement::Interleaved, true, buildInterleaved1F1B},
      {"v-half",
       "controllable-memory V schedule at half of 1F1B's activation memory",
       "Qi et al., Pipeline Parallelism with Controllable Memory, 2024",
       "about p/(2m) of the step with equal costs",
       "(p+2)//2 full-stage microbatches", Placement::V, false, buildVHalf},
      {"v-min",
       "controllable-memory V schedule at a third of 1F1B's activation memory",
       "Qi et al., Pipeline Parallelism with Controllable Memory, 2024",
       "about 2p/(3m) of the step with equal costs",
       "(p+4)//3 full-stage microbatches", Placement::V, false, buildVMin},
      {"zb-auto",
       "automatic zero bubble under the activation budget (ZB-1p at p M_B, ZB-2p "
       "at 2p M_B); optional exact refinement with CBC",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024",
       "near zero for m >= 2p at 2p M_B",
       "the budget (default 2p max(M_B, M_W) of the heaviest stage)",
       Placement::Linear, false, buildZBAuto, zbAutoDefaultBudget,
       "2p max(M_B, M_W)"},
      {"zb-h1", "handcrafted zero bubble at 1F1B's memory",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024",
       "(p-1)(F+B-W) for m >= p, W <= F", "p M_B", Placement::Linear, false,
       buildZBH1},
      {"zb-h2", "handcrafted zero bubble with extra warm-up forwards",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024",
       "(p-1)(F+B-2W) for m >= 2p-1, W <= F, 2W <= F+B", "(2p-1) M_B",
       Placement::Linear, false, buildZBH2},
      {"zb-v", "zero bubble on the V placement at 1F1B's memory",
       "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 (section 6); "
       "Pipeline Parallelism with Controllable Memory, 2024",
       "zero for m >= 2p when F = B = W and comm = 0",
       "the budget (default p full-stage microbatches, 2p M_B of a chunk)",
       Placement::V, false, buildZBV, zbvDefaultBudget, "2p chunk M_B"},
  };
  return schedules;
}
} // namespace

const std::vector<ScheduleInfo> &zbc::sched::registeredSchedules() {
  return mutableRegistry();
}

llvm::Error zbc::sched::registerSchedule(ScheduleInfo info) {
  if (!info.name || !*info.name)
    return fail("a schedule needs a name");
  if (lookupSchedule(info.name))
    return fail("schedule '" + llvm::Twine(info.name) +
                "' is registered already");
  std::vector<ScheduleInfo> &schedules = mutableRegistry();
  auto at = std::lower_bound(schedules.begin(), schedules.end(), info,
                             [](const ScheduleInfo &a, const ScheduleInfo &b) {
                               return llvm::StringRef(a.name) < b.name;
                             });
  schedules.insert(at, std::move(info));
  return llvm::Error::success();
}

const ScheduleInfo *zbc::sched::lookupSchedule(llvm::StringRef name) {
  for (const ScheduleInfo &info : registeredSchedules())
    if (name == info.name)
      return &info;
  return nullptr;
}

llvm::Expected<int64_t>
zbc::sched::resolveStagesPerRank(const ScheduleInfo &info,
                                 std::optional<int64_t> requested,
                                 std::optional<int64_t> modelStages,
                                 std::optional<int64_t> ranks) {
  switch (info.placement) {
  case Placement::Linear:
    if (requested && *requested != 1)
      return fail("schedule '" + llvm::Twine(info.name) +
                  "' runs one stage per rank; got " + llvm::Twine(*requested) +
                  " virtual stages per rank");
    return 1;
  case Placement::V:
    if (requested && *requested != 2)
      return fail("schedule '" + llvm::Twine(info.name) +
                  "' places two stages per rank in a V (--virtual 2); got " +
                  llvm::Twine(*requested));
    return 2;
  case Placement::Interleaved:
    if (requested)
      return *requested;
    if (!modelStages || !ranks)
      return 1;
    // Without --virtual each rank takes an equal share of the model's
    // stages.
    if (*modelStages % *ranks != 0)
      return fail("has " + llvm::Twine(*modelStages) + " stages, which " +
                  llvm::Twine(*ranks) + " ranks under '" + info.name +
                  "' cannot share evenly: cut the model into a multiple of " +
                  llvm::Twine(*ranks) + " stages, or give it no zb.cut and "
                  "pass --virtual V: zbc cuts it into " + llvm::Twine(*ranks) +
                  "V stages");
    return std::max<int64_t>(*modelStages / *ranks, 1);
  }
  llvm_unreachable("every placement is handled above");
}

namespace {
/// The most logits shards a rank of `table` holds at once (Note
/// [Vocabulary passes]: each from its S to its T).
int mostShardsHeld(const ScheduleTable &table) {
  int most = 0;
  for (const std::vector<Action> &order : table.ranks) {
    int held = 0;
    for (const Action &a : order)
      if (a.kind == Kind::S)
        most = std::max(most, ++held);
      else if (a.kind == Kind::T)
        --held;
  }
  return most;
}

/// buildSchedule, with the vocabulary passes' `shards` of logits held
/// beside the order: it is built to the budget less their memory. If the
/// placed passes hold more at once, `needed` says how many, and the
/// schedule is not returned (its budget would not hold).
llvm::Expected<BuiltSchedule> buildHoldingShards(llvm::StringRef name,
                                                 const Problem &problem,
                                                 const BuildOptions &options,
                                                 int shards, int &needed) {
  needed = 0;
  const ScheduleInfo *info = lookupSchedule(name);
  if (!info) {
    std::string names;
    for (const ScheduleInfo &s : registeredSchedules())
      names += std::string(names.empty() ? "" : ", ") + s.name;
    return fail("unknown schedule '" + name + "'; registered: " + names);
  }
  if (llvm::Error error = problem.validate())
    return std::move(error);
  if (auto v = resolveStagesPerRank(*info, problem.virtualStages); !v)
    return v.takeError();

  BuiltSchedule built;
  built.problem = problem;
  built.budgetOrigin = problem.budget() > 0 ? "given" : "none";
  if (!problem.activationBudget) {
    built.problem.activationBudget =
        info->defaultActivationBudget ? info->defaultActivationBudget(problem) : 0.0;
    if (*built.problem.activationBudget > 0)
      built.budgetOrigin =
          std::string(info->name) + " default: " + info->defaultBudgetRule;
  }
  // Note [Placing the vocabulary passes]: the schedule is built, levered
  // and fitted without them, then takes them.
  VocabPasses vocab = built.problem.vocab;
  built.problem.vocab = {};
  double budget = built.problem.budget();
  if (vocab.enabled() && budget > 0) {
    double reserved = shards * vocab.mem;
    if (reserved >= budget)
      return fail("schedule '" + name + "': the vocabulary passes hold " +
                  std::to_string(shards) + " logits shard" +
                  (shards > 1 ? "s" : "") + " of " + formatNumber(vocab.mem) +
                  " on a rank, which leaves nothing of the activation "
                  "budget " + formatNumber(budget));
    built.problem.activationBudget = budget - reserved;
  }
  auto buildFor = [&](const Problem &planned) {
    built.report = {}; // the notes of the build that is kept
    return info->build(planned, options, built.report);
  };
  bool bothAuto = options.recompute == RecomputeMode::Auto &&
                  options.offload == OffloadMode::Auto;
  if (!bothAuto && options.recompute != RecomputeMode::None &&
      options.offload != OffloadMode::None)
    return fail("schedule '" + name + "': recompute " +
                recomputeModeName(options.recompute) + " and offload " +
                offloadModeName(options.offload) +
                " together: a microbatch is recomputed or offloaded, so "
                "choose one, or both auto (each microbatch kept, offloaded "
                "or recomputed, as fits best)");
  // With recomputation the builder fits its order to the planned problem
  // and the R actions then make it the one simulated below (Recompute.h);
  // with offload the copies go into the order as built (Offload.h).
  struct Levered {
    ScheduleTable table;
    std::string note;
    BuildReport report; // the kept build's notes
  };
  auto recomputed = [&]() -> llvm::Expected<Levered> {
    llvm::Expected<RecomputedTable> table =
        buildWithRecompute(built.problem, options.recompute, buildFor);
    if (!table)
      return table.takeError();
    return Levered{std::move(table->table), std::move(table->note),
                   built.report};
  };
  auto offloaded = [&]() -> llvm::Expected<Levered> {
    llvm::Expected<OffloadedTable> table =
        buildWithOffload(built.problem, options.offload, buildFor,
                         /*alsoRecompute=*/bothAuto);
    if (!table)
      return table.takeError();
    return Levered{std::move(table->table), std::move(table->note),
                   built.report};
  };
  llvm::Expected<Levered> levered =
      options.offload == OffloadMode::None ? recomputed() : offloaded();
  if (bothAuto) {
    // Offload auto fits its orders with copies alone and with copies and
    // R's together (buildWithOffload); recompute auto plans whole stages
    // recomputed and fits by R alone. The shorter within the budget is
    // kept (on a tie recomputation, which needs no host memory).
    llvm::Expected<Levered> other = recomputed();
    auto makespan = [&](llvm::Expected<Levered> &candidate) {
      if (!candidate)
        return std::numeric_limits<double>::infinity();
      llvm::Expected<SimResult> sim = simulate(built.problem, candidate->table);
      if (!sim) {
        llvm::consumeError(sim.takeError());
        return std::numeric_limits<double>::infinity();
      }
      return sim->makespan;
    };
    double viaOffload = makespan(levered), viaRecompute = makespan(other);
    auto describe = [](llvm::Expected<Levered> &candidate, double span) {
      if (!candidate)
        return "does not fit (" + llvm::toString(candidate.takeError()) + ")";
      return std::isfinite(span) ? "runs " + formatNumber(span)
                                 : std::string("goes over the budget");
    };
    std::string why = "levers auto: offload " + describe(levered, viaOffload) +
                      ", recompute " + describe(other, viaRecompute);
    bool offloadWins = viaOffload < viaRecompute;
    if (!offloadWins)
      levered = std::move(other);
    if (!levered || !std::isfinite(std::min(viaOffload, viaRecompute)))
      return fail("schedule '" + name + "': " + why);
    built.report = levered->report;
    bool mixed = offloadWins && levered->table.hasRecompute();
    built.report.notes.push_back(why + "; kept " +
                                 (mixed         ? "offload and recompute"
                                  : offloadWins ? "offload"
                                                : "recompute"));
  }
  if (!levered)
    return fail("schedule '" + name + "': " +
                llvm::toString(levered.takeError()));
  built.table = std::move(levered->table);
  std::string note = std::move(levered->note);
  if (!bothAuto)
    built.report = std::move(levered->report);
  if (!note.empty())
    built.report.notes.push_back(note);
  if (llvm::Error error = built.table.verify())
    return fail("schedule '" + name + "' built an invalid table: " +
                llvm::toString(std::move(error)));
  built.problem.vocab = vocab;
  if (vocab.enabled()) {
    // The order before the passes fits the budget less `shards`; with at
    // most that many shards held at once, the placed order fits it whole.
    built.problem.activationBudget = 0;
    if (llvm::Error error = placeVocabularyPasses(built.problem, built.table))
      return fail("schedule '" + name + "': " +
                  llvm::toString(std::move(error)));
    built.problem.activationBudget = budget;
    if (int held = mostShardsHeld(built.table); budget > 0 && held > shards) {
      needed = held;
      return fail("schedule '" + name + "': the vocabulary passes hold " +
                  std::to_string(needed) + " logits shards at once");
    }
    built.report.notes.push_back(
        vocab.barriers == 1
            ? "vocabulary passes, 1 barrier per microbatch: S after the last "
              "stage's F of each microbatch, T beside the next S"
            : "vocabulary passes, 2 barriers per microbatch: S after the last "
              "stage's F of each microbatch, T before its backward");
    if (budget > 0)
      built.report.notes.push_back(
          "built to the activation budget less " + std::to_string(shards) +
          " logits shard" + (shards > 1 ? "s" : "") + " (" +
          formatNumber(shards * vocab.mem) + ")");
  }
  llvm::Expected<SimResult> sim = simulate(built.problem, built.table);
  if (!sim)
    return fail("schedule '" + name + "': " + llvm::toString(sim.takeError()));
  built.sim = std::move(*sim);
  if (name == "zb-auto" && (options.recompute != RecomputeMode::None ||
                            options.offload != OffloadMode::None))
    built.report.notes.push_back(
        leveredBoundNote(built.problem, options, built.sim.makespan));
  return std::move(built);
}
} // namespace

llvm::Expected<BuiltSchedule>
zbc::sched::buildSchedule(llvm::StringRef name, const Problem &problem,
                          const BuildOptions &options) {
  // Note [Placing the vocabulary passes]: how many logits shards a rank
  // holds at once depends on the order, which depends on the budget left
  // for it: from one, as many as the placed order held, until it holds no
  // more than it was built for.
  int shards = 1, needed = 0;
  llvm::Expected<BuiltSchedule> built =
      buildHoldingShards(name, problem, options, shards, needed);
  while (!built && needed > shards) {
    llvm::consumeError(built.takeError());
    shards = needed;
    built = buildHoldingShards(name, problem, options, shards, needed);
  }
  return built;
}
