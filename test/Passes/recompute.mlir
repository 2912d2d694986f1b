// Tests recomputation in the IR (Note [Recomputation in the IR] in
// passes/include/zbc/Analysis/ProgramMemory.h): zb-schedule's recompute=full
// places a zb.compute R before each backward, waiting for its F; the
// verifier's exact bytes drop where an F no longer keeps its stashes past
// itself (1F1B, the example MLP, 4 microbatches: rank 0 holds two in flight;
// the e2e tests hold the ranks' measured peaks to these figures); an R after
// its backward, a stage phase named R and an unknown mode are refused.
//
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=1f1b microbatches=4" --zb-insert-p2p --zb-verify-schedule=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=1f1b microbatches=4 recompute=full" --zb-insert-p2p --zb-verify-schedule=report=true -o %t.mlir 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: FileCheck %s --check-prefix=ORDER < %t.mlir
// RUN: sed -e '/%%R0_0 = /{h;d}' -e '/%%BW0_0 = /G' -e 's/after(%%R0_0, /after(%%F0_0, /' %t.mlir | not zbc-opt --zb-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: sed -e '0,/zb.phase F(/s//zb.phase R(/' %t.mlir | not zbc-opt -o /dev/null 2>&1 | FileCheck %s --check-prefix=PHASE
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=1f1b microbatches=4 recompute=sometimes" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODE

// PLAIN: remark: verified: 2 ranks, 32 ops, peak bytes per rank [103424, 87492]
// FULL: remark: verified: 2 ranks, 40 ops, peak bytes per rank [95232, 87492]

// ORDER: zb.rank 0
// ORDER: %F0_0 = zb.compute F stage 0 mb 0
// ORDER: %R0_0 = zb.compute R stage 0 mb 0 after(%F0_0
// ORDER-NEXT: %BW0_0 = zb.compute BW stage 0 mb 0 after(%R0_0
// ORDER: zb.rank 1
// ORDER: %R1_0 = zb.compute R stage 1 mb 0 after(%F1_0)
// ORDER: %BW1_0 = zb.compute BW stage 1 mb 0 after(%R1_0)

// LATE: error: rank 0, stage 0, microbatch 0: BW(0,0) (action {{[0-9]+}}) runs before R(0,0) (action {{[0-9]+}})
// PHASE: error: custom op 'zb.phase' a stage has no R phase: a zb.compute R runs the stage's F again
// MODE: error: zb-schedule option recompute: recompute mode must be 'none', 'full', 'selective', 'auto' or 'checkpoint', got 'sometimes'
