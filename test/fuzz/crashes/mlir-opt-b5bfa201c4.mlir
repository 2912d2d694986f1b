zb.pipeline @grad_twice {
  zb.stage 0 {
    %l = zb.input "" : tensor<f32>
    %w = zb.param "w" init zeros : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B(%input.l = "input.l" : tensor<f32>) {
      zb.yield "grad.w" = %input.l : tensor<f32>
    }
    zb.phase W(%input.l = "input.l" : tensor<f32>) {
      zb.yield "grad.w" = %input.l : tensor<f32>
    }
  }
}
