// RUN: not zbc-opt %s --zb-backward --zb-schedule="schedule=zb-h7 microbatches=4" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not zbc-opt %s --zb-backward --zb-schedule="schedule=zb-v microbatches=4" 2>&1 | FileCheck %s --check-prefix=V
// RUN: not zbc-opt %s --zb-autodiff --zb-schedule="schedule=1f1b microbatches=4" 2>&1 | FileCheck %s --check-prefix=FUSED
// RUN: not zbc-opt %s --zb-backward --zb-schedule="schedule=1f1b" 2>&1 | FileCheck %s --check-prefix=MB
// RUN: not zbc-opt %s --zb-backward --zb-schedule="schedule=zb-auto microbatches=4 activation-budget=1" 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not zbc-opt %s --zb-schedule="schedule=1f1b microbatches=4" 2>&1 | FileCheck %s --check-prefix=NOPIPE

// Tests the errors of zb-schedule: an unknown schedule (the error lists the
// registered ones), a V schedule on an odd number of stages, a pipeline
// whose backward is not split, no microbatch count, an infeasible limit.
zb.model @three {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  %w0 = zb.param "w0" init normal(0.1) : tensor<8x8xf32>
  %h0 = zb.linear %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c0 = zb.cut %h0 : tensor<4x8xf32>
  %w1 = zb.param "w1" init normal(0.1) : tensor<8x8xf32>
  %h1 = zb.linear %c0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c1 = zb.cut %h1 : tensor<4x8xf32>
  %w2 = zb.param "w2" init normal(0.1) : tensor<8x3xf32>
  %o = zb.linear %c1, %w2 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %l = zb.cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}

// UNKNOWN: schedule-errors.mlir:11:1: error: 'zb.pipeline' op unknown schedule 'zb-h7'; registered: 1f1b, dualpipe-v, gpipe, interleaved-1f1b, v-half, v-min, zb-auto, zb-h1, zb-h2, zb-v
// V: error: 'zb.pipeline' op has 3 stages, which schedule 'zb-v' cannot place 2 per rank
// FUSED: error: 'zb.stage' op has a fused BW phase; run zb-split-backward before zb-schedule
// MB: error: 'zb.pipeline' op needs microbatches=N with N in [1, 1048576] for zb-schedule, got 0
// NOPIPE: error: zb-schedule found no 'zb.pipeline'; run zb-autodiff and zb-split-backward first
// LIMIT: error: 'zb.pipeline' op schedule 'zb-auto': {{.*}}smallest feasible
