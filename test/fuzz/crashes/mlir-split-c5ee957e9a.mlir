zb.pipeline @layernorm_grad_input_zero_epsilon {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    %g = zb.param "g" init ones : tensor<8xf32>
    zb.phase F(%input.l = "input.l" : tensor<index>) {
      zb.yield "loss" = %input.l : tensor<index>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>, %param.g = "param.g" : tensor<8xf32>) {
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g {epsilon = 0.0 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}
