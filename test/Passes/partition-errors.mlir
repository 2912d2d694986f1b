// RUN: zbc-opt %s --split-input-file --verify-diagnostics --zb-partition=stages=3

// Tests that a model with its own cuts rejects a different stage count.
// expected-error @below {{'zb.model' op has 2 stages from its 'zb.cut' ops, but stages=3 was requested; remove the cuts or the option}}
zb.model @cut_twice {
  %x = zb.input "x" : tensor<8x64xf32>
  %y = zb.label "y" : tensor<8xi64>
  %fc0.weight = zb.param "fc0.weight" init normal(0.1) : tensor<64x64xf32>
  %h0 = zb.linear %x, %fc0.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a0 = zb.relu %h0 : tensor<8x64xf32>
  %c0 = zb.cut %a0 : tensor<8x64xf32>
  %fc1.weight = zb.param "fc1.weight" init normal(0.1) : tensor<64x64xf32>
  %h1 = zb.linear %c0, %fc1.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a1 = zb.relu %h1 : tensor<8x64xf32>
  %fc2.weight = zb.param "fc2.weight" init normal(0.1) : tensor<64x64xf32>
  %h2 = zb.linear %a1, %fc2.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a2 = zb.relu %h2 : tensor<8x64xf32>
  %fc3.weight = zb.param "fc3.weight" init normal(0.1) : tensor<64x64xf32>
  %h3 = zb.linear %a2, %fc3.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a3 = zb.relu %h3 : tensor<8x64xf32>
  %head = zb.param "head" init normal(0.1) : tensor<64x8xf32>
  %logits = zb.linear %a3, %head : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
  %loss = zb.cross_entropy %logits, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %loss : tensor<f32>
}

// -----

// Tests that asking for more stages than there are candidate gaps fails and
// names the most stages possible. Only the gap after the linear qualifies:
// the next op reads the label, and the loss must stay in the last stage.
// expected-error @below {{'zb.model' op cannot be cut into 3 stages: only 1 gap is crossed by the fewest values (1), so at most 2 stages}}
zb.model @one_gap {
  %x = zb.input "x" : tensor<8x16xf32>
  %y = zb.label "y" : tensor<8xi64>
  %w = zb.param "w" init normal(0.1) : tensor<16x4xf32>
  %h = zb.linear %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %l = zb.cross_entropy %h, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a model whose only tensor op reads the label cannot be cut.
// expected-error @below {{'zb.model' op cannot be cut into 3 stages: no gap before the loss has a value crossing it, so at most 1 stage}}
zb.model @no_gap {
  %x = zb.input "x" : tensor<8x4xf32>
  %y = zb.label "y" : tensor<8xi64>
  %l = zb.cross_entropy %x, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}
