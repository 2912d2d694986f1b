//===- CompileOptions.h - one typed compile request ---------------*- C++ -*-===//
//
// What a compile of a model into a proven program is asked to do, as typed
// fields: the schedule and its microbatches, the stages per rank, the
// memory limit or the activation budget, the memory levers, the costs and
// the optimizer. Every front end binds to this one declaration
// (CompileOptions::bind), each to the groups of the steps it runs: the
// `zbc compile`/`zbc run` flags, those `zbc schedule` shares (Order), the
// options of zbc-opt's `--zb-lower-to-program` pipeline and of the
// zb-stage-costs and zb-schedule passes. Adding an option is a field, a
// line in `bind`, and its use.
//
// Plain C++ over LLVM Support: the tool's flag parsing and the schedule
// library's callers include it without MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_OPTIONS_COMPILEOPTIONS_H
#define ZBC_OPTIONS_COMPILEOPTIONS_H

#include "zbc/Options/OptionValues.h"
#include "zbc/Support/Limits.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zbc {

/// How an option's value is bounded, for those that are numbers.
struct Bounds {
  double min, max;
  /// An integer read as a byte amount ("80GB", "80GiB", "8e10": Note [Byte
  /// amounts] in ByteAmount.h) rather than as plain digits.
  bool bytes = false;
};

/// Which step of a compile reads an option, so that each front end binds
/// the options of the steps it runs: zb-stage-costs (Costs), zb-schedule
/// (Schedule, with Order), `zbc schedule` (Order alone: its problem comes
/// from its own flags), the cutting of a model (Cut).
enum OptionGroup : unsigned {
  OrderGroup = 1,
  ScheduleGroup = 2,
  CostsGroup = 4,
  CutGroup = 8,
  AllGroups = OrderGroup | ScheduleGroup | CostsGroup | CutGroup,
};

/// One option as every front end shows it: its name (`zbc compile --NAME`,
/// `--zb-schedule="NAME=..."`), its group, what the value stands for in
/// help, its help text and, for a number, its bounds.
struct OptionInfo {
  const char *name;
  OptionGroup group;
  const char *valueName;
  const char *help;
  std::optional<Bounds> bounds = std::nullopt;
  /// The `zbc` flag's name where it differs from `name` ("mem-limit").
  const char *toolName = nullptr;
};

/// A compile of a model into a proven program, as asked.
struct CompileOptions {
  // The order (Order: zbc schedule has these too).
  /// A registered schedule's name (zbc schedule --list).
  std::string schedule = "1f1b";
  /// zb-auto: refine with the ILP for at most this many seconds (0: off).
  double exactSeconds = 0;
  RecomputeLever recompute = RecomputeLever::None;
  OffloadLever offload = OffloadLever::None;

  // The rest of the schedule (Schedule).
  /// Microbatches per training step (0: not given).
  int64_t microbatches = 0;
  /// Stages per rank (--virtual); unset: the schedule's own
  /// (resolveStagesPerRank, Registry.h).
  std::optional<int64_t> stagesPerRank;
  /// Note [Two memory limits]: what the schedule keeps in flight, or a
  /// rank's whole memory in bytes (0: none).
  ActivationBudget activationBudget;
  int64_t memoryLimit = 0;
  Optimizer optimizer = Optimizer::SGD;
  /// Data-parallel replicas of the pipeline: the program's all-reduces
  /// over "replicas" sum their gradients (Note [Collective groups]).
  int64_t replicas = 1;
  /// Note [Sharded optimizer]: 0 keeps the optimizer whole on every
  /// replica; 1 shards its state and masters over the replicas.
  int64_t zero = 0;

  // The costs the schedule plans with (Costs).
  /// A JSON cost file whose figures replace the cost model's ("": none).
  std::string costFile;
  /// The cost of a cross-rank transfer, in the costs' unit.
  double comm = 0;
  /// Bytes a copy queue moves per unit of schedule time (0: none given).
  double copyBandwidth = 0;
  /// Bytes a collective moves per unit of schedule time on each rank (0:
  /// collectives not timed; Note [Collectives in the simulator]).
  double collectiveBandwidth = 0;

  // The cutting of a model without zb.cut (Cut).
  /// Stages to cut it into (0: keep the model's cuts).
  int64_t stages = 0;

  /// Each option once: `binder(field, OptionInfo)`.
  template <typename Binder> void bind(Binder &binder);
};

template <typename Binder> void CompileOptions::bind(Binder &binder) {
  binder(schedule, OptionInfo{"schedule", OrderGroup, "name",
                              "Registered schedule (zbc schedule --list)"});
  binder(exactSeconds,
         OptionInfo{"exact", OrderGroup, "seconds",
                    "zb-auto: refine with the ILP (CBC) for at most this many "
                    "seconds (0: off)",
                    Bounds{0, limits::kMaxSolverSeconds}});
  binder(recompute,
         OptionInfo{"recompute", OrderGroup, "mode",
                    "Recompute activations: none; full (every microbatch's F "
                    "keeps only its inputs; an R before its backward runs it "
                    "again); selective (as full, each stage's R rebuilding "
                    "only what costs no matmul-class FLOPs: F keeps the "
                    "rest); auto (the stages and microbatches that give the "
                    "shortest schedule within the memory; under a memory "
                    "limit the backward checkpointed where that is shorter "
                    "or alone fits); checkpoint (F keeps only the points "
                    "where the forward narrows to one tensor; each backward "
                    "rebuilds the rest one segment at a time, no R ops)"});
  binder(offload,
         OptionInfo{"offload", OrderGroup, "mode",
                    "Offload stashes to host memory as scheduled copies: "
                    "none; full (every microbatch's stash, back before its "
                    "backward); auto (those that give the shortest schedule "
                    "within the memory). Needs copy-bandwidth"});
  binder(microbatches,
         OptionInfo{"microbatches", ScheduleGroup, "M",
                    "Microbatches per training step (zbc: of all the "
                    "data-parallel replicas together, which --data-parallel "
                    "divides; a pass: each replica's)",
                    Bounds{1, limits::kMaxMicrobatches}});
  binder(stagesPerRank,
         OptionInfo{"virtual", ScheduleGroup, "V",
                    "Stages per rank (interleaved schedules; a V schedule "
                    "places 2, the others 1)",
                    Bounds{1, limits::kMaxStages}});
  binder(activationBudget,
         OptionInfo{"activation-budget", ScheduleGroup, "BYTES",
                    "The activations each rank keeps in flight: 'default' "
                    "(the schedule's own, e.g. zb-auto's 2p max(M_B, M_W)), "
                    "'none' or BYTES (80GB = 80e9, 80GiB = 80 x 2^30, 8e10); "
                    "instead of a memory limit"});
  binder(memoryLimit,
         OptionInfo{"memory-limit", ScheduleGroup, "BYTES",
                    "Each rank's whole memory in bytes (parameters, "
                    "gradients, optimizer state, temporaries and "
                    "activations): the schedule plans its activations "
                    "within what the rest leaves, and the proof holds every "
                    "rank to it (0: none). 80GB = 80e9 bytes, 80GiB = 80 x "
                    "2^30, 8e10; also kB, MB, TB, KiB, MiB, TiB",
                    Bounds{0, static_cast<double>(limits::kMaxTensorBytes),
                           /*bytes=*/true},
                    /*toolName=*/"mem-limit"});
  binder(optimizer, OptionInfo{"optimizer", ScheduleGroup, "name",
                               "sgd (momentum 0 unless --momentum, as "
                               "PyTorch's; its momentum buffer, one copy of "
                               "the parameters, is planned) or adamw (two)"});
  binder(replicas,
         OptionInfo{"data-parallel", ScheduleGroup, "D",
                    "Replicas of the pipeline, each on its own ranks and its "
                    "share of every batch (P x D processes); the program "
                    "sums their gradients with all-reduces placed after "
                    "each stage's last W",
                    Bounds{1, static_cast<double>(limits::kMaxRanks)}});
  binder(zero,
         OptionInfo{"zero", ScheduleGroup, "N",
                    "Shard the optimizer over the data-parallel replicas "
                    "(ZeRO): 0 none; 1 the optimizer state and f32 master "
                    "weights (bf16 + AdamW: 6 + 12/D bytes per parameter "
                    "instead of 18), each replica updating its shard between "
                    "a reduce-scatter of the gradients and an all-gather of "
                    "the parameters; 2 the gradients too, whole only from a "
                    "stage's first W to its reduce-scatter (2 + 12/D bytes "
                    "between steps)",
                    Bounds{0, 2}});
  binder(costFile, OptionInfo{"cost-file", CostsGroup, "file",
                              "JSON cost file whose F/B/W/R/M_B/M_W lists, "
                              "comm and copy_bandwidth replace the cost "
                              "model's (as zbc schedule --cost-file reads)"});
  binder(comm, OptionInfo{"comm", CostsGroup, "X",
                          "Cost of a cross-rank transfer, in the costs' unit "
                          "(FLOP-equivalents without a cost file)",
                          Bounds{0, limits::kMaxAmount}});
  binder(copyBandwidth,
         OptionInfo{"copy-bandwidth", CostsGroup, "X",
                    "Bytes a rank copies between device and host memory per "
                    "unit of schedule time, each way (a cost file's "
                    "copy_bandwidth overrides it)",
                    Bounds{0, limits::kMaxAmount}});
  binder(collectiveBandwidth,
         OptionInfo{"collective-bandwidth", CostsGroup, "X",
                    "Bytes a gradient all-reduce moves per unit of schedule "
                    "time on each rank (ring: 2(n-1)/n of its bytes, plus "
                    "comm): the predicted step counts what the cool-down "
                    "does not hide (0: not timed; a cost file's "
                    "collective_bandwidth overrides it)",
                    Bounds{0, limits::kMaxAmount}});
  binder(stages, OptionInfo{"stages", CutGroup, "S",
                            "Stages for a model without zb.cut (0: keep the "
                            "model's cuts)",
                            Bounds{0, limits::kMaxStages}});
}

} // namespace zbc

#endif // ZBC_OPTIONS_COMPILEOPTIONS_H
