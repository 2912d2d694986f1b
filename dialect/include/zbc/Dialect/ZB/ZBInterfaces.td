//===- ZBInterfaces.td - zb op interfaces -------------------*- tablegen -*-===//
//
// DifferentiableOpInterface: the gradient rule of a model-level op, used by
// zb-autodiff. Each rule is documented with its op (ZBModelOps.td) and in
// the gradient table of dialect/docs/ZB.md; the implementations live in
// dialect/lib/ZBGradients.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBINTERFACES_TD
#define ZBC_DIALECT_ZB_ZBINTERFACES_TD

include "mlir/IR/OpBase.td"

def ZB_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::zbc::zb";
  let description = [{
    A model-level op that zb-autodiff can differentiate. The rule builds, at
    the builder's insertion point (inside a backward `zb.phase`), the
    gradients of the op's operands from the gradient of its single result.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the operand gradients from `resultGrad`, the gradient of this
        op's result. Forward values the rule needs (an operand, say) must be
        fetched through `forward(value)`, which returns that value as the
        backward code sees it (zb-autodiff stashes it from F). Sets
        `operandGrads` to one entry per operand, null where the operand has
        no gradient (integer indices and labels).
      }],
      "void", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$resultGrad,
           "::llvm::function_ref<::mlir::Value(::mlir::Value)>":$forward,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // ZBC_DIALECT_ZB_ZBINTERFACES_TD
