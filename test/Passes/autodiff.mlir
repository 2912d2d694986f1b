// RUN: zbc-opt %s --split-input-file --zb-autodiff | FileCheck %s

// Tests that each stage becomes an F phase and a BW phase: stage 0 sends
// out.0 and reads its gradient d_out.0; the last stage yields the loss, seeds
// its backward with 1.0 and sends d_in.0 back; forward tensors the backward
// needs are stashed as F.i keys.
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
// CHECK-LABEL: zb.pipeline @mlp
// CHECK:       zb.stage 0 {
// CHECK-NEXT:    %x = zb.input "x" : tensor<4x8xf32>
// CHECK-NEXT:    %w0 = zb.param "w0" init normal(1.000000e-01) : tensor<8x16xf32>
// CHECK-NEXT:    zb.phase F(%input.x = "input.x" : tensor<4x8xf32>, %param.w0 = "param.w0" : tensor<8x16xf32>) {
// CHECK-NEXT:      %[[H:.+]] = zb.linear %input.x, %param.w0
// CHECK-NEXT:      %[[R:.+]] = zb.relu %[[H]]
// CHECK-NEXT:      zb.yield "out.0" = %[[R]], "F.0" = %[[H]] :
// CHECK:         zb.phase BW(%d_out.0 = "d_out.0" : tensor<4x16xf32>, %F.0 = "F.0" : tensor<4x16xf32>, %input.x = "input.x" : tensor<4x8xf32>) {
// CHECK-NEXT:      %[[DH:.+]] = zb.relu_grad %d_out.0, %F.0
// CHECK-NEXT:      %[[DW0:.+]] = zb.linear_grad_weight %input.x, %[[DH]]
// CHECK-NEXT:      zb.yield "grad.w0" = %[[DW0]] : tensor<8x16xf32>
// The input gradient of the first linear is dead (x is data) and is gone.
// CHECK-NOT:     linear_grad_input
// CHECK:       zb.stage 1 {
// CHECK-NEXT:    %y = zb.label "y" : tensor<4xi64>
// CHECK-NEXT:    %w1 = zb.param "w1"
// CHECK-NEXT:    zb.phase F(%in.0 = "in.0" : tensor<4x16xf32>, %param.w1 = "param.w1" : tensor<16x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
// CHECK:           zb.yield "loss" = %{{.+}}, "F.0" = %{{.+}} : tensor<f32>, tensor<4x3xf32>
// CHECK:         zb.phase BW(
// CHECK:           %[[ONE:.+]] = zb.loss_seed : tensor<f32>
// CHECK-NEXT:      %[[DO:.+]] = zb.cross_entropy_grad %F.0, %label.y, %[[ONE]]
// CHECK-NEXT:      %[[DC:.+]] = zb.linear_grad_input %[[DO]], %param.w1
// CHECK-NEXT:      %[[DW1:.+]] = zb.linear_grad_weight %in.0, %[[DO]]
// CHECK-NEXT:      zb.yield "d_in.0" = %[[DC]], "grad.w1" = %[[DW1]]

// -----

// Tests that a value with two uses gets the sum of both gradients, and that a
// parameter nothing uses stays declared with a zero gradient.
zb.model @reuse {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  %w = zb.param "w" init normal(0.1) : tensor<8x8xf32>
  %unused = zb.param "unused" init zeros : tensor<8xf32>
  %h = zb.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = zb.relu %h : tensor<4x8xf32>
  %s = zb.add %r, %h : tensor<4x8xf32>
  %l = zb.cross_entropy %s, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
// CHECK-LABEL: zb.pipeline @reuse
// CHECK:         %unused = zb.param "unused" init zeros : tensor<8xf32>
// CHECK:         zb.phase BW(
// CHECK:           %[[DS:.+]] = zb.cross_entropy_grad
// CHECK-NEXT:      %[[DR:.+]] = zb.relu_grad %[[DS]],
// CHECK-NEXT:      %[[DH:.+]] = zb.add %[[DS]], %[[DR]] : tensor<4x8xf32>
// CHECK-NEXT:      %[[DW:.+]] = zb.linear_grad_weight %input.x, %[[DH]]
// CHECK-NEXT:      %[[ZERO:.+]] = zb.fill 0.000000e+00 : tensor<8xf32>
// CHECK-NEXT:      zb.yield "grad.w" = %[[DW]], "grad.unused" = %[[ZERO]]

// -----

// Tests that a cut with several values sends and receives each, that integer
// tensors crossing a cut get no gradient, and that a stage input the loss
// does not depend on sends back an explicit zero gradient.
zb.model @multi {
  %t = zb.input "t" : tensor<2x4xi64>
  %x = zb.input "x" : tensor<2x4x8xf32>
  %y = zb.label "y" : tensor<2x4xi64>
  %g = zb.param "g" init ones : tensor<8xf32>
  %b = zb.param "b" init zeros : tensor<8xf32>
  %n = zb.layernorm %x, %g, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %e = zb.gelu %n : tensor<2x4x8xf32>
  %c:3 = zb.cut %n, %e, %t : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xi64>
  %wte = zb.param "wte" init normal(0.02) : tensor<16x8xf32>
  %emb = zb.embedding %c#2, %wte : (tensor<2x4xi64>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %s = zb.add %c#1, %emb : tensor<2x4x8xf32>
  %l = zb.cross_entropy %s, %y : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
// CHECK-LABEL: zb.pipeline @multi
// CHECK:       zb.stage 0 {
// CHECK:         zb.yield "out.0" = %{{.+}}, "out.1" = %{{.+}}, "out.2" = %input.t, "F.0" = %{{.+}} :
// CHECK:         zb.phase BW(%d_out.0 = "d_out.0" : tensor<2x4x8xf32>, %d_out.1 = "d_out.1" : tensor<2x4x8xf32>,
// CHECK-NOT:       d_out.2
// CHECK:           zb.gelu_grad %d_out.1
// CHECK:           zb.add %d_out.0,
// x is data: its gradient is dead and removed; gamma and beta get theirs.
// CHECK-NOT:       zb.layernorm_grad_input
// CHECK:           zb.layernorm_grad_gamma
// CHECK:           zb.bias_grad
// CHECK:       zb.stage 1 {
// CHECK:         zb.phase BW(
// CHECK-DAG:       zb.embedding_grad %in.2, %{{.+}} vocab(16)
// CHECK-DAG:       %[[Z:.+]] = zb.fill 0.000000e+00 : tensor<2x4x8xf32>
// CHECK:           zb.yield "d_in.0" = %[[Z]], "d_in.1" = %{{.+}}, "grad.wte" = %{{.+}} :

// -----

// Tests that the gradient code of an op marked zb.fuse_weight_grad carries
// the mark, so zb-split-backward keeps it in B.
zb.model @fused {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  %w = zb.param "w" init normal(0.1) : tensor<8x3xf32>
  %h = zb.linear %x, %w {zb.fuse_weight_grad} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %l = zb.cross_entropy %h, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
// CHECK-LABEL: zb.pipeline @fused
// CHECK:         zb.phase BW(
// CHECK:           zb.linear_grad_weight %input.x, %{{.+}} {zb.fuse_weight_grad}
