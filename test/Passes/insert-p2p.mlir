// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=1f1b microbatches=2" --zb-insert-p2p --zb-verify-schedule | FileCheck %s
// RUN: zbc-opt %examples/gpt.mlir --zb-backward --zb-schedule="schedule=zb-v microbatches=2" --zb-insert-p2p --zb-verify-schedule | FileCheck %s --check-prefix=V
// RUN: not zbc-opt %s --split-input-file --zb-insert-p2p 2>&1 | FileCheck %s --check-prefix=ERR

// Tests where zb-insert-p2p puts each transfer under 1F1B on the MLP: a
// send right after the compute that makes it, waiting for it; a recv one
// compute ahead of its consumer, which waits for it; each peer and
// direction its own stream (2 * peer for sends, 2 * peer + 1 for recvs); a
// send waited for where the run shows its recv posted (rank 0's F0_1 waits
// for the first send, BW0_0 for the second).
// CHECK-LABEL: zb.program @mlp_1f1b
// CHECK:      zb.rank 0 {
// CHECK-NEXT:   %[[F0:.+]] = zb.compute F stage 0 mb 0
// CHECK-NEXT:   %[[S0:.+]] = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<8x64xf32> on 2 after(%[[F0]])
// CHECK-NEXT:   %[[G0:.+]] = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32> on 3
// CHECK-NEXT:   %[[F1:.+]] = zb.compute F stage 0 mb 1 after(%[[S0]])
// CHECK-NEXT:   %[[S1:.+]] = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<8x64xf32> on 2 after(%[[F1]])
// CHECK-NEXT:   %[[G1:.+]] = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<8x64xf32> on 3
// CHECK-NEXT:   zb.compute BW stage 0 mb 0 after(%[[F0]], %[[G0]], %[[S1]])
// CHECK-NEXT:   zb.compute BW stage 0 mb 1 after(%[[F1]], %[[G1]])
// CHECK:      zb.rank 1 {
// CHECK-NEXT:   %[[A0:.+]] = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<8x64xf32> on 1
// CHECK-NEXT:   %[[RF0:.+]] = zb.compute F stage 1 mb 0 after(%[[A0]])
// CHECK-NEXT:   %[[A1:.+]] = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<8x64xf32> on 1
// CHECK-NEXT:   %[[RB0:.+]] = zb.compute BW stage 1 mb 0 after(%[[RF0]])
// CHECK-NEXT:   %[[SG0:.+]] = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<8x64xf32> on 0 after(%[[RB0]])
// CHECK-NEXT:   zb.compute F stage 1 mb 1 after(%[[A1]], %[[SG0]])

// Tests that on the V placement the turn at the last rank (stages 1 and 2 on
// rank 1) and the loss on rank 0 (stages 0 and 3) move no tensor between
// stages of one rank: rank 1's F2 waits for its own F1, and no transfer
// names stage 1's activation or stage 2's gradient.
// V-LABEL: zb.program @gpt_zb_v
// V:       zb.rank 1 {
// V:         %[[F10:.+]] = zb.compute F stage 1 mb 0
// V-NEXT:    zb.recv act stage 0 mb 1
// V-NEXT:    zb.compute F stage 2 mb 0 after(%[[F10]])
// V-NOT:     act stage 1
// V-NOT:     grad stage 2

// ERR: error: 'zb.program' op names no 'zb.pipeline' (its 'pipeline' attribute): zb-insert-p2p takes the messages' keys and types from the pipeline's stages
zb.program @no_pipeline microbatches(1) placement [0] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    %b = zb.compute BW stage 0 mb 0 after(%f)
  }
}

// -----

// ERR: error: zb-insert-p2p found no 'zb.program'; run zb-schedule first
module {
}
