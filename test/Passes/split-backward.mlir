// RUN: zbc-opt %s --split-input-file --zb-autodiff --zb-split-backward | FileCheck %s

// Tests that B keeps the input-gradient chain (what d_in.0 needs) and W gets
// the weight gradients; what W reads from B is handed over as B.i, and W
// reads the forward tensors it needs straight from F's keys.
zb.model @mlp {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  %w0 = zb.param "w0" init normal(0.1) : tensor<8x16xf32>
  %h = zb.linear %x, %w0 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %c = zb.cut %h : tensor<4x16xf32>
  %w1 = zb.param "w1" init normal(0.1) : tensor<16x16xf32>
  %b1 = zb.param "b1" init zeros : tensor<16xf32>
  %h1 = zb.linear %c, %w1 : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %h1b = zb.bias_add %h1, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = zb.relu %h1b : tensor<4x16xf32>
  %w2 = zb.param "w2" init normal(0.1) : tensor<16x3xf32>
  %o = zb.linear %r, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %l = zb.cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
// CHECK-LABEL: zb.pipeline @mlp
// Stage 0 sends nothing upstream: its whole backward is weight-gradient work.
// CHECK:       zb.stage 0 {
// CHECK:         zb.phase F(
// CHECK:         zb.phase B() {
// CHECK-NEXT:      zb.yield{{$}}
// CHECK:         zb.phase W(%d_out.0 = "d_out.0" : tensor<4x16xf32>, %input.x = "input.x" : tensor<4x8xf32>) {
// CHECK-NEXT:      %[[DW0:.+]] = zb.linear_grad_weight %input.x, %d_out.0
// CHECK-NEXT:      zb.yield "grad.w0" = %[[DW0]]
// CHECK:       zb.stage 1 {
// CHECK:         zb.phase B(
// CHECK:           %[[DO:.+]] = zb.cross_entropy_grad
// CHECK-NEXT:      %[[DR:.+]] = zb.linear_grad_input %[[DO]], %param.w2
// CHECK-NEXT:      %[[DH:.+]] = zb.relu_grad %[[DR]],
// CHECK-NEXT:      %[[DC:.+]] = zb.linear_grad_input %[[DH]], %param.w1
// CHECK-NEXT:      zb.yield "d_in.0" = %[[DC]], "B.0" = %[[DO]], "B.1" = %[[DH]] :
// CHECK-NOT:       linear_grad_weight
// CHECK:         zb.phase W(%F.{{[0-9]+}} = "F.{{[0-9]+}}" : tensor<4x16xf32>, %in.0 = "in.0" : tensor<4x16xf32>, %B.0 = "B.0" : tensor<4x3xf32>, %B.1 = "B.1" : tensor<4x16xf32>) {
// CHECK-DAG:       zb.linear_grad_weight %F.{{[0-9]+}}, %B.0
// CHECK-DAG:       zb.bias_grad %B.1
// CHECK-DAG:       zb.linear_grad_weight %in.0, %B.1
// CHECK:           zb.yield "grad.w1" = {{.+}}, "grad.b1" = {{.+}}, "grad.w2" = {{.+}} :

// -----

// Tests that a parameter gradient that is just an argument (the gradient of
// a parameter added to what the stage sends on) is yielded by W, and one that
// B computes anyway (a parameter added before the loss) by B.
zb.model @passthrough {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  %p0 = zb.param "p0" init zeros : tensor<4x8xf32>
  %s0 = zb.add %x, %p0 : tensor<4x8xf32>
  %c = zb.cut %s0 : tensor<4x8xf32>
  %p1 = zb.param "p1" init zeros : tensor<4x8xf32>
  %s1 = zb.add %c, %p1 : tensor<4x8xf32>
  %l = zb.cross_entropy %s1, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
// CHECK-LABEL: zb.pipeline @passthrough
// CHECK:       zb.stage 0 {
// CHECK:         zb.phase B() {
// CHECK:         zb.phase W(%d_out.0 = "d_out.0" : tensor<4x8xf32>) {
// CHECK-NEXT:      zb.yield "grad.p0" = %d_out.0 : tensor<4x8xf32>
// CHECK:       zb.stage 1 {
// CHECK:         zb.phase B(
// CHECK:           %[[D:.+]] = zb.cross_entropy_grad
// CHECK-NEXT:      zb.yield "d_in.0" = %[[D]], "grad.p1" = %[[D]] :
// CHECK:         zb.phase W() {
// CHECK-NEXT:      zb.yield{{$}}

// -----

// Tests the selective split: the weight gradient of an op marked
// zb.fuse_weight_grad stays in B, next to the rest of its gradient.
zb.model @fused {
  %x = zb.input "x" : tensor<4x8xf32>
  %w0 = zb.param "w0" init normal(0.1) : tensor<8x8xf32>
  %h0 = zb.linear %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c = zb.cut %h0 : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  %w = zb.param "w" init normal(0.1) : tensor<8x8xf32>
  %v = zb.param "v" init normal(0.1) : tensor<8x3xf32>
  %h = zb.linear %c, %w {zb.fuse_weight_grad} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %o = zb.linear %h, %v : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %l = zb.cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
// CHECK-LABEL: zb.pipeline @fused
// CHECK:       zb.stage 1 {
// CHECK:         zb.phase B(
// CHECK:           zb.linear_grad_weight %in.0, %{{.+}} {zb.fuse_weight_grad}
// CHECK:           zb.yield "d_in.0" = %{{.+}}, "grad.w" = %{{.+}}, "B.0" = %{{.+}} :
// CHECK:         zb.phase W(
// CHECK:           %[[DV:.+]] = zb.linear_grad_weight
// CHECK-NEXT:      zb.yield "grad.v" = %[[DV]]
