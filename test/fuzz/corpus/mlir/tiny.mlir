zb.model @tiny {
  %x = zb.input "x" : tensor<2x3xf32>
  %y = zb.label "y" : tensor<2xi64>
  %w0 = zb.param "w0" init normal(0.1) : tensor<3x4xf32>
  %h = zb.linear %x, %w0 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %s = zb.cut %h : tensor<2x4xf32>
  %w1 = zb.param "w1" init zeros : tensor<4x5xf32>
  %o = zb.linear %s, %w1 : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  %l = zb.cross_entropy %o, %y : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
