// llama-small: the example Llama at about 6M parameters, for training on
// text: hidden size 256, 8 decoder layers with 8 query heads on 4 kv heads
// of 32 features, rotary embeddings (theta 1e4, Llama 3's scaling: factor 8,
// low 1, high 8, original 64), a SwiGLU MLP of 768, sequences of 128 tokens,
// 4 per microbatch, the byte vocabulary of 256 (zbc run --data FILE reads
// any text file as bytes). No zb.cut: zbc cuts it into as many stages as the
// schedule needs. Kept equal to `zbc-dsl-llama --hidden 256 --intermediate
// 768 --layers 8 --heads 8 --kv-heads 4 --seq 128 --max-positions 128
// --batch 4 --no-cuts` by test/examples/dsl-matches-mlir.test.
module {
  zb.model @llama {
    %tokens = zb.input "tokens" : tensor<4x128xi64>
    %positions = zb.input "positions" : tensor<4x128xi64>
    %targets = zb.label "targets" : tensor<4x128xi64>
    %model.embed_tokens.weight = zb.param "model.embed_tokens.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %0 = zb.embedding %tokens, %model.embed_tokens.weight : (tensor<4x128xi64>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.0.input_layernorm.weight = zb.param "model.layers.0.input_layernorm.weight" init ones : tensor<256xf32>
    %1 = zb.rmsnorm %0, %model.layers.0.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.0.self_attn.q_proj.weight = zb.param "model.layers.0.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %2 = zb.linear %1, %model.layers.0.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.0.self_attn.k_proj.weight = zb.param "model.layers.0.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %3 = zb.linear %1, %model.layers.0.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.0.self_attn.v_proj.weight = zb.param "model.layers.0.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %4 = zb.linear %1, %model.layers.0.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %5 = zb.rope %2, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %6 = zb.rope %3, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %7 = zb.attention %5, %6, %4 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.0.self_attn.o_proj.weight = zb.param "model.layers.0.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %8 = zb.linear %7, %model.layers.0.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %9 = zb.add %0, %8 : tensor<4x128x256xf32>
    %model.layers.0.post_attention_layernorm.weight = zb.param "model.layers.0.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %10 = zb.rmsnorm %9, %model.layers.0.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.0.mlp.gate_proj.weight = zb.param "model.layers.0.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %11 = zb.linear %10, %model.layers.0.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.0.mlp.up_proj.weight = zb.param "model.layers.0.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %12 = zb.linear %10, %model.layers.0.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %13 = zb.swiglu %11, %12 : tensor<4x128x768xf32>
    %model.layers.0.mlp.down_proj.weight = zb.param "model.layers.0.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %14 = zb.linear %13, %model.layers.0.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %15 = zb.add %9, %14 : tensor<4x128x256xf32>
    %model.layers.1.input_layernorm.weight = zb.param "model.layers.1.input_layernorm.weight" init ones : tensor<256xf32>
    %16 = zb.rmsnorm %15, %model.layers.1.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.1.self_attn.q_proj.weight = zb.param "model.layers.1.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %17 = zb.linear %16, %model.layers.1.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.1.self_attn.k_proj.weight = zb.param "model.layers.1.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %18 = zb.linear %16, %model.layers.1.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.1.self_attn.v_proj.weight = zb.param "model.layers.1.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %19 = zb.linear %16, %model.layers.1.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %20 = zb.rope %17, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %21 = zb.rope %18, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %22 = zb.attention %20, %21, %19 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.1.self_attn.o_proj.weight = zb.param "model.layers.1.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %23 = zb.linear %22, %model.layers.1.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %24 = zb.add %15, %23 : tensor<4x128x256xf32>
    %model.layers.1.post_attention_layernorm.weight = zb.param "model.layers.1.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %25 = zb.rmsnorm %24, %model.layers.1.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.1.mlp.gate_proj.weight = zb.param "model.layers.1.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %26 = zb.linear %25, %model.layers.1.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.1.mlp.up_proj.weight = zb.param "model.layers.1.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %27 = zb.linear %25, %model.layers.1.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %28 = zb.swiglu %26, %27 : tensor<4x128x768xf32>
    %model.layers.1.mlp.down_proj.weight = zb.param "model.layers.1.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %29 = zb.linear %28, %model.layers.1.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %30 = zb.add %24, %29 : tensor<4x128x256xf32>
    %model.layers.2.input_layernorm.weight = zb.param "model.layers.2.input_layernorm.weight" init ones : tensor<256xf32>
    %31 = zb.rmsnorm %30, %model.layers.2.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.2.self_attn.q_proj.weight = zb.param "model.layers.2.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %32 = zb.linear %31, %model.layers.2.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.2.self_attn.k_proj.weight = zb.param "model.layers.2.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %33 = zb.linear %31, %model.layers.2.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.2.self_attn.v_proj.weight = zb.param "model.layers.2.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %34 = zb.linear %31, %model.layers.2.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %35 = zb.rope %32, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %36 = zb.rope %33, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %37 = zb.attention %35, %36, %34 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.2.self_attn.o_proj.weight = zb.param "model.layers.2.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %38 = zb.linear %37, %model.layers.2.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %39 = zb.add %30, %38 : tensor<4x128x256xf32>
    %model.layers.2.post_attention_layernorm.weight = zb.param "model.layers.2.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %40 = zb.rmsnorm %39, %model.layers.2.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.2.mlp.gate_proj.weight = zb.param "model.layers.2.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %41 = zb.linear %40, %model.layers.2.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.2.mlp.up_proj.weight = zb.param "model.layers.2.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %42 = zb.linear %40, %model.layers.2.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %43 = zb.swiglu %41, %42 : tensor<4x128x768xf32>
    %model.layers.2.mlp.down_proj.weight = zb.param "model.layers.2.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %44 = zb.linear %43, %model.layers.2.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %45 = zb.add %39, %44 : tensor<4x128x256xf32>
    %model.layers.3.input_layernorm.weight = zb.param "model.layers.3.input_layernorm.weight" init ones : tensor<256xf32>
    %46 = zb.rmsnorm %45, %model.layers.3.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.3.self_attn.q_proj.weight = zb.param "model.layers.3.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %47 = zb.linear %46, %model.layers.3.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.3.self_attn.k_proj.weight = zb.param "model.layers.3.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %48 = zb.linear %46, %model.layers.3.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.3.self_attn.v_proj.weight = zb.param "model.layers.3.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %49 = zb.linear %46, %model.layers.3.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %50 = zb.rope %47, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %51 = zb.rope %48, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %52 = zb.attention %50, %51, %49 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.3.self_attn.o_proj.weight = zb.param "model.layers.3.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %53 = zb.linear %52, %model.layers.3.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %54 = zb.add %45, %53 : tensor<4x128x256xf32>
    %model.layers.3.post_attention_layernorm.weight = zb.param "model.layers.3.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %55 = zb.rmsnorm %54, %model.layers.3.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.3.mlp.gate_proj.weight = zb.param "model.layers.3.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %56 = zb.linear %55, %model.layers.3.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.3.mlp.up_proj.weight = zb.param "model.layers.3.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %57 = zb.linear %55, %model.layers.3.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %58 = zb.swiglu %56, %57 : tensor<4x128x768xf32>
    %model.layers.3.mlp.down_proj.weight = zb.param "model.layers.3.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %59 = zb.linear %58, %model.layers.3.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %60 = zb.add %54, %59 : tensor<4x128x256xf32>
    %model.layers.4.input_layernorm.weight = zb.param "model.layers.4.input_layernorm.weight" init ones : tensor<256xf32>
    %61 = zb.rmsnorm %60, %model.layers.4.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.4.self_attn.q_proj.weight = zb.param "model.layers.4.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %62 = zb.linear %61, %model.layers.4.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.4.self_attn.k_proj.weight = zb.param "model.layers.4.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %63 = zb.linear %61, %model.layers.4.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.4.self_attn.v_proj.weight = zb.param "model.layers.4.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %64 = zb.linear %61, %model.layers.4.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %65 = zb.rope %62, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %66 = zb.rope %63, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %67 = zb.attention %65, %66, %64 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.4.self_attn.o_proj.weight = zb.param "model.layers.4.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %68 = zb.linear %67, %model.layers.4.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %69 = zb.add %60, %68 : tensor<4x128x256xf32>
    %model.layers.4.post_attention_layernorm.weight = zb.param "model.layers.4.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %70 = zb.rmsnorm %69, %model.layers.4.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.4.mlp.gate_proj.weight = zb.param "model.layers.4.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %71 = zb.linear %70, %model.layers.4.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.4.mlp.up_proj.weight = zb.param "model.layers.4.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %72 = zb.linear %70, %model.layers.4.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %73 = zb.swiglu %71, %72 : tensor<4x128x768xf32>
    %model.layers.4.mlp.down_proj.weight = zb.param "model.layers.4.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %74 = zb.linear %73, %model.layers.4.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %75 = zb.add %69, %74 : tensor<4x128x256xf32>
    %model.layers.5.input_layernorm.weight = zb.param "model.layers.5.input_layernorm.weight" init ones : tensor<256xf32>
    %76 = zb.rmsnorm %75, %model.layers.5.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.5.self_attn.q_proj.weight = zb.param "model.layers.5.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %77 = zb.linear %76, %model.layers.5.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.5.self_attn.k_proj.weight = zb.param "model.layers.5.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %78 = zb.linear %76, %model.layers.5.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.5.self_attn.v_proj.weight = zb.param "model.layers.5.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %79 = zb.linear %76, %model.layers.5.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %80 = zb.rope %77, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %81 = zb.rope %78, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %82 = zb.attention %80, %81, %79 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.5.self_attn.o_proj.weight = zb.param "model.layers.5.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %83 = zb.linear %82, %model.layers.5.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %84 = zb.add %75, %83 : tensor<4x128x256xf32>
    %model.layers.5.post_attention_layernorm.weight = zb.param "model.layers.5.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %85 = zb.rmsnorm %84, %model.layers.5.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.5.mlp.gate_proj.weight = zb.param "model.layers.5.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %86 = zb.linear %85, %model.layers.5.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.5.mlp.up_proj.weight = zb.param "model.layers.5.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %87 = zb.linear %85, %model.layers.5.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %88 = zb.swiglu %86, %87 : tensor<4x128x768xf32>
    %model.layers.5.mlp.down_proj.weight = zb.param "model.layers.5.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %89 = zb.linear %88, %model.layers.5.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %90 = zb.add %84, %89 : tensor<4x128x256xf32>
    %model.layers.6.input_layernorm.weight = zb.param "model.layers.6.input_layernorm.weight" init ones : tensor<256xf32>
    %91 = zb.rmsnorm %90, %model.layers.6.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.6.self_attn.q_proj.weight = zb.param "model.layers.6.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %92 = zb.linear %91, %model.layers.6.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.6.self_attn.k_proj.weight = zb.param "model.layers.6.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %93 = zb.linear %91, %model.layers.6.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.6.self_attn.v_proj.weight = zb.param "model.layers.6.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %94 = zb.linear %91, %model.layers.6.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %95 = zb.rope %92, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %96 = zb.rope %93, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %97 = zb.attention %95, %96, %94 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.6.self_attn.o_proj.weight = zb.param "model.layers.6.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %98 = zb.linear %97, %model.layers.6.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %99 = zb.add %90, %98 : tensor<4x128x256xf32>
    %model.layers.6.post_attention_layernorm.weight = zb.param "model.layers.6.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %100 = zb.rmsnorm %99, %model.layers.6.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.6.mlp.gate_proj.weight = zb.param "model.layers.6.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %101 = zb.linear %100, %model.layers.6.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.6.mlp.up_proj.weight = zb.param "model.layers.6.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %102 = zb.linear %100, %model.layers.6.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %103 = zb.swiglu %101, %102 : tensor<4x128x768xf32>
    %model.layers.6.mlp.down_proj.weight = zb.param "model.layers.6.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %104 = zb.linear %103, %model.layers.6.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %105 = zb.add %99, %104 : tensor<4x128x256xf32>
    %model.layers.7.input_layernorm.weight = zb.param "model.layers.7.input_layernorm.weight" init ones : tensor<256xf32>
    %106 = zb.rmsnorm %105, %model.layers.7.input_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.7.self_attn.q_proj.weight = zb.param "model.layers.7.self_attn.q_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %107 = zb.linear %106, %model.layers.7.self_attn.q_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %model.layers.7.self_attn.k_proj.weight = zb.param "model.layers.7.self_attn.k_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %108 = zb.linear %106, %model.layers.7.self_attn.k_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %model.layers.7.self_attn.v_proj.weight = zb.param "model.layers.7.self_attn.v_proj.weight" init normal(2.000000e-02) : tensor<128x256xf32>
    %109 = zb.linear %106, %model.layers.7.self_attn.v_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<128x256xf32>) -> tensor<4x128x128xf32>
    %110 = zb.rope %107, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<4x128x256xf32>
    %111 = zb.rope %108, %positions {head_dim = 32 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 8.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 64 : i64, max_positions = 128 : i64} : (tensor<4x128x128xf32>, tensor<4x128xi64>) -> tensor<4x128x128xf32>
    %112 = zb.attention %110, %111, %109 {heads = 8 : i64, kv_heads = 4 : i64} : (tensor<4x128x256xf32>, tensor<4x128x128xf32>, tensor<4x128x128xf32>) -> tensor<4x128x256xf32>
    %model.layers.7.self_attn.o_proj.weight = zb.param "model.layers.7.self_attn.o_proj.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %113 = zb.linear %112, %model.layers.7.self_attn.o_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %114 = zb.add %105, %113 : tensor<4x128x256xf32>
    %model.layers.7.post_attention_layernorm.weight = zb.param "model.layers.7.post_attention_layernorm.weight" init ones : tensor<256xf32>
    %115 = zb.rmsnorm %114, %model.layers.7.post_attention_layernorm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %model.layers.7.mlp.gate_proj.weight = zb.param "model.layers.7.mlp.gate_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %116 = zb.linear %115, %model.layers.7.mlp.gate_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %model.layers.7.mlp.up_proj.weight = zb.param "model.layers.7.mlp.up_proj.weight" init normal(2.000000e-02) : tensor<768x256xf32>
    %117 = zb.linear %115, %model.layers.7.mlp.up_proj.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<768x256xf32>) -> tensor<4x128x768xf32>
    %118 = zb.swiglu %116, %117 : tensor<4x128x768xf32>
    %model.layers.7.mlp.down_proj.weight = zb.param "model.layers.7.mlp.down_proj.weight" init normal(2.000000e-02) : tensor<256x768xf32>
    %119 = zb.linear %118, %model.layers.7.mlp.down_proj.weight {weight_out_in} : (tensor<4x128x768xf32>, tensor<256x768xf32>) -> tensor<4x128x256xf32>
    %120 = zb.add %114, %119 : tensor<4x128x256xf32>
    %model.norm.weight = zb.param "model.norm.weight" init ones : tensor<256xf32>
    %121 = zb.rmsnorm %120, %model.norm.weight {epsilon = 1.000000e-05 : f64} : (tensor<4x128x256xf32>, tensor<256xf32>) -> tensor<4x128x256xf32>
    %lm_head.weight = zb.param "lm_head.weight" init normal(2.000000e-02) : tensor<256x256xf32>
    %122 = zb.linear %121, %lm_head.weight {weight_out_in} : (tensor<4x128x256xf32>, tensor<256x256xf32>) -> tensor<4x128x256xf32>
    %123 = zb.cross_entropy %122, %targets : (tensor<4x128x256xf32>, tensor<4x128xi64>) -> tensor<f32>
    zb.loss %123 : tensor<f32>
  }
}
