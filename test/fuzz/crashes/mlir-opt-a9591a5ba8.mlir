zb.pipeline @input_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<4xindex>) {
    }
    zb.phase BW() {
      zb.yield
    }
  }
}
