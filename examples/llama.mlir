// llama: the example Llama-family decoder (zbc-dsl-llama's defaults, the
// model of zbc/DSL/Llama.h), tiny, for the tests: Hugging Face's
// LlamaForCausalLM with hidden size 64, 4 decoder layers (one stage each),
// 4 query heads sharing 2 kv heads of 16 features (grouped-query
// attention), rotary embeddings with theta 1e4 and Llama 3's frequency
// scaling (factor 8, low 1, high 8, original 64), RMSNorm (eps 1e-5), a
// SwiGLU MLP of 160, an untied head, the byte vocabulary of 256, sequences
// of 32 tokens, 2 per microbatch. Parameters carry the checkpoint names and
// [out, in] layouts of Hugging Face. test/examples/dsl-matches-mlir.test
// keeps it equal to `zbc-dsl-llama`.
module {
  zb.model @llama {
    %tokens = zb.input "tokens" : tensor<2x32xi64>
    %positions = zb.input "positions" : tensor<2x32xi64>
    %targets = zb.label "targets" : tensor<2x32xi64>
    %model.embed_tokens.weight = zb.param "model.embed_tokens.weight" init normal(2.000000e-02) : tensor<256x64xf32>
    %0 = zb.embedding %tokens, %model.embed_tokens.weight : (tensor<2x32xi64>, tensor<256x64xf32>) -> tensor<2x32x64xf32>
    %model.layers.0.input_layernorm.weight = zb.param "model.layers.0.input_layernorm.weight" init ones : tensor<64xf32>
    %1 = zb.rmsnorm %0, %model.layers.0.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.0.self_attn.q_proj.weight = zb.param "model.layers.0.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %2 = zb.linear %1, %model.layers.0.self_attn.q_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %model.layers.0.self_attn.k_proj.weight = zb.param "model.layers.0.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %3 = zb.linear %1, %model.layers.0.self_attn.k_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %model.layers.0.self_attn.v_proj.weight = zb.param "model.layers.0.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %4 = zb.linear %1, %model.layers.0.self_attn.v_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %5 = zb.rope %2, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %6 = zb.rope %3, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x32xf32>, tensor<2x32xi64>) -> tensor<2x32x32xf32>
    %7 = zb.attention %5, %6, %4 {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>) -> tensor<2x32x64xf32>
    %model.layers.0.self_attn.o_proj.weight = zb.param "model.layers.0.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %8 = zb.linear %7, %model.layers.0.self_attn.o_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %9 = zb.add %0, %8 : tensor<2x32x64xf32>
    %model.layers.0.post_attention_layernorm.weight = zb.param "model.layers.0.post_attention_layernorm.weight" init ones : tensor<64xf32>
    %10 = zb.rmsnorm %9, %model.layers.0.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.0.mlp.gate_proj.weight = zb.param "model.layers.0.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %11 = zb.linear %10, %model.layers.0.mlp.gate_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %model.layers.0.mlp.up_proj.weight = zb.param "model.layers.0.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %12 = zb.linear %10, %model.layers.0.mlp.up_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %13 = zb.swiglu %11, %12 : tensor<2x32x160xf32>
    %model.layers.0.mlp.down_proj.weight = zb.param "model.layers.0.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<64x160xf32>
    %14 = zb.linear %13, %model.layers.0.mlp.down_proj.weight {weight_out_in} : (tensor<2x32x160xf32>, tensor<64x160xf32>) -> tensor<2x32x64xf32>
    %15 = zb.add %9, %14 : tensor<2x32x64xf32>
    %16 = zb.cut %15 : tensor<2x32x64xf32>
    %model.layers.1.input_layernorm.weight = zb.param "model.layers.1.input_layernorm.weight" init ones : tensor<64xf32>
    %17 = zb.rmsnorm %16, %model.layers.1.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.1.self_attn.q_proj.weight = zb.param "model.layers.1.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %18 = zb.linear %17, %model.layers.1.self_attn.q_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %model.layers.1.self_attn.k_proj.weight = zb.param "model.layers.1.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %19 = zb.linear %17, %model.layers.1.self_attn.k_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %model.layers.1.self_attn.v_proj.weight = zb.param "model.layers.1.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %20 = zb.linear %17, %model.layers.1.self_attn.v_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %21 = zb.rope %18, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %22 = zb.rope %19, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x32xf32>, tensor<2x32xi64>) -> tensor<2x32x32xf32>
    %23 = zb.attention %21, %22, %20 {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>) -> tensor<2x32x64xf32>
    %model.layers.1.self_attn.o_proj.weight = zb.param "model.layers.1.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %24 = zb.linear %23, %model.layers.1.self_attn.o_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %25 = zb.add %16, %24 : tensor<2x32x64xf32>
    %model.layers.1.post_attention_layernorm.weight = zb.param "model.layers.1.post_attention_layernorm.weight" init ones : tensor<64xf32>
    %26 = zb.rmsnorm %25, %model.layers.1.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.1.mlp.gate_proj.weight = zb.param "model.layers.1.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %27 = zb.linear %26, %model.layers.1.mlp.gate_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %model.layers.1.mlp.up_proj.weight = zb.param "model.layers.1.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %28 = zb.linear %26, %model.layers.1.mlp.up_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %29 = zb.swiglu %27, %28 : tensor<2x32x160xf32>
    %model.layers.1.mlp.down_proj.weight = zb.param "model.layers.1.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<64x160xf32>
    %30 = zb.linear %29, %model.layers.1.mlp.down_proj.weight {weight_out_in} : (tensor<2x32x160xf32>, tensor<64x160xf32>) -> tensor<2x32x64xf32>
    %31 = zb.add %25, %30 : tensor<2x32x64xf32>
    %32 = zb.cut %31 : tensor<2x32x64xf32>
    %model.layers.2.input_layernorm.weight = zb.param "model.layers.2.input_layernorm.weight" init ones : tensor<64xf32>
    %33 = zb.rmsnorm %32, %model.layers.2.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.2.self_attn.q_proj.weight = zb.param "model.layers.2.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %34 = zb.linear %33, %model.layers.2.self_attn.q_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %model.layers.2.self_attn.k_proj.weight = zb.param "model.layers.2.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %35 = zb.linear %33, %model.layers.2.self_attn.k_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %model.layers.2.self_attn.v_proj.weight = zb.param "model.layers.2.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %36 = zb.linear %33, %model.layers.2.self_attn.v_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %37 = zb.rope %34, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %38 = zb.rope %35, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x32xf32>, tensor<2x32xi64>) -> tensor<2x32x32xf32>
    %39 = zb.attention %37, %38, %36 {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>) -> tensor<2x32x64xf32>
    %model.layers.2.self_attn.o_proj.weight = zb.param "model.layers.2.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %40 = zb.linear %39, %model.layers.2.self_attn.o_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %41 = zb.add %32, %40 : tensor<2x32x64xf32>
    %model.layers.2.post_attention_layernorm.weight = zb.param "model.layers.2.post_attention_layernorm.weight" init ones : tensor<64xf32>
    %42 = zb.rmsnorm %41, %model.layers.2.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.2.mlp.gate_proj.weight = zb.param "model.layers.2.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %43 = zb.linear %42, %model.layers.2.mlp.gate_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %model.layers.2.mlp.up_proj.weight = zb.param "model.layers.2.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %44 = zb.linear %42, %model.layers.2.mlp.up_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %45 = zb.swiglu %43, %44 : tensor<2x32x160xf32>
    %model.layers.2.mlp.down_proj.weight = zb.param "model.layers.2.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<64x160xf32>
    %46 = zb.linear %45, %model.layers.2.mlp.down_proj.weight {weight_out_in} : (tensor<2x32x160xf32>, tensor<64x160xf32>) -> tensor<2x32x64xf32>
    %47 = zb.add %41, %46 : tensor<2x32x64xf32>
    %48 = zb.cut %47 : tensor<2x32x64xf32>
    %model.layers.3.input_layernorm.weight = zb.param "model.layers.3.input_layernorm.weight" init ones : tensor<64xf32>
    %49 = zb.rmsnorm %48, %model.layers.3.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.3.self_attn.q_proj.weight = zb.param "model.layers.3.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %50 = zb.linear %49, %model.layers.3.self_attn.q_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %model.layers.3.self_attn.k_proj.weight = zb.param "model.layers.3.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %51 = zb.linear %49, %model.layers.3.self_attn.k_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %model.layers.3.self_attn.v_proj.weight = zb.param "model.layers.3.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<32x64xf32>
    %52 = zb.linear %49, %model.layers.3.self_attn.v_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<32x64xf32>) -> tensor<2x32x32xf32>
    %53 = zb.rope %50, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x64xf32>, tensor<2x32xi64>) -> tensor<2x32x64xf32>
    %54 = zb.rope %51, %positions {head_dim = 16 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 32 : i64} : (tensor<2x32x32xf32>, tensor<2x32xi64>) -> tensor<2x32x32xf32>
    %55 = zb.attention %53, %54, %52 {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x32x64xf32>, tensor<2x32x32xf32>, tensor<2x32x32xf32>) -> tensor<2x32x64xf32>
    %model.layers.3.self_attn.o_proj.weight = zb.param "model.layers.3.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<64x64xf32>
    %56 = zb.linear %55, %model.layers.3.self_attn.o_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
    %57 = zb.add %48, %56 : tensor<2x32x64xf32>
    %model.layers.3.post_attention_layernorm.weight = zb.param "model.layers.3.post_attention_layernorm.weight" init ones : tensor<64xf32>
    %58 = zb.rmsnorm %57, %model.layers.3.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %model.layers.3.mlp.gate_proj.weight = zb.param "model.layers.3.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %59 = zb.linear %58, %model.layers.3.mlp.gate_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %model.layers.3.mlp.up_proj.weight = zb.param "model.layers.3.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<160x64xf32>
    %60 = zb.linear %58, %model.layers.3.mlp.up_proj.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<160x64xf32>) -> tensor<2x32x160xf32>
    %61 = zb.swiglu %59, %60 : tensor<2x32x160xf32>
    %model.layers.3.mlp.down_proj.weight = zb.param "model.layers.3.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<64x160xf32>
    %62 = zb.linear %61, %model.layers.3.mlp.down_proj.weight {weight_out_in} : (tensor<2x32x160xf32>, tensor<64x160xf32>) -> tensor<2x32x64xf32>
    %63 = zb.add %57, %62 : tensor<2x32x64xf32>
    %model.norm.weight = zb.param "model.norm.weight" init ones : tensor<64xf32>
    %64 = zb.rmsnorm %63, %model.norm.weight {epsilon = 1.000000e-05 : f64} : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
    %lm_head.weight = zb.param "lm_head.weight" init normal(2.000000e-02) : tensor<256x64xf32>
    %65 = zb.linear %64, %lm_head.weight {weight_out_in} : (tensor<2x32x64xf32>, tensor<256x64xf32>) -> tensor<2x32x256xf32>
    %66 = zb.cross_entropy %65, %targets : (tensor<2x32x256xf32>, tensor<2x32xi64>) -> tensor<f32>
    zb.loss %66 : tensor<f32>
  }
}
