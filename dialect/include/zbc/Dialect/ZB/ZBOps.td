//===- ZBOps.td - zb dialect operations ---------------------*- tablegen -*-===//
//
// Operations of the zb dialect, in two groups: the model level (one
// microbatch of a training step: parameters, tensor ops, stage cuts, the
// loss) and the schedule level (per-rank ordered F/B/W work and transfers).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBOPS_TD
#define ZBC_DIALECT_ZB_ZBOPS_TD

include "zbc/Dialect/ZB/ZBDialect.td"
include "zbc/Dialect/ZB/ZBTypes.td"
include "zbc/Dialect/ZB/ZBAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpAsmInterface.td"

def ZB_ModelGroup : OpDocGroup {
  let summary = "Model level";
  let description = "One microbatch of a training step, before scheduling.";
}
def ZB_ScheduleGroup : OpDocGroup {
  let summary = "Schedule level";
  let description = "Per-rank ordered work, after scheduling.";
}

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

let opDocGroup = ZB_ModelGroup in {

def ZB_ModelOp : ZB_Op<"model", [IsolatedFromAbove, Symbol,
                                 SingleBlock, NoRegionArguments]> {
  let summary = "a trainable model: one microbatch's forward pass and its loss";
  let description = [{
    Holds the inputs, labels, parameters and tensor ops of one microbatch,
    in program order, and ends with the scalar `zb.loss` that training
    minimises. Shapes include the microbatch dimension. `zb.cut` ops split
    the body into pipeline stages: stage 0 runs up to the first cut, stage
    `k` between cut `k-1` and cut `k`. Values may cross a stage boundary
    only through the cut that separates the stages; parameters belong to
    exactly one stage. Inputs, labels and parameters share one namespace:
    each name appears once.

    ```mlir
    zb.model @mlp {
      %x = zb.input "x" : tensor<8x16xf32>
      %y = zb.label "y" : tensor<8xi64>
      %w0 = zb.param "w0" init normal(0.02) : tensor<16x32xf32>
      %h = zb.linear %x, %w0 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
      %r = zb.relu %h : tensor<8x32xf32>
      %c = zb.cut %r : tensor<8x32xf32>
      %w1 = zb.param "w1" init normal(0.02) : tensor<32x4xf32>
      %o = zb.linear %c, %w1 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
      %l = zb.cross_entropy %o, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
      zb.loss %l : tensor<f32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of pipeline stages: one more than the number of `zb.cut`s.
    unsigned getNumStages();
    /// The stage each op of the body belongs to, in body order. A `zb.cut`
    /// belongs to the stage it ends.
    llvm::DenseMap<mlir::Operation *, unsigned> getStageOfOps();
    /// The terminating `zb.loss`.
    LossOp getLossOp();
  }];
}

// Traits shared by every op that lives directly in a model body.
class ZB_ModelLevelOp<string mnemonic, list<Trait> traits = []>
    : ZB_Op<mnemonic, !listconcat([HasParent<"ModelOp">], traits)>;

// Inputs, labels and parameters print their result as `%name`.
class ZB_LeafOp<string mnemonic>
    : ZB_ModelLevelOp<mnemonic, [Pure,
        DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]>;

def ZB_InputOp : ZB_LeafOp<"input"> {
  let summary = "a per-microbatch input tensor fed by the data loader";
  let description = [{
    ```mlir
    %tokens = zb.input "tokens" : tensor<4x64xi64>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs ZB_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def ZB_LabelOp : ZB_LeafOp<"label"> {
  let summary = "a per-microbatch label tensor fed by the data loader";
  let description = [{
    Labels are inputs that only the last stage reads (normally through the
    loss); the runtime loads them on the rank that holds the last stage.

    ```mlir
    %targets = zb.label "targets" : tensor<4x64xi64>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs ZB_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def ZB_ParamOp : ZB_LeafOp<"param"> {
  let summary = "a trainable parameter with its initialiser";
  let description = [{
    `normal(s)` draws from N(0, s^2), `uniform(a)` from U(-a, a); `zeros`
    and `ones` take no scale. A parameter belongs to the one stage that uses
    it.

    ```mlir
    %w = zb.param "fc1.weight" init normal(0.02) : tensor<256x1024xf32>
    %g = zb.param "ln1.gamma" init ones : tensor<256xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, ZB_InitKind:$init,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $name `init` $init (`(` $scale^ `)`)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes of the parameter's storage (elements x element width).
    int64_t getNumBytes();
  }];
}

def ZB_CutOp : ZB_ModelLevelOp<"cut",
    [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a pipeline stage boundary";
  let description = [{
    Ends one stage and starts the next. Its operands are the activations
    the next stage needs (sent downstream in F, their gradients sent
    upstream in B); its results are the same tensors as seen by the next
    stage. No other value of an earlier stage (parameters, inputs and
    labels aside) may be used after the cut.

    ```mlir
    %h1 = zb.cut %h0 : tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins Variadic<ZB_AnyTensor>:$inputs);
  let results = (outs Variadic<ZB_AnyTensor>:$outputs);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def ZB_LossOp : ZB_ModelLevelOp<"loss", [Terminator]> {
  let summary = "the scalar that training minimises; ends the model";
  let description = [{
    ```mlir
    zb.loss %l : tensor<f32>
    ```
  }];
  let arguments = (ins ZB_ScalarFloatTensor:$loss);
  let assemblyFormat = "$loss attr-dict `:` type($loss)";
}

// A tensor op whose result type follows from its operands. `verify()` checks
// the result against `inferResultType`, which the embedded DSL also calls to
// build the op, so both report a shape error the same way.
class ZB_TensorOp<string mnemonic, list<Trait> traits = []>
    : ZB_ModelLevelOp<mnemonic, !listconcat([Pure], traits)> {
  let hasVerifier = 1;
}

class ZB_BinaryTensorOp<string mnemonic, string lhs, string rhs,
                        Type lhsType, Type rhsType, list<Trait> traits = []>
    : ZB_TensorOp<mnemonic, traits> {
  let arguments = !dag(ins, [lhsType, rhsType], [lhs, rhs]);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$" # lhs # " `,` $" # rhs #
      " attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType }] # lhs # [{,
                    mlir::RankedTensorType }] # rhs # [{,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_LinearOp : ZB_BinaryTensorOp<"linear", "input", "weight",
                                    ZB_FloatTensor, ZB_FloatTensor> {
  let summary = "x @ W for a weight of shape [in, out]";
  let description = [{
    Multiplies the last dimension of the input (`in` features) by a 2-D
    weight `[in, out]`; leading dimensions are kept.

    ```mlir
    %y = zb.linear %x, %w : (tensor<4x64x256xf32>, tensor<256x1024xf32>) -> tensor<4x64x1024xf32>
    ```
  }];
}

def ZB_MatmulOp : ZB_BinaryTensorOp<"matmul", "lhs", "rhs",
                                    ZB_FloatTensor, ZB_FloatTensor> {
  let summary = "batched matrix product of two activations";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]`; the leading (batch)
    dimensions of both operands must be equal.

    ```mlir
    %c = zb.matmul %a, %b : (tensor<4x8x16xf32>, tensor<4x16x32xf32>) -> tensor<4x8x32xf32>
    ```
  }];
}

def ZB_BiasAddOp : ZB_BinaryTensorOp<"bias_add", "input", "bias",
                                     ZB_FloatTensor, ZB_FloatTensor> {
  let summary = "adds a 1-D bias along the last dimension";
  let description = [{
    ```mlir
    %y = zb.bias_add %x, %b : (tensor<4x64x1024xf32>, tensor<1024xf32>) -> tensor<4x64x1024xf32>
    ```
  }];
}

def ZB_EmbeddingOp : ZB_BinaryTensorOp<"embedding", "indices", "table",
                                       ZB_IndexTensor, ZB_FloatTensor> {
  let summary = "looks up rows of a [vocab, hidden] table";
  let description = [{
    Every index must lie in `[0, vocab)`; the runtime checks it.

    ```mlir
    %e = zb.embedding %tokens, %wte : (tensor<4x64xi64>, tensor<1000x256xf32>) -> tensor<4x64x256xf32>
    ```
  }];
}

def ZB_CrossEntropyOp : ZB_BinaryTensorOp<"cross_entropy", "logits", "labels",
                                          ZB_FloatTensor, ZB_IndexTensor> {
  let summary = "mean softmax cross-entropy of logits against class labels";
  let description = [{
    Logits `[..., C]`, labels `[...]` with values in `[0, C)`; the result is
    the mean over all label positions, a scalar.

    ```mlir
    %l = zb.cross_entropy %logits, %targets : (tensor<4x64x1000xf32>, tensor<4x64xi64>) -> tensor<f32>
    ```
  }];
}

def ZB_AddOp : ZB_TensorOp<"add", [SameOperandsAndResultType, Commutative]> {
  let summary = "elementwise sum of two tensors of one type (residual add)";
  let description = [{
    ```mlir
    %r = zb.add %x, %attn : tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$lhs, ZB_FloatTensor:$rhs);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 0;
}

class ZB_UnaryTensorOp<string mnemonic, list<Trait> traits = []>
    : ZB_TensorOp<mnemonic, !listconcat([SameOperandsAndResultType], traits)> {
  let arguments = (ins ZB_FloatTensor:$input);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def ZB_ReluOp : ZB_UnaryTensorOp<"relu"> {
  let summary = "max(x, 0), elementwise";
  let description = [{
    ```mlir
    %y = zb.relu %x : tensor<8x32xf32>
    ```
  }];
}

def ZB_GeluOp : ZB_UnaryTensorOp<"gelu"> {
  let summary = "GELU, tanh approximation (as GPT-2), elementwise";
  let description = [{
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = zb.gelu %x : tensor<4x64x1024xf32>
    ```
  }];
}

def ZB_LayerNormOp : ZB_TensorOp<"layernorm"> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    `gamma * (x - mean) / sqrt(var + epsilon) + beta`, with the mean and
    (biased) variance over the last dimension; `gamma` and `beta` are 1-D
    of that size. `epsilon` defaults to 1e-5.

    ```mlir
    %y = zb.layernorm %x, %g, %b : (tensor<4x64x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input, ZB_FloatTensor:$gamma,
                       ZB_FloatTensor:$beta,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType input, mlir::RankedTensorType gamma,
                    mlir::RankedTensorType beta, double epsilon,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_CausalAttentionOp : ZB_TensorOp<"causal_attention"> {
  let summary = "multi-head causal self-attention over packed q, k, v";
  let description = [{
    Input `[B, S, 3H]` holds q, k and v side by side (the output of one
    QKV projection); each is split into `heads` heads of `H / heads`
    features. Position `i` attends to positions `0..i`, scores scaled by
    `1/sqrt(H / heads)`. Result `[B, S, H]`. Projections are separate
    `zb.linear` ops, so this op has no parameters.

    ```mlir
    %a = zb.causal_attention %qkv heads(4) : tensor<4x64x768xf32> -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$qkv,
                       ConfinedAttr<I64Attr, [IntPositive]>:$heads);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv `heads` `(` $heads `)` attr-dict `:` type($qkv) `->` type($result)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType qkv, int64_t heads,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

} // opDocGroup = ZB_ModelGroup

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
    `microbatches` is the number of microbatches per training step.

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
                       DenseI64ArrayAttr:$placement);
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
    `after(...)` list are done. Every (kind, stage, microbatch) of work and
    every transfer appears at most once per rank.

    ```mlir
    zb.rank 1 {
      %r = zb.recv act stage 0 mb 0 from 0
      %f = zb.compute F stage 1 mb 0 after(%r)
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$rank);
  let regions = (region SizedRegion<1>:$body);
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
  let summary = "one F, B, W (or fused BW) unit for a (stage, microbatch) pair";
  let description = [{
    `B` computes only the gradient w.r.t. the stage's input and `W` only the
    gradients w.r.t. its parameters, so a zero-bubble schedule can move `W`
    into pipeline bubbles. `BW` runs both (1F1B, GPipe). The rank must hold
    the stage.

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

def ZB_SendOp : ZB_ScheduleLevelOp<"send"> {
  let summary = "sends a stage's activation or input gradient to another rank";
  let description = [{
    `act stage s` is the forward output of stage `s`, sent to the rank that
    holds stage `s+1`; `grad stage s` is the gradient w.r.t. the input of
    stage `s`, sent to the rank that holds stage `s-1`. This rank must hold
    stage `s`. Completes when the buffer may be reused.

    ```mlir
    %s = zb.send act stage 0 mb 3 to 1 after(%f)
    ```
  }];
  let arguments = (ins ZB_Payload:$payload,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let assemblyFormat = [{
    $payload `stage` $stage `mb` $microbatch `to` $peer
    (`after` `(` $deps^ `)`)? attr-dict
  }];
  let extraClassDeclaration = commonDecls;
}

def ZB_RecvOp : ZB_ScheduleLevelOp<"recv"> {
  let summary = "receives a stage's activation or input gradient from another rank";
  let description = [{
    Names the *producing* stage, as `zb.send` does: `act stage s` arrives on
    the rank that holds stage `s+1`, `grad stage s` on the rank that holds
    stage `s-1`; the peer must hold stage `s`. Completes when the data is
    in place.

    ```mlir
    %r = zb.recv act stage 0 mb 3 from 0
    %f = zb.compute F stage 1 mb 3 after(%r)
    ```
  }];
  let arguments = (ins ZB_Payload:$payload,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       Variadic<ZB_TokenType>:$deps);
  let results = (outs ZB_TokenType:$done);
  let assemblyFormat = [{
    $payload `stage` $stage `mb` $microbatch `from` $peer
    (`after` `(` $deps^ `)`)? attr-dict
  }];
  let extraClassDeclaration = commonDecls;
}

} // opDocGroup = ZB_ScheduleGroup

#endif // ZBC_DIALECT_ZB_ZBOPS_TD
