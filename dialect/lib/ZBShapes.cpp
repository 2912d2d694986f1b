//===- ZBShapes.cpp - shape rules of the zb tensor ops --------------------===//
//
// One `inferResultType` per model-level tensor op: the result type that
// follows from the operand types, or a diagnostic saying which dimension or
// element type is wrong. The op verifiers (ZBOps.cpp) check parsed IR against
// these rules and the embedded DSL (dsl/) calls them to build ops, so a shape
// error reads the same from a .mlir file and from a C++ model.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBOps.h"

using namespace mlir;
using namespace zbc::zb;

namespace {
using EmitErrorFn = llvm::function_ref<InFlightDiagnostic()>;

/// Checks that two operands share an element type.
LogicalResult checkSameElementType(RankedTensorType a, StringRef aName,
                                   RankedTensorType b, StringRef bName,
                                   EmitErrorFn emitError) {
  if (a.getElementType() == b.getElementType())
    return success();
  return emitError() << "element types differ: " << aName << " has "
                     << a.getElementType() << ", " << bName << " has "
                     << b.getElementType();
}

/// Checks that `vec` is 1-D and as long as the last dimension of `input`
/// (a bias, or a layernorm gain/offset).
LogicalResult checkLastDimVector(RankedTensorType input, RankedTensorType vec,
                                 StringRef vecName, EmitErrorFn emitError) {
  if (input.getRank() < 1)
    return emitError() << "input must have at least one dimension, got "
                       << input;
  if (vec.getRank() != 1)
    return emitError() << vecName << " must be 1-D, got " << vec;
  if (vec.getDimSize(0) != input.getShape().back())
    return emitError() << vecName << " has " << vec.getDimSize(0)
                       << " elements but the input's last dimension is "
                       << input.getShape().back();
  return checkSameElementType(input, "input", vec, vecName, emitError);
}
} // namespace

FailureOr<RankedTensorType>
LinearOp::inferResultType(RankedTensorType input, RankedTensorType weight,
                          EmitErrorFn emitError) {
  if (weight.getRank() != 2)
    return emitError() << "weight must be 2-D [in, out], got " << weight;
  if (input.getRank() < 1)
    return emitError() << "input must have at least one dimension, got "
                       << input;
  if (input.getShape().back() != weight.getDimSize(0))
    return emitError() << "input has " << input.getShape().back()
                       << " features (last dimension) but the weight has "
                       << weight.getDimSize(0) << " rows";
  if (failed(checkSameElementType(input, "input", weight, "weight", emitError)))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weight.getDimSize(1);
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> MatmulOp::inferResultType(RankedTensorType lhs,
                                                      RankedTensorType rhs,
                                                      EmitErrorFn emitError) {
  if (lhs.getRank() < 2 || lhs.getRank() != rhs.getRank())
    return emitError() << "operands must have the same rank, at least 2, got "
                       << lhs << " and " << rhs;
  int64_t rank = lhs.getRank();
  if (lhs.getShape().drop_back(2) != rhs.getShape().drop_back(2))
    return emitError() << "batch dimensions differ: " << lhs << " and " << rhs;
  if (lhs.getDimSize(rank - 1) != rhs.getDimSize(rank - 2))
    return emitError() << "contraction dimensions differ: lhs has "
                       << lhs.getDimSize(rank - 1) << " columns, rhs has "
                       << rhs.getDimSize(rank - 2) << " rows";
  if (failed(checkSameElementType(lhs, "lhs", rhs, "rhs", emitError)))
    return failure();
  SmallVector<int64_t> shape(lhs.getShape());
  shape.back() = rhs.getDimSize(rank - 1);
  return RankedTensorType::get(shape, lhs.getElementType());
}

FailureOr<RankedTensorType> BiasAddOp::inferResultType(RankedTensorType input,
                                                       RankedTensorType bias,
                                                       EmitErrorFn emitError) {
  if (failed(checkLastDimVector(input, bias, "bias", emitError)))
    return failure();
  return input;
}

FailureOr<RankedTensorType>
EmbeddingOp::inferResultType(RankedTensorType indices, RankedTensorType table,
                             EmitErrorFn emitError) {
  if (table.getRank() != 2)
    return emitError() << "table must be 2-D [vocab, hidden], got " << table;
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(table.getDimSize(1));
  return RankedTensorType::get(shape, table.getElementType());
}

FailureOr<RankedTensorType>
CrossEntropyOp::inferResultType(RankedTensorType logits,
                                RankedTensorType labels,
                                EmitErrorFn emitError) {
  if (logits.getRank() != labels.getRank() + 1)
    return emitError() << "logits must have one dimension (classes) more than "
                          "labels, got "
                       << logits << " and " << labels;
  if (logits.getShape().drop_back() != labels.getShape())
    return emitError() << "logits " << logits << " and labels " << labels
                       << " disagree on their leading dimensions";
  return RankedTensorType::get({}, logits.getElementType());
}

FailureOr<RankedTensorType>
LayerNormOp::inferResultType(RankedTensorType input, RankedTensorType gamma,
                             RankedTensorType beta, double epsilon,
                             EmitErrorFn emitError) {
  if (!(epsilon > 0.0))
    return emitError() << "epsilon must be positive, got " << epsilon;
  if (failed(checkLastDimVector(input, gamma, "gamma", emitError)) ||
      failed(checkLastDimVector(input, beta, "beta", emitError)))
    return failure();
  return input;
}

FailureOr<RankedTensorType>
CausalAttentionOp::inferResultType(RankedTensorType qkv, int64_t heads,
                                   EmitErrorFn emitError) {
  if (qkv.getRank() != 3)
    return emitError() << "qkv must be 3-D [batch, seq, 3*hidden], got "
                       << qkv;
  if (heads <= 0)
    return emitError() << "heads must be positive, got " << heads;
  int64_t packed = qkv.getDimSize(2);
  if (packed % 3 != 0)
    return emitError() << "qkv's last dimension (" << packed
                       << ") is not 3*hidden";
  int64_t hidden = packed / 3;
  if (hidden % heads != 0)
    return emitError() << "hidden size " << hidden
                       << " is not divisible by " << heads << " heads";
  return RankedTensorType::get({qkv.getDimSize(0), qkv.getDimSize(1), hidden},
                               qkv.getElementType());
}
