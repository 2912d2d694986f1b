zb.model @m {
  %x = zb.input "x" : tensor<8x16xf32>
  %y = zb.label "y" : tensor<8xi64>
  %w = zb.param "w" init normal(0.02) : tensor<17x4xf32>
  %h = zb.linear %x, %w : (tensor<8x16xf32>, tensor<17x4xf32>) -> tensor<8x4xf32>
  %l = zb.cross_entropy %h, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
