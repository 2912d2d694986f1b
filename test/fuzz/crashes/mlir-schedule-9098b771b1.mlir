zb.pipeline @key_leading_zero {
  zb.stage 0 {
    zb.phase F(%in.01 = "in.01" : tensor<4x!zb.token>) {
      zb.yield
}
    }
    zb.phase BW() {
      zb.yield
    }
  }
