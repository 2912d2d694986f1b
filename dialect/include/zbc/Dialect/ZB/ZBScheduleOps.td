//===- ZBScheduleOps.td - zb schedule-level operations -*- tablegen -*-===//
//
// Included from ZBOps.td, which holds the shared includes and doc groups.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBSCHEDULEOPS_TD
#define ZBC_DIALECT_ZB_ZBSCHEDULEOPS_TD

//===----------------------------------------------------------------------===//
// Schedule level
//===----------------------------------------------------------------------===//

let opDocGroup = ZB_ScheduleGroup in {

def ZB_ProgramOp : ZB_Op<"program", [IsolatedFromAbove, Symbol, SingleBlock,
                                     NoTerminator, NoRegionArguments]> {
  let summary = "the scheduled training step of every pipeline rank";
  let description = [{
    Holds one `zb.rank` per pipeline rank, ranks `0..P-1` in order.
    `placement[s]` is the rank that holds stage `s`, so the number of stages
    is the length of `placement`; every rank holds at least one stage.
    `microbatches` is the number of microbatches per training step. The
    optional `memory_limit` (bytes per rank) is what `zb-verify-schedule`
    holds each rank to, and `optimizer` ("sgd", momentum: one copy of the
    parameters; "adamw": two) sizes the optimizer state it counts. The
    optional `activation_budget` (bytes) records the activations the
    schedule was built to keep, as given to zb-schedule or fitted to a
    `memory_limit` (Note [Two memory limits], Note [Rank budget]).
    zb-schedule records what it predicts of the program, so that no tool
    simulates it again: `predicted_makespan` and `predicted_bubble_rate`
    (in the unit of the pipeline's costs, Note [Costs in the IR]: an
    integer where it is one, as the costs are written), and
    `levers`, the memory levers the order was built with: `recompute` and
    `offload` (the modes: none, full, selective, auto) and `backward`
    ("checkpointed" where zb-checkpoint-backward rewrote the stages, else
    "stored"). `replicas` (default 1) is the number of data-parallel
    replicas the program runs as: each runs every rank's order on its share
    of the batch, and the program's collectives over "replicas" sum their
    gradients (Note [Collective groups]). `zero` (default 0) shards the
    optimizer over them (Note [Sharded optimizer] in
    runtime/contracts/include/zbc/contracts/Shards.h): reduce-scatters and
    all-gathers instead of all-reduces; with 2 the gradients too, as
    buffers of the step (Note [Sharded gradients]).

    ```mlir
    zb.program @mlp_1f1b microbatches(2) placement [0, 1] {
      zb.rank 0 {
        %f0 = zb.compute F stage 0 mb 0
        %s0 = zb.send act stage 0 mb 0 to 1 after(%f0)
        ...
      }
      zb.rank 1 {
        %r0 = zb.recv act stage 0 mb 0 from 0
        %f0 = zb.compute F stage 1 mb 0 after(%r0)
        ...
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<I64Attr, [IntPositive]>:$microbatches,
                       DenseI64ArrayAttr:$placement,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$memory_limit,
                       OptionalAttr<StrAttr>:$optimizer,
                       OptionalAttr<I64Attr>:$activation_budget,
                       OptionalAttr<AnyAttrOf<[I64Attr, F64Attr]>>:$predicted_makespan,
                       OptionalAttr<F64Attr>:$predicted_bubble_rate,
                       OptionalAttr<DictionaryAttr>:$levers,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$replicas,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<2>]>>:$zero);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `microbatches` `(` $microbatches `)` `placement` $placement
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumStages() { return getPlacement().size(); }
    int64_t getNumRanks();
    /// The rank that holds `stage`, which must be in range.
    int64_t getRankOfStage(int64_t stage) { return getPlacement()[stage]; }
  }];
}

def ZB_RankOp : ZB_Op<"rank", [HasParent<"ProgramOp">, IsolatedFromAbove,
                               SingleBlock, NoTerminator, NoRegionArguments]> {
  let summary = "the ordered work of one pipeline rank";
  let description = [{
    Ops run in the order they appear, each starting once the ops in its
    `after(...)` list are done. Every (kind, stage, microbatch) of work,
    every transfer and every stash copy appears at most once per rank.

    ```mlir
    zb.rank 1 {
      %r = zb.recv act stage 0 mb 0 from 0
      %f = zb.compute F stage 1 mb 0 after(%r)
    }
    ```

    `zb-plan-memory` adds the rank's static memory plan (Note [Memory plan]
    in passes/include/zbc/Analysis/MemoryPlan.h): `arena_bytes`, the size of
    its one arena; `peak_bytes`, the verifier's peak live bytes; and
    `memory_plan`, one dictionary per buffer: `key`, `offset`, `bytes`, and
    for a buffer of one microbatch its `stage` and `mb`. A rank that
    offloads also gets its host arena: `host_arena_bytes`,
    `host_peak_bytes` and `host_memory_plan`, the same dictionaries for the
    host copies of the stashes it offloads.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$rank,
                       OptionalAttr<I64Attr>:$arena_bytes,
                       OptionalAttr<I64Attr>:$peak_bytes,
                       OptionalAttr<DictArrayAttr>:$memory_plan,
                       OptionalAttr<I64Attr>:$host_arena_bytes,
                       OptionalAttr<I64Attr>:$host_peak_bytes,
                       OptionalAttr<DictArrayAttr>:$host_memory_plan);
  let regions = (region SizedRegion<1>:$body);
  let builders = [
    OpBuilder<(ins "int64_t":$rank), [{
      build($_builder, $_state, $_builder.getI64IntegerAttr(rank),
            mlir::IntegerAttr(), mlir::IntegerAttr(), mlir::ArrayAttr(),
            mlir::IntegerAttr(), mlir::IntegerAttr(), mlir::ArrayAttr());
    }]>
  ];
  let assemblyFormat = "$rank attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ProgramOp getProgram() { return mlir::cast<ProgramOp>((*this)->getParentOp()); }
  }];
}

class ZB_ScheduleLevelOp<string mnemonic, list<Trait> traits = []>
    : ZB_Op<mnemonic, !listconcat([HasParent<"RankOp">], traits)> {
  let hasVerifier = 1;
  code commonDecls = [{
    /// The rank this op runs on.
    RankOp getRankOp();
  }];
}

def ZB_ComputeOp : ZB_ScheduleLevelOp<"compute",
    [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "one F, B, W, fused BW or recompute (R) unit for a (stage, microbatch) pair";
  let description = [{
    `B` computes only the gradient w.r.t. the stage's input and `W` only the
    gradients w.r.t. its parameters, so a zero-bubble schedule can move `W`
    into pipeline bubbles. `BW` runs both (1F1B, GPipe). `R` runs the
    stage's F again before a backward, for a microbatch whose F kept only
    its inputs (Note [Recomputation in the IR] in
    passes/include/zbc/Analysis/ProgramMemory.h). The rank must hold the
    stage.

    ```mlir
    %f = zb.compute F stage 0 mb 3
    %b = zb.compute B stage 0 mb 3 after(%f, %g)
    %w = zb.compute W stage 0 mb 3 after(%b)
    ```
  }];
  let arguments = (ins ZB_ComputeKind:$kind,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let assemblyFormat = [{
    $kind `stage` $stage `mb` $microbatch (`after` `(` $deps^ `)`)? attr-dict
  }];
  let extraClassDeclaration = commonDecls;
}

// The stash copies of Note [Offload in the IR] (ProgramMemory.h).
class ZB_StashCopyOp<string mnemonic> : ZB_ScheduleLevelOp<mnemonic,
    [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let assemblyFormat = [{
    `stage` $stage `mb` $microbatch (`after` `(` $deps^ `)`)? attr-dict
  }];
  let extraClassDeclaration = commonDecls;
}

def ZB_OffloadOp : ZB_StashCopyOp<"offload"> {
  let summary = "copies a microbatch's stash off the device, to host memory";
  let description = [{
    Starts copying what stage `s`'s F kept for its backward on microbatch
    `j` (every `F.I` key) to host memory, on the rank's device-to-host copy
    queue, once the ops in `after` (its F) are done; completes when the copy
    has. The device bytes are free at the first op that waits for it, as a
    send's are (Note [Offload in the IR] in
    passes/include/zbc/Analysis/ProgramMemory.h). A `zb.reload` brings the
    stash back before the backward.

    ```mlir
    %F0_3 = zb.compute F stage 0 mb 3
    %offload0_3 = zb.offload stage 0 mb 3 after(%F0_3)
    %F0_4 = zb.compute F stage 0 mb 4 after(%offload0_3)
    ...
    %reload0_3 = zb.reload stage 0 mb 3 after(%offload0_3)
    %B0_3 = zb.compute B stage 0 mb 3 after(%reload0_3, %recv_grad1_3)
    ```
  }];
}

def ZB_ReloadOp : ZB_StashCopyOp<"reload"> {
  let summary = "copies an offloaded stash back to the device";
  let description = [{
    Starts copying the stash `zb.offload` moved to host memory back into
    device buffers of its own, on the rank's host-to-device copy queue, once
    the ops in `after` (its offload) are done; completes when the copy has.
    The backward of the microbatch waits for it (Note [Offload in the IR]).
  }];
}

// A collective over a named group of ranks (Note [Collective groups]),
// issued and waited for like a send; `what` is the keyword naming what it
// moves ("grads", "params").
class ZB_CollectiveOp<string mnemonic, string what>
    : ZB_ScheduleLevelOp<mnemonic,
        [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       StrAttr:$over,
                       StrArrayAttr:$params,
                       ConfinedAttr<I64Attr, [IntPositive]>:$bytes,
                       Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let assemblyFormat = "`" # what # "` `stage` $stage `over` $over $params "
                       "`:` $bytes `bytes` (`after` `(` $deps^ `)`)? attr-dict";
  let extraClassDeclaration = commonDecls;
}
def ZB_AllReduceOp : ZB_CollectiveOp<"all_reduce", "grads"> {
  let summary = "sums the gradients of parameters over a named group of ranks";
  let description = [{
    Starts summing, in place, the gradients of `params` (parameters of
    stage `stage`, which this rank holds) over the group `over`, once the
    ops in `after` are done; completes when every member of the group has
    issued its matching all-reduce and the sums are in place. `bytes` is
    what each member contributes (the gradients are f32). The groups
    (Note [Collective groups] in dialect/include/zbc/Support/CollectiveGroups.h):
    - `"replicas"`: this pipeline rank in each of the program's `replicas`
      data-parallel replicas (the data-parallel gradient reduction);
    - `"tied:NAME"`: every rank, in every replica, that holds a stage with
      parameter NAME (a tied embedding and head);
    - `"pipeline"`: every rank of the replica.
    Every member issues a group's collectives in the same order, with the
    same bytes; zb-verify-schedule proves it, with deadlock-freedom through
    collectives and transfers together. zb-insert-collectives places one
    after the last W (or BW) of the step that writes the gradients.
    ```mlir
    %W0_3 = zb.compute W stage 0 mb 3 after(%B0_3)
    %allreduce0 = zb.all_reduce grads stage 0 over "replicas" ["h0.w", "h0.b"] : 66048 bytes after(%W0_3)
    ```
  }];
}
def ZB_ReduceScatterOp : ZB_CollectiveOp<"reduce_scatter", "grads"> {
  let summary = "sums the gradients of parameters over a group, each member "
                "keeping its shard";
  let description = [{
    As `zb.all_reduce`, but each member of the group (the replicas, with
    `zero` >= 1: Note [Sharded optimizer] in
    runtime/contracts/include/zbc/contracts/Shards.h) gets only its shard of each sum,
    in place in the gradient (with `zero` 2 into a shard of its own: Note
    [Sharded gradients]): replica k of d the elements [k c, (k + 1) c)
    of a parameter of N, c = ceil(N / d), the buffer padded to d c. `bytes`
    is what each member contributes: the padded f32 gradients.
    ```mlir
    %reducescatter0 = zb.reduce_scatter grads stage 0 over "replicas" ["h0.w", "h0.b"] : 66048 bytes after(%W0_3)
    ```
  }];
}
def ZB_AllGatherOp : ZB_CollectiveOp<"all_gather", "params"> {
  let summary = "gathers each member's shard of parameters into the whole";
  let description = [{
    With `zero` >= 1 each replica updates only its shard of a parameter
    (Note [Sharded optimizer]): before the step's first compute of the
    stage reads the parameters, each member contributes its shard of
    `params` (working copies, padded) and gets every other member's, in
    place. `bytes` is the padded working copies' size. The first compute of
    the stage waits for it.
    ```mlir
    %allgather0 = zb.all_gather params stage 0 over "replicas" ["h0.w", "h0.b"] : 66048 bytes
    %F0_0 = zb.compute F stage 0 mb 0 after(%allgather0)
    ```
  }];
}
// A collective of one microbatch's values (Note [Value collectives] in
// passes/include/zbc/Schedule/Program.h): a tensor under a phase key,
// moved or combined over a group (Note [Collective groups]) whose members
// each issue the matching op. The bytes are the tensor's.
class ZB_ValueCollectiveOp<string mnemonic>
    : ZB_ScheduleLevelOp<mnemonic,
        [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let results = (outs ZB_TokenType:$done);
  code valueDecls = commonDecls # [{
    /// What each member gives (or, from a broadcast's root, every member
    /// gets): the tensor's bytes.
    int64_t getBytes();
  }];
  let extraClassDeclaration = valueDecls;
}
def ZB_BroadcastOp : ZB_ValueCollectiveOp<"broadcast"> {
  let summary = "copies one microbatch's tensor from a root rank to every "
                "member of a group";
  let description = [{
    Starts copying the tensor `key` of microbatch `mb` from rank `root`
    (which gives it) to every other member of the group `over` (which get
    it), once the ops in `after` are done; completes when every member has
    issued its match. Vocabulary parallelism broadcasts the last stage's
    hidden states to every rank's shard of the output layer.
    ```mlir
    %broadcast_x_0 = zb.broadcast "vocab.x" mb 0 from 1 over "pipeline" : tensor<8x64xf32> after(%F1_0)
    ```
  }];
  let arguments = (ins StrAttr:$key,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$root,
                       StrAttr:$over,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       Variadic<ZB_TokenType>:$deps);
  let assemblyFormat = "$key `mb` $microbatch `from` $root `over` $over `:` "
                       "$type (`after` `(` $deps^ `)`)? attr-dict";
}
def ZB_ReduceOp : ZB_ValueCollectiveOp<"reduce"> {
  let summary = "combines one microbatch's tensor over a group, element by "
                "element";
  let description = [{
    Starts combining the tensor `key` of microbatch `mb` that every member
    of the group `over` gives, in place: `sum` or `max` element by
    element, or `softmax`, the merge of `zb.vocab_stats`' planes [m, l, t,
    m] into [m, S, T, M] (Note [Softmax over vocabulary shards] in
    runtime/contracts/include/zbc/contracts/VocabShards.h). With `to R`
    only rank R gets the result (a reduce), without it every member does
    (an all-reduce). Completes when every member has issued its match.
    Vocabulary parallelism takes the maximum and the sums of the online
    softmax over every rank's shard, sums the input gradient, and sums the
    input embedding's rows to the first stage.
    ```mlir
    %reduce_vocab.max_0 = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<8xf32> after(%S_0)
    %reduce_embed_0 = zb.reduce sum "embed.out" mb 0 to 0 over "pipeline" : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins ZB_Reduction:$reduction,
                       StrAttr:$key,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$root,
                       StrAttr:$over,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       Variadic<ZB_TokenType>:$deps);
  let assemblyFormat = "$reduction $key `mb` $microbatch (`to` $root^)? `over` "
                       "$over `:` $type (`after` `(` $deps^ `)`)? attr-dict";
}
// Transfers sit in a rank or in a group of it.
class ZB_TransferOp<string mnemonic>
    : ZB_Op<mnemonic, [ParentOneOf<["RankOp", "GroupOp"]>,
        DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let hasVerifier = 1;
  code commonDecls = [{
    /// The rank this op runs on (through its group, if any).
    RankOp getRankOp();
    /// The group it is issued with, or null.
    GroupOp getGroupOp();
  }];
}

def ZB_SendOp : ZB_TransferOp<"send"> {
  let summary = "sends one tensor of a stage's activation or input gradient";
  let description = [{
    `act stage s` is the forward output of stage `s`, sent to the rank that
    holds stage `s+1`; `grad stage s` is the gradient w.r.t. the input of
    stage `s`, sent to the rank that holds stage `s-1`. This rank must hold
    stage `s`. A stage boundary that passes several tensors sends one message
    per tensor: the key names it in the producing stage (`out.I` forward,
    `d_in.I` backward) and the type is the tensor's. `on N` puts it on the
    rank's stream N: it completes only after the transfer before it on that
    stream. Completes when the matching `zb.recv` has been posted and the
    buffer may be reused (dialect/docs/ZB.md, Note [p2p semantics]).

    ```mlir
    %s = zb.send act stage 0 mb 3 to 1 "out.0" : tensor<8x64xf32> on 0 after(%f)
    ```
  }];
  let arguments = (ins ZB_Payload:$payload,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       StrAttr:$key, TypeAttr:$type,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$stream,
                       Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let assemblyFormat = [{
    $payload `stage` $stage `mb` $microbatch `to` $peer $key `:` $type
    (`on` $stream^)? (`after` `(` $deps^ `)`)? attr-dict
  }];
  let extraClassDeclaration = commonDecls;
}

def ZB_RecvOp : ZB_TransferOp<"recv"> {
  let summary = "receives one tensor of a stage's activation or input gradient";
  let description = [{
    Names the *producing* stage and its key, as `zb.send` does: `act stage
    s` arrives on the rank that holds stage `s+1`, `grad stage s` on the rank
    that holds stage `s-1`; the peer must hold stage `s`. Completes when the
    matching send has been issued and the data is in place; messages between
    two ranks match in issue order.

    ```mlir
    %r = zb.recv act stage 0 mb 3 from 0 "out.0" : tensor<8x64xf32> on 1
    %f = zb.compute F stage 1 mb 3 after(%r)
    ```
  }];
  let arguments = (ins ZB_Payload:$payload,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       StrAttr:$key, TypeAttr:$type,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$stream,
                       Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let assemblyFormat = [{
    $payload `stage` $stage `mb` $microbatch `from` $peer $key `:` $type
    (`on` $stream^)? (`after` `(` $deps^ `)`)? attr-dict
  }];
  let extraClassDeclaration = commonDecls;
}

def ZB_GroupOp : ZB_ScheduleLevelOp<"group", [SingleBlock, NoTerminator,
    NoRegionArguments,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "transfers a rank issues together, as one unit";
  let description = [{
    The sends and receives in the body are issued at once, when the tokens in
    `after` are complete, and the group's token completes when all of them
    have: NCCL's `ncclGroupStart`/`ncclGroupEnd`, or MPI requests waited on
    together. The members wait for nothing themselves (their `after` lists
    are empty), and only the group's token can be waited for.

    ```mlir
    %g = zb.group after(%F0_1) {
      %s = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<8x64xf32> on 0
      %r = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32> on 1
    }
    %B0_0 = zb.compute B stage 0 mb 0 after(%F0_0, %g)
    ```
  }];
  let arguments = (ins Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`after` `(` $deps^ `)`)? $body attr-dict";
  let extraClassDeclaration = commonDecls;
}

} // opDocGroup = ZB_ScheduleGroup

#endif // ZBC_DIALECT_ZB_ZBSCHEDULEOPS_TD
