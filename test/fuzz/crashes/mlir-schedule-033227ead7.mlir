zb.pipeline @d_out_d_in_type_mismatch {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>) {
      zb.yield "out.0" = %input.x : tensor<4x3xf32>
    }
    zb.phase BW(%d_out.0 = "d_out.0" : tensor<4x3xf32>) {
      zb.yield
    }
  }
  zb.stage 1 {
    %y = zb.label "y" : tensor<4xi64>
    %t = zb.input "" : tensor<3x4xf32>
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW(%input.t = "input.t" : tensor<3x4xf32>) {
      zb.yield "d_in.0" = %input.t : tensor<3x4xf32>
    }
  }
}
