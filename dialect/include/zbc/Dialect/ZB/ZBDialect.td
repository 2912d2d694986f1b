//===- ZBDialect.td - the zb dialect definition ------------*- tablegen -*-===//
//
// The zb dialect: a training model (stages, parameters, tensor ops) and the
// per-rank pipeline schedule it compiles to. Rationale: dialect/docs/ZB.md.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_ZBDIALECT_TD
#define ZBC_DIALECT_ZB_ZBDIALECT_TD

include "mlir/IR/OpBase.td"

def ZB_Dialect : Dialect {
  let name = "zb";
  let cppNamespace = "::zbc::zb";
  let summary = "Pipeline-parallel training: models and zero-bubble schedules";
  let description = [{
    The zb dialect has two levels.

    The *model level* describes one microbatch of a training step: a
    `zb.model` holding inputs, labels, parameters and tensor ops, optionally
    cut into pipeline stages by `zb.cut`, ending in a scalar `zb.loss`.

    The *schedule level* describes what every pipeline rank does, in order:
    a `zb.program` holds one `zb.rank` per rank, whose `zb.compute`,
    `zb.send` and `zb.recv` ops return `!zb.token`s and wait on others
    explicitly.

    See dialect/docs/ZB.md for the phases and the reasons behind the design.
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// An op of this dialect's namespace that does not exist is refused at
    /// its location with the ops that do (MLIR alone says only "custom op
    /// ... is unknown").
    std::optional<ParseOpHook>
    getParseOperationHook(::llvm::StringRef opName) const override;
  }];
}

class ZB_Op<string mnemonic, list<Trait> traits = []>
    : Op<ZB_Dialect, mnemonic, traits>;

// An op that takes only the attributes it defines (ZBOps.h): an attribute
// it does not define is an error at its location, not silently kept.
def ZB_KnownAttributes : NativeOpTrait<"KnownAttributes"> {
  let cppNamespace = "::zbc::zb";
}

#endif // ZBC_DIALECT_ZB_ZBDIALECT_TD
