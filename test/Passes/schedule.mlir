// RUN: zbc-opt %s --zb-backward --zb-schedule="schedule=zb-h1 microbatches=4" | FileCheck %s --check-prefix=H1
// RUN: zbc-opt %s --zb-backward --zb-schedule="schedule=1f1b microbatches=3" | FileCheck %s --check-prefix=ONE
// RUN: zbc-opt %s --zb-backward --zb-schedule="schedule=zb-h1 microbatches=4 report=true" 2>&1 | FileCheck %s --check-prefix=REPORT

// Tests that zb-schedule turns a split pipeline into a zb.program with each
// rank's computes in the schedule's order: ZB-H1 warms rank 0 up with
// p - 1 = 1 extra forward and defers W; 1F1B fuses B and W. Same-rank
// dependencies are `after` tokens; cross-rank ones are left to zb-insert-p2p.
zb.model @mlp {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  %w0 = zb.param "w0" init normal(0.1) : tensor<8x16xf32>
  %h = zb.linear %x, %w0 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = zb.relu %h : tensor<4x16xf32>
  %c = zb.cut %r : tensor<4x16xf32>
  %w1 = zb.param "w1" init normal(0.1) : tensor<16x3xf32>
  %o = zb.linear %c, %w1 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %l = zb.cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}

// The pipeline stays, with the costs the order was planned with (Note
// [Costs in the IR]): the program's computes run its phases. The program
// records what it is predicted to take and the levers it was built with.
// H1:          zb.pipeline @mlp attributes {costs = {comm = 0 : i64, copy_bandwidth = 0 : i64, unit = "FLOPs"}}
// H1:          zb.stage 0 attributes {costs = {B = 0 : i64, F = 1088 : i64, M_B = 384 : i64, M_W = 640 : i64, M_keep = 128 : i64, M_offload = 256 : i64, R = 1024 : i64, W = 1088 : i64}}
// H1-LABEL:    zb.program @mlp_zb_h1 microbatches(4) placement [0, 1] attributes {levers = {backward = "stored", offload = "none", recompute = "none"}, optimizer = "sgd", pipeline = @mlp, predicted_bubble_rate = 0.000000e+00 : f64, predicted_makespan = 8704 : i64, schedule = "zb-h1"}
// H1:          zb.rank 0 {
// H1-NEXT:       %[[F0:.+]] = zb.compute F stage 0 mb 0
// H1-NEXT:       %[[F1:.+]] = zb.compute F stage 0 mb 1
// H1-NEXT:       %[[B0:.+]] = zb.compute B stage 0 mb 0 after(%[[F0]])
// H1-NEXT:       zb.compute W stage 0 mb 0 after(%[[B0]])
// H1-NEXT:       zb.compute F stage 0 mb 2
// H1-NEXT:       zb.compute B stage 0 mb 1 after(%[[F1]])
// H1:          zb.rank 1 {
// H1-NEXT:       %[[G0:.+]] = zb.compute F stage 1 mb 0
// H1-NEXT:       %[[H0:.+]] = zb.compute B stage 1 mb 0 after(%[[G0]])
// H1-NEXT:       zb.compute F stage 1 mb 1
// H1-NEXT:       zb.compute B stage 1 mb 1
// H1-NEXT:       zb.compute W stage 1 mb 0 after(%[[H0]])
// H1:            zb.compute W stage 1 mb 3
// H1-NEXT:     }

// ONE-LABEL:   zb.program @mlp_1f1b microbatches(3) placement [0, 1]
// ONE:         zb.rank 0 {
// ONE-NEXT:      zb.compute F stage 0 mb 0
// ONE-NEXT:      zb.compute F stage 0 mb 1
// ONE-NEXT:      zb.compute BW stage 0 mb 0
// ONE-NEXT:      zb.compute F stage 0 mb 2
// ONE-NEXT:      zb.compute BW stage 0 mb 1
// ONE-NEXT:      zb.compute BW stage 0 mb 2
// ONE-NEXT:    }
// ONE-NOT:     zb.compute W

// REPORT: remark: schedule 'zb-h1': makespan {{.+}}, bubble rate {{.+}}, peak memory per rank [{{[0-9]+}}, {{[0-9]+}}]
