//===- ZBPipelineOps.td - zb pipeline-level operations -----*- tablegen -*-===//
//
// A model cut into stages, each stage's work spelled out as phases: F, then
// either the fused backward BW (after zb-autodiff) or B and W (after
// zb-split-backward). Phases exchange per-microbatch tensors by key; the
// keys are the contract with the scheduler and the runtime (PhaseKeys.h).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBPIPELINEOPS_TD
#define ZBC_DIALECT_ZB_ZBPIPELINEOPS_TD

let opDocGroup = ZB_PipelineGroup in {

def ZB_PipelineOp : ZB_Op<"pipeline", [IsolatedFromAbove, Symbol, SingleBlock,
                                       NoTerminator, NoRegionArguments]> {
  let summary = "a model's stages with their forward and backward work";
  let description = [{
    Made by zb-autodiff from a `zb.model`: one `zb.stage` per stage, stages
    `0..S-1` in order. Stage `k` sends `out.i` to stage `k+1`, which receives
    it as `in.i`; gradients flow back as `d_in.i` of stage `k+1`, received by
    stage `k` as `d_out.i`. The verifier checks that the types agree.
    `hf_config` is the model's (zb.model), carried to the rank programs,
    which write it into what they save, so that `zbc export-hf` can write a
    Hugging Face checkpoint from the saved weights alone.

    `costs`, optional, is what a schedule plans with beside each stage's
    own (Note [Costs in the IR] in passes/include/zbc/Analysis/StageCosts.h,
    written by zb-stage-costs): `comm` (a transfer's time), `copy_bandwidth`
    (bytes a copy queue moves per unit of time), `unit` ("FLOPs" for the
    cost model's times, "ms" for a cost file's), and where a cost file gave
    the stages' costs, its path (`cost_file`) and the shape it was measured
    for (`file_ranks`, `file_virtual`).

    ```mlir
    zb.pipeline @mlp {
      zb.stage 0 { ... }
      zb.stage 1 { ... }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<StrAttr>:$hf_config,
                       OptionalAttr<DictionaryAttr>:$costs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumStages();
  }];
}

def ZB_StageOp : ZB_Op<"stage", [HasParent<"PipelineOp">, SingleBlock,
                                 NoTerminator, NoRegionArguments]> {
  let summary = "one pipeline stage: its F phase and its backward phases";
  let description = [{
    Declares the inputs, labels and parameters its phases read (`zb.input`,
    `zb.label`, `zb.param`, so the stage says what the runtime must load and
    initialise), then holds `zb.phase` ops in execution order: `F` then
    `BW`, or `F`, `B`, `W`.
    Every key a phase reads is either provided from outside for that kind of
    phase (`in.*`, `input.*`, `label.*`, `param.*` from F on; `d_out.*` from
    the backward on) or yielded by an earlier phase of the stage.

    ```mlir
    zb.stage 1 {
      %w = zb.param "fc2.weight" init normal(0.1) : tensor<64x8xf32>
      zb.phase F(%x = "in.0" : tensor<8x64xf32>, %w = "param.fc2.weight" : tensor<64x8xf32>) {
        ...
        zb.yield "loss" = %l, "F.0" = %o : tensor<f32>, tensor<8x8xf32>
      }
      zb.phase BW(...) { ... }
    }
    ```

    `rebuilt`, optional, is the stage's recomputation policy (Note
    [Selective recomputation] in RecomputePlan.h): the `F.i` keys an R
    rebuilds for a microbatch whose F did not keep its stash. Absent, every
    `F.i` (full recomputation); `zb-schedule recompute=selective` writes
    the cheap ones.

    `costs`, optional, is what a schedule plans with for this stage (Note
    [Costs in the IR]): the times `F`, `B`, `W` and `R` and the bytes `M_B`
    (held after F), `M_W` (after B), `M_keep` (after a recomputed F) and
    `M_offload` (what an offload moves), as f64; zb-stage-costs writes them.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$index,
                       OptionalAttr<StrArrayAttr>:$rebuilt,
                       OptionalAttr<DictionaryAttr>:$costs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$index attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The phases in execution order.
    llvm::SmallVector<PhaseOp> getPhases();
    /// The phase of the given kind, or null.
    PhaseOp getPhase(ComputeKind kind);
    /// Part of verifyRegions: the `rebuilt` policy.
    ::mlir::LogicalResult verifyRebuiltKeys();
  }];
}

def ZB_PhaseOp : ZB_Op<"phase", [HasParent<"StageOp">, IsolatedFromAbove,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "the F, B, W or BW work of a stage on one microbatch";
  let description = [{
    A function over keyed tensors: each block argument is bound to a key
    (`%x = "in.0" : type`), and the terminating `zb.yield` names the key of
    each value it produces. Keys (dialect/docs/ZB.md, "Phase keys"):
    `in.i`/`out.i` activations received from / sent to the neighbour stages,
    `d_out.i`/`d_in.i` their gradients, `input.NAME`/`label.NAME` data,
    `param.NAME` parameters, `grad.NAME` parameter gradients (accumulated
    over microbatches), `loss`, and `F.i`/`B.i` tensors that F or B keeps
    for a later phase (the activation memory a schedule must budget for).

    ```mlir
    zb.phase W(%x = "in.0" : tensor<8x64xf32>, %dy = "d_out.0" : tensor<8x8xf32>) {
      %dw = zb.linear_grad_weight %x, %dy : (tensor<8x64xf32>, tensor<8x8xf32>) -> tensor<64x8xf32>
      zb.yield "grad.fc2.weight" = %dw : tensor<64x8xf32>
    }
    ```
  }];
  let arguments = (ins ZB_ComputeKind:$kind, StrArrayAttr:$arg_keys);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    mlir::Block &getBodyBlock() { return getBody().front(); }
    YieldOp getYield();
    /// The key of each block argument, in order.
    llvm::SmallVector<llvm::StringRef> getArgKeyList();
  }];
}

def ZB_YieldOp : ZB_Op<"yield", [HasParent<"PhaseOp">, Terminator, Pure]> {
  let summary = "ends a phase, naming the key of each value it produces";
  let description = [{
    ```mlir
    zb.yield "out.0" = %h, "F.0" = %x : tensor<8x64xf32>, tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Variadic<ZB_AnyTensor>:$values, StrArrayAttr:$keys);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    llvm::SmallVector<llvm::StringRef> getKeyList();
  }];
}

} // opDocGroup = ZB_PipelineGroup

#endif // ZBC_DIALECT_ZB_ZBPIPELINEOPS_TD
