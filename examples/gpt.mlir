// A GPT-style decoder-only transformer, one microbatch of 2 sequences of 32
// tokens: token + position embeddings, 4 pre-LayerNorm blocks (causal
// self-attention with 4 heads, a 4h GELU MLP, residual adds), a final
// LayerNorm, an untied output projection over a 256-token vocabulary and the
// mean cross-entropy loss. Hidden size 64.
//
// Pipeline: one stage per block (3 zb.cut ops, 4 stages); the embeddings ride
// with block 0 and the head with block 3. The residual stream is the only
// activation that crosses a stage boundary.
//
// examples/dsl/gpt.cpp builds the same IR with the C++ DSL; the test
// test/examples/dsl-matches-mlir.test checks that the two stay identical.

zb.model @gpt {
  // Data: token ids, their positions, and the next-token targets.
  %tokens = zb.input "tokens" : tensor<2x32xi64>
  %positions = zb.input "positions" : tensor<2x32xi64>
  %targets = zb.label "targets" : tensor<2x32xi64>

  // Embeddings.
  %wte = zb.param "wte" init normal(0.02) : tensor<256x64xf32>
  %wpe = zb.param "wpe" init normal(0.01) : tensor<32x64xf32>
  %0 = zb.embedding %tokens, %wte : (tensor<2x32xi64>, tensor<256x64xf32>) -> tensor<2x32x64xf32>
  %1 = zb.embedding %positions, %wpe : (tensor<2x32xi64>, tensor<32x64xf32>) -> tensor<2x32x64xf32>
  %2 = zb.add %0, %1 : tensor<2x32x64xf32>

  // Block 0: x += proj(attn(qkv(ln1(x)))); x += mlp(ln2(x)).
  %h0.ln1.gamma = zb.param "h0.ln1.gamma" init ones : tensor<64xf32>
  %h0.ln1.beta = zb.param "h0.ln1.beta" init zeros : tensor<64xf32>
  %h0.attn.qkv.weight = zb.param "h0.attn.qkv.weight" init normal(0.02) : tensor<64x192xf32>
  %h0.attn.qkv.bias = zb.param "h0.attn.qkv.bias" init zeros : tensor<192xf32>
  %h0.attn.proj.weight = zb.param "h0.attn.proj.weight" init normal(0.02) : tensor<64x64xf32>
  %h0.attn.proj.bias = zb.param "h0.attn.proj.bias" init zeros : tensor<64xf32>
  %h0.ln2.gamma = zb.param "h0.ln2.gamma" init ones : tensor<64xf32>
  %h0.ln2.beta = zb.param "h0.ln2.beta" init zeros : tensor<64xf32>
  %h0.mlp.fc.weight = zb.param "h0.mlp.fc.weight" init normal(0.02) : tensor<64x256xf32>
  %h0.mlp.fc.bias = zb.param "h0.mlp.fc.bias" init zeros : tensor<256xf32>
  %h0.mlp.proj.weight = zb.param "h0.mlp.proj.weight" init normal(0.02) : tensor<256x64xf32>
  %h0.mlp.proj.bias = zb.param "h0.mlp.proj.bias" init zeros : tensor<64xf32>
  %3 = zb.layernorm %2, %h0.ln1.gamma, %h0.ln1.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %4 = zb.linear %3, %h0.attn.qkv.weight : (tensor<2x32x64xf32>, tensor<64x192xf32>) -> tensor<2x32x192xf32>
  %5 = zb.bias_add %4, %h0.attn.qkv.bias : (tensor<2x32x192xf32>, tensor<192xf32>) -> tensor<2x32x192xf32>
  %6 = zb.causal_attention %5 heads(4) : tensor<2x32x192xf32> -> tensor<2x32x64xf32>
  %7 = zb.linear %6, %h0.attn.proj.weight : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
  %8 = zb.bias_add %7, %h0.attn.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %9 = zb.add %2, %8 : tensor<2x32x64xf32>
  %10 = zb.layernorm %9, %h0.ln2.gamma, %h0.ln2.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %11 = zb.linear %10, %h0.mlp.fc.weight : (tensor<2x32x64xf32>, tensor<64x256xf32>) -> tensor<2x32x256xf32>
  %12 = zb.bias_add %11, %h0.mlp.fc.bias : (tensor<2x32x256xf32>, tensor<256xf32>) -> tensor<2x32x256xf32>
  %13 = zb.gelu %12 : tensor<2x32x256xf32>
  %14 = zb.linear %13, %h0.mlp.proj.weight : (tensor<2x32x256xf32>, tensor<256x64xf32>) -> tensor<2x32x64xf32>
  %15 = zb.bias_add %14, %h0.mlp.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %16 = zb.add %9, %15 : tensor<2x32x64xf32>
  // ---- stage boundary ----
  %17 = zb.cut %16 : tensor<2x32x64xf32>

  // Block 1: x += proj(attn(qkv(ln1(x)))); x += mlp(ln2(x)).
  %h1.ln1.gamma = zb.param "h1.ln1.gamma" init ones : tensor<64xf32>
  %h1.ln1.beta = zb.param "h1.ln1.beta" init zeros : tensor<64xf32>
  %h1.attn.qkv.weight = zb.param "h1.attn.qkv.weight" init normal(0.02) : tensor<64x192xf32>
  %h1.attn.qkv.bias = zb.param "h1.attn.qkv.bias" init zeros : tensor<192xf32>
  %h1.attn.proj.weight = zb.param "h1.attn.proj.weight" init normal(0.02) : tensor<64x64xf32>
  %h1.attn.proj.bias = zb.param "h1.attn.proj.bias" init zeros : tensor<64xf32>
  %h1.ln2.gamma = zb.param "h1.ln2.gamma" init ones : tensor<64xf32>
  %h1.ln2.beta = zb.param "h1.ln2.beta" init zeros : tensor<64xf32>
  %h1.mlp.fc.weight = zb.param "h1.mlp.fc.weight" init normal(0.02) : tensor<64x256xf32>
  %h1.mlp.fc.bias = zb.param "h1.mlp.fc.bias" init zeros : tensor<256xf32>
  %h1.mlp.proj.weight = zb.param "h1.mlp.proj.weight" init normal(0.02) : tensor<256x64xf32>
  %h1.mlp.proj.bias = zb.param "h1.mlp.proj.bias" init zeros : tensor<64xf32>
  %18 = zb.layernorm %17, %h1.ln1.gamma, %h1.ln1.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %19 = zb.linear %18, %h1.attn.qkv.weight : (tensor<2x32x64xf32>, tensor<64x192xf32>) -> tensor<2x32x192xf32>
  %20 = zb.bias_add %19, %h1.attn.qkv.bias : (tensor<2x32x192xf32>, tensor<192xf32>) -> tensor<2x32x192xf32>
  %21 = zb.causal_attention %20 heads(4) : tensor<2x32x192xf32> -> tensor<2x32x64xf32>
  %22 = zb.linear %21, %h1.attn.proj.weight : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
  %23 = zb.bias_add %22, %h1.attn.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %24 = zb.add %17, %23 : tensor<2x32x64xf32>
  %25 = zb.layernorm %24, %h1.ln2.gamma, %h1.ln2.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %26 = zb.linear %25, %h1.mlp.fc.weight : (tensor<2x32x64xf32>, tensor<64x256xf32>) -> tensor<2x32x256xf32>
  %27 = zb.bias_add %26, %h1.mlp.fc.bias : (tensor<2x32x256xf32>, tensor<256xf32>) -> tensor<2x32x256xf32>
  %28 = zb.gelu %27 : tensor<2x32x256xf32>
  %29 = zb.linear %28, %h1.mlp.proj.weight : (tensor<2x32x256xf32>, tensor<256x64xf32>) -> tensor<2x32x64xf32>
  %30 = zb.bias_add %29, %h1.mlp.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %31 = zb.add %24, %30 : tensor<2x32x64xf32>
  // ---- stage boundary ----
  %32 = zb.cut %31 : tensor<2x32x64xf32>

  // Block 2: x += proj(attn(qkv(ln1(x)))); x += mlp(ln2(x)).
  %h2.ln1.gamma = zb.param "h2.ln1.gamma" init ones : tensor<64xf32>
  %h2.ln1.beta = zb.param "h2.ln1.beta" init zeros : tensor<64xf32>
  %h2.attn.qkv.weight = zb.param "h2.attn.qkv.weight" init normal(0.02) : tensor<64x192xf32>
  %h2.attn.qkv.bias = zb.param "h2.attn.qkv.bias" init zeros : tensor<192xf32>
  %h2.attn.proj.weight = zb.param "h2.attn.proj.weight" init normal(0.02) : tensor<64x64xf32>
  %h2.attn.proj.bias = zb.param "h2.attn.proj.bias" init zeros : tensor<64xf32>
  %h2.ln2.gamma = zb.param "h2.ln2.gamma" init ones : tensor<64xf32>
  %h2.ln2.beta = zb.param "h2.ln2.beta" init zeros : tensor<64xf32>
  %h2.mlp.fc.weight = zb.param "h2.mlp.fc.weight" init normal(0.02) : tensor<64x256xf32>
  %h2.mlp.fc.bias = zb.param "h2.mlp.fc.bias" init zeros : tensor<256xf32>
  %h2.mlp.proj.weight = zb.param "h2.mlp.proj.weight" init normal(0.02) : tensor<256x64xf32>
  %h2.mlp.proj.bias = zb.param "h2.mlp.proj.bias" init zeros : tensor<64xf32>
  %33 = zb.layernorm %32, %h2.ln1.gamma, %h2.ln1.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %34 = zb.linear %33, %h2.attn.qkv.weight : (tensor<2x32x64xf32>, tensor<64x192xf32>) -> tensor<2x32x192xf32>
  %35 = zb.bias_add %34, %h2.attn.qkv.bias : (tensor<2x32x192xf32>, tensor<192xf32>) -> tensor<2x32x192xf32>
  %36 = zb.causal_attention %35 heads(4) : tensor<2x32x192xf32> -> tensor<2x32x64xf32>
  %37 = zb.linear %36, %h2.attn.proj.weight : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
  %38 = zb.bias_add %37, %h2.attn.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %39 = zb.add %32, %38 : tensor<2x32x64xf32>
  %40 = zb.layernorm %39, %h2.ln2.gamma, %h2.ln2.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %41 = zb.linear %40, %h2.mlp.fc.weight : (tensor<2x32x64xf32>, tensor<64x256xf32>) -> tensor<2x32x256xf32>
  %42 = zb.bias_add %41, %h2.mlp.fc.bias : (tensor<2x32x256xf32>, tensor<256xf32>) -> tensor<2x32x256xf32>
  %43 = zb.gelu %42 : tensor<2x32x256xf32>
  %44 = zb.linear %43, %h2.mlp.proj.weight : (tensor<2x32x256xf32>, tensor<256x64xf32>) -> tensor<2x32x64xf32>
  %45 = zb.bias_add %44, %h2.mlp.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %46 = zb.add %39, %45 : tensor<2x32x64xf32>
  // ---- stage boundary ----
  %47 = zb.cut %46 : tensor<2x32x64xf32>

  // Block 3: x += proj(attn(qkv(ln1(x)))); x += mlp(ln2(x)).
  %h3.ln1.gamma = zb.param "h3.ln1.gamma" init ones : tensor<64xf32>
  %h3.ln1.beta = zb.param "h3.ln1.beta" init zeros : tensor<64xf32>
  %h3.attn.qkv.weight = zb.param "h3.attn.qkv.weight" init normal(0.02) : tensor<64x192xf32>
  %h3.attn.qkv.bias = zb.param "h3.attn.qkv.bias" init zeros : tensor<192xf32>
  %h3.attn.proj.weight = zb.param "h3.attn.proj.weight" init normal(0.02) : tensor<64x64xf32>
  %h3.attn.proj.bias = zb.param "h3.attn.proj.bias" init zeros : tensor<64xf32>
  %h3.ln2.gamma = zb.param "h3.ln2.gamma" init ones : tensor<64xf32>
  %h3.ln2.beta = zb.param "h3.ln2.beta" init zeros : tensor<64xf32>
  %h3.mlp.fc.weight = zb.param "h3.mlp.fc.weight" init normal(0.02) : tensor<64x256xf32>
  %h3.mlp.fc.bias = zb.param "h3.mlp.fc.bias" init zeros : tensor<256xf32>
  %h3.mlp.proj.weight = zb.param "h3.mlp.proj.weight" init normal(0.02) : tensor<256x64xf32>
  %h3.mlp.proj.bias = zb.param "h3.mlp.proj.bias" init zeros : tensor<64xf32>
  %48 = zb.layernorm %47, %h3.ln1.gamma, %h3.ln1.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %49 = zb.linear %48, %h3.attn.qkv.weight : (tensor<2x32x64xf32>, tensor<64x192xf32>) -> tensor<2x32x192xf32>
  %50 = zb.bias_add %49, %h3.attn.qkv.bias : (tensor<2x32x192xf32>, tensor<192xf32>) -> tensor<2x32x192xf32>
  %51 = zb.causal_attention %50 heads(4) : tensor<2x32x192xf32> -> tensor<2x32x64xf32>
  %52 = zb.linear %51, %h3.attn.proj.weight : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> tensor<2x32x64xf32>
  %53 = zb.bias_add %52, %h3.attn.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %54 = zb.add %47, %53 : tensor<2x32x64xf32>
  %55 = zb.layernorm %54, %h3.ln2.gamma, %h3.ln2.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %56 = zb.linear %55, %h3.mlp.fc.weight : (tensor<2x32x64xf32>, tensor<64x256xf32>) -> tensor<2x32x256xf32>
  %57 = zb.bias_add %56, %h3.mlp.fc.bias : (tensor<2x32x256xf32>, tensor<256xf32>) -> tensor<2x32x256xf32>
  %58 = zb.gelu %57 : tensor<2x32x256xf32>
  %59 = zb.linear %58, %h3.mlp.proj.weight : (tensor<2x32x256xf32>, tensor<256x64xf32>) -> tensor<2x32x64xf32>
  %60 = zb.bias_add %59, %h3.mlp.proj.bias : (tensor<2x32x64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %61 = zb.add %54, %60 : tensor<2x32x64xf32>

  // Head: final LayerNorm, projection to the vocabulary, loss.
  %lnf.gamma = zb.param "lnf.gamma" init ones : tensor<64xf32>
  %lnf.beta = zb.param "lnf.beta" init zeros : tensor<64xf32>
  %lm_head.weight = zb.param "lm_head.weight" init normal(0.02) : tensor<64x256xf32>
  %62 = zb.layernorm %61, %lnf.gamma, %lnf.beta : (tensor<2x32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x32x64xf32>
  %63 = zb.linear %62, %lm_head.weight : (tensor<2x32x64xf32>, tensor<64x256xf32>) -> tensor<2x32x256xf32>
  %64 = zb.cross_entropy %63, %targets : (tensor<2x32x256xf32>, tensor<2x32xi64>) -> tensor<f32>
  zb.loss %64 : tensor<f32>
}
