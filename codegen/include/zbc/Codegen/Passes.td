//===- Passes.td - zbc code generation passes --------------*- tablegen -*-===//
//
// The lowering from the schedule level of the zb dialect to EmitC.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_CODEGEN_PASSES_TD
#define ZBC_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertZBToEmitCPass : Pass<"convert-zb-to-emitc", "::mlir::ModuleOp"> {
  let summary = "Lower a planned zb.program to one emitc.file per rank";
  let description = [{
    Takes a module whose `zb.program` zb-plan-memory has planned (it proves
    the program first: nothing unproven is lowered) and replaces it, and its
    pipeline, with one `emitc.file "rankN"` per rank: the runtime's header,
    the rank's tables (the buffers of its arena, its ops in the verified
    order, each compute's frame, its parameters and data; see
    runtime/include/zbc/runtime/zbc_runtime.h), one function per stage
    phase whose body is one runtime call per op, `step`, which runs the
    rank's order one line per compute, send, recv or group (each under a
    comment naming it), and `main`. Print a file with
    `mlir-translate --mlir-to-cpp --file-id=rankN` or `zbc compile`.

    ```c++
    // F(1,0): stage 1, microbatch 0
    ZBC_RT_CALL(zbc_rt_wait, v1, 0);
    ZBC_RT_CALL(zbc_rt_compute, v1, 1, stage1_F);
    ```
  }];
  let dependentDialects = ["::mlir::emitc::EmitCDialect"];
}

#endif // ZBC_CODEGEN_PASSES_TD
