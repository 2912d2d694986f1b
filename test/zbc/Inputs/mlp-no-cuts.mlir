// A three-layer MLP without zb.cut ops, for zb-partition to cut.
zb.model @mlp3 {
  %x = zb.input "x" : tensor<8x16xf32>
  %y = zb.label "y" : tensor<8xi64>
  %w0 = zb.param "w0" init normal(0.1) : tensor<16x64xf32>
  %h0 = zb.linear %x, %w0 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %a0 = zb.relu %h0 : tensor<8x64xf32>
  %w1 = zb.param "w1" init normal(0.1) : tensor<64x64xf32>
  %h1 = zb.linear %a0, %w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a1 = zb.relu %h1 : tensor<8x64xf32>
  %w2 = zb.param "w2" init normal(0.1) : tensor<64x8xf32>
  %o = zb.linear %a1, %w2 : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
  %l = zb.cross_entropy %o, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
