// A hand-written ("bring your own") schedule for examples/mlp.mlir: 1F1B on
// 2 ranks (stage 0 on rank 0, stage 1 on rank 1) with 4 microbatches, B and W
// fused (BW). Rank 0 warms up with p - 1 = 1 extra forward, then alternates
// one forward and one backward; rank 1 alternates from the start.
//
// Every dependency is an explicit token: a forward waits for the activation it
// receives, a backward for its forward and the gradient it receives.

zb.program @mlp_1f1b microbatches(4) placement [0, 1] {
  zb.rank 0 {
    %F0_0 = zb.compute F stage 0 mb 0
    %act0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<8x64xf32> after(%F0_0)
    %F0_1 = zb.compute F stage 0 mb 1
    %act1 = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<8x64xf32> after(%F0_1)
    %grad0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<8x64xf32>
    %BW0_0 = zb.compute BW stage 0 mb 0 after(%F0_0, %grad0)
    %F0_2 = zb.compute F stage 0 mb 2
    %act2 = zb.send act stage 0 mb 2 to 1 "out.0" : tensor<8x64xf32> after(%F0_2)
    %grad1 = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<8x64xf32>
    %BW0_1 = zb.compute BW stage 0 mb 1 after(%F0_1, %grad1)
    %F0_3 = zb.compute F stage 0 mb 3
    %act3 = zb.send act stage 0 mb 3 to 1 "out.0" : tensor<8x64xf32> after(%F0_3)
    %grad2 = zb.recv grad stage 1 mb 2 from 1 "d_in.0" : tensor<8x64xf32>
    %BW0_2 = zb.compute BW stage 0 mb 2 after(%F0_2, %grad2)
    %grad3 = zb.recv grad stage 1 mb 3 from 1 "d_in.0" : tensor<8x64xf32>
    %BW0_3 = zb.compute BW stage 0 mb 3 after(%F0_3, %grad3)
  }
  zb.rank 1 {
    %act0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<8x64xf32>
    %F1_0 = zb.compute F stage 1 mb 0 after(%act0)
    %BW1_0 = zb.compute BW stage 1 mb 0 after(%F1_0)
    %grad0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<8x64xf32> after(%BW1_0)
    %act1 = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<8x64xf32>
    %F1_1 = zb.compute F stage 1 mb 1 after(%act1)
    %BW1_1 = zb.compute BW stage 1 mb 1 after(%F1_1)
    %grad1 = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<8x64xf32> after(%BW1_1)
    %act2 = zb.recv act stage 0 mb 2 from 0 "out.0" : tensor<8x64xf32>
    %F1_2 = zb.compute F stage 1 mb 2 after(%act2)
    %BW1_2 = zb.compute BW stage 1 mb 2 after(%F1_2)
    %grad2 = zb.send grad stage 1 mb 2 to 0 "d_in.0" : tensor<8x64xf32> after(%BW1_2)
    %act3 = zb.recv act stage 0 mb 3 from 0 "out.0" : tensor<8x64xf32>
    %F1_3 = zb.compute F stage 1 mb 3 after(%act3)
    %BW1_3 = zb.compute BW stage 1 mb 3 after(%F1_3)
    %grad3 = zb.send grad stage 1 mb 3 to 0 "d_in.0" : tensor<8x64xf32> after(%BW1_3)
  }
}
