// Tests offload in the IR (Note [Offload in the IR] in
// passes/include/zbc/Analysis/ProgramMemory.h): zb-schedule's offload=full
// issues a zb.offload right after each F (waiting for it) and a zb.reload
// before each backward (waiting for its offload), and the backward waits for
// the reload; the verifier counts device and host bytes apart (1F1B, the
// example MLP, 4 microbatches: rank 0's device peak drops from 103424 to
// 101376 and its host holds two stashes of 6144 bytes at once); zb-plan-memory
// gives the host copies an arena of their own and each reloaded stash its own
// device buffer. The proof refuses a backward that does not wait for its
// reload, a reload that does not wait for its offload and an offload that
// does not wait for its F, naming rank, op and microbatch; a backward before
// its reload breaks the order. Code generation gives each stash a host copy
// (ZBC_RT_HOST, in the host arena) and a reloaded buffer, each copy a frame
// of (from, to) pairs, and calls the runtime's copies where the order has
// them, waiting for each before its first waiter; the backward's frame names
// the reloaded stash. Offload needs a copy bandwidth. Under a memory limit
// where the plain order fits and no order with offload does (gpt-small on 4
// ranks at 44 MB: the fit of the offloading orders misses), offload=auto
// schedules the plain order (Note [Levers never lose] in Schedule.cpp). zbc check counts and
// simulates the copies.
//
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="copy-bandwidth=1" --zb-schedule="schedule=1f1b microbatches=4 offload=full" --zb-insert-p2p --zb-verify-schedule=report=true -o %t.mlir 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: FileCheck %s --check-prefix=ORDER < %t.mlir
// RUN: zbc-opt %t.mlir --zb-plan-memory=report=true -o - 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: zbc check %t.mlir | FileCheck %s --check-prefix=CHECK-TOOL
// RUN: sed -e 's/%%BW0_0 = zb.compute BW stage 0 mb 0 after(%%reload0_0, /%%BW0_0 = zb.compute BW stage 0 mb 0 after(/' %t.mlir | not zbc-opt --zb-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNRELOADED
// RUN: sed -e 's/%%reload0_1 = zb.reload stage 0 mb 1 after(%%offload0_1)/%%reload0_1 = zb.reload stage 0 mb 1/' %t.mlir | not zbc-opt --zb-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNOFFLOADED
// RUN: sed -e 's/%%offload0_2 = zb.offload stage 0 mb 2 after(%%F0_2)/%%offload0_2 = zb.offload stage 0 mb 2/' %t.mlir | not zbc-opt --zb-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNWRITTEN
// RUN: sed -e '/%%reload0_3 = /{h;d}' -e '/%%BW0_3 = /G' -e 's/after(%%reload0_3, /after(/' %t.mlir | not zbc-opt --zb-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: zbc-opt %t.mlir --zb-plan-memory --convert-zb-to-emitc -o %t.emitc.mlir
// RUN: mlir-translate --mlir-to-cpp --file-id=rank0 %t.emitc.mlir | FileCheck %s --check-prefix=CODEGEN
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=1f1b microbatches=4 offload=full" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOLINK
// RUN: zbc-opt %examples/gpt-small.mlir --zb-backward="stages=4" --zb-stage-costs="copy-bandwidth=1e12" --zb-schedule="schedule=zb-auto microbatches=8 memory-limit=44000000 offload=auto" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEVERLOSE
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="copy-bandwidth=1" --zb-schedule="schedule=1f1b microbatches=4 offload=often" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODE

// FULL: remark: verified: 2 ranks, 48 ops, peak bytes per rank [101376, 87492], host peak bytes per rank [12288, 4352]

// ORDER: zb.rank 0
// ORDER: %F0_0 = zb.compute F stage 0 mb 0
// ORDER: %offload0_0 = zb.offload stage 0 mb 0 after(%F0_0)
// ORDER: %reload0_0 = zb.reload stage 0 mb 0 after(%offload0_0
// ORDER-NEXT: %BW0_0 = zb.compute BW stage 0 mb 0 after(%reload0_0
// ORDER: zb.rank 1
// ORDER: %F1_0 = zb.compute F stage 1 mb 0 after(%recv_act0_0)
// ORDER-NEXT: %offload1_0 = zb.offload stage 1 mb 0 after(%F1_0)

// PLAN: remark: memory plan of @mlp_1f1b: rank 0: arena {{[0-9]+}}, peak 101376 ({{.*}}), host arena 12288, host peak 12288; rank 1: arena {{[0-9]+}}, peak 87492 ({{.*}}), host arena 4352, host peak 4352
// PLAN: zb.rank 0 attributes {{{.*}}host_arena_bytes = 12288 : i64, host_memory_plan = [{bytes = 2048 : i64, key = "F.0", mb = 0 : i64, offset = 0 : i64, stage = 0 : i64}
// PLAN-SAME: key = "reloaded.F.0", mb = 0 : i64

// zbc check counts the copies, reads the order back (each O at its fence),
// simulates it and reports both peaks.
// CHECK-TOOL: rank  stages      F    B    W   BW    R    O    L  send  recv
// CHECK-TOOL-NEXT: 0  0           4    0    0    4    0    4    4     4     4
// CHECK-TOOL: verified (zb-verify-schedule): {{.*}}; peak bytes per rank [101376, 87492], host peak bytes per rank [12288, 4352]

// UNRELOADED: error: rank 0: BW(0,0) does not wait for L(0,0): it would read the stash before its reload completes
// UNOFFLOADED: error: rank 0: L(0,1) does not wait for O(0,1): it would reload host memory before its offload completes
// UNWRITTEN: error: rank 0: O(0,2) does not wait for F(0,2): the copy would read a stash still being written
// LATE: error: rank 0, stage 0, microbatch 3: BW(0,3) (action {{[0-9]+}}) runs before L(0,3) (action {{[0-9]+}})
// NEVERLOSE: remark: zb-schedule: no order with recompute=none offload=auto fits memory-limit 44000000; the order without the levers does
// NEVERLOSE-NOT: error

// CODEGEN: {"reloaded.F.0 of stage 0 mb 0", {{[0-9]+}}, 2048, ZBC_RT_RELOADED, ZBC_RT_F32},
// CODEGEN: {"host F.0 of stage 0 mb 0", 0, 2048, ZBC_RT_HOST, ZBC_RT_F32},
// CODEGEN: {ZBC_RT_OP_OFFLOAD, 0, 0, 2, {{[0-9]+}}, 6, -1, 0, -1, -1, -1, 0, 0, "O(0,0)"},
// CODEGEN: {ZBC_RT_OP_RELOAD, 0, 0, 7, {{[0-9]+}}, 6, -1, 0, -1, -1, -1, 0, 0, "L(0,0)"},
// CODEGEN: static const zbc_rt_program kProgram = {
// CODEGEN: 12288, 12288,
// CODEGEN-LABEL: static zbc_rt_status step(
// CODEGEN: ZBC_RT_CALL(zbc_rt_compute, v1, 0, stage0_F);
// CODEGEN: // O(0,0): 3 tensors
// CODEGEN-NEXT: ZBC_RT_CALL(zbc_rt_offload, v1, 2);
// CODEGEN: // L(0,0): 3 tensors
// CODEGEN-NEXT: ZBC_RT_CALL(zbc_rt_wait, v1, 2);
// CODEGEN: ZBC_RT_CALL(zbc_rt_reload, v1, 7);
// CODEGEN-NEXT: // BW(0,0): stage 0, microbatch 0
// CODEGEN-NEXT: ZBC_RT_CALL(zbc_rt_wait, v1, 7);
// NOLINK: error: 'zb.pipeline' op offload=full needs the copy queues' speed: give copy-bandwidth
// MODE: error: zb-schedule option offload: offload mode must be 'none', 'full' or 'auto', got 'often'
