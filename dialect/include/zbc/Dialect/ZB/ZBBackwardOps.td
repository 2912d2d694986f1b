//===- ZBBackwardOps.td - zb gradient operations -----------*- tablegen -*-===//
//
// The ops zb-autodiff emits for the gradient rules of the model-level ops.
// They live only in `zb.phase` bodies. Each has a shape rule
// (`inferResultType`, ZBShapes.cpp) that its verifier checks.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBBACKWARDOPS_TD
#define ZBC_DIALECT_ZB_ZBBACKWARDOPS_TD

let opDocGroup = ZB_BackwardGroup in {

// Each runs as one kernel (KernelOpInterface, as ZB_TensorOp).
class ZB_BackwardOp<string mnemonic, list<Trait> traits = [],
                    list<string> kernelMethods = []>
    : ZB_Op<mnemonic, !listconcat([HasParent<"PhaseOp">, Pure,
        ZB_KnownAttributes,
        DeclareOpInterfaceMethods<ZB_KernelOpInterface, kernelMethods>],
        traits)> {
  let hasVerifier = 1;
}

// A gradient op with two tensor operands whose result type follows from them.
class ZB_BinaryBackwardOp<string mnemonic, string lhs, string rhs,
                          Type lhsType = ZB_FloatTensor,
                          Type rhsType = ZB_FloatTensor>
    : ZB_BackwardOp<mnemonic> {
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

def ZB_FillOp : ZB_Op<"fill", [HasParent<"PhaseOp">, Pure,
    DeclareOpInterfaceMethods<ZB_KernelOpInterface>]> {
  let summary = "a tensor with every element equal to a constant";
  let description = [{
    zb-autodiff seeds the backward of the last stage with the gradient of
    the loss w.r.t. itself, 1.0, and fills the gradient of a stage input
    that does not reach the loss with 0.0.

    ```mlir
    %one = zb.fill 1.0 : tensor<f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

def ZB_LossSeedOp : ZB_Op<"loss_seed", [HasParent<"PhaseOp">, Pure]> {
  let summary = "the gradient of the step's loss w.r.t. this microbatch's loss";
  let description = [{
    zb-autodiff seeds the backward of the stage that computes the loss with
    it: the weight of this microbatch's loss in the step's loss, `M n / T`,
    where the step has `M` microbatches (over every data-parallel replica),
    this one counts `n` labels of the loss's zb.cross_entropy and the step
    `T` (Note [Loss over real tokens]). It is exactly 1 when every
    microbatch counts as many labels (no label is ignored), and for a loss
    that is not a zb.cross_entropy of a zb.label. Its value is the
    microbatch's, as a block argument's is: the runtime and the reference
    interpreter compute it from the step's labels before its first backward.

    ```mlir
    %seed = zb.loss_seed : tensor<f32>
    ```
  }];
  let results = (outs ZB_ScalarFloatTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def ZB_LinearGradInputOp : ZB_BackwardOp<"linear_grad_input"> {
  let summary = "dx = dy @ W^T, the input gradient of zb.linear";
  let description = [{
    `dy [..., out]`, `W [in, out]` -> `dx [..., in]`; with `weight_out_in`,
    `W [out, in]` and `dx = dy @ W`.

    ```mlir
    %dx = zb.linear_grad_input %dy, %w : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$weight,
                       UnitAttr:$weight_out_in);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $resultGrad `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType resultGrad,
                    mlir::RankedTensorType weight, bool weightOutIn,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_LinearGradWeightOp : ZB_BackwardOp<"linear_grad_weight"> {
  let summary = "dW = x^T @ dy over all leading dimensions, the weight gradient of zb.linear";
  let description = [{
    `x [..., in]`, `dy [..., out]` -> `dW [in, out]` (with `weight_out_in`,
    `dW [out, in] = dy^T @ x`); the leading dimensions of `x` and `dy` must
    agree and are summed over.

    ```mlir
    %dw = zb.linear_grad_weight %x, %dy : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input, ZB_FloatTensor:$resultGrad,
                       UnitAttr:$weight_out_in);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $resultGrad attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType input,
                    mlir::RankedTensorType resultGrad, bool weightOutIn,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_MatmulGradLhsOp
    : ZB_BinaryBackwardOp<"matmul_grad_lhs", "resultGrad", "rhs"> {
  let summary = "dA = dC @ B^T, the gradient of zb.matmul's left operand";
  let description = [{
    `dC [..., M, N]`, `B [..., K, N]` -> `dA [..., M, K]`.

    ```mlir
    %da = zb.matmul_grad_lhs %dc, %b : (tensor<4x8x32xf32>, tensor<4x16x32xf32>) -> tensor<4x8x16xf32>
    ```
  }];
}

def ZB_MatmulGradRhsOp
    : ZB_BinaryBackwardOp<"matmul_grad_rhs", "lhs", "resultGrad"> {
  let summary = "dB = A^T @ dC, the gradient of zb.matmul's right operand";
  let description = [{
    `A [..., M, K]`, `dC [..., M, N]` -> `dB [..., K, N]`.

    ```mlir
    %db = zb.matmul_grad_rhs %a, %dc : (tensor<4x8x16xf32>, tensor<4x8x32xf32>) -> tensor<4x16x32xf32>
    ```
  }];
}

def ZB_BiasGradOp : ZB_BackwardOp<"bias_grad"> {
  let summary = "sums a tensor over all but its last dimension";
  let description = [{
    The gradient of a bias (and of a LayerNorm `beta`): `dy [..., N]` ->
    `[N]`.

    ```mlir
    %db = zb.bias_grad %dy : tensor<4x64x256xf32> -> tensor<256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$resultGrad attr-dict `:` type($resultGrad) `->` type($result)";
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType resultGrad,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_ReluGradOp : ZB_BinaryBackwardOp<"relu_grad", "resultGrad", "input"> {
  let summary = "dx = dy * (x > 0), the gradient of zb.relu";
  let description = [{
    ```mlir
    %dx = zb.relu_grad %dy, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
    ```
  }];
}

def ZB_GeluGradOp : ZB_BinaryBackwardOp<"gelu_grad", "resultGrad", "input"> {
  let summary = "dx = dy * gelu'(x), the gradient of zb.gelu (tanh form)";
  let description = [{
    ```mlir
    %dx = zb.gelu_grad %dy, %x : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
    ```
  }];
}

def ZB_SwiGluGradGateOp
    : ZB_BackwardOp<"swiglu_grad_gate", [SameOperandsAndResultType]> {
  let summary = "dgate = dy * up * silu'(gate), a gradient of zb.swiglu";
  let description = [{
    `silu'(g) = s (1 + g (1 - s))` with `s = sigmoid(g)`.

    ```mlir
    %dg = zb.swiglu_grad_gate %dy, %g, %u : tensor<4x64x1408xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$gate,
                       ZB_FloatTensor:$up);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$resultGrad `,` $gate `,` $up attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def ZB_SwiGluGradUpOp
    : ZB_BackwardOp<"swiglu_grad_up", [SameOperandsAndResultType]> {
  let summary = "dup = dy * silu(gate), a gradient of zb.swiglu";
  let description = [{
    ```mlir
    %du = zb.swiglu_grad_up %dy, %g : tensor<4x64x1408xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$gate);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$resultGrad `,` $gate attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def ZB_RopeGradOp : ZB_BackwardOp<"rope_grad"> {
  let summary = "dx = the inverse rotation of dy, the gradient of zb.rope";
  let description = [{
    A rotation is orthogonal: `dx` is `dy` rotated by minus each angle, with
    zb.rope's attributes.

    ```mlir
    %dq = zb.rope_grad %dy, %pos {head_dim = 64 : i64, max_positions = 8192 : i64} : (tensor<4x64x512xf32>, tensor<4x64xi64>) -> tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_IndexTensor:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       ConfinedAttr<I64Attr, [IntPositive]>:$max_positions,
                       OptionalAttr<F64Attr>:$llama3_factor,
                       OptionalAttr<F64Attr>:$llama3_low_freq_factor,
                       OptionalAttr<F64Attr>:$llama3_high_freq_factor,
                       OptionalAttr<I64Attr>:$llama3_original_max_positions);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $resultGrad `,` $positions attr-dict `:` functional-type(operands, results)
  }];
}

def ZB_LayerNormGradInputOp : ZB_BackwardOp<"layernorm_grad_input"> {
  let summary = "the input gradient of zb.layernorm";
  let description = [{
    With `xhat = (x - mean) * rstd` and `g = dy * gamma`:
    `dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`, means over the last
    dimension. Mean and `rstd` are recomputed from `x`.

    ```mlir
    %dx = zb.layernorm_grad_input %dy, %x, %g : (tensor<4x64x256xf32>, tensor<4x64x256xf32>, tensor<256xf32>) -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$input,
                       ZB_FloatTensor:$gamma,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $resultGrad `,` $input `,` $gamma attr-dict `:` functional-type(operands, results)
  }];
}

def ZB_LayerNormGradGammaOp
    : ZB_BinaryBackwardOp<"layernorm_grad_gamma", "resultGrad", "input"> {
  let summary = "dgamma = sum(dy * xhat), the gamma gradient of zb.layernorm";
  let description = [{
    Summed over all but the last dimension; `xhat` is recomputed from `x`.

    ```mlir
    %dg = zb.layernorm_grad_gamma %dy, %x : (tensor<4x64x256xf32>, tensor<4x64x256xf32>) -> tensor<256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
}

def ZB_RmsNormGradInputOp : ZB_BackwardOp<"rmsnorm_grad_input"> {
  let summary = "the input gradient of zb.rmsnorm";
  let description = [{
    With `rstd = rsqrt(mean(x^2) + epsilon)`, `xhat = x * rstd` and
    `g = dy * weight`: `dx = rstd * (g - xhat * mean(g * xhat))`, means over
    the last dimension. `rstd` is recomputed from `x`.

    ```mlir
    %dx = zb.rmsnorm_grad_input %dy, %x, %w : (tensor<4x64x256xf32>, tensor<4x64x256xf32>, tensor<256xf32>) -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$input,
                       ZB_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $resultGrad `,` $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
}

def ZB_RmsNormGradWeightOp
    : ZB_BinaryBackwardOp<"rmsnorm_grad_weight", "resultGrad", "input"> {
  let summary = "dweight = sum(dy * xhat), the weight gradient of zb.rmsnorm";
  let description = [{
    Summed over all but the last dimension; `xhat = x * rsqrt(mean(x^2) +
    epsilon)` is recomputed from `x`.

    ```mlir
    %dw = zb.rmsnorm_grad_weight %dy, %x : (tensor<4x64x256xf32>, tensor<4x64x256xf32>) -> tensor<256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
}

def ZB_EmbeddingGradOp : ZB_BackwardOp<"embedding_grad"> {
  let summary = "scatter-adds dy into the rows of a [vocab, hidden] table";
  let description = [{
    The table gradient of zb.embedding: row `v` is the sum of `dy` over all
    positions whose index is `v`.

    ```mlir
    %dt = zb.embedding_grad %tokens, %dy vocab(1000) : (tensor<4x64xi64>, tensor<4x64x256xf32>) -> tensor<1000x256xf32>
    ```
  }];
  let arguments = (ins ZB_IndexTensor:$indices, ZB_FloatTensor:$resultGrad,
                       ConfinedAttr<I64Attr, [IntPositive]>:$vocab);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $resultGrad `vocab` `(` $vocab `)` attr-dict `:` functional-type(operands, results)
  }];
}

def ZB_CausalAttentionGradOp
    : ZB_BackwardOp<"causal_attention_grad", [], ["getWorkspaceBytes"]> {
  let summary = "the gradient of zb.causal_attention w.r.t. its packed qkv";
  let description = [{
    Recomputes the attention probabilities from `qkv`, then
    `dV = P^T dO`, `dP = dO V^T`, `dS = P * (dP - rowsum(dP * P))`,
    `dQ = dS K / sqrt(d)`, `dK = dS^T Q / sqrt(d)`, packed like `qkv`;
    with `documents`, under the forward's document mask.

    ```mlir
    %dqkv = zb.causal_attention_grad %dout, %qkv heads(4) : (tensor<4x64x256xf32>, tensor<4x64x768xf32>) -> tensor<4x64x768xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$qkv,
                       Optional<ZB_IndexTensor>:$documents,
                       ConfinedAttr<I64Attr, [IntPositive]>:$heads);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $resultGrad `,` $qkv (`documents` $documents^)? `heads` `(` $heads `)` attr-dict `:` functional-type(operands, results)
  }];
}

def ZB_AttentionGradOp
    : ZB_BackwardOp<"attention_grad", [], ["getWorkspaceBytes"]> {
  let summary = "the gradients of zb.attention w.r.t. q, k and v";
  let description = [{
    Recomputes each query head's probabilities from `q` and `k`, then
    `dV = P^T dO`, `dP = dO V^T`, `dS = P * (dP - rowsum(dP * P))`,
    `dQ = dS K / sqrt(d)`, `dK = dS^T Q / sqrt(d)`; a kv head's `dK` and
    `dV` sum over the query heads of its group; with `documents`, under the
    forward's document mask. Three results, typed as `q`, `k` and `v`.

    ```mlir
    %dq, %dk, %dv = zb.attention_grad %dout, %q, %k, %v {heads = 8 : i64, kv_heads = 2 : i64} : (tensor<4x64x512xf32>, tensor<4x64x512xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>) -> (tensor<4x64x512xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>)
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$resultGrad, ZB_FloatTensor:$q,
                       ZB_FloatTensor:$k, ZB_FloatTensor:$v,
                       Optional<ZB_IndexTensor>:$documents,
                       ConfinedAttr<I64Attr, [IntPositive]>:$heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$kv_heads);
  let results = (outs ZB_FloatTensor:$dq, ZB_FloatTensor:$dk,
                      ZB_FloatTensor:$dv);
  let assemblyFormat = [{
    $resultGrad `,` $q `,` $k `,` $v (`documents` $documents^)? attr-dict `:` functional-type(operands, results)
  }];
}

def ZB_CrossEntropyGradOp : ZB_BackwardOp<"cross_entropy_grad"> {
  let summary = "dlogits = dloss * (softmax(logits) - onehot(labels)) / N";
  let description = [{
    The logits gradient of zb.cross_entropy, `N` the number of labels that
    are not `ignore_index` (the loss is their mean); the rows of ignored
    labels are 0.

    ```mlir
    %dl = zb.cross_entropy_grad %logits, %labels, %dloss : (tensor<8x4xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$logits, ZB_IndexTensor:$labels,
                       ZB_ScalarFloatTensor:$lossGrad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $lossGrad attr-dict `:` functional-type(operands, results)
  }];
}

// The output layer over one vocabulary shard (Note [Softmax over
// vocabulary shards] in runtime/contracts/include/zbc/contracts/
// VocabShards.h): the logits are a rank's columns [first, first + R) of a
// vocabulary of `vocab`; labels name columns of the whole.
class ZB_VocabShardOp<string mnemonic> : ZB_BackwardOp<mnemonic> {
  code vocabDecls = [{
    /// The statistics' type for `logits` [..., R]: [4, ...], f32 or bf16
    /// as the logits.
    static mlir::RankedTensorType statsTypeOf(mlir::RankedTensorType logits);
  }];
}

def ZB_VocabStatsOp : ZB_VocabShardOp<"vocab_stats"> {
  let summary = "a vocabulary shard's softmax statistics, per row";
  let description = [{
    Planes [m, l, t, m] of each row of the shard's logits: its max m, log
    sum exp(z - m), and t, the logit of the row's label where the shard
    holds it (0 elsewhere, and for an ignored label). A `zb.reduce softmax`
    over every shard merges them in place into [m, S, T, M]: M the max of
    every shard's m, S the sum of exp(m + l - M), T the sum of t; the
    fourth plane is the all-reduce's target, so the shard's own m stays.

    ```mlir
    %stats = zb.vocab_stats %logits, %labels {first = 512 : i64, vocab = 1000 : i64} : (tensor<8x488xf32>, tensor<8xi64>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$logits, ZB_IndexTensor:$labels,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$first,
                       ConfinedAttr<I64Attr, [IntPositive]>:$vocab,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = vocabDecls;
}

def ZB_VocabLossOp : ZB_VocabShardOp<"vocab_loss"> {
  let summary = "the mean cross-entropy from merged vocabulary statistics";
  let description = [{
    zb.cross_entropy of the whole logits from the merged statistics
    [m, S, T, M] of a `zb.reduce softmax`: the mean over the rows whose
    label is not `ignore_index` of M + log S - T (0 when every label is).

    ```mlir
    %loss = zb.vocab_loss %stats, %labels {vocab = 1000 : i64} : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$stats, ZB_IndexTensor:$labels,
                       ConfinedAttr<I64Attr, [IntPositive]>:$vocab,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs ZB_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $stats `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = vocabDecls;
}

def ZB_VocabGradOp : ZB_VocabShardOp<"vocab_grad"> {
  let summary = "a vocabulary shard's columns of the cross-entropy's "
                "logits gradient";
  let description = [{
    zb.cross_entropy_grad of the whole logits, on this shard's columns:
    dloss (exp(z - M - log S) - onehot(labels)) / N from the merged
    statistics [m, S, T, M], N the labels that are not `ignore_index`
    (their rows 0).

    ```mlir
    %dz = zb.vocab_grad %logits, %labels, %stats, %dloss {first = 512 : i64, vocab = 1000 : i64} : (tensor<8x488xf32>, tensor<8xi64>, tensor<4x8xf32>, tensor<f32>) -> tensor<8x488xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$logits, ZB_IndexTensor:$labels,
                       ZB_FloatTensor:$stats, ZB_ScalarFloatTensor:$lossGrad,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$first,
                       ConfinedAttr<I64Attr, [IntPositive]>:$vocab,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $stats `,` $lossGrad attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = vocabDecls;
}

} // opDocGroup = ZB_BackwardGroup

#endif // ZBC_DIALECT_ZB_ZBBACKWARDOPS_TD
