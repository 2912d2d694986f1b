//===- KernelShape.h - each kernel op's call, read from its types -*- C++
//-*-===//
//
// The one statement of how a zb op that runs as a kernel (KernelOpInterface)
// maps onto its row of the runtime's kernel table (Note [Kernel table] in
// zbc/runtime/KernelTable.h): which of its tensors are the row's buffers, in
// the row's order, and the values of the row's dims, read from its types.
// The row states each buffer's element count as an expression of the dims;
// KernelOpInterface's verifier checks those counts against the op's types
// through this shape, the code generator emits the shape's buffers and dims
// as the call's operands, and the op's FLOPs and workspace bytes
// (ZBCosts.cpp) are computed from its dims. The shapes are defined in
// dialect/lib/ZBKernelShapes.cpp, for ops whose types the verifier has
// accepted (the shape rule, inferResultType, makes them consistent).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_KERNELSHAPE_H
#define ZBC_DIALECT_ZB_KERNELSHAPE_H

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/runtime/KernelTable.h"

#include "llvm/ADT/SmallVector.h"

namespace zbc::zb {

/// The dims of op OpT's kernel row, as fields named as the row names them
/// (KernelDims<LinearOp>::rows, ::in, ::out, ::weight_out_in).
template <typename OpT> struct KernelDims;

#define ZB_KERNEL_NO_BUF(role, id, elements)
#define ZB_KERNEL_ROLE(role, id, elements) ZB_KERNEL_ROLE_##role
#define ZB_KERNEL_ROLE_In "i"
#define ZB_KERNEL_ROLE_Out "o"
#define ZB_KERNEL_ROLE_Indices "x"
#define ZB_KERNEL_ROLE_OptIndices "?"
#define ZB_KERNEL_ROLE_Workspace "w"
#define ZB_KERNEL_NO_DIM(name)
#define ZB_KERNEL_NO_REAL(name)
#define ZB_KERNEL_DIM_FIELD(name) int64_t name = 0;
#define ZB_KERNEL_DIM_VISIT(name) visit(name);
#define ZB_KERNEL_DIMS(NAME, METHOD, OP, SIGNATURE)                            \
  template <> struct KernelDims<OP> {                                          \
    SIGNATURE(ZB_KERNEL_NO_BUF, ZB_KERNEL_DIM_FIELD, ZB_KERNEL_NO_REAL)        \
    /** The roles of the row's buffers, one letter each: i In, o Out, x     \
        Indices, ? OptIndices, w Workspace. */                                \
    static constexpr const char *kBufferRoles =                                \
        "" SIGNATURE(ZB_KERNEL_ROLE, ZB_KERNEL_NO_DIM, ZB_KERNEL_NO_REAL);     \
    /** Calls visit(dim) for every dim, in the row's order. */                 \
    template <typename Visit> void forEach(Visit &&visit) const {              \
      SIGNATURE(ZB_KERNEL_NO_BUF, ZB_KERNEL_DIM_VISIT, ZB_KERNEL_NO_REAL)      \
    }                                                                          \
  };
ZBC_RT_KERNELS(ZB_KERNEL_DIMS)
#undef ZB_KERNEL_DIMS
#undef ZB_KERNEL_DIM_VISIT
#undef ZB_KERNEL_DIM_FIELD
#undef ZB_KERNEL_NO_REAL
#undef ZB_KERNEL_NO_DIM
#undef ZB_KERNEL_ROLE_Workspace
#undef ZB_KERNEL_ROLE_OptIndices
#undef ZB_KERNEL_ROLE_Indices
#undef ZB_KERNEL_ROLE_Out
#undef ZB_KERNEL_ROLE_In
#undef ZB_KERNEL_ROLE
#undef ZB_KERNEL_NO_BUF

/// Op OpT's kernel call, less its reals (attributes, which the code
/// generator reads).
template <typename OpT> struct KernelShape {
  /// The op's tensors that are the row's buffers, in the row's order; a null
  /// value stands for the op's workspace (KernelOpInterface's bytes), or for
  /// an optional buffer the op goes without (KernelDims::kBufferRoles).
  llvm::SmallVector<mlir::Value, 8> buffers;
  KernelDims<OpT> dims;
};

#define ZB_KERNEL_SHAPE_OF(NAME, METHOD, OP, SIGNATURE)                        \
  KernelShape<OP> kernelShapeOf(OP op);
ZBC_RT_KERNELS(ZB_KERNEL_SHAPE_OF)
#undef ZB_KERNEL_SHAPE_OF

} // namespace zbc::zb

#endif // ZBC_DIALECT_ZB_KERNELSHAPE_H
