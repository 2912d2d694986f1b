// Tests selective recomputation (Note [Selective recomputation] in
// passes/include/zbc/Analysis/RecomputePlan.h) on the example GPT (four
// stages, 1F1B, 4 microbatches): zb-schedule's recompute=selective writes
// each stage's policy, the F.i it can rebuild without matmul-class FLOPs
// (stage 1: F.0 = gelu of the kept F.1, F.2 = ln2 of the kept residual F.3,
// F.6 = ln1 of in.0; the attention, the projections and the residual sums
// are kept). The verifier's peaks fall between the plain order's and full
// recomputation's:
//   none      [2196480, 1731584, 1469440, 1553924]
//   selective [1836032, 1534976, 1371136, 1553924]
//   full      [1393664, 1240064, 1223680, 1553924]
// (the e2e tests hold the ranks' measured peaks to these figures). The R
// runs those three ops alone, reading the kept F.3 and F.1 from their
// buffers; a policy of one's own is honoured, and one naming a key that is
// not the stage's stash, or a key twice, is refused.
//
// RUN: zbc-opt %examples/gpt.mlir --zb-backward --zb-schedule="schedule=1f1b microbatches=4 recompute=selective" --zb-insert-p2p --zb-verify-schedule=report=true -o %t.mlir 2>&1 | FileCheck %s --check-prefix=VERIFIED
// RUN: FileCheck %s --check-prefix=POLICY < %t.mlir
// RUN: zbc-opt %t.mlir --zb-plan-memory --convert-zb-to-emitc -o %t.emitc.mlir
// RUN: mlir-translate --mlir-to-cpp --file-id=rank1 %t.emitc.mlir | FileCheck %s --check-prefix=CODEGEN
// RUN: zbc-opt %examples/gpt.mlir --zb-backward -o %t.model.mlir
// RUN: sed -e 's/zb.stage 1 {/zb.stage 1 attributes {rebuilt = ["F.6"]} {/' %t.model.mlir | zbc-opt --zb-schedule="schedule=1f1b microbatches=4 recompute=selective" --zb-insert-p2p --zb-verify-schedule=report=true -o %t.own.mlir 2>&1 | FileCheck %s --check-prefix=OWN
// RUN: FileCheck %s --check-prefix=OWN-POLICY < %t.own.mlir
// RUN: sed -e 's/zb.stage 1 {/zb.stage 1 attributes {rebuilt = ["out.0"]} {/' %t.model.mlir | not zbc-opt -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOT-STASH
// RUN: sed -e 's/zb.stage 1 {/zb.stage 1 attributes {rebuilt = ["F.0", "F.0"]} {/' %t.model.mlir | not zbc-opt -o /dev/null 2>&1 | FileCheck %s --check-prefix=TWICE

// VERIFIED: remark: verified: 4 ranks, 96 ops, peak bytes per rank [1836032, 1534976, 1371136, 1553924]

// POLICY: zb.stage 0 attributes {costs = {{.*}}, rebuilt = ["F.0", "F.2", "F.6", "F.7"]}
// POLICY: zb.stage 1 attributes {costs = {{.*}}, rebuilt = ["F.0", "F.2", "F.6"]}
// POLICY: zb.stage 2 attributes {costs = {{.*}}, rebuilt = ["F.0", "F.2", "F.6"]}
// POLICY: zb.stage 3 attributes {costs = {{.*}}, rebuilt = ["F.1", "F.3", "F.5", "F.9"]}

// CODEGEN: // F of stage 1, keeping only what its R does not rebuild (it is recomputed): 14 ops
// CODEGEN: // R of stage 1, the ops of F that rebuild its stash: 3 ops
// CODEGEN-NEXT: static zbc_rt_status stage1_R(
// CODEGEN-NEXT: zbc_rt_layernorm
// CODEGEN-NEXT: zbc_rt_layernorm
// CODEGEN-NEXT: zbc_rt_gelu
// CODEGEN-NEXT: return ZBC_RT_OK;

// Stage 1 rebuilding ln1 alone keeps more than the cheap policy: its peak
// rises; the other stages get the cheap policy.
// OWN: remark: verified: 4 ranks, 96 ops, peak bytes per rank [1836032, 1698816, 1371136, 1553924]
// OWN-POLICY: zb.stage 1 attributes {costs = {{.*}}, rebuilt = ["F.6"]}
// OWN-POLICY: zb.stage 2 attributes {costs = {{.*}}, rebuilt = ["F.0", "F.2", "F.6"]}

// NOT-STASH: error: 'zb.stage' op rebuilds 'out.0', which is not an F.i that stage 1's F yields; `rebuilt` lists keys of its stash
// TWICE: error: 'zb.stage' op rebuilds 'F.0' twice
