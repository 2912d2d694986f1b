zb.model @m {
  %x = zb.input "x" : tensor<8x16xf32
  zb.loss %x : tensor<f32>
}
