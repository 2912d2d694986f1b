//===- ZBModelOps.td - zb model-level operations -*- tablegen -*-===//
//
// Included from ZBOps.td, which holds the shared includes and doc groups.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBMODELOPS_TD
#define ZBC_DIALECT_ZB_ZBMODELOPS_TD

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
    each name appears once. `hf_config`, when present, is the Hugging Face
    `config.json` the model was imported from (`zbc import-hf`), as it
    describes this model (its layer count the model's), for the export.

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
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<StrAttr>:$hf_config);
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

// Ops that exist only in a model body: leaves, cuts and the loss.
class ZB_ModelLevelOp<string mnemonic, list<Trait> traits = []>
    : ZB_Op<mnemonic, !listconcat([HasParent<"ModelOp">, ZB_KnownAttributes],
                                  traits)>;

// Inputs, labels and parameters: declared in a model and, after zb-autodiff,
// in the stage that reads them. They print their result as `%name`.
class ZB_LeafOp<string mnemonic>
    : ZB_Op<mnemonic, [ParentOneOf<["ModelOp", "StageOp"]>, Pure,
        ZB_KnownAttributes,
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
//
// Tensor ops appear in a model and, cloned by zb-autodiff, in the phases of
// its stages. Each has a gradient rule (ZBGradients.cpp) and runs as one
// kernel (KernelOpInterface: ZBCosts.cpp; `kernelMethods` names the
// interface's methods with a default that the op overrides).
class ZB_TensorOp<string mnemonic, list<Trait> traits = [],
                  list<string> kernelMethods = []>
    : ZB_Op<mnemonic, !listconcat([ParentOneOf<["ModelOp", "PhaseOp"]>, Pure,
        ZB_KnownAttributes,
        DeclareOpInterfaceMethods<ZB_DifferentiableOpInterface>,
        DeclareOpInterfaceMethods<ZB_KernelOpInterface, kernelMethods>],
        traits)> {
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

def ZB_LinearOp : ZB_TensorOp<"linear"> {
  let summary = "x @ W for a weight [in, out], or x @ W^T for [out, in]";
  let description = [{
    Multiplies the last dimension of the input (`in` features) by a 2-D
    weight; leading dimensions are kept. The weight is `[in, out]`, or with
    `weight_out_in` PyTorch's `nn.Linear` layout `[out, in]` (`x @ W^T`), so
    that a Hugging Face checkpoint's weights are used as they are stored.
    No bias: a `zb.bias_add` adds one.

    ```mlir
    %y = zb.linear %x, %w : (tensor<4x64x256xf32>, tensor<256x1024xf32>) -> tensor<4x64x1024xf32>
    %q = zb.linear %x, %wq {weight_out_in} : (tensor<4x64x256xf32>, tensor<512x256xf32>) -> tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input, ZB_FloatTensor:$weight,
                       UnitAttr:$weight_out_in);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType input, mlir::RankedTensorType weight,
                    bool weightOutIn,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_TransposeOp : ZB_TensorOp<"transpose"> {
  let summary = "swaps the two dimensions of a 2-D tensor";
  let description = [{
    `[A, B] -> [B, A]`. GPT-2's output head is `x @ wte^T`: the token
    embedding's table, transposed, tied to the head (a parameter used in the
    first and the last stage).

    ```mlir
    %wt = zb.transpose %wte : tensor<256x64xf32> -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType input,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
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

def ZB_CrossEntropyOp : ZB_TensorOp<"cross_entropy"> {
  let summary = "mean softmax cross-entropy of logits over the labels that count";
  let description = [{
    Logits `[..., C]`, labels `[...]` with values in `[0, C)` or equal to
    `ignore_index` (default -100, PyTorch's and Hugging Face's "no loss
    here"): the result is the mean of the token losses over the positions
    whose label is not ignored, a scalar (0 when every label is ignored,
    where PyTorch gives NaN). With no label ignored it is the mean over all
    positions. A training step weighs each microbatch's mean by its share of
    the step's counted labels (Note [Loss over real tokens]).

    ```mlir
    %l = zb.cross_entropy %logits, %targets : (tensor<4x64x1000xf32>, tensor<4x64xi64>) -> tensor<f32>
    %p = zb.cross_entropy %logits, %targets {ignore_index = -1 : i64} : (tensor<4x64x1000xf32>, tensor<4x64xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$logits, ZB_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType logits,
                    mlir::RankedTensorType labels,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
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

def ZB_SwiGluOp : ZB_TensorOp<"swiglu", [SameOperandsAndResultType]> {
  let summary = "silu(gate) * up, elementwise (the gate of a SwiGLU MLP)";
  let description = [{
    `gate * sigmoid(gate) * up`: Llama's MLP is `down(swiglu(gate(x),
    up(x)))` with three bias-free `zb.linear`s.

    ```mlir
    %h = zb.swiglu %g, %u : tensor<4x64x1408xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$gate, ZB_FloatTensor:$up);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
  let hasVerifier = 0;
}

def ZB_RopeOp : ZB_TensorOp<"rope"> {
  let summary = "rotary position embeddings on the heads of q or k";
  let description = [{
    Hugging Face Llama's rotary embedding, rotate-half layout: `x [B, S,
    H * head_dim]` holds `H` heads; within each, with `d = head_dim / 2`,
    feature `j < d` and its partner `j + d` are rotated by the angle
    `p * inv_freq[j]` of the token's position `p = positions[b, s]`:
    `y[j] = x[j] cos - x[j + d] sin`, `y[j + d] = x[j + d] cos + x[j] sin`,
    `inv_freq[j] = theta^(-2j / head_dim)`. With the four `llama3_*`
    attributes (all or none), inv_freq is Llama 3's scaled one
    (`rope_scaling` of type "llama3": `factor`, `low_freq_factor`,
    `high_freq_factor`, `original_max_position_embeddings`). `max_positions`
    bounds the positions (`max_position_embeddings`): the data's range.
    Angles, their sines and cosines are computed in f64; the runtime's
    kernels take theta and the scaling as f32 (exact for the integers that
    configs use).

    ```mlir
    %qr = zb.rope %q, %pos {head_dim = 64 : i64, max_positions = 8192 : i64, theta = 5.0e+05 : f64} : (tensor<4x64x512xf32>, tensor<4x64xi64>) -> tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input, ZB_IndexTensor:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       ConfinedAttr<I64Attr, [IntPositive]>:$max_positions,
                       OptionalAttr<F64Attr>:$llama3_factor,
                       OptionalAttr<F64Attr>:$llama3_low_freq_factor,
                       OptionalAttr<F64Attr>:$llama3_high_freq_factor,
                       OptionalAttr<I64Attr>:$llama3_original_max_positions);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType input,
                    mlir::RankedTensorType positions, int64_t headDim,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
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

def ZB_RmsNormOp : ZB_TensorOp<"rmsnorm"> {
  let summary = "root-mean-square normalisation over the last dimension";
  let description = [{
    `weight * (x * rsqrt(mean(x^2) + epsilon))`, the mean over the last
    dimension; `weight` is 1-D of that size. Llama's, Mistral's and Qwen2's
    RMSNorm (Hugging Face's `LlamaRMSNorm`): the statistics are computed in
    f32 also for bf16 inputs, and, as every bf16 op here, the result is
    rounded once (Hugging Face rounds `x * rsqrt(...)` to the input's type
    before the weight; the two agree in f32). `epsilon` defaults to 1e-6.

    ```mlir
    %y = zb.rmsnorm %x, %w {epsilon = 1.0e-05 : f64} : (tensor<4x64x256xf32>, tensor<256xf32>) -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input, ZB_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType input, mlir::RankedTensorType weight,
                    double epsilon,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_CausalAttentionOp
    : ZB_TensorOp<"causal_attention", [], ["getWorkspaceBytes"]> {
  let summary = "multi-head causal self-attention over packed q, k, v";
  let description = [{
    Input `[B, S, 3H]` holds q, k and v side by side (the output of one
    QKV projection); each is split into `heads` heads of `H / heads`
    features. Position `i` attends to positions `0..i`, scores scaled by
    `1/sqrt(H / heads)`. Result `[B, S, H]`. Projections are separate
    `zb.linear` ops, so this op has no parameters. With `documents`
    (`[B, S]` integers, non-decreasing along each row: packed documents),
    position `i` attends only to the positions `j <= i` of its own document
    (Note [Document masks]).

    ```mlir
    %a = zb.causal_attention %qkv heads(4) : tensor<4x64x768xf32> -> tensor<4x64x256xf32>
    %p = zb.causal_attention %qkv documents(%docs : tensor<4x64xi64>) heads(4) : tensor<4x64x768xf32> -> tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$qkv,
                       Optional<ZB_IndexTensor>:$documents,
                       ConfinedAttr<I64Attr, [IntPositive]>:$heads);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $qkv (`documents` `(` $documents^ `:` type($documents) `)`)?
    `heads` `(` $heads `)` attr-dict `:` type($qkv) `->` type($result)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType qkv, int64_t heads,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  }];
}

def ZB_AttentionOp
    : ZB_TensorOp<"attention", [], ["getWorkspaceBytes"]> {
  let summary = "causal grouped-query attention on separate q, k and v";
  let description = [{
    `q [B, S, heads * d]`, `k` and `v [B, S, kv_heads * d]` (the outputs of
    separate projections, as Llama's q_proj, k_proj and v_proj): query head
    `h` attends with kv head `h / (heads / kv_heads)`, so each kv head
    serves a group of consecutive query heads (grouped-query attention;
    `kv_heads = heads` is multi-head attention, 1 is multi-query). Position
    `i` attends to positions `0..i`, scores scaled by `1/sqrt(d)`; `d` is
    even and at most 256. Result `[B, S, heads * d]`, head `h` in its slice.
    With `documents` (`[B, S]` integers, non-decreasing along each row:
    packed documents), position `i` attends only to the positions `j <= i`
    of its own document (Note [Document masks]).

    ```mlir
    %a = zb.attention %q, %k, %v {heads = 8 : i64, kv_heads = 2 : i64} : (tensor<4x64x512xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>) -> tensor<4x64x512xf32>
    %p = zb.attention %q, %k, %v documents %docs {heads = 8 : i64, kv_heads = 2 : i64} : (tensor<4x64x512xf32>, tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<4x64xi64>) -> tensor<4x64x512xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$q, ZB_FloatTensor:$k,
                       ZB_FloatTensor:$v,
                       Optional<ZB_IndexTensor>:$documents,
                       ConfinedAttr<I64Attr, [IntPositive]>:$heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$kv_heads);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`documents` $documents^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    static mlir::FailureOr<mlir::RankedTensorType>
    inferResultType(mlir::RankedTensorType q, mlir::RankedTensorType k,
                    mlir::RankedTensorType v, int64_t heads, int64_t kvHeads,
                    llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
    /// The features of one head.
    int64_t getHeadDim();
  }];
}

} // opDocGroup = ZB_ModelGroup

#endif // ZBC_DIALECT_ZB_ZBMODELOPS_TD
