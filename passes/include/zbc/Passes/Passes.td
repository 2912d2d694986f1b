//===- Passes.td - zbc compiler passes ----------------------*- tablegen -*-===//
//
// The passes that turn a zb.model into a staged, differentiated, split
// zb.pipeline. Run them with zbc-opt (--zb-partition, ...) or through
// `zbc split`.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PASSES_TD
#define ZBC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def ZBPartitionPass : Pass<"zb-partition", "::mlir::ModuleOp"> {
  let summary = "Cut each zb.model into pipeline stages";
  let description = [{
    A model that already has `zb.cut` ops keeps them (the user's cut points).
    A model without cuts is cut into `stages` stages balanced by the cost
    model: cuts go only where the fewest activations cross (layer
    boundaries in a transformer), never after the loss starts reading
    labels, and the cut positions minimise the most expensive stage.

    Before (no cuts), `--zb-partition=stages=2`:
    ```mlir
    %a = zb.relu %h0 : tensor<8x64xf32>
    %h1 = zb.linear %a, %w1 : ...
    ```
    After:
    ```mlir
    %a = zb.relu %h0 : tensor<8x64xf32>
    %c = zb.cut %a : tensor<8x64xf32>
    %h1 = zb.linear %c, %w1 : ...
    ```
    Candidate cut points are the gaps between body ops crossed by the
    fewest non-leaf values (inputs, labels and parameters never cross: the
    runtime loads them where they are used); among those, an exact dynamic
    program picks the cuts that minimise the largest stage cost
    (CostModel.h, forward FLOPs), then the sum of squared stage costs. Each
    inserted `zb.cut` passes every value crossing its gap.

    It is an error to ask for a stage count that differs from the cuts a
    model already has, or for more stages than there are candidate gaps
    (the message names the most stages possible).

    With `report`, each stage's cost and its excess over the ideal
    (total / stages) is emitted as a remark on the model, then the
    imbalance (largest stage / ideal):
    ```
    remark: stage 0: 1.98e+05 FLOPs (48.9% of total, 2.1% under the ideal)
    remark: stage 1: 2.07e+05 FLOPs (51.1% of total, +2.1% over the ideal)
    remark: imbalance 1.021 (largest stage / ideal; total 4.05e+05 FLOPs over 2 stages)
    ```
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Number of stages (0: keep the model's own cuts)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with every stage's cost and the imbalance">,
  ];
  let statistics = [
    Statistic<"numCutsInserted", "cuts-inserted", "zb.cut ops inserted">,
  ];
}

def ZBAutodiffPass : Pass<"zb-autodiff", "::mlir::ModuleOp"> {
  let summary = "Differentiate each zb.model into a zb.pipeline of F and BW phases";
  let description = [{
    Replaces every `zb.model` by a `zb.pipeline` with one `zb.stage` per
    stage. Each stage gets an `F` phase (its forward ops) and a `BW` phase:
    reverse-mode gradients built from each op's gradient rule
    (DifferentiableOpInterface), seeded with `d_out.i` (or 1.0 for the
    loss), yielding `d_in.i` and `grad.NAME`. Forward tensors a rule needs
    are yielded by F as `F.i` keys and read by BW. An op without a gradient
    rule is an error that names it.

    ```mlir
    zb.stage 1 {
      %w = zb.param "w1" init normal(0.1) : tensor<64x8xf32>
      zb.phase F(%in.0 = "in.0" : ..., %param.w1 = "param.w1" : ...) { ... }
      zb.phase BW(%d = ..., ...) { ... zb.yield "d_in.0" = ..., "grad.w1" = ... }
    }
    ```
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
}

def ZBSplitBackwardPass : Pass<"zb-split-backward", "::mlir::ModuleOp"> {
  let summary = "Split every BW phase into B (input gradient) and W (weight gradient)";
  let description = [{
    W takes every backward op whose results feed only parameter gradients;
    B keeps the rest, which computes `d_in.*` on the critical path. What W
    reads from B becomes `B.i` keys. A forward op marked
    `zb.fuse_weight_grad` keeps its weight-gradient work in B (a selective
    split). The stage's activation memory after F and after B follows from
    the keys each phase reads (`zbc split` reports it).
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
  let statistics = [
    Statistic<"numWOps", "w-ops", "Backward ops moved to W">,
    Statistic<"numBOps", "b-ops", "Backward ops kept in B">,
  ];
}

def ZBCheckpointBackwardPass
    : Pass<"zb-checkpoint-backward", "::mlir::ModuleOp"> {
  let summary = "Keep only checkpoints after F; rebuild the rest inside the "
                "backward, one segment at a time";
  let description = [{
    Activation checkpointing (Note [Checkpointed backward] in
    CheckpointBackward.cpp): every stage's stash becomes its checkpoints,
    the values of F's body across which no other activation is read (the
    residual stream between sublayers, the head's values), and each
    backward phase clones the forward ops that rebuild what it read from
    the rest right before the first op that reads it. The stage then holds
    less after F (M_B) and at its backward (one segment's values at a
    time), and its B and W cost what they recompute. Runs after
    zb-split-backward and before zb-schedule (`zbc compile --recompute
    checkpoint`); a pipeline that has its zb.program already is refused.
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
  let statistics = [
    Statistic<"numStages", "stages", "Stages whose backward rebuilds part "
                                     "of the stash">,
    Statistic<"numCloned", "cloned-ops", "Forward ops cloned into backward "
                                         "phases">,
  ];
}

def ZBStageCostsPass : Pass<"zb-stage-costs", "::mlir::ModuleOp"> {
  let summary = "Write on each stage the costs a schedule plans with";
  let description = [{
    Note [Costs in the IR] (passes/include/zbc/Analysis/StageCosts.h): for
    each split `zb.pipeline`, every stage's F, B, W and R times and its
    M_B, M_W, M_keep and M_offload bytes (the cost model's: FLOPs as time,
    StageAnalysis's bytes; or a cost file's figures over them), and on the
    pipeline the transfer cost, the copy bandwidth and the times' unit.
    zb-schedule, the fit of a memory limit and `zbc compile`'s picture read
    them; zb-schedule writes the cost model's itself on a pipeline without
    them.

    ```mlir
    zb.pipeline @mlp attributes {costs = {comm = 0.000000e+00, copy_bandwidth = 0.000000e+00, unit = "FLOPs"}} {
      zb.stage 0 attributes {costs = {B = 6.144000e+04, F = 8.192000e+04, M_B = 4.096000e+03, ...}} {
    ```

    Options (CompileOptions.h, the costs group): `cost-file`, `comm`,
    `copy-bandwidth`. A cost file measured on another model (its
    `model_hash`) or with lists of the wrong length is an error on the
    pipeline.
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
}

def ZBSchedulePass : Pass<"zb-schedule", "::mlir::ModuleOp"> {
  let summary = "Order the F/B/W work of every rank by a named schedule";
  let description = [{
    For each split `zb.pipeline`, builds the named schedule from the
    registry (passes/include/zbc/Schedule/Registry.h) with the stages'
    costs (Note [Costs in the IR]: those zb-stage-costs wrote, else the
    cost model's, which it writes), simulates and checks it, and writes a
    `zb.program` next to the pipeline: one `zb.rank` per rank with its
    `zb.compute` ops in execution order, and what it predicts of them
    (`predicted_makespan`, `predicted_bubble_rate`, `levers`). Dependencies
    between ops of the same rank become `after(...)` tokens; those across
    ranks are zb-insert-p2p's to make explicit. An unknown schedule name is
    an error that lists the registered ones. A pipeline that already has
    its program (a user's, from a schedule file) keeps it, with its
    prediction recorded.

    Two limits, two names: `activation-budget` is what the schedule keeps
    in flight (its M_B and M_W), `memory-limit` a rank's whole memory,
    which the pass turns into the largest activation budget that fits
    (recorded on the program as `activation_budget`, the limit as
    `memory_limit`).

    `recompute=full|selective|auto` lets the schedule recompute: a
    `zb.compute R` before a microbatch's backward runs the ops of its F
    that rebuild the stash, and that F keeps only its inputs and what the R
    does not rebuild (Note [Recomputation in the IR] in
    passes/include/zbc/Analysis/ProgramMemory.h). What an R rebuilds is each
    stage's `rebuilt` policy (Note [Selective recomputation] in
    RecomputePlan.h): absent, every `F.i`; `selective` writes the cheap ones
    (no matmul-class FLOPs to rebuild) on every stage without a policy;
    `checkpoint` rewrites the stages first (zb-checkpoint-backward) and
    places no R; under a `memory-limit`, `auto` also fits the limit with
    the backward checkpointed and takes that where nothing else fits or it
    plans a shorter step (Note [Choosing the levers] in
    ScheduleDriver.cpp). `offload=full|auto` lets it copy stashes to host
    memory and back: a `zb.offload` after a microbatch's F and a
    `zb.reload` before its backward (Note [Offload in the IR]).

    Options (CompileOptions.h, the order and schedule groups): `schedule`,
    `microbatches`, `virtual`, `exact`, `recompute`, `offload`,
    `activation-budget`, `memory-limit`, `optimizer`; and `report`, a
    remark with the simulated makespan, bubble and memory.

    ```mlir
    zb.program @mlp_1f1b microbatches(2) placement [0, 1] attributes {...} {
      zb.rank 0 {
        %F0_0 = zb.compute F stage 0 mb 0
        %F0_1 = zb.compute F stage 0 mb 1
        %BW0_0 = zb.compute BW stage 0 mb 0 after(%F0_0)
        ...
    ```
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
}


def ZBPlanMemoryPass : Pass<"zb-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Place every buffer of each rank at a fixed offset of one "
                "arena";
  let description = [{
    For each `zb.program` with its pipeline: proves it first (the proof of
    zb-verify-schedule; nothing unproven is planned), then writes on each
    `zb.rank` its static memory plan (Note [Memory plan] in
    passes/include/zbc/Analysis/MemoryPlan.h): parameters, gradient
    accumulators, optimizer state and the loss accumulator for the whole
    run; then every buffer of Note [Program memory] and every value of the
    bodies each compute runs ("scratch.W.3.0": result 0 of W's op 3),
    packed greedily by size over their lifetimes on one fine timeline of
    the rank's order. `arena_bytes` is the arena's
    size, `peak_bytes` the verifier's peak live bytes, `memory_plan` the
    placements.

    ```mlir
    zb.rank 1 attributes {arena_bytes = 98304 : i64, peak_bytes = 94720 : i64,
        memory_plan = [{bytes = 16384 : i64, key = "param.fc2.weight",
                        offset = 0 : i64}, ...]} {
    ```
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark per program with each rank's arena and peak bytes">,
  ];
}

def ZBInsertP2PPass : Pass<"zb-insert-p2p", "::mlir::ModuleOp"> {
  let summary = "Add the sends and receives of every cross-rank dependence";
  let description = [{
    For each `zb.program` (compute only, as zb-schedule writes it) whose
    `pipeline` attribute names its `zb.pipeline`: one `zb.send` on the
    producer's rank and one `zb.recv` on the consumer's per message of the
    stage boundary (the `out.*` keys forward, `d_in.*` backward, with their
    types), for every dependence of passes/include/zbc/Schedule/
    Dependences.h whose product is made on another rank. A send follows the
    compute that makes it and waits for it; a recv is posted one compute
    ahead of its consumer, which waits for it; recvs from a peer are posted
    in the order the peer sends; the transfers of one compute are one
    `zb.group`; each peer and direction has its own stream; the next compute
    making the same product waits for the send, where its buffer is free
    (InsertTransfers.cpp). Same-rank dependences stay `after` tokens. A
    program that has transfers already (a user's compute+comms order) is
    kept as it is, for the proof to hold or refuse.

    ```mlir
    zb.rank 0 {
      %F0_0 = zb.compute F stage 0 mb 0
      %0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<8x64xf32> on 2 after(%F0_0)
      %1 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32> on 3
      %B0_0 = zb.compute B stage 0 mb 0 after(%F0_0, %1)
    ```
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
  let statistics = [
    Statistic<"numSends", "sends", "Sends inserted">,
    Statistic<"numGroups", "groups", "Groups of transfers issued together">,
  ];
}

def ZBInsertCollectivesPass : Pass<"zb-insert-collectives", "::mlir::ModuleOp"> {
  let summary = "Add the gradient sums over data-parallel replicas and "
                "tied parameters' holders, and a sharded optimizer's gathers";
  let description = [{
    For each `zb.program` with transfers whose `pipeline` attribute names
    its `zb.pipeline`, and on each rank: the gradients of every parameter
    the rank holds are final after the last compute of the step that writes
    them (the last W, or BW, of the stages holding it). Right after it, and
    waiting for it, one `zb.all_reduce` sums them: over "replicas" for the
    parameters of that compute's stage where the program runs as
    `replicas` > 1 data-parallel replicas (one op for them all), and over
    "tied:NAME" for a parameter that stages on other ranks hold too (the
    holders in every replica at once, so it is not also summed over the
    replicas). So each reduction overlaps the rest of the rank's
    cool-down; the rank waits for them at its step's end, before the
    optimizer step. With `zero` >= 1 (Note [Sharded optimizer]) the
    replicas' sum is a `zb.reduce_scatter` (each keeps its shard), and a
    `zb.all_gather` of each stage's parameters opens the rank's order,
    waited for by the stage's first compute. A program that has
    collectives already is kept as it is, for the proof to hold or refuse
    (Note [Collectives in the program]).

    ```mlir
    %W0_3 = zb.compute W stage 0 mb 3 after(%B0_3)
    %allreduce0 = zb.all_reduce grads stage 0 over "replicas" ["h0.w", "h0.b"] : 66048 bytes after(%W0_3)
    ```
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
  let statistics = [
    Statistic<"numCollectives", "collectives", "Collectives inserted">,
  ];
}

def ZBVerifySchedulePass : Pass<"zb-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "Prove a zb.program: order, dependences, deadlock-freedom, "
                "matched messages and peak memory";
  let description = [{
    For each `zb.program`: the compute order (every F and B+W or BW once, in
    order); every dependence met (a product of another rank arrives by a
    recv its consumer waits for, one per message; a send waits for its
    producer); an abstract execution of all ranks under the p2p semantics
    the runtimes share, at their strictest (Note [p2p semantics] in
    passes/include/zbc/Schedule/Program.h): every rank terminates and every
    matched pair agrees on payload, stage, microbatch, key and type. With
    the program's pipeline, each rank's exact peak bytes (Note [Program
    memory] in passes/include/zbc/Analysis/ProgramMemory.h), held to the
    program's `memory_limit`. A deadlock is reported as the cycle of waiting
    ranks, a mismatch at both ops, a memory overflow at the op where the
    limit is crossed with the largest buffers live there. Linear in the ops.
  }];
  let dependentDialects = ["::zbc::zb::ZBDialect"];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the ranks, ops and peak bytes per rank">,
    // Text, read as a byte amount (Note [Byte amounts]) as every memory
    // limit is: 80GB, 80GiB, 8e10.
    Option<"memoryLimitText", "memory-limit", "std::string",
           /*default=*/"\"0\"",
           "Bytes per rank to hold every program to, e.g. 80GB, 80GiB, 8e10 "
           "(0: each program's own memory_limit, if it has one)">,
  ];
}

#endif // ZBC_PASSES_PASSES_TD
