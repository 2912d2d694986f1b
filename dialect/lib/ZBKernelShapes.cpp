//===- ZBKernelShapes.cpp - each kernel op's buffers and dims -------------===//
//
// kernelShapeOf for every row of the kernel table (KernelShape.h): the op's
// tensors in the row's buffer order and the row's dims, read from the op's
// types and attributes; and KernelOpInterface's verifier, which holds every
// buffer's element count to the row's expression of those dims. `leading`
// is the product of all dimensions but the last `n`; `fromEnd(v, i)` is
// dimension i counted from the last (0 the last).
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/KernelShape.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The product of `dims`, saturating (absurd shapes that only a test
/// builds, unverified, must not overflow).
int64_t productOf(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n = saturatingProduct({n, d});
  return n;
}

int64_t elements(Value v) { return productOf(shapeOf(v)); }
int64_t leading(Value v, unsigned n) {
  return productOf(shapeOf(v).drop_back(n));
}
int64_t fromEnd(Value v, unsigned i) {
  ArrayRef<int64_t> shape = shapeOf(v);
  return shape[shape.size() - 1 - i];
}

/// 1 for a weight [out, in] (PyTorch's layout), 0 for [in, out].
int64_t layoutOf(bool weightOutIn) { return weightOutIn ? 1 : 0; }

} // namespace

//===----------------------------------------------------------------------===//
// Model-level ops
//===----------------------------------------------------------------------===//

KernelShape<LinearOp> zbc::zb::kernelShapeOf(LinearOp op) {
  Value x = op.getInput(), y = op.getResult();
  return {{x, op.getWeight(), y},
          {leading(x, 1), fromEnd(x, 0), fromEnd(y, 0),
           layoutOf(op.getWeightOutIn())}};
}

KernelShape<MatmulOp> zbc::zb::kernelShapeOf(MatmulOp op) {
  Value a = op.getLhs(), b = op.getRhs();
  return {{a, b, op.getResult()},
          {leading(a, 2), fromEnd(a, 1), fromEnd(a, 0), fromEnd(b, 0)}};
}

KernelShape<BiasAddOp> zbc::zb::kernelShapeOf(BiasAddOp op) {
  Value x = op.getInput();
  return {{x, op.getBias(), op.getResult()}, {leading(x, 1), fromEnd(x, 0)}};
}

KernelShape<AddOp> zbc::zb::kernelShapeOf(AddOp op) {
  return {{op.getLhs(), op.getRhs(), op.getResult()},
          {elements(op.getResult())}};
}

KernelShape<ReluOp> zbc::zb::kernelShapeOf(ReluOp op) {
  return {{op.getInput(), op.getResult()}, {elements(op.getResult())}};
}

KernelShape<TransposeOp> zbc::zb::kernelShapeOf(TransposeOp op) {
  Value x = op.getInput();
  return {{x, op.getResult()}, {fromEnd(x, 1), fromEnd(x, 0)}};
}

KernelShape<GeluOp> zbc::zb::kernelShapeOf(GeluOp op) {
  return {{op.getInput(), op.getResult()}, {elements(op.getResult())}};
}

KernelShape<SwiGluOp> zbc::zb::kernelShapeOf(SwiGluOp op) {
  return {{op.getGate(), op.getUp(), op.getResult()},
          {elements(op.getResult())}};
}

/// zb.rope and zb.rope_grad rotate `x` [B, S, width] by its positions.
template <typename RopeLike>
KernelShape<RopeLike> ropeShape(RopeLike op, Value x) {
  return {
      {x, op.getPositions(), op.getResult()},
      {leading(x, 1), fromEnd(x, 0), static_cast<int64_t>(op.getHeadDim())}};
}

KernelShape<RopeOp> zbc::zb::kernelShapeOf(RopeOp op) {
  return ropeShape(op, op.getInput());
}

KernelShape<LayerNormOp> zbc::zb::kernelShapeOf(LayerNormOp op) {
  Value y = op.getResult();
  return {{op.getInput(), op.getGamma(), op.getBeta(), y},
          {leading(y, 1), fromEnd(y, 0)}};
}

KernelShape<RmsNormOp> zbc::zb::kernelShapeOf(RmsNormOp op) {
  Value y = op.getResult();
  return {{op.getInput(), op.getWeight(), y}, {leading(y, 1), fromEnd(y, 0)}};
}

KernelShape<EmbeddingOp> zbc::zb::kernelShapeOf(EmbeddingOp op) {
  Value table = op.getTable();
  return {{op.getIndices(), table, op.getResult()},
          {elements(op.getIndices()), fromEnd(table, 1), fromEnd(table, 0)}};
}

KernelShape<CausalAttentionOp> zbc::zb::kernelShapeOf(CausalAttentionOp op) {
  Value qkv = op.getQkv(), y = op.getResult();
  return {{qkv, op.getDocuments(), y, Value()},
          {leading(qkv, 2), fromEnd(qkv, 1), fromEnd(y, 0),
           static_cast<int64_t>(op.getHeads())}};
}

/// zb.attention's and zb.attention_grad's dims from q [B, S, heads * d].
template <typename AttentionLike>
KernelDims<AttentionLike> groupedAttentionDims(AttentionLike op) {
  ArrayRef<int64_t> q = shapeOf(op.getQ());
  int64_t heads = static_cast<int64_t>(op.getHeads());
  return {q[0], q[1], heads, static_cast<int64_t>(op.getKvHeads()),
          q[2] / heads};
}

KernelShape<AttentionOp> zbc::zb::kernelShapeOf(AttentionOp op) {
  return {{op.getQ(), op.getK(), op.getV(), op.getDocuments(), op.getResult(),
           Value()},
          groupedAttentionDims(op)};
}

KernelShape<CrossEntropyOp> zbc::zb::kernelShapeOf(CrossEntropyOp op) {
  Value logits = op.getLogits(), labels = op.getLabels();
  return {{logits, labels, op.getResult()},
          {elements(labels), fromEnd(logits, 0), static_cast<int64_t>(op.getIgnoreIndex())}};
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

KernelShape<FillOp> zbc::zb::kernelShapeOf(FillOp op) {
  return {{op.getResult()}, {elements(op.getResult())}};
}

KernelShape<LinearGradInputOp> zbc::zb::kernelShapeOf(LinearGradInputOp op) {
  Value dy = op.getResultGrad(), dx = op.getResult();
  return {{dy, op.getWeight(), dx},
          {leading(dy, 1), fromEnd(dx, 0), fromEnd(dy, 0),
           layoutOf(op.getWeightOutIn())}};
}

KernelShape<LinearGradWeightOp> zbc::zb::kernelShapeOf(LinearGradWeightOp op) {
  Value x = op.getInput(), dy = op.getResultGrad();
  return {{x, dy, op.getResult()},
          {leading(x, 1), fromEnd(x, 0), fromEnd(dy, 0),
           layoutOf(op.getWeightOutIn())}};
}

KernelShape<MatmulGradLhsOp> zbc::zb::kernelShapeOf(MatmulGradLhsOp op) {
  Value dc = op.getResultGrad(), b = op.getRhs();
  return {{dc, b, op.getResult()},
          {leading(dc, 2), fromEnd(dc, 1), fromEnd(b, 1), fromEnd(dc, 0)}};
}

KernelShape<MatmulGradRhsOp> zbc::zb::kernelShapeOf(MatmulGradRhsOp op) {
  Value a = op.getLhs(), dc = op.getResultGrad();
  return {{a, dc, op.getResult()},
          {leading(a, 2), fromEnd(a, 1), fromEnd(a, 0), fromEnd(dc, 0)}};
}

KernelShape<BiasGradOp> zbc::zb::kernelShapeOf(BiasGradOp op) {
  Value dy = op.getResultGrad();
  return {{dy, op.getResult()}, {leading(dy, 1), fromEnd(dy, 0)}};
}

KernelShape<ReluGradOp> zbc::zb::kernelShapeOf(ReluGradOp op) {
  return {{op.getResultGrad(), op.getInput(), op.getResult()},
          {elements(op.getResult())}};
}

KernelShape<GeluGradOp> zbc::zb::kernelShapeOf(GeluGradOp op) {
  return {{op.getResultGrad(), op.getInput(), op.getResult()},
          {elements(op.getResult())}};
}

KernelShape<RopeGradOp> zbc::zb::kernelShapeOf(RopeGradOp op) {
  return ropeShape(op, op.getResultGrad());
}

KernelShape<SwiGluGradGateOp> zbc::zb::kernelShapeOf(SwiGluGradGateOp op) {
  return {{op.getResultGrad(), op.getGate(), op.getUp(), op.getResult()},
          {elements(op.getResult())}};
}

KernelShape<SwiGluGradUpOp> zbc::zb::kernelShapeOf(SwiGluGradUpOp op) {
  return {{op.getResultGrad(), op.getGate(), op.getResult()},
          {elements(op.getResult())}};
}

KernelShape<LayerNormGradInputOp>
zbc::zb::kernelShapeOf(LayerNormGradInputOp op) {
  Value dx = op.getResult();
  return {{op.getResultGrad(), op.getInput(), op.getGamma(), dx},
          {leading(dx, 1), fromEnd(dx, 0)}};
}

KernelShape<LayerNormGradGammaOp>
zbc::zb::kernelShapeOf(LayerNormGradGammaOp op) {
  Value x = op.getInput();
  return {{op.getResultGrad(), x, op.getResult()},
          {leading(x, 1), fromEnd(x, 0)}};
}

KernelShape<RmsNormGradInputOp> zbc::zb::kernelShapeOf(RmsNormGradInputOp op) {
  Value dx = op.getResult();
  return {{op.getResultGrad(), op.getInput(), op.getWeight(), dx},
          {leading(dx, 1), fromEnd(dx, 0)}};
}

KernelShape<RmsNormGradWeightOp>
zbc::zb::kernelShapeOf(RmsNormGradWeightOp op) {
  Value x = op.getInput();
  return {{op.getResultGrad(), x, op.getResult()},
          {leading(x, 1), fromEnd(x, 0)}};
}

KernelShape<EmbeddingGradOp> zbc::zb::kernelShapeOf(EmbeddingGradOp op) {
  Value dy = op.getResultGrad();
  return {{op.getIndices(), dy, op.getResult()},
          {elements(op.getIndices()), static_cast<int64_t>(op.getVocab()),
           fromEnd(dy, 0)}};
}

KernelShape<CausalAttentionGradOp>
zbc::zb::kernelShapeOf(CausalAttentionGradOp op) {
  Value qkv = op.getQkv(), dout = op.getResultGrad();
  return {{dout, qkv, op.getDocuments(), op.getResult(), Value()},
          {leading(qkv, 2), fromEnd(qkv, 1), fromEnd(dout, 0),
           static_cast<int64_t>(op.getHeads())}};
}

KernelShape<AttentionGradOp> zbc::zb::kernelShapeOf(AttentionGradOp op) {
  return {{op.getResultGrad(), op.getQ(), op.getK(), op.getV(),
           op.getDocuments(), op.getDq(), op.getDk(), op.getDv(), Value()},
          groupedAttentionDims(op)};
}

KernelShape<CrossEntropyGradOp> zbc::zb::kernelShapeOf(CrossEntropyGradOp op) {
  Value logits = op.getLogits(), labels = op.getLabels();
  return {{logits, labels, op.getLossGrad(), op.getResult()},
          {elements(labels), fromEnd(logits, 0), static_cast<int64_t>(op.getIgnoreIndex())}};
}

KernelShape<VocabStatsOp> zbc::zb::kernelShapeOf(VocabStatsOp op) {
  Value logits = op.getLogits(), labels = op.getLabels();
  return {{logits, labels, op.getResult()},
          {elements(labels), fromEnd(logits, 0),
           static_cast<int64_t>(op.getFirst()),
           static_cast<int64_t>(op.getVocab()),
           static_cast<int64_t>(op.getIgnoreIndex())}};
}

KernelShape<VocabLossOp> zbc::zb::kernelShapeOf(VocabLossOp op) {
  Value labels = op.getLabels();
  return {{op.getStats(), labels, op.getResult()},
          {elements(labels), static_cast<int64_t>(op.getVocab()),
           static_cast<int64_t>(op.getIgnoreIndex())}};
}

KernelShape<VocabGradOp> zbc::zb::kernelShapeOf(VocabGradOp op) {
  Value logits = op.getLogits(), labels = op.getLabels();
  return {{logits, labels, op.getStats(), op.getLossGrad(), op.getResult()},
          {elements(labels), fromEnd(logits, 0),
           static_cast<int64_t>(op.getFirst()),
           static_cast<int64_t>(op.getVocab()),
           static_cast<int64_t>(op.getIgnoreIndex())}};
}

//===----------------------------------------------------------------------===//
// KernelOpInterface's verifier
//===----------------------------------------------------------------------===//

namespace {

/// One buffer of a row at given dims: its name and element count (none for
/// the workspace, whose bytes the row and getWorkspaceBytes take from one
/// function of KernelTable.h).
struct RowBuffer {
  const char *name;
  int64_t elements;
  bool workspace;
  bool optional = false; // the op may go without it (a null value)
};

template <typename OpT>
SmallVector<RowBuffer, 8> rowBuffersAt(const KernelDims<OpT> &dims);

// The row's dims as locals named as the row names them, then its buffers'
// element counts, the row's expressions of those locals.
#define ZB_DIM_LOCAL(name) [[maybe_unused]] int64_t name = dims.name;
#define ZB_ROW_BUFFER(role, id, elements) ZB_ROW_BUFFER_##role(id, elements)
#define ZB_ROW_BUFFER_In(id, elements)                                         \
  rowBuffers.push_back({#id, (elements), false});
#define ZB_ROW_BUFFER_Out(id, elements)                                        \
  rowBuffers.push_back({#id, (elements), false});
#define ZB_ROW_BUFFER_Indices(id, elements)                                    \
  rowBuffers.push_back({#id, (elements), false});
#define ZB_ROW_BUFFER_OptIndices(id, elements)                                 \
  rowBuffers.push_back({#id, (elements), false, true});
#define ZB_ROW_BUFFER_Workspace(id, bytes) rowBuffers.push_back({#id, 0, true});
#define ZB_NO_BUF(role, id, elements)
#define ZB_NO_DIM(name)
#define ZB_NO_REAL(name)
#define ZB_ROW_BUFFERS_AT(NAME, METHOD, OP, SIGNATURE)                         \
  template <>                                                                  \
  SmallVector<RowBuffer, 8> rowBuffersAt<OP>(const KernelDims<OP> &dims) {     \
    SIGNATURE(ZB_NO_BUF, ZB_DIM_LOCAL, ZB_NO_REAL)                             \
    SmallVector<RowBuffer, 8> rowBuffers;                                      \
    SIGNATURE(ZB_ROW_BUFFER, ZB_NO_DIM, ZB_NO_REAL)                            \
    return rowBuffers;                                                         \
  }                                                                            \
  static_assert(OP::hasTrait<KernelOpInterface::Trait>(),                      \
                "a kernel table row's op must implement KernelOpInterface");
ZBC_RT_KERNELS(ZB_ROW_BUFFERS_AT)
#undef ZB_ROW_BUFFERS_AT

template <typename OpT> LogicalResult verifyRow(OpT op, StringRef kernel) {
  KernelShape<OpT> shape = kernelShapeOf(op);
  SmallVector<RowBuffer, 8> row = rowBuffersAt<OpT>(shape.dims);
  auto bug = [&]() {
    InFlightDiagnostic diag = op.emitOpError("does not fit its kernel row ");
    diag << kernel << ": ";
    return diag;
  };
  if (row.size() != shape.buffers.size())
    return bug() << "the row takes " << row.size()
                 << " buffers, the op's kernel shape has "
                 << shape.buffers.size() << " (a compiler bug)";
  for (auto [buffer, value] : llvm::zip_equal(row, shape.buffers)) {
    if (buffer.optional && !value)
      continue;
    if (buffer.workspace != !value)
      return bug() << "buffer '" << buffer.name << "' is "
                   << (buffer.workspace ? "" : "not ")
                   << "the workspace in the row (a compiler bug)";
    if (value && elements(value) != buffer.elements)
      return bug() << "buffer '" << buffer.name << "' has " << elements(value)
                   << " elements, the row states " << buffer.elements
                   << " at the op's dims (a compiler bug)";
  }
  return success();
}

} // namespace

LogicalResult zbc::zb::verifyKernelShape(Operation *op) {
#define ZB_VERIFY_ROW(NAME, METHOD, OP, SIGNATURE)                             \
  .Case([](OP o) { return verifyRow(o, "zbc_rt_" #NAME); })
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      ZBC_RT_KERNELS(ZB_VERIFY_ROW)
          .Default([](Operation *other) {
            return other->emitOpError(
                "runs as a kernel (KernelOpInterface) but has no row in the "
                "kernel table (zbc/runtime/KernelTable.h)");
          });
#undef ZB_VERIFY_ROW
}
