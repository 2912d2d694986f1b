// recompute=auto tries the selective policy (Note [Selective
// recomputation]) only where some stage has a cheap key to rebuild: on the
// example MLP (its ReLU and bias results) it builds both and says which it
// kept; on a chain of matmuls, whose every stashed value costs matmul FLOPs
// to rebuild, the selective build would be the plain one, so there is none.

// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=1f1b microbatches=4 recompute=auto report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MLP
// MLP: remark: schedule '1f1b': {{.*}}; recompute auto: the selective policy gives makespan {{[0-9.e+]+}}, rebuilding every stash {{[0-9.e+]+}}; kept {{full|selective}}

// With a cost file, auto weighs the selective policy too, in the file's
// unit (Note [Measured costs]): both makespans are the file's milliseconds
// (1 ms a phase), not FLOPs.
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-stage-costs="cost-file=%S/Inputs/unit-costs-2.json" --zb-schedule="schedule=1f1b microbatches=4 recompute=auto report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEASURED
// MEASURED: remark: schedule '1f1b': makespan {{[0-9]+(\.[0-9]+)?}}, {{.*}}recompute auto: the selective policy gives makespan {{[0-9]+(\.[0-9]+)?}}, rebuilding every stash {{[0-9]+(\.[0-9]+)?}};

// RUN: zbc-opt %s --zb-backward --zb-schedule="schedule=1f1b microbatches=4 recompute=auto report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MATMULS
// MATMULS: remark: schedule '1f1b': {{.*}}; recompute auto: no stage of 2
// MATMULS-NOT: selective policy

zb.model @matmuls {
  %x = zb.input "x" : tensor<8x16xf32>
  %y = zb.label "y" : tensor<8xi64>
  %w0 = zb.param "w0" init normal(0.1) : tensor<16x64xf32>
  %h0 = zb.linear %x, %w0 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %w1 = zb.param "w1" init normal(0.1) : tensor<64x64xf32>
  %h1 = zb.linear %h0, %w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %s1 = zb.cut %h1 : tensor<8x64xf32>
  %w2 = zb.param "w2" init normal(0.1) : tensor<64x64xf32>
  %h2 = zb.linear %s1, %w2 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %w3 = zb.param "w3" init normal(0.1) : tensor<64x8xf32>
  %logits = zb.linear %h2, %w3 : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
  %loss = zb.cross_entropy %logits, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %loss : tensor<f32>
}
