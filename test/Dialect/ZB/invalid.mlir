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

// Tests that an attribute an op does not define (a guessed option) is a
// located error naming the op's own attributes, not silently kept.
zb.model @guessed_attribute {
  %x = zb.input "x" : tensor<2x8xf32>
  %g = zb.param "g" init ones : tensor<8xf32>
  %b = zb.param "b" init zeros : tensor<8xf32>
  // expected-error @+1 {{'zb.layernorm' op has no attribute 'rms' (it takes epsilon; besides, only 'zb.fuse_weight_grad' may be attached)}}
  %y = zb.layernorm %x, %g, %b {rms = true} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a zb op that does not exist is named with the ops that do.
zb.model @unknown_op {
  %x = zb.input "x" : tensor<2x8xf32>
  // expected-error @+1 {{custom op 'zb.rms_norm' is not a zb op; the zb ops are: zb.add, }}
  %y = zb.rms_norm %x : tensor<2x8xf32>
}

// -----

// Tests that a [out, in] weight is read as such: 8 input features need a
// weight of 8 columns.
zb.model @linear_out_in {
  %x = zb.input "x" : tensor<2x8xf32>
  %w = zb.param "w" init ones : tensor<8x4xf32>
  // expected-error @+1 {{'zb.linear' op input has 8 features (last dimension) but the weight [out, in] takes 4}}
  %y = zb.linear %x, %w {weight_out_in} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zb.rmsnorm's weight must match the last dimension.
zb.model @rms_weight {
  %x = zb.input "x" : tensor<2x8xf32>
  %w = zb.param "w" init ones : tensor<4xf32>
  // expected-error @+1 {{'zb.rmsnorm' op weight has 4 elements but the input's last dimension is 8}}
  %y = zb.rmsnorm %x, %w : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zb.rmsnorm's epsilon must be positive.
zb.model @rms_epsilon {
  %x = zb.input "x" : tensor<2x8xf32>
  %w = zb.param "w" init ones : tensor<8xf32>
  // expected-error @+1 {{'zb.rmsnorm' op epsilon must be positive, got 0}}
  %y = zb.rmsnorm %x, %w {epsilon = 0.0 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that head_dim must be even.
zb.model @rope_odd_head {
  %x = zb.input "x" : tensor<2x8x12xf32>
  %p = zb.input "p" : tensor<2x8xi64>
  // expected-error @+1 {{'zb.rope' op head_dim must be even and at most 256, got 3}}
  %y = zb.rope %x, %p {head_dim = 3 : i64, max_positions = 8 : i64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that the features must be whole heads.
zb.model @rope_heads {
  %x = zb.input "x" : tensor<2x8x12xf32>
  %p = zb.input "p" : tensor<2x8xi64>
  // expected-error @+1 {{'zb.rope' op the input's 12 features are not whole heads of 8}}
  %y = zb.rope %x, %p {head_dim = 8 : i64, max_positions = 8 : i64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that positions must be [batch, seq].
zb.model @rope_positions {
  %x = zb.input "x" : tensor<2x8x12xf32>
  %p = zb.input "p" : tensor<8xi64>
  // expected-error @+1 {{'zb.rope' op positions must be [batch, seq] = [2, 8], got 'tensor<8xi64>'}}
  %y = zb.rope %x, %p {head_dim = 4 : i64, max_positions = 8 : i64} : (tensor<2x8x12xf32>, tensor<8xi64>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that Llama 3's scaling is all four attributes or none.
zb.model @rope_partial_llama3 {
  %x = zb.input "x" : tensor<2x8x12xf32>
  %p = zb.input "p" : tensor<2x8xi64>
  // expected-error @+1 {{'zb.rope' op llama3 scaling needs all four of llama3_factor, llama3_low_freq_factor, llama3_high_freq_factor and llama3_original_max_positions; 1 given}}
  %y = zb.rope %x, %p {head_dim = 4 : i64, max_positions = 8 : i64, llama3_factor = 8.0 : f64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that theta must be positive.
zb.model @rope_theta {
  %x = zb.input "x" : tensor<2x8x12xf32>
  %p = zb.input "p" : tensor<2x8xi64>
  // expected-error @+1 {{'zb.rope' op theta must be positive, got -1}}
  %y = zb.rope %x, %p {head_dim = 4 : i64, max_positions = 8 : i64, theta = -1.0 : f64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that an attribute zb.rope does not define is an error.
zb.model @rope_unknown_attr {
  %x = zb.input "x" : tensor<2x8x12xf32>
  %p = zb.input "p" : tensor<2x8xi64>
  // expected-error @+1 {{'zb.rope' op has no attribute 'rope_type' (it takes head_dim, llama3_factor, llama3_high_freq_factor, llama3_low_freq_factor, llama3_original_max_positions, max_positions, theta; besides, only 'zb.fuse_weight_grad' may be attached)}}
  %y = zb.rope %x, %p {head_dim = 4 : i64, max_positions = 8 : i64, rope_type = "yarn"} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zb.attention's kv heads divide its heads.
zb.model @gqa_divide {
  %q = zb.input "q" : tensor<2x8x16xf32>
  %k = zb.input "k" : tensor<2x8x12xf32>
  %v = zb.input "v" : tensor<2x8x12xf32>
  // expected-error @+1 {{'zb.attention' op kv_heads must divide heads, got heads = 4 and kv_heads = 3}}
  %y = zb.attention %q, %k, %v {heads = 4 : i64, kv_heads = 3 : i64} : (tensor<2x8x16xf32>, tensor<2x8x12xf32>, tensor<2x8x12xf32>) -> tensor<2x8x16xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zb.attention's head dimension is even.
zb.model @gqa_odd {
  %q = zb.input "q" : tensor<2x8x12xf32>
  %k = zb.input "k" : tensor<2x8x6xf32>
  %v = zb.input "v" : tensor<2x8x6xf32>
  // expected-error @+1 {{'zb.attention' op the head dimension must be even and at most 256, got 3}}
  %y = zb.attention %q, %k, %v {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x8x12xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zb.attention's k and v hold kv_heads heads of q's size.
zb.model @gqa_kv_shape {
  %q = zb.input "q" : tensor<2x8x16xf32>
  %k = zb.input "k" : tensor<2x8x16xf32>
  %v = zb.input "v" : tensor<2x8x16xf32>
  // expected-error @+1 {{'zb.attention' op k and v must be [2, 8, 8] (kv_heads x the head dimension 4) of q's element type, got 'tensor<2x8x16xf32>'}}
  %y = zb.attention %q, %k, %v {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
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
  // expected-error @+1 {{'zb.linear' op input has 16 features (last dimension) but the weight [in, out] takes 8}}
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
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f)
    // expected-error @+1 {{'zb.send' op repeats send act 'out.0' of stage 0 microbatch 0 on rank 0}}
    %s1 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f)
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
    %r0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    // expected-error @+1 {{'zb.recv' op repeats recv act 'out.0' of stage 0 microbatch 0 on rank 1}}
    %r1 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
  }
}

// -----

// Tests that a rank holds only compute, send and recv ops.
zb.program @foreign_op_in_rank microbatches(1) placement [0] {
  zb.rank 0 {
    // expected-error @+1 {{'builtin.module' op cannot appear in a 'zb.rank'; it holds only 'zb.compute', 'zb.offload', 'zb.reload', 'zb.send', 'zb.recv', 'zb.group' and the collectives}}
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

// Tests that a stash copy runs on the rank that holds its stage.
zb.program @offload_wrong_rank microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.offload' op runs on rank 0 but stage 1 is placed on rank 1}}
    %o = zb.offload stage 1 mb 0
  }
  zb.rank 1 {
  }
}

// -----

// Tests that a rank reloads a stash once.
zb.program @reload_twice microbatches(1) placement [0] {
  zb.rank 0 {
    // expected-note @+1 {{first done here}}
    %l = zb.reload stage 0 mb 0
    // expected-error @+1 {{'zb.reload' op repeats reload of stage 0 microbatch 0 on rank 0}}
    %m = zb.reload stage 0 mb 0
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
    %s = zb.send act stage 2 mb 0 to 1 "out.0" : tensor<4xf32>
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
    %r = zb.recv act stage 0 mb 2 from 0 "out.0" : tensor<4xf32>
  }
}

// -----

// Tests that a send names a peer rank of the program.
zb.program @send_peer_oob microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op peer rank 2 is out of range [0, 2)}}
    %s = zb.send act stage 0 mb 0 to 2 "out.0" : tensor<4xf32>
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
    %r = zb.recv act stage 0 mb 0 from -1 "out.0" : tensor<4xf32>
  }
}

// -----

// Tests that a send cannot target its own rank.
zb.program @send_to_self microbatches(1) placement [0, 0] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op sends to its own rank 0}}
    %s = zb.send act stage 0 mb 0 to 0 "out.0" : tensor<4xf32>
  }
}

// -----

// Tests that a recv cannot come from its own rank.
zb.program @recv_from_self microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op receives from its own rank 1}}
    %r = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
  }
}

// -----

// Tests that the activation of the last stage is never sent.
zb.program @send_act_of_last_stage microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.send' op carries the activation of stage 1, which no stage consumes}}
    %s = zb.send act stage 1 mb 0 to 0 "out.0" : tensor<4xf32>
  }
}

// -----

// Tests that the input gradient of the first stage is never received.
zb.program @recv_grad_of_first_stage microbatches(1) placement [0, 1] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op carries the input gradient of stage 0, which no stage consumes}}
    %r = zb.recv grad stage 0 mb 0 from 0 "d_in.0" : tensor<4xf32>
  }
}

// -----

// Tests that the input gradient of the first stage is never sent.
zb.program @send_grad_of_first_stage microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op carries the input gradient of stage 0, which no stage consumes}}
    %s = zb.send grad stage 0 mb 0 to 1 "d_in.0" : tensor<4xf32>
  }
  zb.rank 1 {
  }
}

// -----

// Tests that an activation is sent to the rank that holds the next stage.
zb.program @send_act_wrong_peer microbatches(1) placement [0, 1, 2] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.send' op names peer rank 2 but stage 1 is placed on rank 1}}
    %s = zb.send act stage 0 mb 0 to 2 "out.0" : tensor<4xf32>
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
    %s = zb.send grad stage 2 mb 0 to 0 "d_in.0" : tensor<4xf32>
  }
}

// -----

// Tests that an activation is received from the rank that holds its stage.
zb.program @recv_act_wrong_peer microbatches(1) placement [0, 1, 2] {
  zb.rank 0 {
  }
  zb.rank 1 {
    // expected-error @+1 {{'zb.recv' op names peer rank 2 but stage 0 is placed on rank 0}}
    %r = zb.recv act stage 0 mb 0 from 2 "out.0" : tensor<4xf32>
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
    %s = zb.send act stage 0 mb 0 to 2 "out.0" : tensor<4xf32>
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
    %r = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
  }
}

// -----

// Tests that a gradient recv runs on the rank that holds the consuming stage,
// here with an interleaved placement.
zb.program @recv_grad_on_wrong_rank microbatches(1) placement [0, 1, 0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.recv' op is on rank 0 but stage 1 is placed on rank 1}}
    %r = zb.recv grad stage 2 mb 0 from 1 "d_in.0" : tensor<4xf32>
  }
  zb.rank 1 {
  }
}

//===----------------------------------------------------------------------===//
// zb.phase
//===----------------------------------------------------------------------===//

// -----

// Tests that a phase kind is one of F, B, W and BW.
zb.pipeline @unknown_phase_kind {
  zb.stage 0 {
    // expected-error @+1 {{unknown phase kind 'FW'; expected F, B, W or BW}}
    zb.phase FW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase has one key per block argument (generic form).
zb.pipeline @phase_key_count {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4xf32>
    // expected-error @+1 {{'zb.phase' op has 2 argument keys for a different number of arguments}}
    "zb.phase"() <{arg_keys = ["input.x", "in.0"], kind = 0 : i32}> ({
    ^bb0(%arg0: tensor<4xf32>):
      "zb.yield"() <{keys = []}> : () -> ()
    }) : () -> ()
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that an index key has no leading zero (one key, one spelling).
zb.pipeline @key_leading_zero {
  zb.stage 0 {
    // expected-error @+1 {{'zb.phase' op has malformed key 'in.01'}}
    zb.phase F(%in.01 = "in.01" : tensor<4xf32>) {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a key starts with a known prefix.
zb.pipeline @key_unknown_prefix {
  zb.stage 0 {
    // expected-error @+1 {{'zb.phase' op has malformed key 'act.0'}}
    zb.phase F(%act.0 = "act.0" : tensor<4xf32>) {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a key other than 'loss' has a suffix.
zb.pipeline @key_without_suffix {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4xf32>
    // expected-error @+1 {{'zb.phase' op has malformed key 'input'}}
    zb.phase F(%input = "input" : tensor<4xf32>) {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase cannot read an activation it sends on (out.*).
zb.pipeline @read_out_key {
  zb.stage 0 {
    // expected-error @+1 {{'zb.phase' op cannot read key 'out.0'}}
    zb.phase F(%out.0 = "out.0" : tensor<4xf32>) {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase cannot read a parameter gradient; the runtime
// accumulates those.
zb.pipeline @read_grad_key {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op cannot read key 'grad.w'}}
    zb.phase BW(%grad.w = "grad.w" : tensor<4xf32>) {
      zb.yield
    }
  }
}

// -----

// Tests that a backward phase cannot read the loss (it seeds its gradient
// with zb.fill instead).
zb.pipeline @read_loss_key {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op cannot read key 'loss'}}
    zb.phase BW(%loss = "loss" : tensor<f32>) {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads each key once.
zb.pipeline @read_key_twice {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4xf32>
    // expected-error @+1 {{'zb.phase' op names key 'input.x' twice}}
    zb.phase F(%a = "input.x" : tensor<4xf32>, %b = "input.x" : tensor<4xf32>) {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// zb.yield
//===----------------------------------------------------------------------===//

// -----

// Tests that a yield has one key per value (generic form).
zb.pipeline @yield_key_count {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      // expected-error @+1 {{'zb.yield' op has 2 keys for 1 values}}
      "zb.yield"(%input.l) <{keys = ["loss", "F.0"]}> : (tensor<f32>) -> ()
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a yielded key is well formed.
zb.pipeline @yield_malformed_key {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4xf32>
    zb.phase F(%input.x = "input.x" : tensor<4xf32>) {
      // expected-error @+1 {{'zb.yield' op has malformed key 'out.x'}}
      zb.yield "out.x" = %input.x : tensor<4xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that F cannot yield an input gradient.
zb.pipeline @f_yields_d_in {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4xf32>
    zb.phase F(%input.x = "input.x" : tensor<4xf32>) {
      // expected-error @+1 {{'zb.yield' op cannot yield key 'd_in.0'}}
      zb.yield "d_in.0" = %input.x : tensor<4xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that B cannot yield an F.i key; only F keeps tensors as F.i.
zb.pipeline @b_yields_saved_f {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B(%input.l = "input.l" : tensor<f32>) {
      // expected-error @+1 {{'zb.yield' op cannot yield key 'F.0'}}
      zb.yield "F.0" = %input.l : tensor<f32>
    }
    zb.phase W() {
      zb.yield
    }
  }
}

// -----

// Tests that W yields only parameter gradients, not B.i keys (nothing runs
// after W).
zb.pipeline @w_yields_saved_b {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B() {
      zb.yield
    }
    zb.phase W(%input.l = "input.l" : tensor<f32>) {
      // expected-error @+1 {{'zb.yield' op cannot yield key 'B.0'}}
      zb.yield "B.0" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that W cannot yield an input gradient; that is B's job.
zb.pipeline @w_yields_d_in {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B() {
      zb.yield
    }
    zb.phase W(%input.l = "input.l" : tensor<f32>) {
      // expected-error @+1 {{'zb.yield' op cannot yield key 'd_in.0'}}
      zb.yield "d_in.0" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that only F yields the loss.
zb.pipeline @bw_yields_loss {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.l = "input.l" : tensor<f32>) {
      // expected-error @+1 {{'zb.yield' op cannot yield key 'loss'}}
      zb.yield "loss" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that a phase yields each key once.
zb.pipeline @yield_key_twice {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4xf32>
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.x = "input.x" : tensor<4xf32>, %input.l = "input.l" : tensor<f32>) {
      %r = zb.relu %input.x : tensor<4xf32>
      // expected-error @+1 {{'zb.yield' op names key 'F.0' twice}}
      zb.yield "loss" = %input.l, "F.0" = %input.x, "F.0" = %r : tensor<f32>, tensor<4xf32>, tensor<4xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that the loss is a scalar.
zb.pipeline @non_scalar_loss_key {
  zb.stage 0 {
    %l = zb.input "l" : tensor<4xf32>
    zb.phase F(%input.l = "input.l" : tensor<4xf32>) {
      // expected-error @+1 {{'zb.yield' op yields a loss of type 'tensor<4xf32>'; a loss is a floating-point scalar}}
      zb.yield "loss" = %input.l : tensor<4xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// zb.stage
//===----------------------------------------------------------------------===//

// -----

// Tests that a stage needs a backward phase.
zb.pipeline @forward_only {
  // expected-error @+1 {{'zb.stage' op must hold the phases F, BW or F, B, W, in that order}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that F comes before BW.
zb.pipeline @bw_before_f {
  // expected-error @+1 {{'zb.stage' op must hold the phases F, BW or F, B, W, in that order}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase BW() {
      zb.yield
    }
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that a split backward has both B and W.
zb.pipeline @b_without_w {
  // expected-error @+1 {{'zb.stage' op must hold the phases F, BW or F, B, W, in that order}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B() {
      zb.yield
    }
  }
}

// -----

// Tests that B comes before W.
zb.pipeline @w_before_b {
  // expected-error @+1 {{'zb.stage' op must hold the phases F, BW or F, B, W, in that order}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase W() {
      zb.yield
    }
    zb.phase B() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage does not mix a fused BW with a split B and W.
zb.pipeline @bw_and_b_and_w {
  // expected-error @+1 {{'zb.stage' op must hold the phases F, BW or F, B, W, in that order}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B() {
      zb.yield
    }
    zb.phase W() {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage holds only declarations and phases.
zb.pipeline @foreign_op_in_stage {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    // expected-error @+1 {{'builtin.module' op cannot appear in a 'zb.stage'; it holds only declarations and 'zb.phase' ops}}
    builtin.module {}
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage declares its inputs, labels and parameters before its
// phases.
zb.pipeline @declaration_after_phase {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.param' op must be declared before the stage's phases}}
    %w = zb.param "w" init zeros : tensor<4xf32>
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage declares a parameter once.
zb.pipeline @parameter_declared_twice {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %w = zb.param "w" init zeros : tensor<4xf32>
    // expected-error @+1 {{'zb.param' op declares the name 'w' twice}}
    %w2 = zb.param "w" init ones : tensor<4xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage declares a label once.
zb.pipeline @label_declared_twice {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %y = zb.label "y" : tensor<4xi64>
    // expected-error @+1 {{'zb.label' op declares the name 'y' twice}}
    %y2 = zb.label "y" : tensor<4xi64>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a backward phase reads only F.i keys that F yields.
zb.pipeline @read_missing_saved_f {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l, "F.0" = %input.l : tensor<f32>, tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op reads 'F.1', which no earlier phase of stage 0 yields}}
    zb.phase BW(%F.0 = "F.0" : tensor<f32>, %F.1 = "F.1" : tensor<f32>) {
      zb.yield
    }
  }
}

// -----

// Tests that F cannot read the gradient of its output; it arrives only after
// the forward pass.
zb.pipeline @f_reads_d_out {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    // expected-error @+1 {{'zb.phase' op reads 'd_out.0', which no earlier phase of stage 0 yields}}
    zb.phase F(%input.l = "input.l" : tensor<f32>, %d_out.0 = "d_out.0" : tensor<4xf32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that W reads only B.i keys that B yields.
zb.pipeline @read_missing_saved_b {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B() {
      zb.yield
    }
    // expected-error @+1 {{'zb.phase' op reads 'B.0', which no earlier phase of stage 0 yields}}
    zb.phase W(%B.0 = "B.0" : tensor<f32>) {
      zb.yield
    }
  }
}

// -----

// Tests that a phase cannot read a key it yields itself.
zb.pipeline @read_own_yield {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op reads 'B.0', which no earlier phase of stage 0 yields}}
    zb.phase B(%B.0 = "B.0" : tensor<f32>) {
      zb.yield "B.0" = %B.0 : tensor<f32>
    }
    zb.phase W() {
      zb.yield
    }
  }
}

// -----

// Tests that the first stage receives no activation.
zb.pipeline @in_in_first_stage {
  zb.stage 0 {
    // expected-error @+1 {{'zb.phase' op reads 'in.0' but stage 0 has no previous stage}}
    zb.phase F(%in.0 = "in.0" : tensor<f32>) {
      zb.yield "loss" = %in.0 : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads only inputs its stage declares.
zb.pipeline @undeclared_input {
  zb.stage 0 {
    // expected-error @+1 {{'zb.phase' op reads 'input.l', which stage 0 does not declare}}
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads only parameters its stage declares.
zb.pipeline @undeclared_param {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op reads 'param.w', which stage 0 does not declare}}
    zb.phase BW(%param.w = "param.w" : tensor<4xf32>) {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads only labels its stage declares, even if the stage
// declares an input of that name.
zb.pipeline @undeclared_label {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    %y = zb.input "y" : tensor<4xi64>
    // expected-error @+1 {{'zb.phase' op reads 'label.y', which stage 0 does not declare}}
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %input.x, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads an input with its declared type.
zb.pipeline @input_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    // expected-error @+1 {{'zb.phase' op reads 'input.l' as 'tensor<f64>' but it is declared as 'tensor<f32>'}}
    zb.phase F(%input.l = "input.l" : tensor<f64>) {
      zb.yield "loss" = %input.l : tensor<f64>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads a parameter with its declared type.
zb.pipeline @param_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %w = zb.param "w" init normal(0.1) : tensor<8x4xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op reads 'param.w' as 'tensor<4x8xf32>' but it is declared as 'tensor<8x4xf32>'}}
    zb.phase BW(%param.w = "param.w" : tensor<4x8xf32>) {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads a label with its declared type.
zb.pipeline @label_type_mismatch {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    %y = zb.label "y" : tensor<4xi64>
    // expected-error @+1 {{'zb.phase' op reads 'label.y' as 'tensor<4xi32>' but it is declared as 'tensor<4xi64>'}}
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi32>) {
      %l = zb.cross_entropy %input.x, %label.y : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a phase reads an F.i key with the type F yields it with.
zb.pipeline @saved_f_type_mismatch {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    %y = zb.label "y" : tensor<4xi64>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %input.x, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l, "F.0" = %input.x : tensor<f32>, tensor<4x3xf32>
    }
    // expected-error @+1 {{'zb.phase' op reads 'F.0' as 'tensor<3x4xf32>' but it is 'tensor<4x3xf32>'}}
    zb.phase BW(%F.0 = "F.0" : tensor<3x4xf32>) {
      zb.yield
    }
  }
}

// -----

// Tests that all phases of a stage read a received activation with one type.
zb.pipeline @in_type_differs_between_phases {
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
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op reads 'in.0' as 'tensor<4x3xf16>' but it is 'tensor<4x3xf32>'}}
    zb.phase BW(%in.0 = "in.0" : tensor<4x3xf16>) {
      zb.yield "d_in.0" = %in.0 : tensor<4x3xf16>
    }
  }
}

//===----------------------------------------------------------------------===//
// zb.pipeline
//===----------------------------------------------------------------------===//

// -----

// Tests that a pipeline holds only stages.
zb.pipeline @foreign_op_in_pipeline {
  // expected-error @+1 {{'builtin.module' op cannot appear in a 'zb.pipeline'; it holds only 'zb.stage' ops}}
  builtin.module {}
}

// -----

// Tests that stages appear in order.
zb.pipeline @stages_out_of_order {
  // expected-error @+1 {{'zb.stage' op is stage 1 but stage 0 is expected here; stages appear once each, in order}}
  zb.stage 1 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
  zb.stage 0 {
    zb.phase F() {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage appears only once.
zb.pipeline @duplicate_stage {
  zb.stage 0 {
    zb.phase F() {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
  // expected-error @+1 {{'zb.stage' op is stage 0 but stage 1 is expected here; stages appear once each, in order}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that stage numbers have no gap.
zb.pipeline @stage_gap {
  zb.stage 0 {
    zb.phase F() {
      zb.yield
    }
    zb.phase BW() {
      zb.yield
    }
  }
  // expected-error @+1 {{'zb.stage' op is stage 2 but stage 1 is expected here; stages appear once each, in order}}
  zb.stage 2 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage number cannot be negative.
zb.pipeline @negative_stage {
  // expected-error @+1 {{'zb.stage' op attribute 'index' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  zb.stage -1 {
  }
}

// -----

// Tests that a pipeline holds at least one stage.
// expected-error @+1 {{'zb.pipeline' op must hold at least one stage}}
zb.pipeline @empty_pipeline {
}

// -----

// Tests that the last stage yields the loss.
zb.pipeline @no_loss {
  // expected-error @+1 {{'zb.stage' op is the last stage but yields no 'loss'}}
  zb.stage 0 {
    %x = zb.input "x" : tensor<4xf32>
    zb.phase F(%input.x = "input.x" : tensor<4xf32>) {
      zb.yield "F.0" = %input.x : tensor<4xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that only the last stage yields the loss.
zb.pipeline @loss_before_last_stage {
  // expected-error @+1 {{'zb.stage' op yields 'loss' but is not the last stage}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l, "out.0" = %input.l : tensor<f32>, tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
  zb.stage 1 {
    zb.phase F(%in.0 = "in.0" : tensor<f32>) {
      zb.yield "loss" = %in.0 : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that the last stage sends no activation on.
zb.pipeline @last_stage_sends {
  // expected-error @+1 {{'zb.stage' op is the last stage but sends activations on}}
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l, "out.0" = %input.l : tensor<f32>, tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that the last stage receives no output gradient.
zb.pipeline @last_stage_reads_d_out {
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
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op reads 'd_out.0' as 'tensor<4x3xf32>' but stage 1 sends no 'out.0' of that type}}
    zb.phase BW(%d_out.0 = "d_out.0" : tensor<4x3xf32>) {
      zb.yield "d_in.0" = %d_out.0 : tensor<4x3xf32>
    }
  }
}

// -----

// Tests that a stage receives as in.i only what the previous stage sends as
// out.i.
zb.pipeline @in_without_out {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>) {
      zb.yield "out.0" = %input.x : tensor<4x3xf32>
    }
    zb.phase BW(%d_out.0 = "d_out.0" : tensor<4x3xf32>) {
      zb.yield
    }
  }
  // expected-error @+1 {{'zb.stage' op reads 'in.1' but stage 0 yields no 'out.1'}}
  zb.stage 1 {
    %y = zb.label "y" : tensor<4xi64>
    zb.phase F(%in.1 = "in.1" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.1, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW(%in.1 = "in.1" : tensor<4x3xf32>) {
      zb.yield "d_in.0" = %in.1 : tensor<4x3xf32>
    }
  }
}

// -----

// Tests that a stage receives in.i with the type the previous stage sends
// out.i with.
zb.pipeline @in_out_type_mismatch {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>) {
      zb.yield "out.0" = %input.x : tensor<4x3xf32>
    }
    zb.phase BW(%d_out.0 = "d_out.0" : tensor<4x3xf32>) {
      zb.yield
    }
  }
  // expected-error @+1 {{'zb.stage' op reads 'in.0' as 'tensor<4x3xf64>' but stage 0 yields 'out.0' as 'tensor<4x3xf32>'}}
  zb.stage 1 {
    %y = zb.label "y" : tensor<4xi64>
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf64>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf64>, tensor<4xi64>) -> tensor<f64>
      zb.yield "loss" = %l : tensor<f64>
    }
    zb.phase BW(%in.0 = "in.0" : tensor<4x3xf64>) {
      zb.yield "d_in.0" = %in.0 : tensor<4x3xf64>
    }
  }
}

// -----

// Tests that a stage receives as d_out.i only what the next stage sends as
// d_in.i.
zb.pipeline @d_out_without_d_in {
  // expected-error @+1 {{'zb.stage' op reads 'd_out.0' but stage 1 yields no 'd_in.0'}}
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
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a stage receives d_out.i with the type the next stage sends
// d_in.i with.
zb.pipeline @d_out_d_in_type_mismatch {
  // expected-error @+1 {{'zb.stage' op reads 'd_out.0' as 'tensor<4x3xf32>' but stage 1 yields 'd_in.0' as 'tensor<3x4xf32>'}}
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
    %t = zb.input "t" : tensor<3x4xf32>
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW(%input.t = "input.t" : tensor<3x4xf32>) {
      zb.yield "d_in.0" = %input.t : tensor<3x4xf32>
    }
  }
}

//===----------------------------------------------------------------------===//
// Parents of the pipeline-level and backward ops
//===----------------------------------------------------------------------===//

// -----

// Tests that a stage lives in a pipeline.
zb.model @stage_in_model {
  // expected-error @+1 {{'zb.stage' op expects parent op 'zb.pipeline'}}
  zb.stage 0 {
  }
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that a backward op lives in a phase, not in a model.
zb.model @backward_op_in_model {
  %x = zb.input "x" : tensor<4x8xf32>
  %dy = zb.input "dy" : tensor<4x8xf32>
  // expected-error @+1 {{'zb.relu_grad' op expects parent op 'zb.phase'}}
  %dx = zb.relu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zb.fill lives in a phase, not in a model.
zb.model @fill_in_model {
  // expected-error @+1 {{'zb.fill' op expects parent op 'zb.phase'}}
  %one = zb.fill 1.0 : tensor<f32>
  zb.loss %one : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.linear_grad_input
//===----------------------------------------------------------------------===//

// -----

// Tests that the weight of linear_grad_input must be 2-D.
zb.pipeline @linear_grad_input_weight_not_2d {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %w = zb.param "w" init ones : tensor<8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %param.w = "param.w" : tensor<8xf32>) {
      // expected-error @+1 {{'zb.linear_grad_input' op weight must be 2-D [in, out], got 'tensor<8xf32>'}}
      %dx = zb.linear_grad_input %input.dy, %param.w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result gradient of linear_grad_input needs a feature
// dimension.
zb.pipeline @linear_grad_input_scalar_grad {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<f32>
    %w = zb.param "w" init ones : tensor<8x1xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<f32>, %param.w = "param.w" : tensor<8x1xf32>) {
      // expected-error @+1 {{'zb.linear_grad_input' op result gradient 'tensor<f32>' does not end in the weight's 1 output features}}
      %dx = zb.linear_grad_input %input.dy, %param.w : (tensor<f32>, tensor<8x1xf32>) -> tensor<8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result gradient of linear_grad_input must end in the weight's
// output features.
zb.pipeline @linear_grad_input_feature_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x16xf32>
    %w = zb.param "w" init ones : tensor<8x32xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x16xf32>, %param.w = "param.w" : tensor<8x32xf32>) {
      // expected-error @+1 {{'zb.linear_grad_input' op result gradient 'tensor<4x16xf32>' does not end in the weight's 32 output features}}
      %dx = zb.linear_grad_input %input.dy, %param.w : (tensor<4x16xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result gradient and weight of linear_grad_input share an
// element type.
zb.pipeline @linear_grad_input_element_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x32xf16>
    %w = zb.param "w" init ones : tensor<8x32xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x32xf16>, %param.w = "param.w" : tensor<8x32xf32>) {
      // expected-error @+1 {{'zb.linear_grad_input' op element types differ: result gradient has 'f16', weight has 'f32'}}
      %dx = zb.linear_grad_input %input.dy, %param.w : (tensor<4x32xf16>, tensor<8x32xf32>) -> tensor<4x8xf16>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of linear_grad_input must match the inferred type.
zb.pipeline @linear_grad_input_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x32xf32>
    %w = zb.param "w" init ones : tensor<8x32xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x32xf32>, %param.w = "param.w" : tensor<8x32xf32>) {
      // expected-error @+1 {{'zb.linear_grad_input' op result type 'tensor<4x32xf32>' does not match the inferred type 'tensor<4x8xf32>'}}
      %dx = zb.linear_grad_input %input.dy, %param.w : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.linear_grad_weight
//===----------------------------------------------------------------------===//

// -----

// Tests that the input of linear_grad_weight needs a feature dimension.
zb.pipeline @linear_grad_weight_scalar_input {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %x = zb.input "x" : tensor<f32>
    %dy = zb.input "dy" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.x = "input.x" : tensor<f32>, %input.dy = "input.dy" : tensor<f32>) {
      // expected-error @+1 {{'zb.linear_grad_weight' op input 'tensor<f32>' and result gradient 'tensor<f32>' disagree on their leading dimensions}}
      %dw = zb.linear_grad_weight %input.x, %input.dy : (tensor<f32>, tensor<f32>) -> tensor<1x1xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the input and result gradient of linear_grad_weight have the same
// rank.
zb.pipeline @linear_grad_weight_rank_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %x = zb.input "x" : tensor<2x4x8xf32>
    %dy = zb.input "dy" : tensor<8x16xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.x = "input.x" : tensor<2x4x8xf32>, %input.dy = "input.dy" : tensor<8x16xf32>) {
      // expected-error @+1 {{'zb.linear_grad_weight' op input 'tensor<2x4x8xf32>' and result gradient 'tensor<8x16xf32>' disagree on their leading dimensions}}
      %dw = zb.linear_grad_weight %input.x, %input.dy : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the input and result gradient of linear_grad_weight agree on their
// leading dimensions.
zb.pipeline @linear_grad_weight_leading_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %x = zb.input "x" : tensor<4x8xf32>
    %dy = zb.input "dy" : tensor<6x16xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.x = "input.x" : tensor<4x8xf32>, %input.dy = "input.dy" : tensor<6x16xf32>) {
      // expected-error @+1 {{'zb.linear_grad_weight' op input 'tensor<4x8xf32>' and result gradient 'tensor<6x16xf32>' disagree on their leading dimensions}}
      %dw = zb.linear_grad_weight %input.x, %input.dy : (tensor<4x8xf32>, tensor<6x16xf32>) -> tensor<8x16xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the input and result gradient of linear_grad_weight share an
// element type.
zb.pipeline @linear_grad_weight_element_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %x = zb.input "x" : tensor<4x8xbf16>
    %dy = zb.input "dy" : tensor<4x16xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.x = "input.x" : tensor<4x8xbf16>, %input.dy = "input.dy" : tensor<4x16xf32>) {
      // expected-error @+1 {{'zb.linear_grad_weight' op element types differ: input has 'bf16', result gradient has 'f32'}}
      %dw = zb.linear_grad_weight %input.x, %input.dy : (tensor<4x8xbf16>, tensor<4x16xf32>) -> tensor<8x16xbf16>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of linear_grad_weight must match the inferred type
// [in, out].
zb.pipeline @linear_grad_weight_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %x = zb.input "x" : tensor<4x8xf32>
    %dy = zb.input "dy" : tensor<4x16xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.x = "input.x" : tensor<4x8xf32>, %input.dy = "input.dy" : tensor<4x16xf32>) {
      // expected-error @+1 {{'zb.linear_grad_weight' op result type 'tensor<16x8xf32>' does not match the inferred type 'tensor<8x16xf32>'}}
      %dw = zb.linear_grad_weight %input.x, %input.dy : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<16x8xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.matmul_grad_lhs
//===----------------------------------------------------------------------===//

// -----

// Tests that the operands of matmul_grad_lhs need at least two dimensions.
zb.pipeline @matmul_grad_lhs_rank_1 {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dc = zb.input "dc" : tensor<4xf32>
    %b = zb.input "b" : tensor<4xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dc = "input.dc" : tensor<4xf32>, %input.b = "input.b" : tensor<4xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_lhs' op result gradient 'tensor<4xf32>' and rhs 'tensor<4xf32>' do not fit [..., M, N] x [..., K, N]}}
      %da = zb.matmul_grad_lhs %input.dc, %input.b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the operands of matmul_grad_lhs have the same rank.
zb.pipeline @matmul_grad_lhs_rank_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dc = zb.input "dc" : tensor<2x3x5xf32>
    %b = zb.input "b" : tensor<4x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dc = "input.dc" : tensor<2x3x5xf32>, %input.b = "input.b" : tensor<4x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_lhs' op result gradient 'tensor<2x3x5xf32>' and rhs 'tensor<4x5xf32>' do not fit [..., M, N] x [..., K, N]}}
      %da = zb.matmul_grad_lhs %input.dc, %input.b : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the batch dimensions of the operands of matmul_grad_lhs are equal.
zb.pipeline @matmul_grad_lhs_batch_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dc = zb.input "dc" : tensor<2x3x5xf32>
    %b = zb.input "b" : tensor<3x4x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dc = "input.dc" : tensor<2x3x5xf32>, %input.b = "input.b" : tensor<3x4x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_lhs' op result gradient 'tensor<2x3x5xf32>' and rhs 'tensor<3x4x5xf32>' do not fit [..., M, N] x [..., K, N]}}
      %da = zb.matmul_grad_lhs %input.dc, %input.b : (tensor<2x3x5xf32>, tensor<3x4x5xf32>) -> tensor<2x3x4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result gradient and rhs of matmul_grad_lhs have the same
// number of columns N.
zb.pipeline @matmul_grad_lhs_columns_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dc = zb.input "dc" : tensor<2x3x5xf32>
    %b = zb.input "b" : tensor<2x4x6xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dc = "input.dc" : tensor<2x3x5xf32>, %input.b = "input.b" : tensor<2x4x6xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_lhs' op result gradient 'tensor<2x3x5xf32>' and rhs 'tensor<2x4x6xf32>' do not fit [..., M, N] x [..., K, N]}}
      %da = zb.matmul_grad_lhs %input.dc, %input.b : (tensor<2x3x5xf32>, tensor<2x4x6xf32>) -> tensor<2x3x4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the operands of matmul_grad_lhs share an element type.
zb.pipeline @matmul_grad_lhs_element_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dc = zb.input "dc" : tensor<3x5xf16>
    %b = zb.input "b" : tensor<4x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dc = "input.dc" : tensor<3x5xf16>, %input.b = "input.b" : tensor<4x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_lhs' op element types differ: result gradient has 'f16', rhs has 'f32'}}
      %da = zb.matmul_grad_lhs %input.dc, %input.b : (tensor<3x5xf16>, tensor<4x5xf32>) -> tensor<3x4xf16>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of matmul_grad_lhs must match the inferred type
// [..., M, K].
zb.pipeline @matmul_grad_lhs_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dc = zb.input "dc" : tensor<2x3x5xf32>
    %b = zb.input "b" : tensor<2x4x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dc = "input.dc" : tensor<2x3x5xf32>, %input.b = "input.b" : tensor<2x4x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_lhs' op result type 'tensor<2x3x5xf32>' does not match the inferred type 'tensor<2x3x4xf32>'}}
      %da = zb.matmul_grad_lhs %input.dc, %input.b : (tensor<2x3x5xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.matmul_grad_rhs
//===----------------------------------------------------------------------===//

// -----

// Tests that the operands of matmul_grad_rhs need at least two dimensions.
zb.pipeline @matmul_grad_rhs_rank_1 {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %a = zb.input "a" : tensor<4xf32>
    %dc = zb.input "dc" : tensor<4xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.a = "input.a" : tensor<4xf32>, %input.dc = "input.dc" : tensor<4xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_rhs' op lhs 'tensor<4xf32>' and result gradient 'tensor<4xf32>' do not fit [..., M, K] x [..., M, N]}}
      %db = zb.matmul_grad_rhs %input.a, %input.dc : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the operands of matmul_grad_rhs have the same rank.
zb.pipeline @matmul_grad_rhs_rank_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %a = zb.input "a" : tensor<2x3x4xf32>
    %dc = zb.input "dc" : tensor<3x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.a = "input.a" : tensor<2x3x4xf32>, %input.dc = "input.dc" : tensor<3x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_rhs' op lhs 'tensor<2x3x4xf32>' and result gradient 'tensor<3x5xf32>' do not fit [..., M, K] x [..., M, N]}}
      %db = zb.matmul_grad_rhs %input.a, %input.dc : (tensor<2x3x4xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the batch dimensions of the operands of matmul_grad_rhs are equal.
zb.pipeline @matmul_grad_rhs_batch_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %a = zb.input "a" : tensor<2x3x4xf32>
    %dc = zb.input "dc" : tensor<4x3x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.a = "input.a" : tensor<2x3x4xf32>, %input.dc = "input.dc" : tensor<4x3x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_rhs' op lhs 'tensor<2x3x4xf32>' and result gradient 'tensor<4x3x5xf32>' do not fit [..., M, K] x [..., M, N]}}
      %db = zb.matmul_grad_rhs %input.a, %input.dc : (tensor<2x3x4xf32>, tensor<4x3x5xf32>) -> tensor<2x4x5xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the lhs and result gradient of matmul_grad_rhs have the same
// number of rows M.
zb.pipeline @matmul_grad_rhs_rows_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %a = zb.input "a" : tensor<2x3x4xf32>
    %dc = zb.input "dc" : tensor<2x6x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.a = "input.a" : tensor<2x3x4xf32>, %input.dc = "input.dc" : tensor<2x6x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_rhs' op lhs 'tensor<2x3x4xf32>' and result gradient 'tensor<2x6x5xf32>' do not fit [..., M, K] x [..., M, N]}}
      %db = zb.matmul_grad_rhs %input.a, %input.dc : (tensor<2x3x4xf32>, tensor<2x6x5xf32>) -> tensor<2x4x5xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the operands of matmul_grad_rhs share an element type.
zb.pipeline @matmul_grad_rhs_element_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %a = zb.input "a" : tensor<3x4xf64>
    %dc = zb.input "dc" : tensor<3x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.a = "input.a" : tensor<3x4xf64>, %input.dc = "input.dc" : tensor<3x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_rhs' op element types differ: lhs has 'f64', result gradient has 'f32'}}
      %db = zb.matmul_grad_rhs %input.a, %input.dc : (tensor<3x4xf64>, tensor<3x5xf32>) -> tensor<4x5xf64>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of matmul_grad_rhs must match the inferred type
// [..., K, N].
zb.pipeline @matmul_grad_rhs_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %a = zb.input "a" : tensor<2x3x4xf32>
    %dc = zb.input "dc" : tensor<2x3x5xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.a = "input.a" : tensor<2x3x4xf32>, %input.dc = "input.dc" : tensor<2x3x5xf32>) {
      // expected-error @+1 {{'zb.matmul_grad_rhs' op result type 'tensor<2x5x4xf32>' does not match the inferred type 'tensor<2x4x5xf32>'}}
      %db = zb.matmul_grad_rhs %input.a, %input.dc : (tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> tensor<2x5x4xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.bias_grad
//===----------------------------------------------------------------------===//

// -----

// Tests that the operand of bias_grad needs at least one dimension.
zb.pipeline @bias_grad_scalar {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<f32>) {
      // expected-error @+1 {{'zb.bias_grad' op operand must have at least one dimension, got 'tensor<f32>'}}
      %db = zb.bias_grad %input.dy : tensor<f32> -> tensor<1xf32>
      zb.yield
    }
  }
}

// -----

// Tests that bias_grad keeps only the last dimension of its operand.
zb.pipeline @bias_grad_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>) {
      // expected-error @+1 {{'zb.bias_grad' op result type 'tensor<4xf32>' does not match the inferred type 'tensor<8xf32>'}}
      %db = zb.bias_grad %input.dy : tensor<4x8xf32> -> tensor<4xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.relu_grad, zb.gelu_grad
//===----------------------------------------------------------------------===//

// -----

// Tests that the result gradient and input of relu_grad have one type.
zb.pipeline @relu_grad_shape_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x6xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x6xf32>) {
      // expected-error @+1 {{'zb.relu_grad' op result gradient 'tensor<4x8xf32>' and input 'tensor<4x6xf32>' differ in type}}
      %dx = zb.relu_grad %input.dy, %input.x : (tensor<4x8xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of relu_grad is the type of its input.
zb.pipeline @relu_grad_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>) {
      // expected-error @+1 {{'zb.relu_grad' op result type 'tensor<4x8xf16>' does not match the inferred type 'tensor<4x8xf32>'}}
      %dx = zb.relu_grad %input.dy, %input.x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf16>
      zb.yield
    }
  }
}

// -----

// Tests that the result gradient and input of gelu_grad have one element type.
zb.pipeline @gelu_grad_element_type_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xbf16>
    %x = zb.input "x" : tensor<4x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xbf16>, %input.x = "input.x" : tensor<4x8xf32>) {
      // expected-error @+1 {{'zb.gelu_grad' op result gradient 'tensor<4x8xbf16>' and input 'tensor<4x8xf32>' differ in type}}
      %dx = zb.gelu_grad %input.dy, %input.x : (tensor<4x8xbf16>, tensor<4x8xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of gelu_grad is the type of its input.
zb.pipeline @gelu_grad_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>) {
      // expected-error @+1 {{'zb.gelu_grad' op result type 'tensor<8x4xf32>' does not match the inferred type 'tensor<4x8xf32>'}}
      %dx = zb.gelu_grad %input.dy, %input.x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.layernorm_grad_input
//===----------------------------------------------------------------------===//

// -----

// Tests that the result gradient and input of layernorm_grad_input have one
// type.
zb.pipeline @layernorm_grad_input_grad_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x16xf32>
    %g = zb.param "g" init ones : tensor<16xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x16xf32>, %param.g = "param.g" : tensor<16xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_input' op result gradient 'tensor<4x8xf32>' and input 'tensor<4x16xf32>' differ in type}}
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
      zb.yield
    }
  }
}

// -----

// Tests that layernorm_grad_input rejects a zero epsilon, like zb.layernorm.
zb.pipeline @layernorm_grad_input_zero_epsilon {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    %g = zb.param "g" init ones : tensor<8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>, %param.g = "param.g" : tensor<8xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_input' op epsilon must be positive, got 0.000000e+00}}
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g {epsilon = 0.0 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the input of layernorm_grad_input needs at least one dimension.
zb.pipeline @layernorm_grad_input_scalar_input {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<f32>
    %x = zb.input "x" : tensor<f32>
    %g = zb.param "g" init ones : tensor<1xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<f32>, %input.x = "input.x" : tensor<f32>, %param.g = "param.g" : tensor<1xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_input' op input must have at least one dimension, got 'tensor<f32>'}}
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g : (tensor<f32>, tensor<f32>, tensor<1xf32>) -> tensor<f32>
      zb.yield
    }
  }
}

// -----

// Tests that the gamma of layernorm_grad_input must be 1-D.
zb.pipeline @layernorm_grad_input_gamma_not_1d {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    %g = zb.param "g" init ones : tensor<1x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>, %param.g = "param.g" : tensor<1x8xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_input' op gamma must be 1-D, got 'tensor<1x8xf32>'}}
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the gamma of layernorm_grad_input is as long as the last dimension
// of the input.
zb.pipeline @layernorm_grad_input_gamma_length {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    %g = zb.param "g" init ones : tensor<4xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>, %param.g = "param.g" : tensor<4xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_input' op gamma has 4 elements but the input's last dimension is 8}}
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the gamma of layernorm_grad_input shares the element type of the
// input.
zb.pipeline @layernorm_grad_input_gamma_element_type {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    %g = zb.param "g" init ones : tensor<8xf16>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>, %param.g = "param.g" : tensor<8xf16>) {
      // expected-error @+1 {{'zb.layernorm_grad_input' op element types differ: input has 'f32', gamma has 'f16'}}
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf16>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of layernorm_grad_input is the type of its input.
zb.pipeline @layernorm_grad_input_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    %g = zb.param "g" init ones : tensor<8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>, %param.g = "param.g" : tensor<8xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_input' op result type 'tensor<8xf32>' does not match the inferred type 'tensor<4x8xf32>'}}
      %dx = zb.layernorm_grad_input %input.dy, %input.x, %param.g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.layernorm_grad_gamma
//===----------------------------------------------------------------------===//

// -----

// Tests that the result gradient and input of layernorm_grad_gamma have one
// type.
zb.pipeline @layernorm_grad_gamma_grad_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<2x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<2x8xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_gamma' op result gradient 'tensor<4x8xf32>' and input 'tensor<2x8xf32>' differ in type}}
      %dg = zb.layernorm_grad_gamma %input.dy, %input.x : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the operands of layernorm_grad_gamma need at least one dimension.
zb.pipeline @layernorm_grad_gamma_scalar {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<f32>
    %x = zb.input "x" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<f32>, %input.x = "input.x" : tensor<f32>) {
      // expected-error @+1 {{'zb.layernorm_grad_gamma' op operand must have at least one dimension, got 'tensor<f32>'}}
      %dg = zb.layernorm_grad_gamma %input.dy, %input.x : (tensor<f32>, tensor<f32>) -> tensor<1xf32>
      zb.yield
    }
  }
}

// -----

// Tests that layernorm_grad_gamma keeps only the last dimension of its input.
zb.pipeline @layernorm_grad_gamma_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<4x8xf32>
    %x = zb.input "x" : tensor<4x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<4x8xf32>, %input.x = "input.x" : tensor<4x8xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_gamma' op result type 'tensor<4x8xf32>' does not match the inferred type 'tensor<8xf32>'}}
      %dg = zb.layernorm_grad_gamma %input.dy, %input.x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.embedding_grad
//===----------------------------------------------------------------------===//

// -----

// Tests that the result gradient of embedding_grad has one dimension more than
// the indices.
zb.pipeline @embedding_grad_no_hidden_dim {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %ids = zb.input "ids" : tensor<2x8xi64>
    %dy = zb.input "dy" : tensor<2x8xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.ids = "input.ids" : tensor<2x8xi64>, %input.dy = "input.dy" : tensor<2x8xf32>) {
      // expected-error @+1 {{'zb.embedding_grad' op result gradient 'tensor<2x8xf32>' is not indices 'tensor<2x8xi64>' plus a hidden dimension}}
      %dt = zb.embedding_grad %input.ids, %input.dy vocab(100) : (tensor<2x8xi64>, tensor<2x8xf32>) -> tensor<100x8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result gradient of embedding_grad starts with the shape of the
// indices.
zb.pipeline @embedding_grad_leading_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %ids = zb.input "ids" : tensor<2x8xi32>
    %dy = zb.input "dy" : tensor<2x4x24xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.ids = "input.ids" : tensor<2x8xi32>, %input.dy = "input.dy" : tensor<2x4x24xf32>) {
      // expected-error @+1 {{'zb.embedding_grad' op result gradient 'tensor<2x4x24xf32>' is not indices 'tensor<2x8xi32>' plus a hidden dimension}}
      %dt = zb.embedding_grad %input.ids, %input.dy vocab(100) : (tensor<2x8xi32>, tensor<2x4x24xf32>) -> tensor<100x24xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result of embedding_grad has vocab rows.
zb.pipeline @embedding_grad_vocab_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %ids = zb.input "ids" : tensor<2x8xi64>
    %dy = zb.input "dy" : tensor<2x8x24xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.ids = "input.ids" : tensor<2x8xi64>, %input.dy = "input.dy" : tensor<2x8x24xf32>) {
      // expected-error @+1 {{'zb.embedding_grad' op result type 'tensor<50x24xf32>' does not match the inferred type 'tensor<100x24xf32>'}}
      %dt = zb.embedding_grad %input.ids, %input.dy vocab(100) : (tensor<2x8xi64>, tensor<2x8x24xf32>) -> tensor<50x24xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result of embedding_grad has the hidden size of the result
// gradient.
zb.pipeline @embedding_grad_hidden_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %ids = zb.input "ids" : tensor<2x8xi64>
    %dy = zb.input "dy" : tensor<2x8x24xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.ids = "input.ids" : tensor<2x8xi64>, %input.dy = "input.dy" : tensor<2x8x24xf32>) {
      // expected-error @+1 {{'zb.embedding_grad' op result type 'tensor<100x16xf32>' does not match the inferred type 'tensor<100x24xf32>'}}
      %dt = zb.embedding_grad %input.ids, %input.dy vocab(100) : (tensor<2x8xi64>, tensor<2x8x24xf32>) -> tensor<100x16xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the vocabulary of embedding_grad must be positive.
zb.pipeline @embedding_grad_zero_vocab {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %ids = zb.input "ids" : tensor<2x8xi64>
    %dy = zb.input "dy" : tensor<2x8x24xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.ids = "input.ids" : tensor<2x8xi64>, %input.dy = "input.dy" : tensor<2x8x24xf32>) {
      // expected-error @+1 {{'zb.embedding_grad' op attribute 'vocab' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
      %dt = zb.embedding_grad %input.ids, %input.dy vocab(0) : (tensor<2x8xi64>, tensor<2x8x24xf32>) -> tensor<1x24xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.causal_attention_grad
//===----------------------------------------------------------------------===//

// -----

// Tests that the qkv of causal_attention_grad must be 3-D.
zb.pipeline @causal_attention_grad_qkv_not_3d {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<8x24xf32>
    %qkv = zb.input "qkv" : tensor<8x72xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<8x24xf32>, %input.qkv = "input.qkv" : tensor<8x72xf32>) {
      // expected-error @+1 {{'zb.causal_attention_grad' op qkv must be 3-D [batch, seq, 3*hidden], got 'tensor<8x72xf32>'}}
      %dqkv = zb.causal_attention_grad %input.dy, %input.qkv heads(4) : (tensor<8x24xf32>, tensor<8x72xf32>) -> tensor<8x72xf32>
      zb.yield
    }
  }
}

// -----

// Tests that causal_attention_grad needs at least one head.
zb.pipeline @causal_attention_grad_zero_heads {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<2x8x24xf32>
    %qkv = zb.input "qkv" : tensor<2x8x72xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<2x8x24xf32>, %input.qkv = "input.qkv" : tensor<2x8x72xf32>) {
      // expected-error @+1 {{'zb.causal_attention_grad' op attribute 'heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
      %dqkv = zb.causal_attention_grad %input.dy, %input.qkv heads(0) : (tensor<2x8x24xf32>, tensor<2x8x72xf32>) -> tensor<2x8x72xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the last dimension of the qkv of causal_attention_grad is
// 3*hidden.
zb.pipeline @causal_attention_grad_not_packed {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<2x8x24xf32>
    %qkv = zb.input "qkv" : tensor<2x8x70xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<2x8x24xf32>, %input.qkv = "input.qkv" : tensor<2x8x70xf32>) {
      // expected-error @+1 {{'zb.causal_attention_grad' op qkv's last dimension (70) is not 3*hidden}}
      %dqkv = zb.causal_attention_grad %input.dy, %input.qkv heads(4) : (tensor<2x8x24xf32>, tensor<2x8x70xf32>) -> tensor<2x8x70xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the heads of causal_attention_grad divide the hidden size.
zb.pipeline @causal_attention_grad_heads_not_dividing {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<2x8x24xf32>
    %qkv = zb.input "qkv" : tensor<2x8x72xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<2x8x24xf32>, %input.qkv = "input.qkv" : tensor<2x8x72xf32>) {
      // expected-error @+1 {{'zb.causal_attention_grad' op hidden size 24 is not divisible by 5 heads}}
      %dqkv = zb.causal_attention_grad %input.dy, %input.qkv heads(5) : (tensor<2x8x24xf32>, tensor<2x8x72xf32>) -> tensor<2x8x72xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result gradient of causal_attention_grad has the type of the
// attention output, not of qkv.
zb.pipeline @causal_attention_grad_wrong_grad {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<2x8x72xf32>
    %qkv = zb.input "qkv" : tensor<2x8x72xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<2x8x72xf32>, %input.qkv = "input.qkv" : tensor<2x8x72xf32>) {
      // expected-error @+1 {{'zb.causal_attention_grad' op result gradient 'tensor<2x8x72xf32>' is not the attention output type 'tensor<2x8x24xf32>'}}
      %dqkv = zb.causal_attention_grad %input.dy, %input.qkv heads(4) : (tensor<2x8x72xf32>, tensor<2x8x72xf32>) -> tensor<2x8x72xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of causal_attention_grad is the type of qkv.
zb.pipeline @causal_attention_grad_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %dy = zb.input "dy" : tensor<2x8x24xf32>
    %qkv = zb.input "qkv" : tensor<2x8x72xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.dy = "input.dy" : tensor<2x8x24xf32>, %input.qkv = "input.qkv" : tensor<2x8x72xf32>) {
      // expected-error @+1 {{'zb.causal_attention_grad' op result type 'tensor<2x8x24xf32>' does not match the inferred type 'tensor<2x8x72xf32>'}}
      %dqkv = zb.causal_attention_grad %input.dy, %input.qkv heads(4) : (tensor<2x8x24xf32>, tensor<2x8x72xf32>) -> tensor<2x8x24xf32>
      zb.yield
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward shape rules: zb.cross_entropy_grad
//===----------------------------------------------------------------------===//

// -----

// Tests that the logits of cross_entropy_grad have one dimension more than the
// labels.
zb.pipeline @cross_entropy_grad_rank_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %logits = zb.input "logits" : tensor<8x4xf32>
    %y = zb.input "y" : tensor<8x4xi64>
    %dl = zb.input "dl" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.logits = "input.logits" : tensor<8x4xf32>, %input.y = "input.y" : tensor<8x4xi64>, %input.dl = "input.dl" : tensor<f32>) {
      // expected-error @+1 {{'zb.cross_entropy_grad' op logits must have one dimension (classes) more than labels, got 'tensor<8x4xf32>' and 'tensor<8x4xi64>'}}
      %dlogits = zb.cross_entropy_grad %input.logits, %input.y, %input.dl : (tensor<8x4xf32>, tensor<8x4xi64>, tensor<f32>) -> tensor<8x4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the logits and labels of cross_entropy_grad agree on their leading
// dimensions.
zb.pipeline @cross_entropy_grad_leading_mismatch {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %logits = zb.input "logits" : tensor<8x4xf32>
    %y = zb.input "y" : tensor<6xi64>
    %dl = zb.input "dl" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.logits = "input.logits" : tensor<8x4xf32>, %input.y = "input.y" : tensor<6xi64>, %input.dl = "input.dl" : tensor<f32>) {
      // expected-error @+1 {{'zb.cross_entropy_grad' op logits 'tensor<8x4xf32>' and labels 'tensor<6xi64>' disagree on their leading dimensions}}
      %dlogits = zb.cross_entropy_grad %input.logits, %input.y, %input.dl : (tensor<8x4xf32>, tensor<6xi64>, tensor<f32>) -> tensor<8x4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the loss gradient of cross_entropy_grad has the type of the loss.
zb.pipeline @cross_entropy_grad_loss_grad_type {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %logits = zb.input "logits" : tensor<8x4xf32>
    %y = zb.input "y" : tensor<8xi64>
    %dl = zb.input "dl" : tensor<f16>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.logits = "input.logits" : tensor<8x4xf32>, %input.y = "input.y" : tensor<8xi64>, %input.dl = "input.dl" : tensor<f16>) {
      // expected-error @+1 {{'zb.cross_entropy_grad' op loss gradient 'tensor<f16>' is not the loss type 'tensor<f32>'}}
      %dlogits = zb.cross_entropy_grad %input.logits, %input.y, %input.dl : (tensor<8x4xf32>, tensor<8xi64>, tensor<f16>) -> tensor<8x4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the loss gradient of cross_entropy_grad is a scalar.
zb.pipeline @cross_entropy_grad_loss_grad_not_scalar {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %logits = zb.input "logits" : tensor<8x4xf32>
    %y = zb.input "y" : tensor<8xi64>
    %dl = zb.input "dl" : tensor<1xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.logits = "input.logits" : tensor<8x4xf32>, %input.y = "input.y" : tensor<8xi64>, %input.dl = "input.dl" : tensor<1xf32>) {
      // expected-error @+1 {{'zb.cross_entropy_grad' op operand #2 must be 0D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<1xf32>'}}
      %dlogits = zb.cross_entropy_grad %input.logits, %input.y, %input.dl : (tensor<8x4xf32>, tensor<8xi64>, tensor<1xf32>) -> tensor<8x4xf32>
      zb.yield
    }
  }
}

// -----

// Tests that the result type of cross_entropy_grad is the type of the logits.
zb.pipeline @cross_entropy_grad_wrong_result {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %logits = zb.input "logits" : tensor<8x4xf32>
    %y = zb.input "y" : tensor<8xi64>
    %dl = zb.input "dl" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.logits = "input.logits" : tensor<8x4xf32>, %input.y = "input.y" : tensor<8xi64>, %input.dl = "input.dl" : tensor<f32>) {
      // expected-error @+1 {{'zb.cross_entropy_grad' op result type 'tensor<8xf32>' does not match the inferred type 'tensor<8x4xf32>'}}
      %dlogits = zb.cross_entropy_grad %input.logits, %input.y, %input.dl : (tensor<8x4xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8xf32>
      zb.yield
    }
  }
}

// -----

// Tests that stage 0 cannot send an input gradient upstream.
zb.pipeline @d_in_from_stage0 {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    %y = zb.label "y" : tensor<4xi64>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %input.x, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op yields 'd_in.0' but stage 0 has no previous stage}}
    zb.phase BW(%input.x = "input.x" : tensor<4x3xf32>) {
      zb.yield "d_in.0" = %input.x : tensor<4x3xf32>
    }
  }
}

// -----

// Tests that a parameter gradient needs the parameter's declaration.
zb.pipeline @grad_without_param {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op yields 'grad.w' but stage 0 declares no parameter 'w'}}
    zb.phase BW(%input.l = "input.l" : tensor<f32>) {
      zb.yield "grad.w" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that a parameter gradient has the parameter's type.
zb.pipeline @grad_wrong_type {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %w = zb.param "w" init zeros : tensor<2xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op yields 'grad.w' as 'tensor<f32>' but the parameter is 'tensor<2xf32>'}}
    zb.phase BW(%input.l = "input.l" : tensor<f32>) {
      zb.yield "grad.w" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that B and W cannot both yield the same parameter gradient (it
// would be accumulated twice).
zb.pipeline @grad_twice {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %w = zb.param "w" init zeros : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase B(%input.l = "input.l" : tensor<f32>) {
      zb.yield "grad.w" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op yields 'grad.w', which stage 0 already has (yielded twice, it would count twice)}}
    zb.phase W(%input.l = "input.l" : tensor<f32>) {
      zb.yield "grad.w" = %input.l : tensor<f32>
    }
  }
}

// -----

// Tests that an input and a parameter of a stage cannot share a name.
zb.pipeline @input_param_same_name {
  zb.stage 0 {
    %x = zb.input "x" : tensor<f32>
    // expected-error @+1 {{'zb.param' op declares the name 'x' twice}}
    %w = zb.param "x" init zeros : tensor<f32>
    zb.phase F(%input.x = "input.x" : tensor<f32>) {
      zb.yield "loss" = %input.x : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a loss must be floating point.
zb.pipeline @integer_loss {
  zb.stage 0 {
    %l = zb.input "l" : tensor<i64>
    zb.phase F(%input.l = "input.l" : tensor<i64>) {
      // expected-error @+1 {{'zb.yield' op yields a loss of type 'tensor<i64>'; a loss is a floating-point scalar}}
      zb.yield "loss" = %input.l : tensor<i64>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a parameter declared in two stages (tied) is declared alike.
zb.pipeline @tied_param_unlike {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    %w = zb.param "w" init zeros : tensor<3xf32>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>) {
      zb.yield "out.0" = %input.x : tensor<4x3xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
  zb.stage 1 {
    %y = zb.label "y" : tensor<4xi64>
    // expected-error @+1 {{'zb.param' op declares 'w' unlike stage 0 (a parameter in several stages is tied: the same type and initialisation everywhere)}}
    %w = zb.param "w" init ones : tensor<3xf32>
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that labels are declared by the last stage only.
zb.pipeline @label_in_first_stage {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    // expected-error @+1 {{'zb.label' op is declared in stage 0; labels are loaded for the last stage (1) only}}
    %y = zb.label "y" : tensor<4xi64>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>) {
      zb.yield "out.0" = %input.x : tensor<4x3xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
  zb.stage 1 {
    %y = zb.label "y" : tensor<4xi64>
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that a gradient sent back matches an activation sent on.
zb.pipeline @d_in_without_out {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    zb.phase F(%input.x = "input.x" : tensor<4x3xf32>) {
      zb.yield "out.0" = %input.x : tensor<4x3xf32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
  // expected-error @+1 {{'zb.stage' op yields 'd_in.1' as 'tensor<4x3xf32>' but stage 0 sends no 'out.1' of that type}}
  zb.stage 1 {
    %y = zb.label "y" : tensor<4xi64>
    zb.phase F(%in.0 = "in.0" : tensor<4x3xf32>, %label.y = "label.y" : tensor<4xi64>) {
      %l = zb.cross_entropy %in.0, %label.y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW(%in.0 = "in.0" : tensor<4x3xf32>) {
      zb.yield "d_in.1" = %in.0 : tensor<4x3xf32>
    }
  }
}

// -----

// Tests that the LayerNorm gain gradient checks its epsilon.
zb.pipeline @ln_gamma_epsilon {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x3xf32>
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.x = "input.x" : tensor<4x3xf32>) {
      // expected-error @+1 {{'zb.layernorm_grad_gamma' op epsilon must be positive, got -1}}
      %g = zb.layernorm_grad_gamma %input.x, %input.x {epsilon = -1.0 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<3xf32>
      zb.yield
    }
  }
}

// -----

// Tests that phase arguments are checked for zero-sized tensors too.
zb.pipeline @phase_zero_dim {
  zb.stage 0 {
    %x = zb.input "x" : tensor<0x3xf32>
    %l = zb.input "l" : tensor<f32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    // expected-error @+1 {{'zb.phase' op argument type 'tensor<0x3xf32>' has a zero dimension}}
    zb.phase BW(%input.x = "input.x" : tensor<0x3xf32>) {
      zb.yield
    }
  }
}

// -----

// Tests that a stage's declaration needs a non-empty name too (its key,
// "param.", would name nothing).
zb.pipeline @p {
  zb.stage 0 {
    // expected-error @+1 {{'zb.param' op needs a non-empty name}}
    %w = zb.param "" init zeros : tensor<4xf32>
    zb.phase F() {
      zb.yield
    }
  }
}

// -----

// Tests that zb.transpose takes 2-D tensors.
zb.model @transpose_3d {
  %x = zb.input "x" : tensor<2x3x4xf32>
  // expected-error @+1 {{'zb.transpose' op input must be 2-D, got 'tensor<2x3x4xf32>'}}
  %t = zb.transpose %x : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that zb.transpose's result swaps the dimensions.
zb.model @transpose_shape {
  %x = zb.input "x" : tensor<2x3xf32>
  // expected-error @+1 {{'zb.transpose' op result type 'tensor<2x3xf32>' does not match the inferred type 'tensor<3x2xf32>'}}
  %t = zb.transpose %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that an attention's document ids are [batch, seq] of its input.
zb.model @documents_shape {
  %q = zb.input "q" : tensor<2x8x16xf32>
  %d = zb.input "documents" : tensor<2x4xi64>
  // expected-error @+1 {{'zb.attention' op documents must be [batch, seq] = [2, 8], got 'tensor<2x4xi64>'}}
  %y = zb.attention %q, %q, %q documents %d {heads = 2 : i64, kv_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x4xi64>) -> tensor<2x8x16xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// -----

// Tests that document ids are integers.
zb.model @documents_float {
  %qkv = zb.input "qkv" : tensor<2x8x48xf32>
  %d = zb.input "documents" : tensor<2x8xf32>
  // expected-error @+1 {{operand #1 must be}}
  %y = zb.causal_attention %qkv documents(%d : tensor<2x8xf32>) heads(2) : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Backward shape rules: the vocabulary shard's ops
//===----------------------------------------------------------------------===//

// -----

// Tests that a vocabulary shard's columns lie in the vocabulary.
zb.pipeline @vocab_stats_columns {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %logits = zb.input "logits" : tensor<8x4xf32>
    %y = zb.input "y" : tensor<8xi64>
    zb.phase F(%input.l = "input.l" : tensor<f32>, %input.logits = "input.logits" : tensor<8x4xf32>, %input.y = "input.y" : tensor<8xi64>) {
      // expected-error @+1 {{'zb.vocab_stats' op shard columns [8, 12) are not in the vocabulary of 10}}
      %s = zb.vocab_stats %input.logits, %input.y {first = 8 : i64, vocab = 10 : i64} : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<4x8xf32>
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that zb.vocab_loss reads the four planes of its labels' rows.
zb.pipeline @vocab_loss_planes {
  zb.stage 0 {
    %s = zb.input "s" : tensor<3x8xf32>
    %y = zb.input "y" : tensor<8xi64>
    zb.phase F(%input.s = "input.s" : tensor<3x8xf32>, %input.y = "input.y" : tensor<8xi64>) {
      // expected-error @+1 {{'zb.vocab_loss' op statistics 'tensor<3x8xf32>' are not 4 planes of labels 'tensor<8xi64>'}}
      %l = zb.vocab_loss %input.s, %input.y {vocab = 10 : i64} : (tensor<3x8xf32>, tensor<8xi64>) -> tensor<f32>
      zb.yield "loss" = %l : tensor<f32>
    }
    zb.phase BW() {
      zb.yield
    }
  }
}

// -----

// Tests that zb.vocab_grad's statistics are its logits' rows'.
zb.pipeline @vocab_grad_planes {
  zb.stage 0 {
    %l = zb.input "l" : tensor<f32>
    %logits = zb.input "logits" : tensor<8x4xf32>
    %y = zb.input "y" : tensor<8xi64>
    %s = zb.input "s" : tensor<4x6xf32>
    zb.phase F(%input.l = "input.l" : tensor<f32>) {
      zb.yield "loss" = %input.l : tensor<f32>
    }
    zb.phase BW(%input.logits = "input.logits" : tensor<8x4xf32>, %input.y = "input.y" : tensor<8xi64>, %input.s = "input.s" : tensor<4x6xf32>, %input.l = "input.l" : tensor<f32>) {
      // expected-error @+1 {{'zb.vocab_grad' op statistics 'tensor<4x6xf32>' are not 'tensor<4x8xf32>', the 4 planes of the logits' rows}}
      %dz = zb.vocab_grad %input.logits, %input.y, %input.s, %input.l {first = 0 : i64, vocab = 10 : i64} : (tensor<8x4xf32>, tensor<8xi64>, tensor<4x6xf32>, tensor<f32>) -> tensor<8x4xf32>
      zb.yield
    }
  }
}
