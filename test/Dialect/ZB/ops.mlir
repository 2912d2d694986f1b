// RUN: zbc-opt %s | zbc-opt | FileCheck %s
// RUN: zbc-opt %s --mlir-print-op-generic | zbc-opt | FileCheck %s

// Round trip of every zb op, in the custom form and through the generic form.

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

// Tests that a two-stage MLP with one single-value cut round-trips, with every
// parameter initialiser kind.
// CHECK-LABEL: zb.model @mlp {
// CHECK:         %[[X:.+]] = zb.input "x" : tensor<8x16xf32>
// CHECK:         %[[Y:.+]] = zb.label "y" : tensor<8xi64>
// CHECK:         %[[W0:.+]] = zb.param "w0" init normal(2.000000e-02) : tensor<16x32xf32>
// CHECK:         %[[B0:.+]] = zb.param "b0" init zeros : tensor<32xf32>
// CHECK:         %[[H:.+]] = zb.linear %[[X]], %[[W0]] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK:         %[[HB:.+]] = zb.bias_add %[[H]], %[[B0]] : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK:         %[[R:.+]] = zb.relu %[[HB]] : tensor<8x32xf32>
// CHECK:         %[[C:.+]] = zb.cut %[[R]] : tensor<8x32xf32>
// CHECK:         %[[W1:.+]] = zb.param "w1" init uniform(1.250000e-01) : tensor<32x4xf32>
// CHECK:         %[[B1:.+]] = zb.param "b1" init ones : tensor<4xf32>
// CHECK:         %[[O:.+]] = zb.linear %[[C]], %[[W1]] : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
// CHECK:         %[[OB:.+]] = zb.bias_add %[[O]], %[[B1]] : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK:         %[[L:.+]] = zb.cross_entropy %[[OB]], %[[Y]] : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK:         zb.loss %[[L]] : tensor<f32>
zb.model @mlp {
  %x = zb.input "x" : tensor<8x16xf32>
  %y = zb.label "y" : tensor<8xi64>
  %w0 = zb.param "w0" init normal(0.02) : tensor<16x32xf32>
  %b0 = zb.param "b0" init zeros : tensor<32xf32>
  %h = zb.linear %x, %w0 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %hb = zb.bias_add %h, %b0 : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = zb.relu %hb : tensor<8x32xf32>
  %c = zb.cut %r : tensor<8x32xf32>
  %w1 = zb.param "w1" init uniform(0.125) : tensor<32x4xf32>
  %b1 = zb.param "b1" init ones : tensor<4xf32>
  %o = zb.linear %c, %w1 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  %ob = zb.bias_add %o, %b1 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %l = zb.cross_entropy %ob, %y : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests that a GPT-style block round-trips: i64 embedding, layernorm with the
// default and a non-default epsilon, causal attention, gelu, residual add, a
// cut carrying several values, and labels read in the last stage only.
// CHECK-LABEL: zb.model @gpt_block {
// CHECK:         %[[TOK:.+]] = zb.input "tokens" : tensor<2x8xi64>
// CHECK:         %[[TGT:.+]] = zb.label "targets" : tensor<2x8xi64>
// CHECK:         %[[WTE:.+]] = zb.param "wte" init normal(2.000000e-02) : tensor<100x24xf32>
// CHECK:         %[[E:.+]] = zb.embedding %[[TOK]], %[[WTE]] : (tensor<2x8xi64>, tensor<100x24xf32>) -> tensor<2x8x24xf32>
// CHECK:         %[[G1:.+]] = zb.param "ln1.gamma" init ones : tensor<24xf32>
// CHECK:         %[[B1:.+]] = zb.param "ln1.beta" init zeros : tensor<24xf32>
// CHECK:         %[[N1:.+]] = zb.layernorm %[[E]], %[[G1]], %[[B1]] : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:         %[[WQKV:.+]] = zb.param "attn.qkv" init normal(2.000000e-02) : tensor<24x72xf32>
// CHECK:         %[[QKV:.+]] = zb.linear %[[N1]], %[[WQKV]] : (tensor<2x8x24xf32>, tensor<24x72xf32>) -> tensor<2x8x72xf32>
// CHECK:         %[[A:.+]] = zb.causal_attention %[[QKV]] heads(4) : tensor<2x8x72xf32> -> tensor<2x8x24xf32>
// CHECK:         %[[RES:.+]] = zb.add %[[E]], %[[A]] : tensor<2x8x24xf32>
// CHECK:         %[[C:.+]]:2 = zb.cut %[[RES]], %[[A]] : tensor<2x8x24xf32>, tensor<2x8x24xf32>
// CHECK:         %[[G2:.+]] = zb.param "ln2.gamma" init ones : tensor<24xf32>
// CHECK:         %[[B2:.+]] = zb.param "ln2.beta" init zeros : tensor<24xf32>
// CHECK:         %[[N2:.+]] = zb.layernorm %[[C]]#0, %[[G2]], %[[B2]] {epsilon = 1.000000e-03 : f64} : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:         %[[GE:.+]] = zb.gelu %[[N2]] : tensor<2x8x24xf32>
// CHECK:         %[[SUM:.+]] = zb.add %[[GE]], %[[C]]#1 : tensor<2x8x24xf32>
// CHECK:         %[[HEAD:.+]] = zb.param "head" init uniform(5.000000e-02) : tensor<24x100xf32>
// CHECK:         %[[LOG:.+]] = zb.linear %[[SUM]], %[[HEAD]] : (tensor<2x8x24xf32>, tensor<24x100xf32>) -> tensor<2x8x100xf32>
// CHECK:         %[[L:.+]] = zb.cross_entropy %[[LOG]], %[[TGT]] : (tensor<2x8x100xf32>, tensor<2x8xi64>) -> tensor<f32>
// CHECK:         zb.loss %[[L]] : tensor<f32>
zb.model @gpt_block {
  %tokens = zb.input "tokens" : tensor<2x8xi64>
  %targets = zb.label "targets" : tensor<2x8xi64>
  %wte = zb.param "wte" init normal(0.02) : tensor<100x24xf32>
  %e = zb.embedding %tokens, %wte : (tensor<2x8xi64>, tensor<100x24xf32>) -> tensor<2x8x24xf32>
  %g1 = zb.param "ln1.gamma" init ones : tensor<24xf32>
  %b1 = zb.param "ln1.beta" init zeros : tensor<24xf32>
  %n1 = zb.layernorm %e, %g1, %b1 : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
  %wqkv = zb.param "attn.qkv" init normal(0.02) : tensor<24x72xf32>
  %qkv = zb.linear %n1, %wqkv : (tensor<2x8x24xf32>, tensor<24x72xf32>) -> tensor<2x8x72xf32>
  %a = zb.causal_attention %qkv heads(4) : tensor<2x8x72xf32> -> tensor<2x8x24xf32>
  %res = zb.add %e, %a : tensor<2x8x24xf32>
  %c:2 = zb.cut %res, %a : tensor<2x8x24xf32>, tensor<2x8x24xf32>
  %g2 = zb.param "ln2.gamma" init ones : tensor<24xf32>
  %b2 = zb.param "ln2.beta" init zeros : tensor<24xf32>
  %n2 = zb.layernorm %c#0, %g2, %b2 {epsilon = 1.0e-3 : f64} : (tensor<2x8x24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
  %ge = zb.gelu %n2 : tensor<2x8x24xf32>
  %sum = zb.add %ge, %c#1 : tensor<2x8x24xf32>
  %head = zb.param "head" init uniform(0.05) : tensor<24x100xf32>
  %logits = zb.linear %sum, %head : (tensor<2x8x24xf32>, tensor<24x100xf32>) -> tensor<2x8x100xf32>
  %l = zb.cross_entropy %logits, %targets : (tensor<2x8x100xf32>, tensor<2x8xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests the packed-document forms: attention over documents (i32 ids too),
// and a cross-entropy whose ignore_index is not the default.
// CHECK-LABEL: zb.model @packed {
// CHECK:         zb.causal_attention %{{.+}} documents(%{{.+}} : tensor<2x8xi32>) heads(4) : tensor<2x8x72xf32> -> tensor<2x8x24xf32>
// CHECK:         zb.attention %{{.+}}, %{{.+}}, %{{.+}} documents %{{.+}} {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x8x24xf32>, tensor<2x8x12xf32>, tensor<2x8x12xf32>, tensor<2x8xi32>) -> tensor<2x8x24xf32>
// CHECK:         zb.cross_entropy %{{.+}}, %{{.+}} {ignore_index = -1 : i64} : (tensor<2x8x24xf32>, tensor<2x8xi64>) -> tensor<f32>
zb.model @packed {
  %qkv = zb.input "qkv" : tensor<2x8x72xf32>
  %kv = zb.input "kv" : tensor<2x8x12xf32>
  %docs = zb.input "documents" : tensor<2x8xi32>
  %y = zb.label "y" : tensor<2x8xi64>
  %a = zb.causal_attention %qkv documents(%docs : tensor<2x8xi32>) heads(4) : tensor<2x8x72xf32> -> tensor<2x8x24xf32>
  %g = zb.attention %a, %kv, %kv documents %docs {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x8x24xf32>, tensor<2x8x12xf32>, tensor<2x8x12xf32>, tensor<2x8xi32>) -> tensor<2x8x24xf32>
  %l = zb.cross_entropy %g, %y {ignore_index = -1 : i64} : (tensor<2x8x24xf32>, tensor<2x8xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests that f16, bf16 and f64 element types, i32 indices and a batched
// matmul round-trip, and that a single-stage model needs no cut.
// CHECK-LABEL: zb.model @mixed_precision {
// CHECK:         %[[IDS:.+]] = zb.input "ids" : tensor<4xi32>
// CHECK:         %[[CLS:.+]] = zb.label "cls" : tensor<4x3xi32>
// CHECK:         %[[TAB:.+]] = zb.param "table" init normal(1.000000e+00) : tensor<10x6xbf16>
// CHECK:         %[[EMB:.+]] = zb.embedding %[[IDS]], %[[TAB]] : (tensor<4xi32>, tensor<10x6xbf16>) -> tensor<4x6xbf16>
// CHECK:         %[[P:.+]] = zb.input "p" : tensor<4x3x5xf64>
// CHECK:         %[[Q:.+]] = zb.input "q" : tensor<4x5x2xf64>
// CHECK:         %[[PQ:.+]] = zb.matmul %[[P]], %[[Q]] : (tensor<4x3x5xf64>, tensor<4x5x2xf64>) -> tensor<4x3x2xf64>
// CHECK:         %[[H:.+]] = zb.input "h" : tensor<4x3x8xf16>
// CHECK:         %[[WH:.+]] = zb.param "wh" init uniform(1.000000e-01) : tensor<8x7xf16>
// CHECK:         %[[LH:.+]] = zb.linear %[[H]], %[[WH]] : (tensor<4x3x8xf16>, tensor<8x7xf16>) -> tensor<4x3x7xf16>
// CHECK:         %[[RH:.+]] = zb.relu %[[LH]] : tensor<4x3x7xf16>
// CHECK:         %[[L:.+]] = zb.cross_entropy %[[RH]], %[[CLS]] : (tensor<4x3x7xf16>, tensor<4x3xi32>) -> tensor<f16>
// CHECK:         zb.loss %[[L]] : tensor<f16>
zb.model @mixed_precision {
  %ids = zb.input "ids" : tensor<4xi32>
  %cls = zb.label "cls" : tensor<4x3xi32>
  %table = zb.param "table" init normal(1.0) : tensor<10x6xbf16>
  %emb = zb.embedding %ids, %table : (tensor<4xi32>, tensor<10x6xbf16>) -> tensor<4x6xbf16>
  %p = zb.input "p" : tensor<4x3x5xf64>
  %q = zb.input "q" : tensor<4x5x2xf64>
  %pq = zb.matmul %p, %q : (tensor<4x3x5xf64>, tensor<4x5x2xf64>) -> tensor<4x3x2xf64>
  %h = zb.input "h" : tensor<4x3x8xf16>
  %wh = zb.param "wh" init uniform(0.1) : tensor<8x7xf16>
  %lh = zb.linear %h, %wh : (tensor<4x3x8xf16>, tensor<8x7xf16>) -> tensor<4x3x7xf16>
  %rh = zb.relu %lh : tensor<4x3x7xf16>
  %l = zb.cross_entropy %rh, %cls : (tensor<4x3x7xf16>, tensor<4x3xi32>) -> tensor<f16>
  zb.loss %l : tensor<f16>
}

// Tests that an input may feed several stages and that a model may have
// several cuts.
// CHECK-LABEL: zb.model @input_in_every_stage {
// CHECK:         %[[X:.+]] = zb.input "x" : tensor<2x4xf64>
// CHECK:         %[[R:.+]] = zb.relu %[[X]] : tensor<2x4xf64>
// CHECK:         %[[C0:.+]] = zb.cut %[[R]] : tensor<2x4xf64>
// CHECK:         %[[S0:.+]] = zb.add %[[C0]], %[[X]] : tensor<2x4xf64>
// CHECK:         %[[C1:.+]] = zb.cut %[[S0]] : tensor<2x4xf64>
// CHECK:         %[[S1:.+]] = zb.add %[[C1]], %[[X]] : tensor<2x4xf64>
// CHECK:         %[[T:.+]] = zb.label "t" : tensor<2xi64>
// CHECK:         %[[L:.+]] = zb.cross_entropy %[[S1]], %[[T]] : (tensor<2x4xf64>, tensor<2xi64>) -> tensor<f64>
// CHECK:         zb.loss %[[L]] : tensor<f64>
zb.model @input_in_every_stage {
  %x = zb.input "x" : tensor<2x4xf64>
  %r = zb.relu %x : tensor<2x4xf64>
  %c0 = zb.cut %r : tensor<2x4xf64>
  %s0 = zb.add %c0, %x : tensor<2x4xf64>
  %c1 = zb.cut %s0 : tensor<2x4xf64>
  %s1 = zb.add %c1, %x : tensor<2x4xf64>
  %t = zb.label "t" : tensor<2xi64>
  %l = zb.cross_entropy %s1, %t : (tensor<2x4xf64>, tensor<2xi64>) -> tensor<f64>
  zb.loss %l : tensor<f64>
}

//===----------------------------------------------------------------------===//
// Schedule level
//===----------------------------------------------------------------------===//

// Tests that a 2-rank 1F1B-style program with fused BW round-trips, with
// activation and gradient transfers in both directions.
// CHECK-LABEL: zb.program @two_stage microbatches(2) placement [0, 1] {
// CHECK:         zb.rank 0 {
// CHECK:           %[[F00:.+]] = zb.compute F stage 0 mb 0
// CHECK:           %[[S0:.+]] = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<8x64xf32> after(%[[F00]])
// CHECK:           %[[F01:.+]] = zb.compute F stage 0 mb 1
// CHECK:           %[[S1:.+]] = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<8x64xf32> after(%[[F01]])
// CHECK:           %[[G0:.+]] = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32>
// CHECK:           %{{.+}} = zb.compute BW stage 0 mb 0 after(%[[G0]], %[[S0]])
// CHECK:           %[[G1:.+]] = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<8x64xf32>
// CHECK:           %{{.+}} = zb.compute BW stage 0 mb 1 after(%[[G1]], %[[S1]])
// CHECK:         }
// CHECK:         zb.rank 1 {
// CHECK:           %[[A0:.+]] = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<8x64xf32>
// CHECK:           %[[F10:.+]] = zb.compute F stage 1 mb 0 after(%[[A0]])
// CHECK:           %[[BW10:.+]] = zb.compute BW stage 1 mb 0 after(%[[F10]])
// CHECK:           %{{.+}} = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<8x64xf32> after(%[[BW10]])
// CHECK:           %[[A1:.+]] = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<8x64xf32>
// CHECK:           %[[F11:.+]] = zb.compute F stage 1 mb 1 after(%[[A1]])
// CHECK:           %[[BW11:.+]] = zb.compute BW stage 1 mb 1 after(%[[F11]])
// CHECK:           %{{.+}} = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<8x64xf32> after(%[[BW11]])
// CHECK:         }
zb.program @two_stage microbatches(2) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<8x64xf32> after(%f0)
    %f1 = zb.compute F stage 0 mb 1
    %s1 = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<8x64xf32> after(%f1)
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32>
    %bw0 = zb.compute BW stage 0 mb 0 after(%g0, %s0)
    %g1 = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<8x64xf32>
    %bw1 = zb.compute BW stage 0 mb 1 after(%g1, %s1)
  }
  zb.rank 1 {
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<8x64xf32>
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %bw0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<8x64xf32> after(%bw0)
    %a1 = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<8x64xf32>
    %f1 = zb.compute F stage 1 mb 1 after(%a1)
    %bw1 = zb.compute BW stage 1 mb 1 after(%f1)
    %s1 = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<8x64xf32> after(%bw1)
  }
}

// Tests that an interleaved placement (4 stages on 2 ranks, [0, 1, 0, 1])
// round-trips with split B and W, and that compute results are named after
// their kind, stage and microbatch.
// CHECK-LABEL: zb.program @interleaved microbatches(1) placement [0, 1, 0, 1] {
// CHECK:         zb.rank 0 {
// CHECK:           %[[F0:.+]] = zb.compute F stage 0 mb 0{{$}}
// CHECK:           %{{.+}} = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<8x64xf32> after(%[[F0]])
// CHECK:           %[[R1:.+]] = zb.recv act stage 1 mb 0 from 1 "out.0" : tensor<8x64xf32>
// CHECK:           %[[F2:.+]] = zb.compute F stage 2 mb 0 after(%[[R1]])
// CHECK:           %{{.+}} = zb.send act stage 2 mb 0 to 1 "out.0" : tensor<8x64xf32> after(%[[F2]])
// CHECK:           %[[R3:.+]] = zb.recv grad stage 3 mb 0 from 1 "d_in.0" : tensor<8x64xf32>
// CHECK:           %[[B2:.+]] = zb.compute B stage 2 mb 0 after(%[[R3]], %[[F2]])
// CHECK:           %{{.+}} = zb.send grad stage 2 mb 0 to 1 "d_in.0" : tensor<8x64xf32> after(%[[B2]])
// CHECK:           %[[RG1:.+]] = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32>
// CHECK:           %[[B0:.+]] = zb.compute B stage 0 mb 0 after(%[[RG1]])
// CHECK:           %{{.+}} = zb.compute W stage 2 mb 0 after(%[[B2]])
// CHECK:           %{{.+}} = zb.compute W stage 0 mb 0 after(%[[B0]])
// CHECK:         }
// CHECK:         zb.rank 1 {
// CHECK:           %[[RA0:.+]] = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<8x64xf32>
// CHECK:           %[[F1:.+]] = zb.compute F stage 1 mb 0 after(%[[RA0]])
// CHECK:           %{{.+}} = zb.send act stage 1 mb 0 to 0 "out.0" : tensor<8x64xf32> after(%[[F1]])
// CHECK:           %[[RA2:.+]] = zb.recv act stage 2 mb 0 from 0 "out.0" : tensor<8x64xf32>
// CHECK:           %[[F3:.+]] = zb.compute F stage 3 mb 0 after(%[[RA2]])
// CHECK:           %[[BW3:.+]] = zb.compute BW stage 3 mb 0 after(%[[F3]])
// CHECK:           %{{.+}} = zb.send grad stage 3 mb 0 to 0 "d_in.0" : tensor<8x64xf32> after(%[[BW3]])
// CHECK:           %[[RG2:.+]] = zb.recv grad stage 2 mb 0 from 0 "d_in.0" : tensor<8x64xf32>
// CHECK:           %[[B1:.+]] = zb.compute B stage 1 mb 0 after(%[[RG2]], %[[F1]])
// CHECK:           %{{.+}} = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<8x64xf32> after(%[[B1]])
// CHECK:           %{{.+}} = zb.compute W stage 1 mb 0 after(%[[B1]])
// CHECK:         }
zb.program @interleaved microbatches(1) placement [0, 1, 0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<8x64xf32> after(%f0)
    %r1 = zb.recv act stage 1 mb 0 from 1 "out.0" : tensor<8x64xf32>
    %f2 = zb.compute F stage 2 mb 0 after(%r1)
    %s2 = zb.send act stage 2 mb 0 to 1 "out.0" : tensor<8x64xf32> after(%f2)
    %r3 = zb.recv grad stage 3 mb 0 from 1 "d_in.0" : tensor<8x64xf32>
    %b2 = zb.compute B stage 2 mb 0 after(%r3, %f2)
    %sg2 = zb.send grad stage 2 mb 0 to 1 "d_in.0" : tensor<8x64xf32> after(%b2)
    %rg1 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32>
    %b0 = zb.compute B stage 0 mb 0 after(%rg1)
    %w2 = zb.compute W stage 2 mb 0 after(%b2)
    %w0 = zb.compute W stage 0 mb 0 after(%b0)
  }
  zb.rank 1 {
    %ra0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<8x64xf32>
    %f1 = zb.compute F stage 1 mb 0 after(%ra0)
    %s1 = zb.send act stage 1 mb 0 to 0 "out.0" : tensor<8x64xf32> after(%f1)
    %ra2 = zb.recv act stage 2 mb 0 from 0 "out.0" : tensor<8x64xf32>
    %f3 = zb.compute F stage 3 mb 0 after(%ra2)
    %bw3 = zb.compute BW stage 3 mb 0 after(%f3)
    %sg3 = zb.send grad stage 3 mb 0 to 0 "d_in.0" : tensor<8x64xf32> after(%bw3)
    %rg2 = zb.recv grad stage 2 mb 0 from 0 "d_in.0" : tensor<8x64xf32>
    %b1 = zb.compute B stage 1 mb 0 after(%rg2, %f1)
    %sg1 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<8x64xf32> after(%b1)
    %w1 = zb.compute W stage 1 mb 0 after(%b1)
  }
}

// Tests that compute results print as %<kind><stage>_<microbatch>, here on a
// single-rank program that needs no transfers.
// CHECK-LABEL: zb.program @single_rank microbatches(4) placement [0] {
// CHECK-NEXT:    zb.rank 0 {
// CHECK-NEXT:      %F0_3 = zb.compute F stage 0 mb 3
// CHECK-NEXT:      %B0_3 = zb.compute B stage 0 mb 3 after(%F0_3)
// CHECK-NEXT:      %W0_3 = zb.compute W stage 0 mb 3 after(%B0_3)
// CHECK-NEXT:      %F0_0 = zb.compute F stage 0 mb 0 after(%F0_3, %W0_3)
// CHECK-NEXT:      %BW0_0 = zb.compute BW stage 0 mb 0 after(%F0_0)
// CHECK-NEXT:    }
// CHECK-NEXT:  }
zb.program @single_rank microbatches(4) placement [0] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 3
    %b = zb.compute B stage 0 mb 3 after(%f)
    %w = zb.compute W stage 0 mb 3 after(%b)
    %f0 = zb.compute F stage 0 mb 0 after(%f, %w)
    %bw0 = zb.compute BW stage 0 mb 0 after(%f0)
  }
}

// Tests that a parameter may be used in two stages: it is tied (each stage
// holds a copy; the gradient sums both uses).
// CHECK-LABEL: zb.model @tied_param {
// CHECK:         %[[W:.+]] = zb.param "w" init normal(2.000000e-02) : tensor<8x8xf32>
// CHECK:         zb.linear %{{.+}}, %[[W]]
// CHECK:         zb.cut
// CHECK:         zb.linear %{{.+}}, %[[W]]
zb.model @tied_param {
  %x = zb.input "x" : tensor<4x8xf32>
  %w = zb.param "w" init normal(0.02) : tensor<8x8xf32>
  %h = zb.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c = zb.cut %h : tensor<4x8xf32>
  %o = zb.linear %c, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests zb.transpose, and that a parameter may be read through it in two
// stages (GPT-2's tied head: x @ wte^T).
// CHECK-LABEL: zb.model @tied_head {
// CHECK:         %[[T:.+]] = zb.transpose %{{.+}} : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK:         zb.linear %{{.+}}, %[[T]] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
zb.model @tied_head {
  %tok = zb.input "tokens" : tensor<4xi64>
  %y = zb.label "targets" : tensor<4xi64>
  %wte = zb.param "wte" init normal(0.02) : tensor<16x8xf32>
  %e = zb.embedding %tok, %wte : (tensor<4xi64>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %c = zb.cut %e : tensor<4x8xf32>
  %t = zb.transpose %wte : tensor<16x8xf32> -> tensor<8x16xf32>
  %logits = zb.linear %c, %t : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %l = zb.cross_entropy %logits, %y : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests that zb.rmsnorm round-trips, its epsilon printed only when it is not
// the default 1e-6.
// CHECK-LABEL: zb.model @rms
// CHECK:         zb.rmsnorm %{{.+}}, %{{.+}} : (tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:         zb.rmsnorm %{{.+}}, %{{.+}} {epsilon = 1.000000e-05 : f64} : (tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
zb.model @rms {
  %x = zb.input "x" : tensor<2x8x24xf32>
  %w = zb.param "w" init ones : tensor<24xf32>
  %a = zb.rmsnorm %x, %w : (tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
  %b = zb.rmsnorm %a, %w {epsilon = 1.0e-5 : f64} : (tensor<2x8x24xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests that zb.rope round-trips, theta printed only when it is not the
// default 1e4, and Llama 3's scaling attributes kept.
// CHECK-LABEL: zb.model @rope
// CHECK:         zb.rope %{{.+}}, %{{.+}} {head_dim = 4 : i64, max_positions = 64 : i64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
// CHECK:         zb.rope %{{.+}}, %{{.+}} {head_dim = 6 : i64, llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 4.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 32 : i64, max_positions = 64 : i64, theta = 5.000000e+05 : f64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
zb.model @rope {
  %x = zb.input "x" : tensor<2x8x12xf32>
  %p = zb.input "p" : tensor<2x8xi64>
  %a = zb.rope %x, %p {head_dim = 4 : i64, max_positions = 64 : i64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
  %b = zb.rope %a, %p {head_dim = 6 : i64, max_positions = 64 : i64, theta = 5.0e5 : f64, llama3_factor = 8.0 : f64, llama3_low_freq_factor = 1.0 : f64, llama3_high_freq_factor = 4.0 : f64, llama3_original_max_positions = 32 : i64} : (tensor<2x8x12xf32>, tensor<2x8xi64>) -> tensor<2x8x12xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests that zb.attention round-trips.
// CHECK-LABEL: zb.model @gqa
// CHECK:         zb.attention %{{.+}}, %{{.+}}, %{{.+}} {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
zb.model @gqa {
  %q = zb.input "q" : tensor<2x8x16xf32>
  %k = zb.input "k" : tensor<2x8x8xf32>
  %v = zb.input "v" : tensor<2x8x8xf32>
  %a = zb.attention %q, %k, %v {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x16xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests that zb.swiglu round-trips.
// CHECK-LABEL: zb.model @swiglu
// CHECK:         zb.swiglu %{{.+}}, %{{.+}} : tensor<2x8xf32>
zb.model @swiglu {
  %g = zb.input "g" : tensor<2x8xf32>
  %u = zb.input "u" : tensor<2x8xf32>
  %h = zb.swiglu %g, %u : tensor<2x8xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}

// Tests that zb.linear with PyTorch's [out, in] weight round-trips.
// CHECK-LABEL: zb.model @linear_out_in
// CHECK:         zb.linear %{{.+}}, %{{.+}} {weight_out_in} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
zb.model @linear_out_in {
  %x = zb.input "x" : tensor<2x8xf32>
  %w = zb.param "w" init normal(0.1) : tensor<4x8xf32>
  %y = zb.linear %x, %w {weight_out_in} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %l = zb.input "l" : tensor<f32>
  zb.loss %l : tensor<f32>
}
