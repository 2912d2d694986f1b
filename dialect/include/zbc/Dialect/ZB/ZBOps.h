//===- ZBOps.h - zb dialect operations ----------------------------*- C++ -*-===//
//
// Declares the zb ops (model level and schedule level). Generated from
// ZBOps.td; verifiers and helpers live in dialect/lib/ZBOps.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBOPS_H
#define ZBC_DIALECT_ZB_ZBOPS_H

// The generated op classes need these before they are included.
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include "zbc/Dialect/ZB/OpCost.h"
#include "zbc/Dialect/ZB/ZBDialect.h"
#include "zbc/Dialect/ZB/ZBTypes.h"

namespace zbc::zb {
class LossOp;
class PhaseOp;
class YieldOp;

/// Refuses an attribute the op does not define (a guessed `{rms = true}` on
/// zb.layernorm): every discardable attribute but zb.fuse_weight_grad,
/// named with the op's own attributes. The KnownAttributes trait's check.
mlir::LogicalResult verifyKnownAttributes(mlir::Operation *op);

/// The ops a user writes (model-level, tensor and backward ops) take only
/// the attributes they define.
template <typename ConcreteType>
class KnownAttributes
    : public mlir::OpTrait::TraitBase<ConcreteType, KnownAttributes> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyKnownAttributes(op);
  }
};

/// KernelOpInterface's verifier: every buffer of the op's kernel shape has
/// the element count its kernel table row states at the shape's dims
/// (dialect/lib/ZBKernelShapes.cpp).
mlir::LogicalResult verifyKernelShape(mlir::Operation *op);
} // namespace zbc::zb

#include "zbc/Dialect/ZB/ZBInterfaces.h.inc"

#define GET_OP_CLASSES
#include "zbc/Dialect/ZB/ZBOps.h.inc"

namespace zbc::zb {

/// Bytes of a statically shaped tensor (elements x element width, at least
/// one byte per element). Verified zb tensors stay below 2^50 bytes.
int64_t getNumBytes(mlir::Type tensorType);

/// A discardable unit attribute on a model-level op: keep the weight-gradient
/// work of its gradient rule in B (a selective split). zb-autodiff copies it
/// to the ops the rule builds; zb-split-backward keeps those in B.
inline constexpr llvm::StringLiteral kFuseWeightGradAttrName =
    "zb.fuse_weight_grad";

} // namespace zbc::zb

#endif // ZBC_DIALECT_ZB_ZBOPS_H
