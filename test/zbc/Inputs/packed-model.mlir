// A model that reads packed documents: 2 rows of 4 tokens per microbatch,
// vocabulary 50, learned positions, one causal attention masked by the
// "documents" input. The tests of `zbc pack`'s samples and of the packed
// data checks (test/zbc/pack-data-checks.test) read it.
zb.model @packed {
  %tokens = zb.input "tokens" : tensor<2x4xi64>
  %positions = zb.input "positions" : tensor<2x4xi64>
  %documents = zb.input "documents" : tensor<2x4xi64>
  %targets = zb.label "targets" : tensor<2x4xi64>
  %wte = zb.param "wte" init normal(0.02) : tensor<50x8xf32>
  %wpe = zb.param "wpe" init normal(0.01) : tensor<4x8xf32>
  %0 = zb.embedding %tokens, %wte : (tensor<2x4xi64>, tensor<50x8xf32>) -> tensor<2x4x8xf32>
  %1 = zb.embedding %positions, %wpe : (tensor<2x4xi64>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %2 = zb.add %0, %1 : tensor<2x4x8xf32>
  %wqkv = zb.param "qkv" init normal(0.02) : tensor<8x24xf32>
  %3 = zb.linear %2, %wqkv : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %4 = zb.causal_attention %3 documents(%documents : tensor<2x4xi64>) heads(2) : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %head = zb.param "head" init normal(0.02) : tensor<8x50xf32>
  %logits = zb.linear %4, %head : (tensor<2x4x8xf32>, tensor<8x50xf32>) -> tensor<2x4x50xf32>
  %loss = zb.cross_entropy %logits, %targets : (tensor<2x4x50xf32>, tensor<2x4xi64>) -> tensor<f32>
  zb.loss %loss : tensor<f32>
}
