module {
  zb.pipeline @mlp3 {
    zb.stage 0 {
      %x = zb.input "x" : tensor<8x16xf32>
      %w0 = zb.param "w0" init normal(1.000000e-01) : tensor<16x64xf32>
      zb.phase F(%input.x = "input.x" : tensor<8x16xf32>, %param.w0 = "param.w0" : tensor<16x64xf32>) {
        %0 = zb.linear %input.x, %param.w0 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
        %1 = zb.relu %0 : tensor<8x64xf32>
        zb.yield "out.0" = %1, "F.0" = %0 : tensor<8x64xf32>, tensor<8x64xf32>
      }
      zb.phase B() {
        zb.yield
      }
      zb.phase W(%d_out.0 = "d_out.0" : tensor<8x64xf32>, %F.0 = "F.0" : tensor<8x64xf32>, %input.x = "input.x" : tensor<8x16xf32>) {
        %0 = zb.relu_grad %d_out.0, %F.0 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
        %1 = zb.linear_grad_weight %input.x, %0 : (tensor<8x16xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
        zb.yield "grad.w0" = %1 : tensor<16x64xf32>
      }
    }
    zb.stage 1 {
      %y = zb.label "y" : tensor<8xi64>
      %w1 = zb.param "w1" init normal(1.000000e-01) : tensor<64x64xf32>
      %w2 = zb.param "w2" init normal(1.000000e-01) : tensor<64x8xf32>
      zb.phase F(%in.0 = "in.0" : tensor<8x64xf32>, %param.w1 = "param.w1" : tensor<64x64xf32>, %param.w2 = "param.w2" : tensor<64x8xf32>, %label.y = "label.y" : tensor<8xi64>) {
        %0 = zb.linear %in.0, %param.w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
        %1 = zb.relu %0 : tensor<8x64xf32>
        %2 = zb.linear %1, %param.w2 : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
        %3 = zb.cross_entropy %2, %label.y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
        zb.yield "loss" = %3, "F.0" = %2, "F.1" = %1, "F.2" = %0 : tensor<f32>, tensor<8x8xf32>, tensor<8x64xf32>, tensor<8x64xf32>
      }
      zb.phase B(%label.y = "label.y" : tensor<8xi64>, %F.0 = "F.0" : tensor<8x8xf32>, %param.w2 = "param.w2" : tensor<64x8xf32>, %F.2 = "F.2" : tensor<8x64xf32>, %param.w1 = "param.w1" : tensor<64x64xf32>) {
        %0 = zb.fill 1.000000e+00 : tensor<f32>
        %1 = zb.cross_entropy_grad %F.0, %label.y, %0 : (tensor<8x8xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x8xf32>
        %2 = zb.linear_grad_input %1, %param.w2 : (tensor<8x8xf32>, tensor<64x8xf32>) -> tensor<8x64xf32>
        %3 = zb.relu_grad %2, %F.2 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
        %4 = zb.linear_grad_input %3, %param.w1 : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
        zb.yield "d_in.0" = %4, "B.0" = %1, "B.1" = %3 : tensor<8x64xf32>, tensor<8x8xf32>, tensor<8x64xf32>
      }
      zb.phase W(%F.1 = "F.1" : tensor<8x64xf32>, %in.0 = "in.0" : tensor<8x64xf32>, %B.0 = "B.0" : tensor<8x8xf32>, %B.1 = "B.1" : tensor<8x64xf32>) {
        %0 = zb.linear_grad_weight %F.1, %B.0 : (tensor<8x64xf32>, tensor<8x8xf32>) -> tensor<64x8xf32>
        %1 = zb.linear_grad_weight %in.0, %B.1 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<64x64xf32>
        zb.yield "grad.w1" = %1, "grad.w2" = %0 : tensor<64x64xf32>, tensor<64x8xf32>
      }
    }
  }
}
