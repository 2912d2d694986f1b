// RUN: zbc-opt %s --split-input-file --verify-diagnostics

//===----------------------------------------------------------------------===//
// zb.model region
//===----------------------------------------------------------------------===//

// Tests that an op of another dialect cannot appear in a model.
zb.model @foreign_op {
  // expected-error @+1 {{'builtin.module' op cannot appear in a 'zb.model'; a model holds only zb model-level ops}}
  builtin.module {}
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that an input needs a non-empty name.
zb.model @empty_name {
  // expected-error @+1 {{'zb.input' op needs a non-empty name}}
  %x = zb.input "" : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a parameter needs a non-empty name.
zb.model @empty_param_name {
  // expected-error @+1 {{'zb.param' op needs a non-empty name}}
  %w = zb.param "" init zeros : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that inputs and parameters share one namespace.
zb.model @duplicate_name {
  // expected-note @+1 {{first defined here}}
  %x = zb.input "x" : tensor<4xf32>
  // expected-error @+1 {{'zb.param' op redefines the name 'x'}}
  %w = zb.param "x" init ones : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a label cannot reuse the name of an input.
zb.model @duplicate_label_name {
  // expected-note @+1 {{first defined here}}
  %x = zb.input "y" : tensor<4xi64>
  // expected-error @+1 {{'zb.label' op redefines the name 'y'}}
  %y = zb.label "y" : tensor<4xi64>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a value of stage 0 cannot be used in stage 1 without a cut.
zb.model @stage_crossing {
  %x = zb.input "x" : tensor<4x8xf32>
  // expected-note @+1 {{value defined here}}
  %r = zb.relu %x : tensor<4x8xf32>
  %c = zb.cut %r : tensor<4x8xf32>
  // expected-error @+1 {{'zb.add' op in stage 1 uses a value of stage 0; values cross a stage boundary only through 'zb.cut'}}
  %s = zb.add %c, %r : tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a cut forwards values of the stage it ends only, not of the
// stage before that.
zb.model @cut_skips_a_stage {
  %x = zb.input "x" : tensor<4x8xf32>
  // expected-note @+1 {{value defined here}}
  %r = zb.relu %x : tensor<4x8xf32>
  %c0 = zb.cut %r : tensor<4x8xf32>
  %g = zb.gelu %c0 : tensor<4x8xf32>
  // expected-error @+1 {{'zb.cut' op in stage 1 uses a value of stage 0; values cross a stage boundary only through 'zb.cut'}}
  %c1:2 = zb.cut %g, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that the loss belongs to the last stage like any other op.
zb.model @loss_from_earlier_stage {
  %x = zb.input "x" : tensor<4x8xf32>
  %s = zb.input "s" : tensor<f32>
  // expected-note @+1 {{value defined here}}
  %r = zb.relu %s : tensor<f32>
  %c = zb.cut %x : tensor<4x8xf32>
  // expected-error @+1 {{'zb.loss' op in stage 1 uses a value of stage 0; values cross a stage boundary only through 'zb.cut'}}
  zb.loss %r : tensor<f32>
}

// -----

// Tests that a tensor with a zero dimension is rejected.
zb.model @zero_dim {
  // expected-error @+1 {{'zb.input' op result type 'tensor<4x0xf32>' has a zero dimension}}
  %x = zb.input "x" : tensor<4x0xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a tensor too large to plan memory for is rejected (its byte size
// would overflow int64).
zb.model @huge_tensor {
  // expected-error @+1 {{'zb.param' op result type 'tensor<9999999999x9999999999xf32>' is larger than 2^50 bytes}}
  %w = zb.param "w" init zeros : tensor<9999999999x9999999999xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that only the last stage may read a label.
zb.model @label_in_first_stage {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi64>
  // expected-error @+1 {{'zb.cross_entropy' op in stage 0 reads a label; labels are loaded for the last stage (1) only}}
  %ce = zb.cross_entropy %x, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %c = zb.cut %x : tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a use before the definition is reported by the dominance check,
// not as a stage crossing that a cut could fix.
zb.model @use_before_def_across_cut {
  %x = zb.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{operand #0 does not dominate this use}}
  %r = zb.relu %later : tensor<4x8xf32>
  %c = zb.cut %x : tensor<4x8xf32>
  // expected-note @+1 {{operand defined here}}
  %later = zb.relu %c : tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a parameter cannot be shared by two stages (no tied weights).
zb.model @tied_param {
  %x = zb.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'zb.param' op is used in stages 0 and 1; a parameter belongs to one stage (tied parameters are not supported)}}
  %w = zb.param "w" init normal(0.02) : tensor<8x8xf32>
  // expected-note @+1 {{used in stage 0 here}}
  %h = zb.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c = zb.cut %h : tensor<4x8xf32>
  // expected-note @+1 {{used in stage 1 here}}
  %o = zb.linear %c, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// zb.param
//===----------------------------------------------------------------------===//

// -----

// Tests that a normal initialiser needs a scale.
zb.model @normal_without_scale {
  // expected-error @+1 {{'zb.param' op init 'normal' needs a scale, e.g. normal(0.02)}}
  %w = zb.param "w" init normal : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a uniform initialiser needs a scale.
zb.model @uniform_without_scale {
  // expected-error @+1 {{'zb.param' op init 'uniform' needs a scale, e.g. uniform(0.02)}}
  %w = zb.param "w" init uniform : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a zeros initialiser takes no scale.
zb.model @zeros_with_scale {
  // expected-error @+1 {{'zb.param' op init 'zeros' takes no scale}}
  %w = zb.param "w" init zeros(0.5) : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a ones initialiser takes no scale.
zb.model @ones_with_scale {
  // expected-error @+1 {{'zb.param' op init 'ones' takes no scale}}
  %w = zb.param "w" init ones(1.0) : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a zero scale is rejected.
zb.model @zero_scale {
  // expected-error @+1 {{'zb.param' op scale must be positive, got 0.000000e+00}}
  %w = zb.param "w" init normal(0.0) : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a negative scale is rejected.
zb.model @negative_scale {
  // expected-error @+1 {{'zb.param' op scale must be positive, got -1.000000e+00}}
  %w = zb.param "w" init uniform(-1.0) : tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a parameter must be a float tensor.
zb.model @integer_param {
  // expected-error @+1 {{'zb.param' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %w = zb.param "w" init ones : tensor<4xi32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// zb.input, zb.cut, zb.loss
//===----------------------------------------------------------------------===//

// -----

// Tests that a dynamically shaped tensor is rejected.
zb.model @dynamic_shape {
  // expected-error @+1 {{'zb.input' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x4xf32>'}}
  %x = zb.input "x" : tensor<?x4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that an element type outside f16/bf16/f32/f64/i32/i64 is rejected.
zb.model @i8_input {
  // expected-error @+1 {{'zb.input' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi8>'}}
  %x = zb.input "x" : tensor<4xi8>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a cut must pass at least one value.
zb.model @empty_cut {
  // expected-error @+1 {{'zb.cut' op must pass at least one activation to the next stage}}
  "zb.cut"() : () -> ()
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that the loss must be a scalar.
zb.model @non_scalar_loss {
  %l = zb.input "l" : tensor<4xf32>
  // expected-error @+1 {{'zb.loss' op operand #0 must be 0D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xf32>'}}
  zb.loss %l : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Shape rules: zb.linear
//===----------------------------------------------------------------------===//

// -----

// Tests that a linear weight must be 2-D.
zb.model @linear_weight_not_2d {
  %x = zb.input "x" : tensor<4x8xf32>
  %w = zb.param "w" init ones : tensor<8xf32>
  // expected-error @+1 {{'zb.linear' op weight must be 2-D [in, out], got 'tensor<8xf32>'}}
  %h = zb.linear %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a linear input must have at least one dimension.
zb.model @linear_scalar_input {
  %x = zb.input "x" : tensor<f32>
  %w = zb.param "w" init ones : tensor<1x8xf32>
  // expected-error @+1 {{'zb.linear' op input must have at least one dimension, got 'tensor<f32>'}}
  %h = zb.linear %x, %w : (tensor<f32>, tensor<1x8xf32>) -> tensor<8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that the input features of a linear must match the weight rows.
zb.model @linear_feature_mismatch {
  %x = zb.input "x" : tensor<4x16xf32>
  %w = zb.param "w" init ones : tensor<8x32xf32>
  // expected-error @+1 {{'zb.linear' op input has 16 features (last dimension) but the weight has 8 rows}}
  %h = zb.linear %x, %w : (tensor<4x16xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a linear input and weight must share an element type.
zb.model @linear_element_type_mismatch {
  %x = zb.input "x" : tensor<4x8xf32>
  %w = zb.param "w" init ones : tensor<8x2xf16>
  // expected-error @+1 {{'zb.linear' op element types differ: input has 'f32', weight has 'f16'}}
  %h = zb.linear %x, %w : (tensor<4x8xf32>, tensor<8x2xf16>) -> tensor<4x2xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a linear result type must match the inferred type.
zb.model @linear_wrong_result {
  %x = zb.input "x" : tensor<4x8xf32>
  %w = zb.param "w" init ones : tensor<8x2xf32>
  // expected-error @+1 {{'zb.linear' op result type 'tensor<4x8xf32>' does not match the inferred type 'tensor<4x2xf32>'}}
  %h = zb.linear %x, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape rules: zb.matmul
//===----------------------------------------------------------------------===//

// -----

// Tests that matmul operands need at least two dimensions.
zb.model @matmul_rank_1 {
  %a = zb.input "a" : tensor<4xf32>
  %b = zb.input "b" : tensor<4xf32>
  // expected-error @+1 {{'zb.matmul' op operands must have the same rank, at least 2, got 'tensor<4xf32>' and 'tensor<4xf32>'}}
  %c = zb.matmul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that matmul operands must have the same rank.
zb.model @matmul_rank_mismatch {
  %a = zb.input "a" : tensor<2x3x4xf32>
  %b = zb.input "b" : tensor<4x5xf32>
  // expected-error @+1 {{'zb.matmul' op operands must have the same rank, at least 2, got 'tensor<2x3x4xf32>' and 'tensor<4x5xf32>'}}
  %c = zb.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that matmul batch dimensions must be equal.
zb.model @matmul_batch_mismatch {
  %a = zb.input "a" : tensor<2x3x4xf32>
  %b = zb.input "b" : tensor<3x4x5xf32>
  // expected-error @+1 {{'zb.matmul' op batch dimensions differ: 'tensor<2x3x4xf32>' and 'tensor<3x4x5xf32>'}}
  %c = zb.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that matmul contraction dimensions must be equal.
zb.model @matmul_contraction_mismatch {
  %a = zb.input "a" : tensor<2x3x4xf32>
  %b = zb.input "b" : tensor<2x6x5xf32>
  // expected-error @+1 {{'zb.matmul' op contraction dimensions differ: lhs has 4 columns, rhs has 6 rows}}
  %c = zb.matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x6x5xf32>) -> tensor<2x3x5xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that matmul operands must share an element type.
zb.model @matmul_element_type_mismatch {
  %a = zb.input "a" : tensor<3x4xbf16>
  %b = zb.input "b" : tensor<4x5xf16>
  // expected-error @+1 {{'zb.matmul' op element types differ: lhs has 'bf16', rhs has 'f16'}}
  %c = zb.matmul %a, %b : (tensor<3x4xbf16>, tensor<4x5xf16>) -> tensor<3x5xbf16>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape rules: zb.bias_add
//===----------------------------------------------------------------------===//

// -----

// Tests that a bias_add input must have at least one dimension.
zb.model @bias_add_scalar_input {
  %x = zb.input "x" : tensor<f32>
  %b = zb.param "b" init zeros : tensor<1xf32>
  // expected-error @+1 {{'zb.bias_add' op input must have at least one dimension, got 'tensor<f32>'}}
  %y = zb.bias_add %x, %b : (tensor<f32>, tensor<1xf32>) -> tensor<f32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a bias must be 1-D.
zb.model @bias_not_1d {
  %x = zb.input "x" : tensor<4x8xf32>
  %b = zb.param "b" init zeros : tensor<1x8xf32>
  // expected-error @+1 {{'zb.bias_add' op bias must be 1-D, got 'tensor<1x8xf32>'}}
  %y = zb.bias_add %x, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a bias must be as long as the input's last dimension.
zb.model @bias_size_mismatch {
  %x = zb.input "x" : tensor<4x8xf32>
  %b = zb.param "b" init zeros : tensor<4xf32>
  // expected-error @+1 {{'zb.bias_add' op bias has 4 elements but the input's last dimension is 8}}
  %y = zb.bias_add %x, %b : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a bias and its input must share an element type.
zb.model @bias_element_type_mismatch {
  %x = zb.input "x" : tensor<4x8xf32>
  %b = zb.param "b" init zeros : tensor<8xf64>
  // expected-error @+1 {{'zb.bias_add' op element types differ: input has 'f32', bias has 'f64'}}
  %y = zb.bias_add %x, %b : (tensor<4x8xf32>, tensor<8xf64>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape rules: zb.embedding
//===----------------------------------------------------------------------===//

// -----

// Tests that an embedding table must be 2-D.
zb.model @embedding_table_not_2d {
  %ids = zb.input "ids" : tensor<4xi64>
  %t = zb.param "t" init ones : tensor<10x3x2xf32>
  // expected-error @+1 {{'zb.embedding' op table must be 2-D [vocab, hidden], got 'tensor<10x3x2xf32>'}}
  %e = zb.embedding %ids, %t : (tensor<4xi64>, tensor<10x3x2xf32>) -> tensor<4x2xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that an embedding result type must match the inferred type.
zb.model @embedding_wrong_result {
  %ids = zb.input "ids" : tensor<4xi32>
  %t = zb.param "t" init ones : tensor<10x3xf32>
  // expected-error @+1 {{'zb.embedding' op result type 'tensor<4x3xf16>' does not match the inferred type 'tensor<4x3xf32>'}}
  %e = zb.embedding %ids, %t : (tensor<4xi32>, tensor<10x3xf32>) -> tensor<4x3xf16>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that embedding indices must be integers.
zb.model @embedding_float_indices {
  %ids = zb.input "ids" : tensor<4xf32>
  %t = zb.param "t" init ones : tensor<10x3xf32>
  // expected-error @+1 {{'zb.embedding' op operand #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %e = zb.embedding %ids, %t : (tensor<4xf32>, tensor<10x3xf32>) -> tensor<4x3xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape rules: zb.cross_entropy
//===----------------------------------------------------------------------===//

// -----

// Tests that logits need one dimension more than labels.
zb.model @cross_entropy_rank_mismatch {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4x8xi64>
  // expected-error @+1 {{'zb.cross_entropy' op logits must have one dimension (classes) more than labels, got 'tensor<4x8xf32>' and 'tensor<4x8xi64>'}}
  %ce = zb.cross_entropy %x, %y : (tensor<4x8xf32>, tensor<4x8xi64>) -> tensor<f32>
  zb.loss %ce : tensor<f32>
}

// -----

// Tests that logits and labels must agree on their leading dimensions.
zb.model @cross_entropy_leading_mismatch {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<5xi64>
  // expected-error @+1 {{'zb.cross_entropy' op logits 'tensor<4x8xf32>' and labels 'tensor<5xi64>' disagree on their leading dimensions}}
  %ce = zb.cross_entropy %x, %y : (tensor<4x8xf32>, tensor<5xi64>) -> tensor<f32>
  zb.loss %ce : tensor<f32>
}

// -----

// Tests that the cross-entropy result is a scalar of the logits' type.
zb.model @cross_entropy_wrong_result {
  %x = zb.input "x" : tensor<4x8xf32>
  %y = zb.label "y" : tensor<4xi32>
  // expected-error @+1 {{'zb.cross_entropy' op result type 'tensor<4xf32>' does not match the inferred type 'tensor<f32>'}}
  %ce = zb.cross_entropy %x, %y : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape rules: zb.layernorm
//===----------------------------------------------------------------------===//

// -----

// Tests that a zero layernorm epsilon is rejected.
zb.model @layernorm_zero_epsilon {
  %x = zb.input "x" : tensor<4x8xf32>
  %g = zb.param "g" init ones : tensor<8xf32>
  %b = zb.param "b" init zeros : tensor<8xf32>
  // expected-error @+1 {{'zb.layernorm' op epsilon must be positive, got 0.000000e+00}}
  %y = zb.layernorm %x, %g, %b {epsilon = 0.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a negative layernorm epsilon is rejected.
zb.model @layernorm_negative_epsilon {
  %x = zb.input "x" : tensor<4x8xf32>
  %g = zb.param "g" init ones : tensor<8xf32>
  %b = zb.param "b" init zeros : tensor<8xf32>
  // expected-error @+1 {{'zb.layernorm' op epsilon must be positive, got -1.000000e-05}}
  %y = zb.layernorm %x, %g, %b {epsilon = -1.0e-5 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a layernorm input must have at least one dimension.
zb.model @layernorm_scalar_input {
  %x = zb.input "x" : tensor<f32>
  %g = zb.param "g" init ones : tensor<1xf32>
  %b = zb.param "b" init zeros : tensor<1xf32>
  // expected-error @+1 {{'zb.layernorm' op input must have at least one dimension, got 'tensor<f32>'}}
  %y = zb.layernorm %x, %g, %b : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a layernorm gamma must be 1-D.
zb.model @layernorm_gamma_not_1d {
  %x = zb.input "x" : tensor<4x8xf32>
  %g = zb.param "g" init ones : tensor<4x8xf32>
  %b = zb.param "b" init zeros : tensor<8xf32>
  // expected-error @+1 {{'zb.layernorm' op gamma must be 1-D, got 'tensor<4x8xf32>'}}
  %y = zb.layernorm %x, %g, %b : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a layernorm gamma must be as long as the input's last dimension.
zb.model @layernorm_gamma_size_mismatch {
  %x = zb.input "x" : tensor<4x8xf32>
  %g = zb.param "g" init ones : tensor<4xf32>
  %b = zb.param "b" init zeros : tensor<8xf32>
  // expected-error @+1 {{'zb.layernorm' op gamma has 4 elements but the input's last dimension is 8}}
  %y = zb.layernorm %x, %g, %b : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a layernorm gamma must share the input's element type.
zb.model @layernorm_gamma_element_type_mismatch {
  %x = zb.input "x" : tensor<4x8xbf16>
  %g = zb.param "g" init ones : tensor<8xf32>
  %b = zb.param "b" init zeros : tensor<8xbf16>
  // expected-error @+1 {{'zb.layernorm' op element types differ: input has 'bf16', gamma has 'f32'}}
  %y = zb.layernorm %x, %g, %b : (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a layernorm beta must be 1-D.
zb.model @layernorm_beta_not_1d {
  %x = zb.input "x" : tensor<4x8xf32>
  %g = zb.param "g" init ones : tensor<8xf32>
  %b = zb.param "b" init zeros : tensor<1x8xf32>
  // expected-error @+1 {{'zb.layernorm' op beta must be 1-D, got 'tensor<1x8xf32>'}}
  %y = zb.layernorm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a layernorm beta must be as long as the input's last dimension.
zb.model @layernorm_beta_size_mismatch {
  %x = zb.input "x" : tensor<4x8xf32>
  %g = zb.param "g" init ones : tensor<8xf32>
  %b = zb.param "b" init zeros : tensor<16xf32>
  // expected-error @+1 {{'zb.layernorm' op beta has 16 elements but the input's last dimension is 8}}
  %y = zb.layernorm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a layernorm beta must share the input's element type.
zb.model @layernorm_beta_element_type_mismatch {
  %x = zb.input "x" : tensor<4x8xf64>
  %g = zb.param "g" init ones : tensor<8xf64>
  %b = zb.param "b" init zeros : tensor<8xf32>
  // expected-error @+1 {{'zb.layernorm' op element types differ: input has 'f64', beta has 'f32'}}
  %y = zb.layernorm %x, %g, %b : (tensor<4x8xf64>, tensor<8xf64>, tensor<8xf32>) -> tensor<4x8xf64>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape rules: zb.causal_attention
//===----------------------------------------------------------------------===//

// -----

// Tests that causal attention takes a 3-D packed qkv.
zb.model @attention_not_3d {
  %qkv = zb.input "qkv" : tensor<8x24xf32>
  // expected-error @+1 {{'zb.causal_attention' op qkv must be 3-D [batch, seq, 3*hidden], got 'tensor<8x24xf32>'}}
  %a = zb.causal_attention %qkv heads(2) : tensor<8x24xf32> -> tensor<8x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that the packed qkv dimension must be a multiple of 3.
zb.model @attention_not_packed {
  %qkv = zb.input "qkv" : tensor<2x8x25xf32>
  // expected-error @+1 {{'zb.causal_attention' op qkv's last dimension (25) is not 3*hidden}}
  %a = zb.causal_attention %qkv heads(1) : tensor<2x8x25xf32> -> tensor<2x8x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that the hidden size must be divisible by the number of heads.
zb.model @attention_heads_do_not_divide {
  %qkv = zb.input "qkv" : tensor<2x8x24xf32>
  // expected-error @+1 {{'zb.causal_attention' op hidden size 8 is not divisible by 3 heads}}
  %a = zb.causal_attention %qkv heads(3) : tensor<2x8x24xf32> -> tensor<2x8x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zero heads is rejected by the attribute constraint.
zb.model @attention_zero_heads {
  %qkv = zb.input "qkv" : tensor<2x8x24xf32>
  // expected-error @+1 {{'zb.causal_attention' op attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %a = zb.causal_attention %qkv heads(0) : tensor<2x8x24xf32> -> tensor<2x8x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a causal attention result type must match the inferred type.
zb.model @attention_wrong_result {
  %qkv = zb.input "qkv" : tensor<2x8x24xf32>
  // expected-error @+1 {{'zb.causal_attention' op result type 'tensor<2x8x24xf32>' does not match the inferred type 'tensor<2x8x8xf32>'}}
  %a = zb.causal_attention %qkv heads(2) : tensor<2x8x24xf32> -> tensor<2x8x24xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// -----

// Tests that an elementwise op keeps its operand type.
zb.model @add_wrong_result {
  %x = zb.input "x" : tensor<4xf32>
  // expected-error @+1 {{'zb.add' op requires the same type for all operands and results}}
  %y = "zb.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// zb.program
//===----------------------------------------------------------------------===//

// -----

// Tests that a program places at least one stage.
// expected-error @+1 {{'zb.program' op placement must name the rank of at least one stage}}
zb.program @empty_placement microbatches(1) placement [] {
  zb.rank 0 {
  }
}

// -----

// Tests that a stage cannot be placed on a negative rank.
// expected-error @+1 {{'zb.program' op placement of stage 1 is negative (-1)}}
zb.program @negative_placement microbatches(1) placement [0, -1] {
  zb.rank 0 {
  }
}

// -----

// Tests that a program needs at least one microbatch.
// expected-error @+1 {{'zb.program' op attribute 'microbatches' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
zb.program @zero_microbatches microbatches(0) placement [0] {
  zb.rank 0 {
  }
}

// -----

// Tests that a program holds only zb.rank ops.
zb.program @foreign_op microbatches(1) placement [0] {
  zb.rank 0 {
  }
  // expected-error @+1 {{'builtin.module' op cannot appear in a 'zb.program'; it holds only 'zb.rank' ops}}
  builtin.module {}
}

// -----

// Tests that ranks appear in order.
zb.program @ranks_out_of_order microbatches(1) placement [0, 1] {
  // expected-error @+1 {{'zb.rank' op is rank 1 but rank 0 is expected here; ranks appear once each, in order}}
  zb.rank 1 {
  }
  zb.rank 0 {
  }
}

// -----

// Tests that a rank appears only once.
zb.program @duplicate_rank microbatches(1) placement [0] {
  zb.rank 0 {
  }
  // expected-error @+1 {{'zb.rank' op is rank 0 but rank 1 is expected here; ranks appear once each, in order}}
  zb.rank 0 {
  }
}

// -----

// Tests that a rank number cannot be negative.
zb.program @negative_rank microbatches(1) placement [0] {
  // expected-error @+1 {{'zb.rank' op attribute 'rank' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  zb.rank -1 {
  }
}

// -----

// Tests that every stage is placed on a rank the program has.
// expected-error @+1 {{'zb.program' op places stage 1 on rank 1 but the program has 1 rank}}
zb.program @missing_rank microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
  }
}

// -----

// Tests that every rank holds at least one stage.
// expected-error @+1 {{'zb.program' op rank 1 holds no stage}}
zb.program @idle_rank microbatches(1) placement [0, 0] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %f1 = zb.compute F stage 1 mb 0 after(%f0)
  }
  zb.rank 1 {
  }
}

//===----------------------------------------------------------------------===//
// zb.rank
//===----------------------------------------------------------------------===//

// -----

// Tests that the same forward cannot run twice on a rank.
zb.program @duplicate_forward microbatches(1) placement [0] {
  zb.rank 0 {
    // expected-note @+1 {{first done here}}
    %f = zb.compute F stage 0 mb 0
    // expected-error @+1 {{'zb.compute' op repeats F of stage 0 microbatch 0 on rank 0}}
    %g = zb.compute F stage 0 mb 0
  }
}

// -----

// Tests that a fused BW clashes with a B of the same stage and microbatch.
zb.program @bw_after_b microbatches(2) placement [0] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 1
    // expected-note @+1 {{first done here}}
    %b = zb.compute B stage 0 mb 1 after(%f)
    // expected-error @+1 {{'zb.compute' op repeats B of stage 0 microbatch 1 on rank 0}}
    %bw = zb.compute BW stage 0 mb 1 after(%b)
  }
}

// -----

// Tests that a W clashes with a fused BW of the same stage and microbatch.
zb.program @w_after_bw microbatches(1) placement [0] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    // expected-note @+1 {{first done here}}
    %bw = zb.compute BW stage 0 mb 0 after(%f)
    // expected-error @+1 {{'zb.compute' op repeats W of stage 0 microbatch 0 on rank 0}}
    %w = zb.compute W stage 0 mb 0 after(%bw)
  }
}

// -----

// Tests that the same send cannot appear twice on a rank.
zb.program @duplicate_send microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    // expected-note @+1 {{first done here}}
    %s0 = zb.send act stage 0 mb 0 to 1 after(%f)
    // expected-error @+1 {{'zb.send' op repeats send act of stage 0 microbatch 0 on rank 0}}
    %s1 = zb.send act stage 0 mb 0 to 1 after(%f)
  }
  zb.rank 1 {
  }
}

// -----

// Tests that the same recv cannot appear twice on a rank.
zb.program @duplicate_recv microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-note @+1 {{first done here}}
    %r0 = zb.recv act stage 0 mb 0 from 0
    // expected-error @+1 {{'zb.recv' op repeats recv act of stage 0 microbatch 0 on rank 1}}
    %r1 = zb.recv act stage 0 mb 0 from 0
  }
}

// -----

// Tests that a rank holds only compute, send and recv ops.
zb.program @foreign_op_in_rank microbatches(1) placement [0] {
  zb.rank 0 {
    // expected-error @+1 {{'builtin.module' op cannot appear in a 'zb.rank'; it holds only 'zb.compute', 'zb.send' and 'zb.recv'}}
    builtin.module {}
  }
}

//===----------------------------------------------------------------------===//
// zb.compute
//===----------------------------------------------------------------------===//

// -----

// Tests that a compute names a stage of the program.
zb.program @compute_stage_oob microbatches(4) placement [0, 0] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.compute' op stage 2 is out of range [0, 2)}}
    %f = zb.compute F stage 2 mb 0
  }
}

// -----

// Tests that a compute names a microbatch of the program.
zb.program @compute_microbatch_oob microbatches(4) placement [0] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.compute' op microbatch 4 is out of range [0, 4)}}
    %f = zb.compute F stage 0 mb 4
  }
}

// -----

// Tests that a compute runs on the rank that holds its stage (interleaved).
zb.program @compute_wrong_rank microbatches(1) placement [0, 1, 0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.compute' op runs on rank 0 but stage 3 is placed on rank 1}}
    %f = zb.compute W stage 3 mb 0
  }
  zb.rank 1 {
  }
}

// -----

// Tests that a negative stage is rejected by the attribute constraint.
zb.program @compute_negative_stage microbatches(1) placement [0] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.compute' op attribute 'stage' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %f = zb.compute F stage -1 mb 0
  }
}

//===----------------------------------------------------------------------===//
// zb.send / zb.recv
//===----------------------------------------------------------------------===//

// -----

// Tests that a send names a stage of the program.
zb.program @send_stage_oob microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op stage 2 is out of range [0, 2)}}
    %s = zb.send act stage 2 mb 0 to 1
  }
  zb.rank 1 {
  }
}

// -----

// Tests that a recv names a microbatch of the program.
zb.program @recv_microbatch_oob microbatches(2) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op microbatch 2 is out of range [0, 2)}}
    %r = zb.recv act stage 0 mb 2 from 0
  }
}

// -----

// Tests that a send names a peer rank of the program.
zb.program @send_peer_oob microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op peer rank 2 is out of range [0, 2)}}
    %s = zb.send act stage 0 mb 0 to 2
  }
  zb.rank 1 {
  }
}

// -----

// Tests that a negative peer is rejected by the attribute constraint.
zb.program @recv_negative_peer microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op attribute 'peer' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %r = zb.recv act stage 0 mb 0 from -1
  }
}

// -----

// Tests that a send cannot target its own rank.
zb.program @send_to_self microbatches(1) placement [0, 0] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op sends to its own rank 0}}
    %s = zb.send act stage 0 mb 0 to 0
  }
}

// -----

// Tests that a recv cannot come from its own rank.
zb.program @recv_from_self microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op receives from its own rank 1}}
    %r = zb.recv grad stage 1 mb 0 from 1
  }
}

// -----

// Tests that the activation of the last stage is never sent.
zb.program @send_act_of_last_stage microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.send' op carries the activation of stage 1, which no stage consumes}}
    %s = zb.send act stage 1 mb 0 to 0
  }
}

// -----

// Tests that the input gradient of the first stage is never received.
zb.program @recv_grad_of_first_stage microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op carries the input gradient of stage 0, which no stage consumes}}
    %r = zb.recv grad stage 0 mb 0 from 0
  }
}

// -----

// Tests that the input gradient of the first stage is never sent.
zb.program @send_grad_of_first_stage microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op carries the input gradient of stage 0, which no stage consumes}}
    %s = zb.send grad stage 0 mb 0 to 1
  }
  zb.rank 1 {
  }
}

// -----

// Tests that an activation is sent to the rank that holds the next stage.
zb.program @send_act_wrong_peer microbatches(1) placement [0, 1, 2] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op names peer rank 2 but stage 1 is placed on rank 1}}
    %s = zb.send act stage 0 mb 0 to 2
  }
  zb.rank 1 {
  }
  zb.rank 2 {
  }
}

// -----

// Tests that a gradient is sent to the rank that holds the previous stage.
zb.program @send_grad_wrong_peer microbatches(1) placement [0, 1, 2] {
  zb.rank 0 {
  }
  zb.rank 1 {
  }
  zb.rank 2 {
    // expected-error @+1 {{'zb.send' op names peer rank 0 but stage 1 is placed on rank 1}}
    %s = zb.send grad stage 2 mb 0 to 0
  }
}

// -----

// Tests that an activation is received from the rank that holds its stage.
zb.program @recv_act_wrong_peer microbatches(1) placement [0, 1, 2] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op names peer rank 2 but stage 0 is placed on rank 0}}
    %r = zb.recv act stage 0 mb 0 from 2
  }
  zb.rank 2 {
  }
}

// -----

// Tests that a send runs on the rank that holds the producing stage.
zb.program @send_on_wrong_rank microbatches(1) placement [0, 1, 2] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.send' op is on rank 1 but stage 0 is placed on rank 0}}
    %s = zb.send act stage 0 mb 0 to 2
  }
  zb.rank 2 {
  }
}

// -----

// Tests that a recv runs on the rank that holds the consuming stage.
zb.program @recv_on_wrong_rank microbatches(1) placement [0, 1, 2] {
  zb.rank 0 {
  }
  zb.rank 1 {
  }
  zb.rank 2 {
    // expected-error @+1 {{'zb.recv' op is on rank 2 but stage 1 is placed on rank 1}}
    %r = zb.recv act stage 0 mb 0 from 0
  }
}

// -----

// Tests that a gradient recv runs on the rank that holds the consuming stage,
// here with an interleaved placement.
zb.program @recv_grad_on_wrong_rank microbatches(1) placement [0, 1, 0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.recv' op is on rank 0 but stage 1 is placed on rank 1}}
    %r = zb.recv grad stage 2 mb 0 from 1
  }
  zb.rank 1 {
  }
}
