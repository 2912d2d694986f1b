// Tests the C++ of one rank as `mlir-translate --mlir-to-cpp --file-id`
// prints it from convert-zb-to-emitc's output (as upstream's
// test/Target/Cpp does): the header comment, the runtime's include, the
// tables, one statement per kernel, and the order, one statement per op
// under a comment naming it. Rank 1 of the MLP under ZB-H1, one microbatch:
// it receives the activation, runs F (loading its label), B, sends the
// input gradient, waits for it before W, and steps its parameters.
//
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-plan-memory --convert-zb-to-emitc | mlir-translate --mlir-to-cpp --file-id=rank1 | FileCheck %s

// CHECK: // Rank 1 of 2: mlp under zb-h1, 1 microbatches per step, sgd.
// CHECK: #include "zbc/runtime/zbc_runtime.h"
// CHECK: static const zbc_rt_buffer kBuffers[{{[0-9]+}}] = {
// CHECK-NEXT:   {"param.fc2.weight", 0, 16384, ZBC_RT_PARAM, ZBC_RT_F32},
// CHECK: {"loss", {{[0-9]+}}, 4, ZBC_RT_LOSS, ZBC_RT_F32},
// CHECK: {"in.0 of stage 1 mb 0", {{[0-9]+}}, 2048, ZBC_RT_RECEIVED, ZBC_RT_F32},
// CHECK: static const zbc_rt_data kData[1] = {
// CHECK-NEXT:   {"label.y", ZBC_RT_I64, 8, 1, {8}},
// CHECK: static const zbc_rt_program kProgram = {
// CHECK-NEXT:   1, 2, 2, 1,
// CHECK-NEXT:   "mlp", "{{[0-9a-f]+}}", "zb-h1", "sgd",
// CHECK-NEXT:   81472, 81284,
// CHECK-LABEL: static zbc_rt_status stage1_F(zbc_rt_rank* v1) {
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_load, v1, ZBC_RT_FRAME(1), 0);
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_linear, v1, ZBC_RT_FRAME(0), param_fc2_weight, ZBC_RT_FRAME({{[0-9]+}}), 8, 64, 64, 0);
// CHECK:   ZBC_RT_CALL(zbc_rt_cross_entropy, v1, ZBC_RT_FRAME(2), ZBC_RT_FRAME(1), ZBC_RT_FRAME({{[0-9]+}}), 8, 8, -100);
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_add_loss, v1, ZBC_RT_FRAME({{[0-9]+}}));
// CHECK-NEXT:   return ZBC_RT_OK;
// CHECK-LABEL: static zbc_rt_status stage1_B(zbc_rt_rank* v1) {
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_loss_seed, v1, ZBC_RT_FRAME({{[0-9]+}}));
// CHECK-LABEL: static zbc_rt_status step(zbc_rt_rank* v1) {
// CHECK-NEXT:   // recv act stage 0 mb 0 from 0 (out.0)
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_recv, v1, 0);
// CHECK-NEXT:   // F(1,0): stage 1, microbatch 0
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_wait, v1, 0);
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_compute, v1, 1, stage1_F);
// CHECK-NEXT:   // B(1,0): stage 1, microbatch 0
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_compute, v1, 2, stage1_B);
// CHECK-NEXT:   // send grad stage 1 mb 0 to 0 (d_in.0)
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_send, v1, 3);
// CHECK-NEXT:   // W(1,0): stage 1, microbatch 0
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_wait, v1, 3);
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_compute, v1, 4, stage1_W);
// CHECK-NEXT:   // the optimizer step of fc2.weight
// CHECK-NEXT:   ZBC_RT_CALL(zbc_rt_update, v1, 0);
// CHECK-LABEL: int main(int v1, char** v2) {
// CHECK-NEXT:   int v3 = zbc_rt_main(v1, v2, &kProgram, step);
