// Tests convert-zb-to-emitc IR to IR (as upstream's test/Conversion/*ToEmitC
// do): the example MLP under ZB-H1 with one microbatch becomes one
// emitc.file per rank holding the runtime's header, the rank's tables as
// static const globals, one function per stage phase of ZBC_RT_CALL
// statements on frame slots and persistent ids (Note [Frames]), `step` in
// the verified order, and `main`; the zb ops are gone. Rank 0 receives the
// gradient before its F, waits for it (and for its send) before B, and
// steps each parameter after its last W.
//
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-plan-memory --convert-zb-to-emitc | FileCheck %s
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --convert-zb-to-emitc -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// The MLP in f64, which the IR takes (the interpreter's gradient checks run
// in it) and the runtime has no kernels for: refused, naming the element
// types the ABI's table has.
// RUN: sed 's/xf32>/xf64>/g; s/tensor<f32>/tensor<f64>/g' %examples/mlp.mlir > %t.f64.mlir
// RUN: not zbc-opt %t.f64.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-plan-memory --convert-zb-to-emitc -o /dev/null 2>&1 | FileCheck %s --check-prefix=F64
// F64: error: 'zb.phase' op reads 'input.x' as 'tensor<8x16xf64>'; the runtime has kernels for f32, i32, i64, bf16 only (floats f32 and bf16, integer indices)

// CHECK-NOT: zb.
// CHECK-LABEL: emitc.file "rank0" {
// CHECK: include "zbc/runtime/zbc_runtime.h"
// CHECK: param_fc0_weight = 0,
// CHECK: global static const @kBuffers : !emitc.array<27x!emitc.opaque<"zbc_rt_buffer">> = #emitc.opaque<"{\0A  {\22param.fc0.weight\22, 0, 4096, ZBC_RT_PARAM, ZBC_RT_F32},
// CHECK: global static const @kFrames : !emitc.array<19xi32> = dense<
// CHECK: global static const @kOps : !emitc.array<5x!emitc.opaque<"zbc_rt_op">> = #emitc.opaque<"{\0A  {ZBC_RT_OP_RECV, 1, 0, 0, -1, 0, -1, 0, 17, 1, -1, 0, 1, \22recv grad stage 1 mb 0 from 1 (d_in.0)\22},
// CHECK: global static const @kProgram : !emitc.opaque<"zbc_rt_program">
// CHECK-LABEL: func @stage0_F(%{{.*}}: !emitc.ptr<!emitc.opaque<"zbc_rt_rank">>) -> !emitc.opaque<"zbc_rt_status"> attributes {specifiers = ["static"]}
// CHECK-NEXT: call_opaque "ZBC_RT_CALL"(%{{.*}}) {args = [#emitc.opaque<"zbc_rt_load">, 0 : index, #emitc.opaque<"ZBC_RT_FRAME(0)">, 0 : i32]}
// CHECK-NEXT: call_opaque "ZBC_RT_CALL"(%{{.*}}) {args = [#emitc.opaque<"zbc_rt_linear">, 0 : index, #emitc.opaque<"ZBC_RT_FRAME(0)">, #emitc.opaque<"param_fc0_weight">, #emitc.opaque<"ZBC_RT_FRAME(5)">, 8, 16, 64, 0]}
// CHECK-LABEL: func @stage0_W(
// CHECK: #emitc.opaque<"zbc_rt_accumulate">, 0 : index, #emitc.opaque<"grad_fc0_weight">
// CHECK-LABEL: func @step(
// CHECK-NEXT: verbatim "// recv grad stage 1 mb 0 from 1 (d_in.0)"
// CHECK-NEXT: call_opaque "ZBC_RT_CALL"(%{{.*}}) {args = [#emitc.opaque<"zbc_rt_recv">, 0 : index, 0 : i32]}
// CHECK-NEXT: verbatim "// F(0,0): stage 0, microbatch 0"
// CHECK-NEXT: call_opaque "ZBC_RT_CALL"(%{{.*}}) {args = [#emitc.opaque<"zbc_rt_compute">, 0 : index, 1 : i32, #emitc.opaque<"stage0_F">]}
// CHECK: verbatim "// B(0,0): stage 0, microbatch 0"
// CHECK-NEXT: #emitc.opaque<"zbc_rt_wait">, 0 : index, 0 : i32
// CHECK-NEXT: #emitc.opaque<"zbc_rt_wait">, 0 : index, 2 : i32
// CHECK-NEXT: #emitc.opaque<"zbc_rt_compute">, 0 : index, 3 : i32, #emitc.opaque<"stage0_B">
// CHECK: verbatim "// the optimizer step of fc0.weight"
// CHECK-NEXT: #emitc.opaque<"zbc_rt_update">, 0 : index, 0 : i32
// CHECK-LABEL: func @main(
// CHECK: call_opaque "zbc_rt_main"(%{{.*}}, %{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"&kProgram">, #emitc.opaque<"step">]}
// CHECK-LABEL: emitc.file "rank1" {
// CHECK: #emitc.opaque<"zbc_rt_add_loss">

// UNPLANNED: error: 'zb.rank' op has no memory plan; run zb-plan-memory before convert-zb-to-emitc
