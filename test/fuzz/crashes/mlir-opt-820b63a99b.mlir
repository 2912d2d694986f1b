zb.pipeline @matmul_grad_lhs_batch_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dc = zb.input "dc" : tensor<2x3x5xf32>
    %b = zb.input "b" : tensor<3x4x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<complex<f32>>) {
      zb.yield "loss" = %input.l : tensor<complex<f32>>
    }
    zb.phase BW(%input.dc = "input.dc" : tensor<2x3x5xf32>, %input.b = "input.b" : tensor<3x4x5xf32>) {
      %da = zb.matmul_grad_lhs %input.dc, %input.b : (tensor<2x3x5xf32>, tensor<3x4x5xf32>) -> tensor<2x3x4xf32>
      zb.yield
    }
  }
}
