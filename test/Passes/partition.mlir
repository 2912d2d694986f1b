// RUN: zbc-opt %s --split-input-file --zb-partition=stages=2 | FileCheck %s --check-prefixes=CHECK,S2
// RUN: zbc-opt %s --split-input-file --zb-partition=stages=3 --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,S3
// RUN: zbc-opt %s --split-input-file --zb-partition="stages=2 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// The S3 run checks diagnostics because the model with a user cut has two
// stages: asking for three is an error there (partition-errors.mlir has the
// other errors).

// Tests that an MLP of six equal layers is cut after layer 2 for 2 stages
// and after layers 1 and 3 for 3 stages (the head rides with the last stage,
// so the 3-stage split leaves the first two stages even), that only the
// layer's output crosses a cut, and that later uses read the cut's result.
// CHECK-LABEL: zb.model @mlp6
// CHECK-NOT:     zb.cut
// CHECK:         %[[H1:.+]] = zb.linear %{{.+}}, %fc1.weight
// CHECK-NEXT:    %[[A1:.+]] = zb.relu %[[H1]]
// S3-NEXT:       %[[C1:.+]] = zb.cut %[[A1]] : tensor<8x64xf32>
// CHECK-NEXT:    zb.param "fc2.weight"
// S2-NEXT:       %[[H2:.+]] = zb.linear %[[A1]], %fc2.weight
// S3-NEXT:       %[[H2:.+]] = zb.linear %[[C1]], %fc2.weight
// CHECK-NEXT:    %[[A2:.+]] = zb.relu %[[H2]]
// S2-NEXT:       %[[C2:.+]] = zb.cut %[[A2]] : tensor<8x64xf32>
// CHECK-NEXT:    zb.param "fc3.weight"
// S2-NEXT:       %[[H3:.+]] = zb.linear %[[C2]], %fc3.weight
// S3-NEXT:       %[[H3:.+]] = zb.linear %[[A2]], %fc3.weight
// CHECK-NEXT:    %[[A3:.+]] = zb.relu %[[H3]]
// S3-NEXT:       %[[C3:.+]] = zb.cut %[[A3]] : tensor<8x64xf32>
// CHECK-NEXT:    zb.param "fc4.weight"
// S3-NEXT:       zb.linear %[[C3]], %fc4.weight
// CHECK-NOT:     zb.cut
// CHECK:         zb.loss
// REPORT: partition.mlir:[[@LINE+3]]:1: remark: stage 0: 1.98e+05 FLOPs (48.9% of total, 2.1% under the ideal)
// REPORT: partition.mlir:[[@LINE+2]]:1: remark: stage 1: 2.07e+05 FLOPs (51.1% of total, +2.1% over the ideal)
// REPORT: partition.mlir:[[@LINE+1]]:1: remark: imbalance 1.021 (largest stage / ideal; total 4.05e+05 FLOPs over 2 stages)
zb.model @mlp6 {
  %x = zb.input "x" : tensor<8x64xf32>
  %y = zb.label "y" : tensor<8xi64>
  %fc0.weight = zb.param "fc0.weight" init normal(0.1) : tensor<64x64xf32>
  %h0 = zb.linear %x, %fc0.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a0 = zb.relu %h0 : tensor<8x64xf32>
  %fc1.weight = zb.param "fc1.weight" init normal(0.1) : tensor<64x64xf32>
  %h1 = zb.linear %a0, %fc1.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a1 = zb.relu %h1 : tensor<8x64xf32>
  %fc2.weight = zb.param "fc2.weight" init normal(0.1) : tensor<64x64xf32>
  %h2 = zb.linear %a1, %fc2.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a2 = zb.relu %h2 : tensor<8x64xf32>
  %fc3.weight = zb.param "fc3.weight" init normal(0.1) : tensor<64x64xf32>
  %h3 = zb.linear %a2, %fc3.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a3 = zb.relu %h3 : tensor<8x64xf32>
  %fc4.weight = zb.param "fc4.weight" init normal(0.1) : tensor<64x64xf32>
  %h4 = zb.linear %a3, %fc4.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a4 = zb.relu %h4 : tensor<8x64xf32>
  %fc5.weight = zb.param "fc5.weight" init normal(0.1) : tensor<64x64xf32>
  %h5 = zb.linear %a4, %fc5.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a5 = zb.relu %h5 : tensor<8x64xf32>
  %head = zb.param "head" init normal(0.1) : tensor<64x8xf32>
  %logits = zb.linear %a5, %head : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
  %loss = zb.cross_entropy %logits, %y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %loss : tensor<f32>
}

// -----

// Tests that a model's own cut is kept as written, even where the balancer
// would not put it, and that the report covers user cuts too.
// S2-LABEL: zb.model @user_cut
// S2:         %[[A0:.+]] = zb.relu
// S2-NEXT:    %[[C0:.+]] = zb.cut %[[A0]] : tensor<8x64xf32>
// S2-NOT:     zb.cut
// S2:         zb.loss
// REPORT: partition.mlir:[[@LINE+4]]:1: remark: stage 0: 6.60e+04 FLOPs (24.2% of total, 51.6% under the ideal)
// REPORT: partition.mlir:[[@LINE+3]]:1: remark: stage 1: 2.07e+05 FLOPs (75.8% of total, +51.6% over the ideal)
// REPORT: partition.mlir:[[@LINE+2]]:1: remark: imbalance 1.516 (largest stage / ideal; total 2.73e+05 FLOPs over 2 stages)
// expected-error @below {{'zb.model' op has 2 stages from its 'zb.cut' ops, but stages=3 was requested}}
zb.model @user_cut {
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

// Tests that a transformer is cut where the residual stream alone crosses:
// inside a block the residual and the layernormed copy (or the attention
// output) are both live, so such cuts land on a residual add and pass a
// single [b, s, h] tensor. Two stages split between the blocks. Three would
// split after each block's attention half (embedding + attention, MLP +
// attention, MLP + head), the largest stage 1.39 of the ideal: there a gap
// crossed by one value more is worth it (Note [Wider gaps]), and the cuts
// fall inside block 0's MLP (the residual and the MLP's hidden layer) and
// after block 1's second layernorm (the residual and its normed copy), the
// largest 1.07 of the ideal.
// CHECK-LABEL: zb.model @two_blocks
// CHECK-NOT:     zb.cut
// CHECK:         zb.causal_attention
// S2-NOT:        zb.cut
// S3:            %[[H:.+]] = zb.bias_add %{{.+}}, %h0.fc.b
// S3-NEXT:       zb.cut %{{.+}}, %[[H]] : tensor<2x8x16xf32>, tensor<2x8x64xf32>
// CHECK:         zb.gelu
// S2:            %[[X1:.+]] = zb.add
// S2-NEXT:       zb.cut %[[X1]] : tensor<2x8x16xf32>
// CHECK:         zb.causal_attention
// S3:            %[[R:.+]] = zb.add
// S3-NEXT:       %[[N:.+]] = zb.layernorm %[[R]]
// S3-NEXT:       zb.cut %[[R]], %[[N]] : tensor<2x8x16xf32>, tensor<2x8x16xf32>
// CHECK-NOT:     zb.cut
// CHECK:         zb.loss
zb.model @two_blocks {
  %tokens = zb.input "tokens" : tensor<2x8xi64>
  %targets = zb.label "targets" : tensor<2x8xi64>
  %wte = zb.param "wte" init normal(0.02) : tensor<32x16xf32>
  %x0 = zb.embedding %tokens, %wte : (tensor<2x8xi64>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
  %h0.ln1.g = zb.param "h0.ln1.g" init ones : tensor<16xf32>
  %h0.ln1.b = zb.param "h0.ln1.b" init zeros : tensor<16xf32>
  %h0.qkv.w = zb.param "h0.qkv.w" init normal(0.02) : tensor<16x48xf32>
  %h0.qkv.b = zb.param "h0.qkv.b" init zeros : tensor<48xf32>
  %h0.proj.w = zb.param "h0.proj.w" init normal(0.02) : tensor<16x16xf32>
  %h0.proj.b = zb.param "h0.proj.b" init zeros : tensor<16xf32>
  %h0.ln2.g = zb.param "h0.ln2.g" init ones : tensor<16xf32>
  %h0.ln2.b = zb.param "h0.ln2.b" init zeros : tensor<16xf32>
  %h0.fc.w = zb.param "h0.fc.w" init normal(0.02) : tensor<16x64xf32>
  %h0.fc.b = zb.param "h0.fc.b" init zeros : tensor<64xf32>
  %h0.out.w = zb.param "h0.out.w" init normal(0.02) : tensor<64x16xf32>
  %h0.out.b = zb.param "h0.out.b" init zeros : tensor<16xf32>
  %h0.n1 = zb.layernorm %x0, %h0.ln1.g, %h0.ln1.b : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %h0.qkv = zb.linear %h0.n1, %h0.qkv.w : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %h0.qkvb = zb.bias_add %h0.qkv, %h0.qkv.b : (tensor<2x8x48xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
  %h0.att = zb.causal_attention %h0.qkvb heads(2) : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %h0.proj = zb.linear %h0.att, %h0.proj.w : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %h0.projb = zb.bias_add %h0.proj, %h0.proj.b : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %h0.r1 = zb.add %x0, %h0.projb : tensor<2x8x16xf32>
  %h0.n2 = zb.layernorm %h0.r1, %h0.ln2.g, %h0.ln2.b : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %h0.fc = zb.linear %h0.n2, %h0.fc.w : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
  %h0.fcb = zb.bias_add %h0.fc, %h0.fc.b : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %h0.act = zb.gelu %h0.fcb : tensor<2x8x64xf32>
  %h0.out = zb.linear %h0.act, %h0.out.w : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
  %h0.outb = zb.bias_add %h0.out, %h0.out.b : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %x1 = zb.add %h0.r1, %h0.outb : tensor<2x8x16xf32>
  %h1.ln1.g = zb.param "h1.ln1.g" init ones : tensor<16xf32>
  %h1.ln1.b = zb.param "h1.ln1.b" init zeros : tensor<16xf32>
  %h1.qkv.w = zb.param "h1.qkv.w" init normal(0.02) : tensor<16x48xf32>
  %h1.qkv.b = zb.param "h1.qkv.b" init zeros : tensor<48xf32>
  %h1.proj.w = zb.param "h1.proj.w" init normal(0.02) : tensor<16x16xf32>
  %h1.proj.b = zb.param "h1.proj.b" init zeros : tensor<16xf32>
  %h1.ln2.g = zb.param "h1.ln2.g" init ones : tensor<16xf32>
  %h1.ln2.b = zb.param "h1.ln2.b" init zeros : tensor<16xf32>
  %h1.fc.w = zb.param "h1.fc.w" init normal(0.02) : tensor<16x64xf32>
  %h1.fc.b = zb.param "h1.fc.b" init zeros : tensor<64xf32>
  %h1.out.w = zb.param "h1.out.w" init normal(0.02) : tensor<64x16xf32>
  %h1.out.b = zb.param "h1.out.b" init zeros : tensor<16xf32>
  %h1.n1 = zb.layernorm %x1, %h1.ln1.g, %h1.ln1.b : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %h1.qkv = zb.linear %h1.n1, %h1.qkv.w : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %h1.qkvb = zb.bias_add %h1.qkv, %h1.qkv.b : (tensor<2x8x48xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
  %h1.att = zb.causal_attention %h1.qkvb heads(2) : tensor<2x8x48xf32> -> tensor<2x8x16xf32>
  %h1.proj = zb.linear %h1.att, %h1.proj.w : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %h1.projb = zb.bias_add %h1.proj, %h1.proj.b : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %h1.r1 = zb.add %x1, %h1.projb : tensor<2x8x16xf32>
  %h1.n2 = zb.layernorm %h1.r1, %h1.ln2.g, %h1.ln2.b : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %h1.fc = zb.linear %h1.n2, %h1.fc.w : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
  %h1.fcb = zb.bias_add %h1.fc, %h1.fc.b : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %h1.act = zb.gelu %h1.fcb : tensor<2x8x64xf32>
  %h1.out = zb.linear %h1.act, %h1.out.w : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
  %h1.outb = zb.bias_add %h1.out, %h1.out.b : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %x2 = zb.add %h1.r1, %h1.outb : tensor<2x8x16xf32>
  %head.w = zb.param "head.w" init normal(0.02) : tensor<16x32xf32>
  %logits = zb.linear %x2, %head.w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %loss = zb.cross_entropy %logits, %targets : (tensor<2x8x32xf32>, tensor<2x8xi64>) -> tensor<f32>
  zb.loss %loss : tensor<f32>
}

// Tests Note [Wider gaps]: 2 Llama layers on 4 stages are five units
// between the cheap gaps (the best cut of them leaves 6.2 of 14.6 MFLOPs
// in one stage, 1.70 of the ideal); a gap crossed by one value more splits
// the largest and brings it to 1.33.
// RUN: zbc-dsl-llama --layers 2 --no-cuts | zbc-opt --zb-partition="stages=4 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WIDER
// WIDER: remark: imbalance 1.333 (largest stage / ideal
