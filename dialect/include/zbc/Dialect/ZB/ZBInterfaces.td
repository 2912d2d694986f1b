//===- ZBInterfaces.td - zb op interfaces -------------------*- tablegen -*-===//
//
// DifferentiableOpInterface: the gradient rule of a model-level op, used by
// zb-autodiff. Each rule is documented with its op (ZBModelOps.td) and in
// the gradient table of dialect/docs/ZB.md; the implementations live in
// dialect/lib/ZBGradients.cpp.
//
// KernelOpInterface: the facts of an op that runs as one kernel of the
// runtime (one row of the kernel table): its FLOPs and its workspace
// bytes, stated on the op (dialect/lib/ZBCosts.cpp) from its kernel shape
// (KernelShape.h), which its verifier holds to the table's row.
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

def ZB_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::zbc::zb";
  let description = [{
    A tensor op that code generation lowers to one kernel call: it has a
    row in the runtime's kernel table (Note [Kernel table] in
    zbc/runtime/KernelTable.h) and a kernel shape (`kernelShapeOf`,
    KernelShape.h): its buffers in the row's order and the row's dims, read
    from its types. The facts below are computed from that shape, so the
    cost model, the memory plan and the code generator read one statement
    of the op's shape. The interface's verifier, run after the op's own
    (whose shape rule makes the types consistent), checks that every
    buffer's element count is the row's at the op's dims.
  }];
  let methods = [
    InterfaceMethod<[{
        The FLOPs of one run of the op: matrix products (2*M*K*N each) as
        matmul FLOPs, everything else as a per-element constant times the
        elements (the table in dialect/lib/ZBCosts.cpp). Saturates at
        INT64_MAX.
      }],
      "::zbc::OpCost", "getFlops">,
    InterfaceMethod<[{
        The scratch the kernel needs beside its operands and results, in
        bytes: the memory plan reserves it at the op, and the runtime's
        kernel row asks for at least as much (the same function of
        KernelTable.h). 0 for a kernel without a workspace.
      }],
      "int64_t", "getWorkspaceBytes", (ins), [{}], [{ return 0; }]>,
  ];
  let verify = [{ return ::zbc::zb::verifyKernelShape($_op); }];
  let verifyWithRegions = 1;
}

#endif // ZBC_DIALECT_ZB_ZBINTERFACES_TD
