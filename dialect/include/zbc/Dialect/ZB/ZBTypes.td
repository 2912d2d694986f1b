//===- ZBTypes.td - zb dialect types ------------------------*- tablegen -*-===//
//
// Types of the zb dialect. Model-level values are builtin ranked tensors (so
// shapes are part of every type); the schedule level adds `!zb.token`.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBTYPES_TD
#define ZBC_DIALECT_ZB_ZBTYPES_TD

include "zbc/Dialect/ZB/ZBDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonTypeConstraints.td"

def ZB_TokenType : TypeDef<ZB_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "completion of one unit of scheduled work";
  let description = [{
    Returned by every schedule-level op that starts work (`zb.compute`,
    `zb.send`, `zb.recv`). An op that must wait for another lists that op's
    token in its `after(...)` operands, so every ordering the runtime must
    respect is visible in the IR. On the CUDA backend a token becomes one
    CUDA event (Note [Token = CUDA event], dialect/docs/ZB.md).
  }];
}

// Element types the model level computes in.
def ZB_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
def ZB_IndexElement : AnyTypeOf<[I32, I64]>;

// Every model-level shape is static: memory is planned at compile time.
def ZB_FloatTensor : StaticShapeTensorOf<[ZB_FloatElement]>;
def ZB_IndexTensor : StaticShapeTensorOf<[ZB_IndexElement]>;
def ZB_AnyTensor : StaticShapeTensorOf<[ZB_FloatElement, ZB_IndexElement]>;
def ZB_ScalarFloatTensor : 0DTensorOf<[ZB_FloatElement]>;

#endif // ZBC_DIALECT_ZB_ZBTYPES_TD
