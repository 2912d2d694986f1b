/*===- KernelTable.h - the one table of the zb ops' kernels -------*- C -*-===//
 *
 * Note [Kernel table]
 * Every zb op that code generation lowers to a kernel call has one row
 * here, and everything that must agree about that call is derived from it:
 *  - the C ABI's prototype, zbc_rt_NAME(rank, buffer ids..., dims...,
 *    reals...) (zbc_runtime.h);
 *  - the ABI's wrapper, which resolves and checks each buffer (element type
 *    and size, from the row's element counts), tells the ledger what the
 *    kernel reads and writes, and calls the device (runtime/src/
 *    KernelCalls.cpp);
 *  - the Device's virtual, METHOD(element, pointers..., dims..., reals as
 *    float) (runtime/src/Device.h), which each backend overrides;
 *  - the op's kernel shape (KernelShape.h, dialect/lib/ZBKernelShapes.cpp):
 *    OP's buffers in the row's order and its dims, each read once from its
 *    types; the op's verifier checks that every buffer's element count is
 *    the row's at those dims, and the cost model's FLOPs and the memory
 *    plan's workspace bytes (KernelOpInterface) are computed from them;
 *  - the code generator's op switch: which MLIR op (OP, a zb dialect class)
 *    becomes which call, with the kernel shape's buffers and dims and the
 *    op's reals, checked to be, in order, the row's kinds
 *    (codegen/lib/ZBToEmitC.cpp).
 * A row is ZBC_RT_KERNEL_ROW(NAME, METHOD, OP, SIGNATURE), SIGNATURE a macro
 * SIGNATURE(BUF, DIM, REAL) listing, in the call's order:
 *  - BUF(ROLE, id, elements): a buffer, ROLE In (read), Out (written),
 *    Indices (integer indices, read), OptIndices (integer indices the op
 *    may go without: ZBC_RT_ABSENT in the call, a null pointer on the
 *    device) or
 *    Workspace (scratch: `elements` is the least bytes it needs, and the
 *    device also gets its size);
 *  - DIM(name): an int64 dimension (buffer sizes are expressions of them;
 *    `call.elementBytes()` is the call's float element size);
 *  - REAL(name): a double in the ABI, a float for the device.
 * Adding an op's kernel is one row here, one override per backend, and the
 * op's kernel shape (dialect/docs/ZB.md: Adding an op).
 * Plain C: the C ABI header, the runtime, the dialect and the code
 * generator include it; the OP names mean something to the last two only.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ZBC_RUNTIME_KERNELTABLE_H
#define ZBC_RUNTIME_KERNELTABLE_H

#include <stdint.h>

/* The id of an optional buffer (OptIndices) the op goes without: apart from
 * every buffer id (>= 0) and every frame slot (ZBC_RT_FRAME(k) < 0). */
#define ZBC_RT_ABSENT INT32_MIN

/* The workspaces (scratch) of the attention kernels, in bytes: the rows'
 * Workspace sizes, and the dialect's KernelOpInterface::getWorkspaceBytes,
 * which the memory plan reserves (one statement for both sides). causal
 * attention keeps one S x S score matrix, its gradient two (the CPU's
 * kernels; the GPU's use less). zb.attention's is the score matrix the CPU
 * uses and the packed q | k | v the CUDA backend builds for its causal
 * kernels (GroupedAttention.cu), with 64 elements to spare for aligning
 * what follows the packed tensor; its gradient's twice that. */
static inline int64_t zbc_rt_causal_attention_workspace(int64_t seq,
                                                        int64_t element_bytes) {
  return seq * seq * element_bytes;
}
static inline int64_t
zbc_rt_causal_attention_grad_workspace(int64_t seq, int64_t element_bytes) {
  return 2 * zbc_rt_causal_attention_workspace(seq, element_bytes);
}
static inline int64_t zbc_rt_attention_workspace(int64_t batch, int64_t seq,
                                                 int64_t heads,
                                                 int64_t head_dim,
                                                 int64_t element_bytes) {
  return (seq * seq + 3 * batch * seq * heads * head_dim + 64) *
         element_bytes;
}
static inline int64_t
zbc_rt_attention_grad_workspace(int64_t batch, int64_t seq, int64_t heads,
                                int64_t head_dim, int64_t element_bytes) {
  return 2 * zbc_rt_attention_workspace(batch, seq, heads, head_dim,
                                        element_bytes);
}

/* Signatures, one per kernel. */
/* weight_out_in: 1 if w is [out, in] (PyTorch's layout), 0 if [in, out]. */
#define ZBC_RT_SIG_LINEAR(B, D, R)                                             \
  B(In, x, rows * in) B(In, w, in * out) B(Out, y, rows * out) D(rows) D(in)   \
      D(out) D(weight_out_in)
#define ZBC_RT_SIG_MATMUL(B, D, R)                                             \
  B(In, a, batch * m * k) B(In, b, batch * k * n) B(Out, c, batch * m * n)     \
      D(batch) D(m) D(k) D(n)
#define ZBC_RT_SIG_BIAS_ADD(B, D, R)                                           \
  B(In, x, rows * n) B(In, bias, n) B(Out, y, rows * n) D(rows) D(n)
#define ZBC_RT_SIG_ADD(B, D, R) B(In, a, n) B(In, b, n) B(Out, y, n) D(n)
#define ZBC_RT_SIG_RELU(B, D, R) B(In, x, n) B(Out, y, n) D(n)
/* y [cols, rows] = x [rows, cols] transposed. */
#define ZBC_RT_SIG_TRANSPOSE(B, D, R)                                          \
  B(In, x, rows * cols) B(Out, y, rows * cols) D(rows) D(cols)
#define ZBC_RT_SIG_GELU(B, D, R) B(In, x, n) B(Out, y, n) D(n)
#define ZBC_RT_SIG_SWIGLU(B, D, R) B(In, gate, n) B(In, up, n) B(Out, y, n) D(n)
/* Rotary embeddings (Note [RoPE frequencies]): x and y are [rows, width],
 * width = heads * head_dim; a llama3_factor of 0 means no scaling. */
#define ZBC_RT_SIG_ROPE(B, D, R)                                               \
  B(In, x, rows * width) B(Indices, positions, rows) B(Out, y, rows * width)   \
      D(rows) D(width) D(head_dim) R(theta) R(llama3_factor)                   \
          R(llama3_low_freq_factor) R(llama3_high_freq_factor)                 \
              R(llama3_original_max_positions)
#define ZBC_RT_SIG_LAYERNORM(B, D, R)                                          \
  B(In, x, rows * n) B(In, gamma, n) B(In, beta, n) B(Out, y, rows * n)        \
      D(rows) D(n) R(epsilon)
#define ZBC_RT_SIG_RMSNORM(B, D, R)                                            \
  B(In, x, rows * n) B(In, weight, n) B(Out, y, rows * n) D(rows) D(n)         \
      R(epsilon)
#define ZBC_RT_SIG_EMBEDDING(B, D, R)                                          \
  B(Indices, indices, count) B(In, table, vocab * h) B(Out, y, count * h)      \
      D(count) D(vocab) D(h)
/* The attention rows' optional `documents` [batch, seq] is the document mask
 * (Note [Document masks] in dialect/docs/ZB.md). */
#define ZBC_RT_SIG_CAUSAL_ATTENTION(B, D, R)                                   \
  B(In, qkv, batch * seq * 3 * hidden)                                         \
  B(OptIndices, documents, batch * seq) B(Out, out, batch * seq * hidden)      \
      B(Workspace, workspace,                                                  \
        zbc_rt_causal_attention_workspace(seq, call.elementBytes()))           \
          D(batch) D(seq) D(hidden) D(heads)
/* Grouped-query attention on separate q, k, v. */
#define ZBC_RT_SIG_ATTENTION(B, D, R)                                          \
  B(In, q, batch * seq * heads * head_dim)                                     \
      B(In, k, batch * seq * kv_heads * head_dim)                              \
          B(In, v, batch * seq * kv_heads * head_dim)                          \
              B(OptIndices, documents, batch * seq)                            \
              B(Out, out, batch * seq * heads * head_dim)                      \
                  B(Workspace, workspace,                                      \
                    zbc_rt_attention_workspace(batch, seq, heads, head_dim,    \
                                               call.elementBytes()))           \
                      D(batch) D(seq) D(heads) D(kv_heads) D(head_dim)
/* Labels equal to ignore_index count for nothing. */
#define ZBC_RT_SIG_CROSS_ENTROPY(B, D, R)                                      \
  B(In, logits, rows * classes) B(Indices, labels, rows) B(Out, loss, 1)       \
      D(rows) D(classes) D(ignore_index)
#define ZBC_RT_SIG_FILL(B, D, R) B(Out, y, n) D(n) R(value)
#define ZBC_RT_SIG_LINEAR_GRAD_INPUT(B, D, R)                                  \
  B(In, dy, rows * out) B(In, w, in * out) B(Out, dx, rows * in) D(rows)       \
      D(in) D(out) D(weight_out_in)
#define ZBC_RT_SIG_LINEAR_GRAD_WEIGHT(B, D, R)                                 \
  B(In, x, rows * in) B(In, dy, rows * out) B(Out, dw, in * out) D(rows)       \
      D(in) D(out) D(weight_out_in)
#define ZBC_RT_SIG_MATMUL_GRAD_LHS(B, D, R)                                    \
  B(In, dc, batch * m * n) B(In, b, batch * k * n) B(Out, da, batch * m * k)   \
      D(batch) D(m) D(k) D(n)
#define ZBC_RT_SIG_MATMUL_GRAD_RHS(B, D, R)                                    \
  B(In, a, batch * m * k) B(In, dc, batch * m * n) B(Out, db, batch * k * n)   \
      D(batch) D(m) D(k) D(n)
#define ZBC_RT_SIG_BIAS_GRAD(B, D, R)                                          \
  B(In, dy, rows * n) B(Out, db, n) D(rows) D(n)
#define ZBC_RT_SIG_RELU_GRAD(B, D, R)                                          \
  B(In, dy, n) B(In, x, n) B(Out, dx, n) D(n)
#define ZBC_RT_SIG_GELU_GRAD(B, D, R)                                          \
  B(In, dy, n) B(In, x, n) B(Out, dx, n) D(n)
#define ZBC_RT_SIG_SWIGLU_GRAD_GATE(B, D, R)                                   \
  B(In, dy, n) B(In, gate, n) B(In, up, n) B(Out, dgate, n) D(n)
#define ZBC_RT_SIG_SWIGLU_GRAD_UP(B, D, R)                                     \
  B(In, dy, n) B(In, gate, n) B(Out, dup, n) D(n)
#define ZBC_RT_SIG_LAYERNORM_GRAD_INPUT(B, D, R)                               \
  B(In, dy, rows * n) B(In, x, rows * n) B(In, gamma, n)                       \
      B(Out, dx, rows * n) D(rows) D(n) R(epsilon)
#define ZBC_RT_SIG_LAYERNORM_GRAD_GAMMA(B, D, R)                               \
  B(In, dy, rows * n) B(In, x, rows * n) B(Out, dgamma, n) D(rows) D(n)        \
      R(epsilon)
#define ZBC_RT_SIG_RMSNORM_GRAD_INPUT(B, D, R)                                 \
  B(In, dy, rows * n) B(In, x, rows * n) B(In, weight, n)                      \
      B(Out, dx, rows * n) D(rows) D(n) R(epsilon)
#define ZBC_RT_SIG_RMSNORM_GRAD_WEIGHT(B, D, R)                                \
  B(In, dy, rows * n) B(In, x, rows * n) B(Out, dweight, n) D(rows) D(n)       \
      R(epsilon)
#define ZBC_RT_SIG_EMBEDDING_GRAD(B, D, R)                                     \
  B(Indices, indices, count) B(In, dy, count * h) B(Out, dtable, vocab * h)    \
      D(count) D(vocab) D(h)
#define ZBC_RT_SIG_CAUSAL_ATTENTION_GRAD(B, D, R)                              \
  B(In, dout, batch * seq * hidden) B(In, qkv, batch * seq * 3 * hidden)       \
      B(OptIndices, documents, batch * seq)                                    \
      B(Out, dqkv, batch * seq * 3 * hidden)                                   \
          B(Workspace, workspace,                                              \
            zbc_rt_causal_attention_grad_workspace(seq, call.elementBytes()))  \
              D(batch) D(seq) D(hidden) D(heads)
#define ZBC_RT_SIG_ATTENTION_GRAD(B, D, R)                                     \
  B(In, dout, batch * seq * heads * head_dim)                                  \
      B(In, q, batch * seq * heads * head_dim)                                 \
          B(In, k, batch * seq * kv_heads * head_dim)                          \
              B(In, v, batch * seq * kv_heads * head_dim)                      \
                  B(OptIndices, documents, batch * seq)                        \
                  B(Out, dq, batch * seq * heads * head_dim)                   \
                      B(Out, dk, batch * seq * kv_heads * head_dim)            \
                          B(Out, dv, batch * seq * kv_heads * head_dim)        \
                              B(Workspace, workspace,                          \
                                zbc_rt_attention_grad_workspace(               \
                                    batch, seq, heads, head_dim,               \
                                    call.elementBytes()))                      \
                                  D(batch) D(seq) D(heads) D(kv_heads)         \
                                      D(head_dim)
#define ZBC_RT_SIG_CROSS_ENTROPY_GRAD(B, D, R)                                 \
  B(In, logits, rows * classes) B(Indices, labels, rows) B(In, dloss, 1)       \
      B(Out, dlogits, rows * classes) D(rows) D(classes) D(ignore_index)

/* The output layer over a vocabulary shard (Note [Softmax over vocabulary
 * shards] in zbc/contracts/VocabShards.h): logits [rows, columns] are the
 * columns [first, first + columns) of `vocab`; stats are the planes
 * [m, l, t, m] per row, merged by zb.reduce softmax into [m, S, T, M]. */
#define ZBC_RT_SIG_VOCAB_STATS(B, D, R)                                        \
  B(In, logits, rows * columns) B(Indices, labels, rows)                       \
      B(Out, stats, 4 * rows) D(rows) D(columns) D(first) D(vocab)             \
          D(ignore_index)
#define ZBC_RT_SIG_VOCAB_LOSS(B, D, R)                                         \
  B(In, stats, 4 * rows) B(Indices, labels, rows) B(Out, loss, 1) D(rows)      \
      D(vocab) D(ignore_index)
#define ZBC_RT_SIG_VOCAB_GRAD(B, D, R)                                         \
  B(In, logits, rows * columns) B(Indices, labels, rows)                       \
      B(In, stats, 4 * rows) B(In, dloss, 1) B(Out, dlogits, rows * columns)   \
          D(rows) D(columns) D(first) D(vocab) D(ignore_index)

/* The rows: ZBC_RT_KERNEL_ROW(NAME, METHOD, OP, SIGNATURE). */
#define ZBC_RT_KERNELS(ZBC_RT_KERNEL_ROW)                                      \
  ZBC_RT_KERNEL_ROW(linear, linear, LinearOp, ZBC_RT_SIG_LINEAR)               \
  ZBC_RT_KERNEL_ROW(matmul, matmul, MatmulOp, ZBC_RT_SIG_MATMUL)               \
  ZBC_RT_KERNEL_ROW(bias_add, biasAdd, BiasAddOp, ZBC_RT_SIG_BIAS_ADD)         \
  ZBC_RT_KERNEL_ROW(add, add, AddOp, ZBC_RT_SIG_ADD)                           \
  ZBC_RT_KERNEL_ROW(relu, relu, ReluOp, ZBC_RT_SIG_RELU)                       \
  ZBC_RT_KERNEL_ROW(transpose, transpose, TransposeOp, ZBC_RT_SIG_TRANSPOSE)   \
  ZBC_RT_KERNEL_ROW(gelu, gelu, GeluOp, ZBC_RT_SIG_GELU)                       \
  ZBC_RT_KERNEL_ROW(swiglu, swiGlu, SwiGluOp, ZBC_RT_SIG_SWIGLU)               \
  ZBC_RT_KERNEL_ROW(rope, rope, RopeOp, ZBC_RT_SIG_ROPE)                       \
  ZBC_RT_KERNEL_ROW(layernorm, layerNorm, LayerNormOp, ZBC_RT_SIG_LAYERNORM)   \
  ZBC_RT_KERNEL_ROW(rmsnorm, rmsNorm, RmsNormOp, ZBC_RT_SIG_RMSNORM)           \
  ZBC_RT_KERNEL_ROW(embedding, embedding, EmbeddingOp, ZBC_RT_SIG_EMBEDDING)   \
  ZBC_RT_KERNEL_ROW(causal_attention, causalAttention, CausalAttentionOp,      \
                    ZBC_RT_SIG_CAUSAL_ATTENTION)                               \
  ZBC_RT_KERNEL_ROW(attention, attention, AttentionOp, ZBC_RT_SIG_ATTENTION)  \
  ZBC_RT_KERNEL_ROW(cross_entropy, crossEntropy, CrossEntropyOp,               \
                    ZBC_RT_SIG_CROSS_ENTROPY)                                  \
  ZBC_RT_KERNEL_ROW(fill, fill, FillOp, ZBC_RT_SIG_FILL)                       \
  ZBC_RT_KERNEL_ROW(linear_grad_input, linearGradInput, LinearGradInputOp,     \
                    ZBC_RT_SIG_LINEAR_GRAD_INPUT)                              \
  ZBC_RT_KERNEL_ROW(linear_grad_weight, linearGradWeight, LinearGradWeightOp,  \
                    ZBC_RT_SIG_LINEAR_GRAD_WEIGHT)                             \
  ZBC_RT_KERNEL_ROW(matmul_grad_lhs, matmulGradLhs, MatmulGradLhsOp,           \
                    ZBC_RT_SIG_MATMUL_GRAD_LHS)                                \
  ZBC_RT_KERNEL_ROW(matmul_grad_rhs, matmulGradRhs, MatmulGradRhsOp,           \
                    ZBC_RT_SIG_MATMUL_GRAD_RHS)                                \
  ZBC_RT_KERNEL_ROW(bias_grad, biasGrad, BiasGradOp, ZBC_RT_SIG_BIAS_GRAD)     \
  ZBC_RT_KERNEL_ROW(relu_grad, reluGrad, ReluGradOp, ZBC_RT_SIG_RELU_GRAD)     \
  ZBC_RT_KERNEL_ROW(gelu_grad, geluGrad, GeluGradOp, ZBC_RT_SIG_GELU_GRAD)     \
  ZBC_RT_KERNEL_ROW(rope_grad, ropeGrad, RopeGradOp, ZBC_RT_SIG_ROPE)          \
  ZBC_RT_KERNEL_ROW(swiglu_grad_gate, swiGluGradGate, SwiGluGradGateOp,        \
                    ZBC_RT_SIG_SWIGLU_GRAD_GATE)                               \
  ZBC_RT_KERNEL_ROW(swiglu_grad_up, swiGluGradUp, SwiGluGradUpOp,              \
                    ZBC_RT_SIG_SWIGLU_GRAD_UP)                                 \
  ZBC_RT_KERNEL_ROW(layernorm_grad_input, layerNormGradInput,                  \
                    LayerNormGradInputOp, ZBC_RT_SIG_LAYERNORM_GRAD_INPUT)     \
  ZBC_RT_KERNEL_ROW(layernorm_grad_gamma, layerNormGradGamma,                  \
                    LayerNormGradGammaOp, ZBC_RT_SIG_LAYERNORM_GRAD_GAMMA)     \
  ZBC_RT_KERNEL_ROW(rmsnorm_grad_input, rmsNormGradInput, RmsNormGradInputOp,  \
                    ZBC_RT_SIG_RMSNORM_GRAD_INPUT)                             \
  ZBC_RT_KERNEL_ROW(rmsnorm_grad_weight, rmsNormGradWeight,                    \
                    RmsNormGradWeightOp, ZBC_RT_SIG_RMSNORM_GRAD_WEIGHT)       \
  ZBC_RT_KERNEL_ROW(embedding_grad, embeddingGrad, EmbeddingGradOp,            \
                    ZBC_RT_SIG_EMBEDDING_GRAD)                                 \
  ZBC_RT_KERNEL_ROW(causal_attention_grad, causalAttentionGrad,                \
                    CausalAttentionGradOp, ZBC_RT_SIG_CAUSAL_ATTENTION_GRAD)   \
  ZBC_RT_KERNEL_ROW(attention_grad, attentionGrad, AttentionGradOp,            \
                    ZBC_RT_SIG_ATTENTION_GRAD)                                 \
  ZBC_RT_KERNEL_ROW(cross_entropy_grad, crossEntropyGrad, CrossEntropyGradOp,  \
                    ZBC_RT_SIG_CROSS_ENTROPY_GRAD)                             \
  ZBC_RT_KERNEL_ROW(vocab_stats, vocabStats, VocabStatsOp,                     \
                    ZBC_RT_SIG_VOCAB_STATS)                                    \
  ZBC_RT_KERNEL_ROW(vocab_loss, vocabLoss, VocabLossOp, ZBC_RT_SIG_VOCAB_LOSS) \
  ZBC_RT_KERNEL_ROW(vocab_grad, vocabGrad, VocabGradOp, ZBC_RT_SIG_VOCAB_GRAD)

/* The C ABI's parameters of a signature: ids, then dims, then reals (in
 * the order listed, which puts every buffer first). */
#define ZBC_RT_ABI_BUF(role, id, elements) , int32_t id
#define ZBC_RT_ABI_DIM(name) , int64_t name
#define ZBC_RT_ABI_REAL(name) , double name

/* The kinds of a signature's operands in order, as a string: 'b' buffer,
 * 'd' dim, 'r' real (the code generator checks what it emits against it). */
#define ZBC_RT_KIND_BUF(role, id, elements) "b"
#define ZBC_RT_KIND_DIM(name) "d"
#define ZBC_RT_KIND_REAL(name) "r"

#endif /* ZBC_RUNTIME_KERNELTABLE_H */
