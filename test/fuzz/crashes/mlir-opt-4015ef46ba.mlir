zb.pipeline @key_leading_zero {
  zb.stage 0 {
    zb.phase F(%in.01 = "in.01" : memref<8x16xf32>) {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}
