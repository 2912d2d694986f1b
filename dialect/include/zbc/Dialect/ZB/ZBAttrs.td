//===- ZBAttrs.td - zb dialect enums and attributes ---------*- tablegen -*-===//
//
// Enumerations used by zb ops: how a parameter is initialised, which part of
// a stage's work a `zb.compute` runs, what a send/recv carries, and how a zb.reduce
// combines.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBATTRS_TD
#define ZBC_DIALECT_ZB_ZBATTRS_TD

include "zbc/Dialect/ZB/ZBDialect.td"
include "mlir/IR/EnumAttr.td"

def ZB_InitZeros   : I32EnumAttrCase<"Zeros", 0, "zeros">;
def ZB_InitOnes    : I32EnumAttrCase<"Ones", 1, "ones">;
def ZB_InitNormal  : I32EnumAttrCase<"Normal", 2, "normal">;
def ZB_InitUniform : I32EnumAttrCase<"Uniform", 3, "uniform">;
def ZB_InitKind : I32EnumAttr<"InitKind", "how a parameter is initialised",
    [ZB_InitZeros, ZB_InitOnes, ZB_InitNormal, ZB_InitUniform]> {
  let cppNamespace = "::zbc::zb";
}

// F: forward. B: gradient w.r.t. the stage input. W: gradient w.r.t. the
// stage's parameters. BW: B and W fused, as 1F1B and GPipe run them. R:
// F again, for a microbatch whose forward kept only its inputs, restoring
// what B and W read (Note [Recomputation in the IR] in ProgramMemory.h);
// a stage has no R phase, R runs F's.
def ZB_KindF  : I32EnumAttrCase<"F", 0, "F">;
def ZB_KindB  : I32EnumAttrCase<"B", 1, "B">;
def ZB_KindW  : I32EnumAttrCase<"W", 2, "W">;
def ZB_KindBW : I32EnumAttrCase<"BW", 3, "BW">;
def ZB_KindR  : I32EnumAttrCase<"R", 4, "R">;
def ZB_ComputeKind : I32EnumAttr<"ComputeKind",
    "which part of a stage's work on one microbatch",
    [ZB_KindF, ZB_KindB, ZB_KindW, ZB_KindBW, ZB_KindR]> {
  let cppNamespace = "::zbc::zb";
}

// act: a stage's forward output, sent downstream. grad: the gradient w.r.t.
// a stage's input, sent upstream.
def ZB_PayloadAct  : I32EnumAttrCase<"Act", 0, "act">;
def ZB_PayloadGrad : I32EnumAttrCase<"Grad", 1, "grad">;
def ZB_Payload : I32EnumAttr<"Payload", "what a point-to-point transfer carries",
    [ZB_PayloadAct, ZB_PayloadGrad]> {
  let cppNamespace = "::zbc::zb";
}

// How a zb.reduce combines its members' values: element by element (sum,
// max), or softmax, the merge of zb.vocab_stats' planes (Note [Softmax
// over vocabulary shards] in zbc/contracts/VocabShards.h).
def ZB_ReductionSum : I32EnumAttrCase<"Sum", 0, "sum">;
def ZB_ReductionMax : I32EnumAttrCase<"Max", 1, "max">;
def ZB_ReductionSoftmax : I32EnumAttrCase<"Softmax", 2, "softmax">;
def ZB_Reduction : I32EnumAttr<"Reduction", "how a reduction combines values",
    [ZB_ReductionSum, ZB_ReductionMax, ZB_ReductionSoftmax]> {
  let cppNamespace = "::zbc::zb";
}

#endif // ZBC_DIALECT_ZB_ZBATTRS_TD
