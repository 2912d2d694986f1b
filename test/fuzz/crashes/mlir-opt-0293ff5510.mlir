zb.pipeline @read_out_key {
  zb.stage 0 {
    zb.phase F(%out.0 = "out.0" : index) {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}
