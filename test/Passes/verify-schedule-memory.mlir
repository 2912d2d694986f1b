// Tests the exact peak bytes of zb-verify-schedule (Note [Program memory])
// on the example MLP under ZB-H1 with one microbatch, every byte named, and
// that a limit one byte lower is refused at the op where it is crossed.
//
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-verify-schedule=report=true -o /dev/null 2>&1 | FileCheck %s
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-verify-schedule=memory-limit=94719 -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT
// The same limit as a byte amount with a unit (Note [Byte amounts]); a bad one is named.
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-verify-schedule=memory-limit=94.719kB -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-verify-schedule=memory-limit=-1 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-LIMIT
// BAD-LIMIT: error: zb-verify-schedule option memory-limit: '-1' is negative: a byte amount is 0 or more
//
// Rank 0 (stage 0: fc0, fc1) runs recv d_in.0, F, send out.0, B, W.
//   parameters 20992 (fc0 16x64 + 64, fc1 64x64 + 64, f32), gradients
//   20992, SGD momentum 20992: 62976 for the whole step.
//   At W: the received gradient d_out.0 (8x64 f32: 2048), the input x (8x16:
//   512, read by W for fc0's weight gradient) and F's three stashes (the
//   two ReLU inputs and fc1's input: 3 x 2048) are live: 8704. The send of
//   out.0 (2048) was released at B, which waits for it. W's temporaries at
//   their largest, computing fc0's weight gradient: fc1's weight and bias
//   gradients (16384 + 256), the gradient at fc0's output (2048), fc0's
//   bias gradient (256) and its weight gradient (4096): 23040.
//   62976 + 8704 + 23040 = 94720.
// Rank 1 (stage 1: fc2, fc3, the loss) runs recv out.0, F, B, send d_in.0, W.
//   parameters 18720 (fc2 64x64 + 64, fc3 64x8 + 8), gradients and
//   momentum: 56160; the loss accumulator (one f32): 4.
//   At W: in.0 (2048, fc2's input), F.1 (fc3's input, 2048), B.0 (the logits'
//   gradient, 8x8: 256) and B.1 (fc2's output gradient, 2048): 6400; the
//   send of d_in.0 was released at W. W's temporaries, all four gradients
//   at once: 32 + 2048 + 256 + 16384 = 18720.
//   56164 + 6400 + 18720 = 81284.
// CHECK: remark: verified: 2 ranks, 10 ops, peak bytes per rank [94720, 81284]
// LIMIT: error: rank 0 holds 94720 bytes at W(0,0), over the memory limit of 94719: 62976 for parameters, gradients and optimizer state, 23040 of this op's temporaries, and the largest buffers live here are F.0 of stage 0 mb 0 (2048), F.1 of stage 0 mb 0 (2048), F.2 of stage 0 mb 0 (2048)
