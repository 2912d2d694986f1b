// A small MLP classifier: one microbatch of 8 samples with 16 features, four
// linear layers (hidden width 64, ReLU between them), 8 classes, mean
// softmax cross-entropy. Cut into two pipeline stages after the second layer.
//
// examples/dsl/mlp.cpp builds the same IR with the C++ DSL.

zb.model @mlp {
  %x = zb.input "x" : tensor<8x16xf32>
  %y = zb.label "y" : tensor<8xi64>

  // Stage 0: fc0, fc1.
  %fc0.weight = zb.param "fc0.weight" init normal(0.1) : tensor<16x64xf32>
  %fc0.bias = zb.param "fc0.bias" init zeros : tensor<64xf32>
  %h0 = zb.linear %x, %fc0.weight : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %h0b = zb.bias_add %h0, %fc0.bias : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %a0 = zb.relu %h0b : tensor<8x64xf32>
  %fc1.weight = zb.param "fc1.weight" init normal(0.1) : tensor<64x64xf32>
  %fc1.bias = zb.param "fc1.bias" init zeros : tensor<64xf32>
  %h1 = zb.linear %a0, %fc1.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %h1b = zb.bias_add %h1, %fc1.bias : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %a1 = zb.relu %h1b : tensor<8x64xf32>

  // ---- stage boundary: only %a1 crosses ----
  %s1 = zb.cut %a1 : tensor<8x64xf32>

  // Stage 1: fc2, fc3, loss.
  %fc2.weight = zb.param "fc2.weight" init normal(0.1) : tensor<64x64xf32>
  %fc2.bias = zb.param "fc2.bias" init zeros : tensor<64xf32>
  %h2 = zb.linear %s1, %fc2.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %h2b = zb.bias_add %h2, %fc2.bias : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %a2 = zb.relu %h2b : tensor<8x64xf32>
  %fc3.weight = zb.param "fc3.weight" init normal(0.1) : tensor<64x8xf32>
  %fc3.bias = zb.param "fc3.bias" init zeros : tensor<8xf32>
  %logits = zb.linear %a2, %fc3.weight : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
  %logitsb = zb.bias_add %logits, %fc3.bias : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %loss = zb.cross_entropy %logitsb, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %loss : tensor<f32>
}
