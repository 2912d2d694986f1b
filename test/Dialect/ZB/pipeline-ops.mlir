// RUN: zbc-opt %s | zbc-opt | FileCheck %s
// RUN: zbc-opt %s --mlir-print-op-generic | zbc-opt | FileCheck %s

// Round trip of the pipeline level (zb.pipeline, zb.stage, zb.phase,
// zb.yield) and of every backward op, in the custom form and through the
// generic form. The pipelines are what zb-autodiff (and zb-split-backward)
// make of small models, trimmed by hand.

//===----------------------------------------------------------------------===//
// F and BW
//===----------------------------------------------------------------------===//

// Tests that a two-stage MLP with fused backward phases round-trips: stage
// declarations (input, label, parameters), out.0/in.0 and d_in.0/d_out.0,
// F.i keys kept for BW, the loss, and the backward ops of linear, bias_add,
// relu and cross_entropy seeded by zb.fill 1.0.
// CHECK-LABEL: zb.pipeline @mlp {
// CHECK:         zb.stage 0 {
// CHECK:           zb.input "x" : tensor<8x16xf32>
// CHECK:           zb.param "w0" init normal(2.000000e-02) : tensor<16x32xf32>
// CHECK:           zb.param "b0" init zeros : tensor<32xf32>
// CHECK:           zb.phase F(%[[X:.+]] = "input.x" : tensor<8x16xf32>,
// CHECK-SAME:        %[[W0:.+]] = "param.w0" : tensor<16x32xf32>,
// CHECK-SAME:        %[[B0:.+]] = "param.b0" : tensor<32xf32>) {
// CHECK:             %[[H:.+]] = zb.linear %[[X]], %[[W0]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK:             %[[HB:.+]] = zb.bias_add %[[H]], %[[B0]] : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK:             %[[R:.+]] = zb.relu %[[HB]] : tensor<8x32xf32>
// CHECK:             zb.yield "out.0" = %[[R]], "F.0" = %[[HB]] : tensor<8x32xf32>, tensor<8x32xf32>
// CHECK:           zb.phase BW(%[[DR:.+]] = "d_out.0" : tensor<8x32xf32>,
// CHECK-SAME:        %[[HB:.+]] = "F.0" : tensor<8x32xf32>,
// CHECK-SAME:        %[[X:.+]] = "input.x" : tensor<8x16xf32>) {
// CHECK:             %[[DHB:.+]] = zb.relu_grad %[[DR]], %[[HB]] : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK:             %[[GB0:.+]] = zb.bias_grad %[[DHB]] : tensor<8x32xf32> -> tensor<32xf32>
// CHECK:             %[[GW0:.+]] = zb.linear_grad_weight %[[X]], %[[DHB]] : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
// CHECK:             zb.yield "grad.w0" = %[[GW0]], "grad.b0" = %[[GB0]] : tensor<16x32xf32>, tensor<32xf32>
// CHECK:         zb.stage 1 {
// CHECK:           zb.label "y" : tensor<8xi64>
// CHECK:           zb.param "w1" init uniform(1.250000e-01) : tensor<32x4xf32>
// CHECK:           zb.param "b1" init ones : tensor<4xf32>
// CHECK:           zb.phase F(%[[H:.+]] = "in.0" : tensor<8x32xf32>,
// CHECK-SAME:        %[[W1:.+]] = "param.w1" : tensor<32x4xf32>,
// CHECK-SAME:        %[[B1:.+]] = "param.b1" : tensor<4xf32>,
// CHECK-SAME:        %[[Y:.+]] = "label.y" : tensor<8xi64>) {
// CHECK:             %[[O:.+]] = zb.linear %[[H]], %[[W1]] : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
// CHECK:             %[[OB:.+]] = zb.bias_add %[[O]], %[[B1]] : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK:             %[[L:.+]] = zb.cross_entropy %[[OB]], %[[Y]] : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK:             zb.yield "loss" = %[[L]], "F.0" = %[[OB]] : tensor<f32>, tensor<8x4xf32>
// CHECK:           zb.phase BW(%[[Y:.+]] = "label.y" : tensor<8xi64>,
// CHECK-SAME:        %[[OB:.+]] = "F.0" : tensor<8x4xf32>,
// CHECK-SAME:        %[[W1:.+]] = "param.w1" : tensor<32x4xf32>,
// CHECK-SAME:        %[[H:.+]] = "in.0" : tensor<8x32xf32>) {
// CHECK:             %[[ONE:.+]] = zb.fill 1.000000e+00 : tensor<f32>
// CHECK:             %[[DOB:.+]] = zb.cross_entropy_grad %[[OB]], %[[Y]], %[[ONE]] : (tensor<8x4xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x4xf32>
// CHECK:             %[[GB1:.+]] = zb.bias_grad %[[DOB]] : tensor<8x4xf32> -> tensor<4xf32>
// CHECK:             %[[DH:.+]] = zb.linear_grad_input %[[DOB]], %[[W1]] : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32>
// CHECK:             %[[GW1:.+]] = zb.linear_grad_weight %[[H]], %[[DOB]] : (tensor<8x32xf32>, tensor<8x4xf32>) -> tensor<32x4xf32>
// CHECK:             zb.yield "d_in.0" = %[[DH]], "grad.w1" = %[[GW1]], "grad.b1" = %[[GB1]] : tensor<8x32xf32>, tensor<32x4xf32>, tensor<4xf32>
zb.pipeline @mlp {
  zb.stage 0 {
    %x = zb.input "x" : tensor<8x16xf32>
    %w0 = zb.param "w0" init normal(0.02) : tensor<16x32xf32>
    %b0 = zb.param "b0" init zeros : tensor<32xf32>
    zb.phase F(%input.x = "input.x" : tensor<8x16xf32>, %param.w0 = "param.w0" : tensor<16x32xf32>, %param.b0 = "param.b0" : tensor<32xf32>) {
      %h = zb.linear %input.x, %param.w0 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
      %hb = zb.bias_add %h, %param.b0 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
      %r = zb.relu %hb : tensor<8x32xf32>
      zb.yield "out.0" = %r, "F.0" = %hb : tensor<8x32xf32>, tensor<8x32xf32>
    }
    zb.phase BW(%d_out.0 = "d_out.0" : tensor<8x32xf32>, %F.0 = "F.0" : tensor<8x32xf32>, %input.x = "input.x" : tensor<8x16xf32>) {
      %dhb = zb.relu_grad %d_out.0, %F.0 : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
      %db0 = zb.bias_grad %dhb : tensor<8x32xf32> -> tensor<32xf32>
      %dw0 = zb.linear_grad_weight %input.x, %dhb : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
      zb.yield "grad.w0" = %dw0, "grad.b0" = %db0 : tensor<16x32xf32>, tensor<32xf32>
    }
  }
  zb.stage 1 {
    %y = zb.label "y" : tensor<8xi64>
    %w1 = zb.param "w1" init uniform(0.125) : tensor<32x4xf32>
    %b1 = zb.param "b1" init ones : tensor<4xf32>
    zb.phase F(%in.0 = "in.0" : tensor<8x32xf32>, %param.w1 = "param.w1" : tensor<32x4xf32>, %param.b1 = "param.b1" : tensor<4xf32>, %label.y = "label.y" : tensor<8xi64>) {
      %o = zb.linear %in.0, %param.w1 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
      %ob = zb.bias_add %o, %param.b1 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
      %l = zb.cross_entropy %ob, %label.y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
      zb.yield "loss" = %l, "F.0" = %ob : tensor<f32>, tensor<8x4xf32>
    }
    zb.phase BW(%label.y = "label.y" : tensor<8xi64>, %F.0 = "F.0" : tensor<8x4xf32>, %param.w1 = "param.w1" : tensor<32x4xf32>, %in.0 = "in.0" : tensor<8x32xf32>) {
      %one = zb.fill 1.0 : tensor<f32>
      %dob = zb.cross_entropy_grad %F.0, %label.y, %one : (tensor<8x4xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x4xf32>
      %db1 = zb.bias_grad %dob : tensor<8x4xf32> -> tensor<4xf32>
      %dh = zb.linear_grad_input %dob, %param.w1 : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32>
      %dw1 = zb.linear_grad_weight %in.0, %dob : (tensor<8x32xf32>, tensor<8x4xf32>) -> tensor<32x4xf32>
      zb.yield "d_in.0" = %dh, "grad.w1" = %dw1, "grad.b1" = %db1 : tensor<8x32xf32>, tensor<32x4xf32>, tensor<4xf32>
    }
  }
}

// Tests that a GPT-style block round-trips with fused backward phases: two
// activations cross the cut (out.0/out.1, d_in.0/d_in.1), and the backward
// ops of embedding, layernorm (default epsilon in stage 0, 1e-3 in stage 1),
// causal attention and gelu carry their attributes.
// CHECK-LABEL: zb.pipeline @gpt_block {
// CHECK:         zb.stage 0 {
// CHECK:           zb.input "tokens" : tensor<2x8xi64>
// CHECK:           zb.param "wte" init normal(2.000000e-02) : tensor<100x24xf32>
// CHECK:           zb.param "ln1.gamma" init ones : tensor<24xf32>
// CHECK:           zb.param "ln1.beta" init zeros : tensor<24xf32>
// CHECK:           zb.param "attn.qkv" init normal(2.000000e-02) : tensor<24x72xf32>
// CHECK:           zb.phase F(%[[TOK:.+]] = "input.tokens" : tensor<2x8xi64>,
// CHECK-SAME:        %[[WTE:.+]] = "param.wte" : tensor<100x24xf32>,
// CHECK-SAME:        %[[G1:.+]] = "param.ln1.gamma" : tensor<24xf32>,
// CHECK-SAME:        %[[B1:.+]] = "param.ln1.beta" : tensor<24xf32>,
// CHECK-SAME:        %[[WQKV:.+]] = "param.attn.qkv" : tensor<24x72xf32>) {
// CHECK:             %[[E:.+]] = zb.embedding %[[TOK]], %[[WTE]] : (tensor<2x8xi64>, tensor<100x24xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[N1:.+]] = zb.layernorm %[[E]], %[[G1]], %[[B1]] : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[QKV:.+]] = zb.linear %[[N1]], %[[WQKV]] : (tensor<2x8x24xf32>, tensor<24x72xf32>) -> tensor<2x8x72xf32>
// CHECK:             %[[A:.+]] = zb.causal_attention %[[QKV]] heads(4) : tensor<2x8x72xf32> -> tensor<2x8x24xf32>
// CHECK:             %[[RES:.+]] = zb.add %[[E]], %[[A]] : tensor<2x8x24xf32>
// CHECK:             zb.yield "out.0" = %[[RES]], "out.1" = %[[A]], "F.0" = %[[QKV]], "F.1" = %[[N1]], "F.2" = %[[E]] : tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<2x8x72xf32>, tensor<2x8x24xf32>, tensor<2x8x24xf32>
// CHECK:           zb.phase BW(%[[DRES:.+]] = "d_out.0" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[DA:.+]] = "d_out.1" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[QKV:.+]] = "F.0" : tensor<2x8x72xf32>,
// CHECK-SAME:        %[[WQKV:.+]] = "param.attn.qkv" : tensor<24x72xf32>,
// CHECK-SAME:        %[[N1:.+]] = "F.1" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[E:.+]] = "F.2" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[G1:.+]] = "param.ln1.gamma" : tensor<24xf32>,
// CHECK-SAME:        %[[TOK:.+]] = "input.tokens" : tensor<2x8xi64>) {
// CHECK:             %[[DATT:.+]] = zb.add %[[DA]], %[[DRES]] : tensor<2x8x24xf32>
// CHECK:             %[[DQ:.+]] = zb.causal_attention_grad %[[DATT]], %[[QKV]] heads(4) : (tensor<2x8x24xf32>, tensor<2x8x72xf32>) -> tensor<2x8x72xf32>
// CHECK:             %[[DN1:.+]] = zb.linear_grad_input %[[DQ]], %[[WQKV]] : (tensor<2x8x72xf32>, tensor<24x72xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[GQKV:.+]] = zb.linear_grad_weight %[[N1]], %[[DQ]] : (tensor<2x8x24xf32>, tensor<2x8x72xf32>) -> tensor<24x72xf32>
// CHECK:             %[[DE1:.+]] = zb.layernorm_grad_input %[[DN1]], %[[E]], %[[G1]] : (tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[GG1:.+]] = zb.layernorm_grad_gamma %[[DN1]], %[[E]] : (tensor<2x8x24xf32>, tensor<2x8x24xf32>) -> tensor<24xf32>
// CHECK:             %[[GB1:.+]] = zb.bias_grad %[[DN1]] : tensor<2x8x24xf32> -> tensor<24xf32>
// CHECK:             %[[DE:.+]] = zb.add %[[DRES]], %[[DE1]] : tensor<2x8x24xf32>
// CHECK:             %[[GWTE:.+]] = zb.embedding_grad %[[TOK]], %[[DE]] vocab(100) : (tensor<2x8xi64>, tensor<2x8x24xf32>) -> tensor<100x24xf32>
// CHECK:             zb.yield "grad.wte" = %[[GWTE]], "grad.ln1.gamma" = %[[GG1]], "grad.ln1.beta" = %[[GB1]], "grad.attn.qkv" = %[[GQKV]] : tensor<100x24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24x72xf32>
// CHECK:         zb.stage 1 {
// CHECK:           zb.label "targets" : tensor<2x8xi64>
// CHECK:           zb.param "ln2.gamma" init ones : tensor<24xf32>
// CHECK:           zb.param "ln2.beta" init zeros : tensor<24xf32>
// CHECK:           zb.param "head" init uniform(5.000000e-02) : tensor<24x100xf32>
// CHECK:           zb.phase F(%[[RES:.+]] = "in.0" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[G2:.+]] = "param.ln2.gamma" : tensor<24xf32>,
// CHECK-SAME:        %[[B2:.+]] = "param.ln2.beta" : tensor<24xf32>,
// CHECK-SAME:        %[[A:.+]] = "in.1" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[HEAD:.+]] = "param.head" : tensor<24x100xf32>,
// CHECK-SAME:        %[[TGT:.+]] = "label.targets" : tensor<2x8xi64>) {
// CHECK:             %[[N2:.+]] = zb.layernorm %[[RES]], %[[G2]], %[[B2]] {epsilon = 1.000000e-03 : f64} : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[GE:.+]] = zb.gelu %[[N2]] : tensor<2x8x24xf32>
// CHECK:             %[[SUM:.+]] = zb.add %[[GE]], %[[A]] : tensor<2x8x24xf32>
// CHECK:             %[[LOG:.+]] = zb.linear %[[SUM]], %[[HEAD]] : (tensor<2x8x24xf32>, tensor<24x100xf32>) -> tensor<2x8x100xf32>
// CHECK:             %[[L:.+]] = zb.cross_entropy %[[LOG]], %[[TGT]] : (tensor<2x8x100xf32>, tensor<2x8xi64>) -> tensor<f32>
// CHECK:             zb.yield "loss" = %[[L]], "F.0" = %[[LOG]], "F.1" = %[[SUM]], "F.2" = %[[N2]] : tensor<f32>, tensor<2x8x100xf32>, tensor<2x8x24xf32>, tensor<2x8x24xf32>
// CHECK:           zb.phase BW(%[[TGT:.+]] = "label.targets" : tensor<2x8xi64>,
// CHECK-SAME:        %[[LOG:.+]] = "F.0" : tensor<2x8x100xf32>,
// CHECK-SAME:        %[[HEAD:.+]] = "param.head" : tensor<24x100xf32>,
// CHECK-SAME:        %[[SUM:.+]] = "F.1" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[N2:.+]] = "F.2" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[RES:.+]] = "in.0" : tensor<2x8x24xf32>,
// CHECK-SAME:        %[[G2:.+]] = "param.ln2.gamma" : tensor<24xf32>) {
// CHECK:             %[[ONE:.+]] = zb.fill 1.000000e+00 : tensor<f32>
// CHECK:             %[[DLOG:.+]] = zb.cross_entropy_grad %[[LOG]], %[[TGT]], %[[ONE]] : (tensor<2x8x100xf32>, tensor<2x8xi64>, tensor<f32>) -> tensor<2x8x100xf32>
// CHECK:             %[[DSUM:.+]] = zb.linear_grad_input %[[DLOG]], %[[HEAD]] : (tensor<2x8x100xf32>, tensor<24x100xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[GHEAD:.+]] = zb.linear_grad_weight %[[SUM]], %[[DLOG]] : (tensor<2x8x24xf32>, tensor<2x8x100xf32>) -> tensor<24x100xf32>
// CHECK:             %[[DN2:.+]] = zb.gelu_grad %[[DSUM]], %[[N2]] : (tensor<2x8x24xf32>, tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[DRES:.+]] = zb.layernorm_grad_input %[[DN2]], %[[RES]], %[[G2]] {epsilon = 1.000000e-03 : f64} : (tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:             %[[GG2:.+]] = zb.layernorm_grad_gamma %[[DN2]], %[[RES]] {epsilon = 1.000000e-03 : f64} : (tensor<2x8x24xf32>, tensor<2x8x24xf32>) -> tensor<24xf32>
// CHECK:             %[[GB2:.+]] = zb.bias_grad %[[DN2]] : tensor<2x8x24xf32> -> tensor<24xf32>
// CHECK:             zb.yield "d_in.0" = %[[DRES]], "d_in.1" = %[[DSUM]], "grad.ln2.gamma" = %[[GG2]], "grad.ln2.beta" = %[[GB2]], "grad.head" = %[[GHEAD]] : tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24x100xf32>
zb.pipeline @gpt_block {
  zb.stage 0 {
    %tokens = zb.input "tokens" : tensor<2x8xi64>
    %wte = zb.param "wte" init normal(0.02) : tensor<100x24xf32>
    %g1 = zb.param "ln1.gamma" init ones : tensor<24xf32>
    %b1 = zb.param "ln1.beta" init zeros : tensor<24xf32>
    %wqkv = zb.param "attn.qkv" init normal(0.02) : tensor<24x72xf32>
    zb.phase F(%input.tokens = "input.tokens" : tensor<2x8xi64>, %param.wte = "param.wte" : tensor<100x24xf32>, %param.ln1.gamma = "param.ln1.gamma" : tensor<24xf32>, %param.ln1.beta = "param.ln1.beta" : tensor<24xf32>, %param.attn.qkv = "param.attn.qkv" : tensor<24x72xf32>) {
      %e = zb.embedding %input.tokens, %param.wte : (tensor<2x8xi64>, tensor<100x24xf32>) -> tensor<2x8x24xf32>
      %n1 = zb.layernorm %e, %param.ln1.gamma, %param.ln1.beta : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
      %qkv = zb.linear %n1, %param.attn.qkv : (tensor<2x8x24xf32>, tensor<24x72xf32>) -> tensor<2x8x72xf32>
      %a = zb.causal_attention %qkv heads(4) : tensor<2x8x72xf32> -> tensor<2x8x24xf32>
      %res = zb.add %e, %a : tensor<2x8x24xf32>
      zb.yield "out.0" = %res, "out.1" = %a, "F.0" = %qkv, "F.1" = %n1, "F.2" = %e : tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<2x8x72xf32>, tensor<2x8x24xf32>, tensor<2x8x24xf32>
    }
    zb.phase BW(%d_out.0 = "d_out.0" : tensor<2x8x24xf32>, %d_out.1 = "d_out.1" : tensor<2x8x24xf32>, %F.0 = "F.0" : tensor<2x8x72xf32>, %param.attn.qkv = "param.attn.qkv" : tensor<24x72xf32>, %F.1 = "F.1" : tensor<2x8x24xf32>, %F.2 = "F.2" : tensor<2x8x24xf32>, %param.ln1.gamma = "param.ln1.gamma" : tensor<24xf32>, %input.tokens = "input.tokens" : tensor<2x8xi64>) {
      %datt = zb.add %d_out.1, %d_out.0 : tensor<2x8x24xf32>
      %dqkv = zb.causal_attention_grad %datt, %F.0 heads(4) : (tensor<2x8x24xf32>, tensor<2x8x72xf32>) -> tensor<2x8x72xf32>
      %dn1 = zb.linear_grad_input %dqkv, %param.attn.qkv : (tensor<2x8x72xf32>, tensor<24x72xf32>) -> tensor<2x8x24xf32>
      %dwqkv = zb.linear_grad_weight %F.1, %dqkv : (tensor<2x8x24xf32>, tensor<2x8x72xf32>) -> tensor<24x72xf32>
      %de1 = zb.layernorm_grad_input %dn1, %F.2, %param.ln1.gamma : (tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
      %dg1 = zb.layernorm_grad_gamma %dn1, %F.2 : (tensor<2x8x24xf32>, tensor<2x8x24xf32>) -> tensor<24xf32>
      %db1 = zb.bias_grad %dn1 : tensor<2x8x24xf32> -> tensor<24xf32>
      %de = zb.add %d_out.0, %de1 : tensor<2x8x24xf32>
      %dwte = zb.embedding_grad %input.tokens, %de vocab(100) : (tensor<2x8xi64>, tensor<2x8x24xf32>) -> tensor<100x24xf32>
      zb.yield "grad.wte" = %dwte, "grad.ln1.gamma" = %dg1, "grad.ln1.beta" = %db1, "grad.attn.qkv" = %dwqkv : tensor<100x24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24x72xf32>
    }
  }
  zb.stage 1 {
    %targets = zb.label "targets" : tensor<2x8xi64>
    %g2 = zb.param "ln2.gamma" init ones : tensor<24xf32>
    %b2 = zb.param "ln2.beta" init zeros : tensor<24xf32>
    %head = zb.param "head" init uniform(0.05) : tensor<24x100xf32>
    zb.phase F(%in.0 = "in.0" : tensor<2x8x24xf32>, %param.ln2.gamma = "param.ln2.gamma" : tensor<24xf32>, %param.ln2.beta = "param.ln2.beta" : tensor<24xf32>, %in.1 = "in.1" : tensor<2x8x24xf32>, %param.head = "param.head" : tensor<24x100xf32>, %label.targets = "label.targets" : tensor<2x8xi64>) {
      %n2 = zb.layernorm %in.0, %param.ln2.gamma, %param.ln2.beta {epsilon = 1.0e-3 : f64} : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
      %ge = zb.gelu %n2 : tensor<2x8x24xf32>
      %sum = zb.add %ge, %in.1 : tensor<2x8x24xf32>
      %logits = zb.linear %sum, %param.head : (tensor<2x8x24xf32>, tensor<24x100xf32>) -> tensor<2x8x100xf32>
      %l = zb.cross_entropy %logits, %label.targets : (tensor<2x8x100xf32>, tensor<2x8xi64>) -> tensor<f32>
      zb.yield "loss" = %l, "F.0" = %logits, "F.1" = %sum, "F.2" = %n2 : tensor<f32>, tensor<2x8x100xf32>, tensor<2x8x24xf32>, tensor<2x8x24xf32>
    }
    zb.phase BW(%label.targets = "label.targets" : tensor<2x8xi64>, %F.0 = "F.0" : tensor<2x8x100xf32>, %param.head = "param.head" : tensor<24x100xf32>, %F.1 = "F.1" : tensor<2x8x24xf32>, %F.2 = "F.2" : tensor<2x8x24xf32>, %in.0 = "in.0" : tensor<2x8x24xf32>, %param.ln2.gamma = "param.ln2.gamma" : tensor<24xf32>) {
      %one = zb.fill 1.0 : tensor<f32>
      %dlogits = zb.cross_entropy_grad %F.0, %label.targets, %one : (tensor<2x8x100xf32>, tensor<2x8xi64>, tensor<f32>) -> tensor<2x8x100xf32>
      %dsum = zb.linear_grad_input %dlogits, %param.head : (tensor<2x8x100xf32>, tensor<24x100xf32>) -> tensor<2x8x24xf32>
      %dhead = zb.linear_grad_weight %F.1, %dlogits : (tensor<2x8x24xf32>, tensor<2x8x100xf32>) -> tensor<24x100xf32>
      %dn2 = zb.gelu_grad %dsum, %F.2 : (tensor<2x8x24xf32>, tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
      %dres = zb.layernorm_grad_input %dn2, %in.0, %param.ln2.gamma {epsilon = 1.0e-3 : f64} : (tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
      %dg2 = zb.layernorm_grad_gamma %dn2, %in.0 {epsilon = 1.0e-3 : f64} : (tensor<2x8x24xf32>, tensor<2x8x24xf32>) -> tensor<24xf32>
      %db2 = zb.bias_grad %dn2 : tensor<2x8x24xf32> -> tensor<24xf32>
      zb.yield "d_in.0" = %dres, "d_in.1" = %dsum, "grad.ln2.gamma" = %dg2, "grad.ln2.beta" = %db2, "grad.head" = %dhead : tensor<2x8x24xf32>, tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24x100xf32>
    }
  }
}

//===----------------------------------------------------------------------===//
// F, B and W
//===----------------------------------------------------------------------===//

// Tests that a two-stage bf16 model with split backward phases round-trips:
// stage 0's B has no arguments and an empty yield (its input needs no
// gradient), W reads d_out.0 and F.0, a parameter nothing uses gets a
// zb.fill 0.0 gradient, stage 1's B keeps B.0 for W, and the matmul backward
// ops fit the batched shapes.
// CHECK-LABEL: zb.pipeline @bilinear {
// CHECK:         zb.stage 0 {
// CHECK:           zb.input "u" : tensor<2x8x12xbf16>
// CHECK:           zb.input "v" : tensor<2x12x10xbf16>
// CHECK:           zb.param "wu" init normal(2.000000e-02) : tensor<12x16xbf16>
// CHECK:           zb.param "unused" init zeros : tensor<16xbf16>
// CHECK:           zb.phase F(%[[U:.+]] = "input.u" : tensor<2x8x12xbf16>,
// CHECK-SAME:        %[[WU:.+]] = "param.wu" : tensor<12x16xbf16>,
// CHECK-SAME:        %[[V:.+]] = "input.v" : tensor<2x12x10xbf16>) {
// CHECK:             %[[A:.+]] = zb.linear %[[U]], %[[WU]] : (tensor<2x8x12xbf16>, tensor<12x16xbf16>) -> tensor<2x8x16xbf16>
// CHECK:             %[[AG:.+]] = zb.gelu %[[A]] : tensor<2x8x16xbf16>
// CHECK:             zb.yield "out.0" = %[[AG]], "out.1" = %[[V]], "F.0" = %[[A]] : tensor<2x8x16xbf16>, tensor<2x12x10xbf16>, tensor<2x8x16xbf16>
// CHECK:           zb.phase B() {
// CHECK-NEXT:        zb.yield{{$}}
// CHECK-NEXT:      }
// CHECK:           zb.phase W(%[[DAG:.+]] = "d_out.0" : tensor<2x8x16xbf16>,
// CHECK-SAME:        %[[A:.+]] = "F.0" : tensor<2x8x16xbf16>,
// CHECK-SAME:        %[[U:.+]] = "input.u" : tensor<2x8x12xbf16>) {
// CHECK:             %[[DA:.+]] = zb.gelu_grad %[[DAG]], %[[A]] : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x16xbf16>
// CHECK:             %[[GWU:.+]] = zb.linear_grad_weight %[[U]], %[[DA]] : (tensor<2x8x12xbf16>, tensor<2x8x16xbf16>) -> tensor<12x16xbf16>
// CHECK:             %[[ZERO:.+]] = zb.fill 0.000000e+00 : tensor<16xbf16>
// CHECK:             zb.yield "grad.wu" = %[[GWU]], "grad.unused" = %[[ZERO]] : tensor<12x16xbf16>, tensor<16xbf16>
// CHECK:         zb.stage 1 {
// CHECK:           zb.label "y" : tensor<2x8xi64>
// CHECK:           zb.param "ws" init normal(2.000000e-02) : tensor<2x16x12xbf16>
// CHECK:           zb.phase F(%[[AG:.+]] = "in.0" : tensor<2x8x16xbf16>,
// CHECK-SAME:        %[[WS:.+]] = "param.ws" : tensor<2x16x12xbf16>,
// CHECK-SAME:        %[[V:.+]] = "in.1" : tensor<2x12x10xbf16>,
// CHECK-SAME:        %[[Y:.+]] = "label.y" : tensor<2x8xi64>) {
// CHECK:             %[[P:.+]] = zb.matmul %[[AG]], %[[WS]] : (tensor<2x8x16xbf16>, tensor<2x16x12xbf16>) -> tensor<2x8x12xbf16>
// CHECK:             %[[LOG:.+]] = zb.matmul %[[P]], %[[V]] : (tensor<2x8x12xbf16>, tensor<2x12x10xbf16>) -> tensor<2x8x10xbf16>
// CHECK:             %[[L:.+]] = zb.cross_entropy %[[LOG]], %[[Y]] : (tensor<2x8x10xbf16>, tensor<2x8xi64>) -> tensor<bf16>
// CHECK:             zb.yield "loss" = %[[L]], "F.0" = %[[LOG]], "F.1" = %[[P]] : tensor<bf16>, tensor<2x8x10xbf16>, tensor<2x8x12xbf16>
// CHECK:           zb.phase B(%[[Y:.+]] = "label.y" : tensor<2x8xi64>,
// CHECK-SAME:        %[[LOG:.+]] = "F.0" : tensor<2x8x10xbf16>,
// CHECK-SAME:        %[[V:.+]] = "in.1" : tensor<2x12x10xbf16>,
// CHECK-SAME:        %[[P:.+]] = "F.1" : tensor<2x8x12xbf16>,
// CHECK-SAME:        %[[WS:.+]] = "param.ws" : tensor<2x16x12xbf16>) {
// CHECK:             %[[ONE:.+]] = zb.fill 1.000000e+00 : tensor<bf16>
// CHECK:             %[[DLOG:.+]] = zb.cross_entropy_grad %[[LOG]], %[[Y]], %[[ONE]] : (tensor<2x8x10xbf16>, tensor<2x8xi64>, tensor<bf16>) -> tensor<2x8x10xbf16>
// CHECK:             %[[DP:.+]] = zb.matmul_grad_lhs %[[DLOG]], %[[V]] : (tensor<2x8x10xbf16>, tensor<2x12x10xbf16>) -> tensor<2x8x12xbf16>
// CHECK:             %[[DV:.+]] = zb.matmul_grad_rhs %[[P]], %[[DLOG]] : (tensor<2x8x12xbf16>, tensor<2x8x10xbf16>) -> tensor<2x12x10xbf16>
// CHECK:             %[[DAG:.+]] = zb.matmul_grad_lhs %[[DP]], %[[WS]] : (tensor<2x8x12xbf16>, tensor<2x16x12xbf16>) -> tensor<2x8x16xbf16>
// CHECK:             zb.yield "d_in.0" = %[[DAG]], "d_in.1" = %[[DV]], "B.0" = %[[DP]] : tensor<2x8x16xbf16>, tensor<2x12x10xbf16>, tensor<2x8x12xbf16>
// CHECK:           zb.phase W(%[[AG:.+]] = "in.0" : tensor<2x8x16xbf16>,
// CHECK-SAME:        %[[DP:.+]] = "B.0" : tensor<2x8x12xbf16>) {
// CHECK:             %[[GWS:.+]] = zb.matmul_grad_rhs %[[AG]], %[[DP]] : (tensor<2x8x16xbf16>, tensor<2x8x12xbf16>) -> tensor<2x16x12xbf16>
// CHECK:             zb.yield "grad.ws" = %[[GWS]] : tensor<2x16x12xbf16>
zb.pipeline @bilinear {
  zb.stage 0 {
    %u = zb.input "u" : tensor<2x8x12xbf16>
    %v = zb.input "v" : tensor<2x12x10xbf16>
    %wu = zb.param "wu" init normal(0.02) : tensor<12x16xbf16>
    %unused = zb.param "unused" init zeros : tensor<16xbf16>
    zb.phase F(%input.u = "input.u" : tensor<2x8x12xbf16>, %param.wu = "param.wu" : tensor<12x16xbf16>, %input.v = "input.v" : tensor<2x12x10xbf16>) {
      %a = zb.linear %input.u, %param.wu : (tensor<2x8x12xbf16>, tensor<12x16xbf16>) -> tensor<2x8x16xbf16>
      %ag = zb.gelu %a : tensor<2x8x16xbf16>
      zb.yield "out.0" = %ag, "out.1" = %input.v, "F.0" = %a : tensor<2x8x16xbf16>, tensor<2x12x10xbf16>, tensor<2x8x16xbf16>
    }
    zb.phase B() {
      zb.yield
    }
    zb.phase W(%d_out.0 = "d_out.0" : tensor<2x8x16xbf16>, %F.0 = "F.0" : tensor<2x8x16xbf16>, %input.u = "input.u" : tensor<2x8x12xbf16>) {
      %da = zb.gelu_grad %d_out.0, %F.0 : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x16xbf16>
      %dwu = zb.linear_grad_weight %input.u, %da : (tensor<2x8x12xbf16>, tensor<2x8x16xbf16>) -> tensor<12x16xbf16>
      %zero = zb.fill 0.0 : tensor<16xbf16>
      zb.yield "grad.wu" = %dwu, "grad.unused" = %zero : tensor<12x16xbf16>, tensor<16xbf16>
    }
  }
  zb.stage 1 {
    %y = zb.label "y" : tensor<2x8xi64>
    %ws = zb.param "ws" init normal(0.02) : tensor<2x16x12xbf16>
    zb.phase F(%in.0 = "in.0" : tensor<2x8x16xbf16>, %param.ws = "param.ws" : tensor<2x16x12xbf16>, %in.1 = "in.1" : tensor<2x12x10xbf16>, %label.y = "label.y" : tensor<2x8xi64>) {
      %p = zb.matmul %in.0, %param.ws : (tensor<2x8x16xbf16>, tensor<2x16x12xbf16>) -> tensor<2x8x12xbf16>
      %logits = zb.matmul %p, %in.1 : (tensor<2x8x12xbf16>, tensor<2x12x10xbf16>) -> tensor<2x8x10xbf16>
      %l = zb.cross_entropy %logits, %label.y : (tensor<2x8x10xbf16>, tensor<2x8xi64>) -> tensor<bf16>
      zb.yield "loss" = %l, "F.0" = %logits, "F.1" = %p : tensor<bf16>, tensor<2x8x10xbf16>, tensor<2x8x12xbf16>
    }
    zb.phase B(%label.y = "label.y" : tensor<2x8xi64>, %F.0 = "F.0" : tensor<2x8x10xbf16>, %in.1 = "in.1" : tensor<2x12x10xbf16>, %F.1 = "F.1" : tensor<2x8x12xbf16>, %param.ws = "param.ws" : tensor<2x16x12xbf16>) {
      %one = zb.fill 1.0 : tensor<bf16>
      %dlogits = zb.cross_entropy_grad %F.0, %label.y, %one : (tensor<2x8x10xbf16>, tensor<2x8xi64>, tensor<bf16>) -> tensor<2x8x10xbf16>
      %dp = zb.matmul_grad_lhs %dlogits, %in.1 : (tensor<2x8x10xbf16>, tensor<2x12x10xbf16>) -> tensor<2x8x12xbf16>
      %dv = zb.matmul_grad_rhs %F.1, %dlogits : (tensor<2x8x12xbf16>, tensor<2x8x10xbf16>) -> tensor<2x12x10xbf16>
      %dag = zb.matmul_grad_lhs %dp, %param.ws : (tensor<2x8x12xbf16>, tensor<2x16x12xbf16>) -> tensor<2x8x16xbf16>
      zb.yield "d_in.0" = %dag, "d_in.1" = %dv, "B.0" = %dp : tensor<2x8x16xbf16>, tensor<2x12x10xbf16>, tensor<2x8x12xbf16>
    }
    zb.phase W(%in.0 = "in.0" : tensor<2x8x16xbf16>, %B.0 = "B.0" : tensor<2x8x12xbf16>) {
      %dws = zb.matmul_grad_rhs %in.0, %B.0 : (tensor<2x8x16xbf16>, tensor<2x8x12xbf16>) -> tensor<2x16x12xbf16>
      zb.yield "grad.ws" = %dws : tensor<2x16x12xbf16>
    }
  }
}

// Tests that a three-stage f64 pipeline round-trips: the middle stage reads
// in.0 and d_out.0 and yields out.0 and d_in.0, an input is declared by the
// two stages that read it, a selective split keeps a weight gradient in B
// (the ops keep their zb.fuse_weight_grad marker) and leaves W with no
// arguments and an empty yield, and i32 labels feed the loss.
// CHECK-LABEL: zb.pipeline @three_stages {
// CHECK:         zb.stage 0 {
// CHECK:           zb.input "x" : tensor<4x6xf64>
// CHECK:           zb.param "w0" init normal(1.000000e-01) : tensor<6x6xf64>
// CHECK:           zb.phase F(%[[X:.+]] = "input.x" : tensor<4x6xf64>,
// CHECK-SAME:        %[[W0:.+]] = "param.w0" : tensor<6x6xf64>) {
// CHECK:             %[[H0:.+]] = zb.linear %[[X]], %[[W0]] : (tensor<4x6xf64>, tensor<6x6xf64>) -> tensor<4x6xf64>
// CHECK:             zb.yield "out.0" = %[[H0]] : tensor<4x6xf64>
// CHECK:           zb.phase B() {
// CHECK-NEXT:        zb.yield{{$}}
// CHECK-NEXT:      }
// CHECK:           zb.phase W(%[[DH0:.+]] = "d_out.0" : tensor<4x6xf64>,
// CHECK-SAME:        %[[X:.+]] = "input.x" : tensor<4x6xf64>) {
// CHECK:             %[[GW0:.+]] = zb.linear_grad_weight %[[X]], %[[DH0]] : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<6x6xf64>
// CHECK:             zb.yield "grad.w0" = %[[GW0]] : tensor<6x6xf64>
// CHECK:         zb.stage 1 {
// CHECK:           zb.input "x" : tensor<4x6xf64>
// CHECK:           zb.param "w1" init normal(1.000000e-01) : tensor<6x6xf64>
// CHECK:           zb.phase F(%[[H0:.+]] = "in.0" : tensor<4x6xf64>,
// CHECK-SAME:        %[[W1:.+]] = "param.w1" : tensor<6x6xf64>,
// CHECK-SAME:        %[[X:.+]] = "input.x" : tensor<4x6xf64>) {
// CHECK:             %[[H1:.+]] = zb.linear %[[H0]], %[[W1]] {zb.fuse_weight_grad} : (tensor<4x6xf64>, tensor<6x6xf64>) -> tensor<4x6xf64>
// CHECK:             %[[R1:.+]] = zb.relu %[[H1]] : tensor<4x6xf64>
// CHECK:             %[[S1:.+]] = zb.add %[[R1]], %[[X]] : tensor<4x6xf64>
// CHECK:             zb.yield "out.0" = %[[S1]], "F.0" = %[[H1]] : tensor<4x6xf64>, tensor<4x6xf64>
// CHECK:           zb.phase B(%[[DS1:.+]] = "d_out.0" : tensor<4x6xf64>,
// CHECK-SAME:        %[[H1:.+]] = "F.0" : tensor<4x6xf64>,
// CHECK-SAME:        %[[W1:.+]] = "param.w1" : tensor<6x6xf64>,
// CHECK-SAME:        %[[H0:.+]] = "in.0" : tensor<4x6xf64>) {
// CHECK:             %[[DH1:.+]] = zb.relu_grad %[[DS1]], %[[H1]] : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<4x6xf64>
// CHECK:             %[[DH0:.+]] = zb.linear_grad_input %[[DH1]], %[[W1]] {zb.fuse_weight_grad} : (tensor<4x6xf64>, tensor<6x6xf64>) -> tensor<4x6xf64>
// CHECK:             %[[GW1:.+]] = zb.linear_grad_weight %[[H0]], %[[DH1]] {zb.fuse_weight_grad} : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<6x6xf64>
// CHECK:             zb.yield "d_in.0" = %[[DH0]], "grad.w1" = %[[GW1]] : tensor<4x6xf64>, tensor<6x6xf64>
// CHECK:           zb.phase W() {
// CHECK-NEXT:        zb.yield{{$}}
// CHECK-NEXT:      }
// CHECK:         zb.stage 2 {
// CHECK:           zb.label "t" : tensor<4xi32>
// CHECK:           zb.phase F(%[[S1:.+]] = "in.0" : tensor<4x6xf64>,
// CHECK-SAME:        %[[T:.+]] = "label.t" : tensor<4xi32>) {
// CHECK:             %[[L:.+]] = zb.cross_entropy %[[S1]], %[[T]] : (tensor<4x6xf64>, tensor<4xi32>) -> tensor<f64>
// CHECK:             zb.yield "loss" = %[[L]] : tensor<f64>
// CHECK:           zb.phase B(%[[T:.+]] = "label.t" : tensor<4xi32>,
// CHECK-SAME:        %[[S1:.+]] = "in.0" : tensor<4x6xf64>) {
// CHECK:             %[[ONE:.+]] = zb.fill 1.000000e+00 : tensor<f64>
// CHECK:             %[[DS1:.+]] = zb.cross_entropy_grad %[[S1]], %[[T]], %[[ONE]] : (tensor<4x6xf64>, tensor<4xi32>, tensor<f64>) -> tensor<4x6xf64>
// CHECK:             zb.yield "d_in.0" = %[[DS1]] : tensor<4x6xf64>
// CHECK:           zb.phase W() {
// CHECK-NEXT:        zb.yield{{$}}
// CHECK-NEXT:      }
zb.pipeline @three_stages {
  zb.stage 0 {
    %x = zb.input "x" : tensor<4x6xf64>
    %w0 = zb.param "w0" init normal(0.1) : tensor<6x6xf64>
    zb.phase F(%input.x = "input.x" : tensor<4x6xf64>, %param.w0 = "param.w0" : tensor<6x6xf64>) {
      %h0 = zb.linear %input.x, %param.w0 : (tensor<4x6xf64>, tensor<6x6xf64>) -> tensor<4x6xf64>
      zb.yield "out.0" = %h0 : tensor<4x6xf64>
    }
    zb.phase B() {
      zb.yield
    }
    zb.phase W(%d_out.0 = "d_out.0" : tensor<4x6xf64>, %input.x = "input.x" : tensor<4x6xf64>) {
      %dw0 = zb.linear_grad_weight %input.x, %d_out.0 : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<6x6xf64>
      zb.yield "grad.w0" = %dw0 : tensor<6x6xf64>
    }
  }
  zb.stage 1 {
    %x = zb.input "x" : tensor<4x6xf64>
    %w1 = zb.param "w1" init normal(0.1) : tensor<6x6xf64>
    zb.phase F(%in.0 = "in.0" : tensor<4x6xf64>, %param.w1 = "param.w1" : tensor<6x6xf64>, %input.x = "input.x" : tensor<4x6xf64>) {
      %h1 = zb.linear %in.0, %param.w1 {zb.fuse_weight_grad} : (tensor<4x6xf64>, tensor<6x6xf64>) -> tensor<4x6xf64>
      %r1 = zb.relu %h1 : tensor<4x6xf64>
      %s1 = zb.add %r1, %input.x : tensor<4x6xf64>
      zb.yield "out.0" = %s1, "F.0" = %h1 : tensor<4x6xf64>, tensor<4x6xf64>
    }
    zb.phase B(%d_out.0 = "d_out.0" : tensor<4x6xf64>, %F.0 = "F.0" : tensor<4x6xf64>, %param.w1 = "param.w1" : tensor<6x6xf64>, %in.0 = "in.0" : tensor<4x6xf64>) {
      %dh1 = zb.relu_grad %d_out.0, %F.0 : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<4x6xf64>
      %dh0 = zb.linear_grad_input %dh1, %param.w1 {zb.fuse_weight_grad} : (tensor<4x6xf64>, tensor<6x6xf64>) -> tensor<4x6xf64>
      %dw1 = zb.linear_grad_weight %in.0, %dh1 {zb.fuse_weight_grad} : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<6x6xf64>
      zb.yield "d_in.0" = %dh0, "grad.w1" = %dw1 : tensor<4x6xf64>, tensor<6x6xf64>
    }
    zb.phase W() {
      zb.yield
    }
  }
  zb.stage 2 {
    %t = zb.label "t" : tensor<4xi32>
    zb.phase F(%in.0 = "in.0" : tensor<4x6xf64>, %label.t = "label.t" : tensor<4xi32>) {
      %l = zb.cross_entropy %in.0, %label.t : (tensor<4x6xf64>, tensor<4xi32>) -> tensor<f64>
      zb.yield "loss" = %l : tensor<f64>
    }
    zb.phase B(%label.t = "label.t" : tensor<4xi32>, %in.0 = "in.0" : tensor<4x6xf64>) {
      %one = zb.fill 1.0 : tensor<f64>
      %ds1 = zb.cross_entropy_grad %in.0, %label.t, %one : (tensor<4x6xf64>, tensor<4xi32>, tensor<f64>) -> tensor<4x6xf64>
      zb.yield "d_in.0" = %ds1 : tensor<4x6xf64>
    }
    zb.phase W() {
      zb.yield
    }
  }
}

// A rank's shard of an output layer (Note [Softmax over vocabulary shards]
// in zbc/contracts/VocabShards.h): columns [4, 8) of a vocabulary of 10,
// its statistics, the loss from them (merged, in a real pipeline, by a
// zb.reduce softmax over every shard) and the shard's logits gradient.
// CHECK-LABEL: zb.pipeline @vocab_shard
// CHECK: %[[S:.+]] = zb.vocab_stats %[[Z:.+]], %[[Y:.+]] {first = 4 : i64, vocab = 10 : i64} : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<4x8xf32>
// CHECK: zb.vocab_loss %[[S]], %[[Y]] {vocab = 10 : i64} : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: zb.vocab_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {first = 4 : i64, ignore_index = -1 : i64, vocab = 10 : i64} : (tensor<8x4xf32>, tensor<8xi64>, tensor<4x8xf32>, tensor<f32>) -> tensor<8x4xf32>
zb.pipeline @vocab_shard {
  zb.stage 0 {
    %x = zb.input "x" : tensor<8x16xf32>
    %y = zb.label "y" : tensor<8xi64>
    %w = zb.param "w" init normal(0.02) : tensor<16x4xf32>
    zb.phase F(%input.x = "input.x" : tensor<8x16xf32>, %param.w = "param.w" : tensor<16x4xf32>, %label.y = "label.y" : tensor<8xi64>) {
      %z = zb.linear %input.x, %param.w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
      %s = zb.vocab_stats %z, %label.y {first = 4 : i64, vocab = 10 : i64} : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<4x8xf32>
      %l = zb.vocab_loss %s, %label.y {vocab = 10 : i64} : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<f32>
      zb.yield "loss" = %l, "F.0" = %z, "F.1" = %s : tensor<f32>, tensor<8x4xf32>, tensor<4x8xf32>
    }
    zb.phase BW(%label.y = "label.y" : tensor<8xi64>, %F.0 = "F.0" : tensor<8x4xf32>, %F.1 = "F.1" : tensor<4x8xf32>, %input.x = "input.x" : tensor<8x16xf32>) {
      %one = zb.fill 1.0 : tensor<f32>
      %dz = zb.vocab_grad %F.0, %label.y, %F.1, %one {first = 4 : i64, vocab = 10 : i64, ignore_index = -1 : i64} : (tensor<8x4xf32>, tensor<8xi64>, tensor<4x8xf32>, tensor<f32>) -> tensor<8x4xf32>
      %dw = zb.linear_grad_weight %input.x, %dz : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
      zb.yield "grad.w" = %dw : tensor<16x4xf32>
    }
  }
}
