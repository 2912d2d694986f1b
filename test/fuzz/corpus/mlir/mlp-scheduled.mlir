module {
  zb.pipeline @mlp {
    zb.stage 0 {
      %x = zb.input "x" : tensor<8x16xf32>
      %fc0.weight = zb.param "fc0.weight" init normal(1.000000e-01) : tensor<16x64xf32>
      %fc0.bias = zb.param "fc0.bias" init zeros : tensor<64xf32>
      %fc1.weight = zb.param "fc1.weight" init normal(1.000000e-01) : tensor<64x64xf32>
      %fc1.bias = zb.param "fc1.bias" init zeros : tensor<64xf32>
      zb.phase F(%input.x = "input.x" : tensor<8x16xf32>, %param.fc0.weight = "param.fc0.weight" : tensor<16x64xf32>, %param.fc0.bias = "param.fc0.bias" : tensor<64xf32>, %param.fc1.weight = "param.fc1.weight" : tensor<64x64xf32>, %param.fc1.bias = "param.fc1.bias" : tensor<64xf32>) {
        %0 = zb.linear %input.x, %param.fc0.weight : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
        %1 = zb.bias_add %0, %param.fc0.bias : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
        %2 = zb.relu %1 : tensor<8x64xf32>
        %3 = zb.linear %2, %param.fc1.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
        %4 = zb.bias_add %3, %param.fc1.bias : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
        %5 = zb.relu %4 : tensor<8x64xf32>
        zb.yield "out.0" = %5, "F.0" = %4, "F.1" = %2, "F.2" = %1 : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
      }
      zb.phase B() {
        zb.yield
      }
      zb.phase W(%d_out.0 = "d_out.0" : tensor<8x64xf32>, %F.0 = "F.0" : tensor<8x64xf32>, %param.fc1.weight = "param.fc1.weight" : tensor<64x64xf32>, %F.1 = "F.1" : tensor<8x64xf32>, %F.2 = "F.2" : tensor<8x64xf32>, %input.x = "input.x" : tensor<8x16xf32>) {
        %0 = zb.relu_grad %d_out.0, %F.0 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
        %1 = zb.bias_grad %0 : tensor<8x64xf32> -> tensor<64xf32>
        %2 = zb.linear_grad_input %0, %param.fc1.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
        %3 = zb.linear_grad_weight %F.1, %0 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<64x64xf32>
        %4 = zb.relu_grad %2, %F.2 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
        %5 = zb.bias_grad %4 : tensor<8x64xf32> -> tensor<64xf32>
        %6 = zb.linear_grad_weight %input.x, %4 : (tensor<8x16xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
        zb.yield "grad.fc0.weight" = %6, "grad.fc0.bias" = %5, "grad.fc1.weight" = %3, "grad.fc1.bias" = %1 : tensor<16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>
      }
    }
    zb.stage 1 {
      %y = zb.label "y" : tensor<8xi64>
      %fc2.weight = zb.param "fc2.weight" init normal(1.000000e-01) : tensor<64x64xf32>
      %fc2.bias = zb.param "fc2.bias" init zeros : tensor<64xf32>
      %fc3.weight = zb.param "fc3.weight" init normal(1.000000e-01) : tensor<64x8xf32>
      %fc3.bias = zb.param "fc3.bias" init zeros : tensor<8xf32>
      zb.phase F(%in.0 = "in.0" : tensor<8x64xf32>, %param.fc2.weight = "param.fc2.weight" : tensor<64x64xf32>, %param.fc2.bias = "param.fc2.bias" : tensor<64xf32>, %param.fc3.weight = "param.fc3.weight" : tensor<64x8xf32>, %param.fc3.bias = "param.fc3.bias" : tensor<8xf32>, %label.y = "label.y" : tensor<8xi64>) {
        %0 = zb.linear %in.0, %param.fc2.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
        %1 = zb.bias_add %0, %param.fc2.bias : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
        %2 = zb.relu %1 : tensor<8x64xf32>
        %3 = zb.linear %2, %param.fc3.weight : (tensor<8x64xf32>, tensor<64x8xf32>) -> tensor<8x8xf32>
        %4 = zb.bias_add %3, %param.fc3.bias : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
        %5 = zb.cross_entropy %4, %label.y : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<f32>
        zb.yield "loss" = %5, "F.0" = %4, "F.1" = %2, "F.2" = %1 : tensor<f32>, tensor<8x8xf32>, tensor<8x64xf32>, tensor<8x64xf32>
      }
      zb.phase B(%label.y = "label.y" : tensor<8xi64>, %F.0 = "F.0" : tensor<8x8xf32>, %param.fc3.weight = "param.fc3.weight" : tensor<64x8xf32>, %F.2 = "F.2" : tensor<8x64xf32>, %param.fc2.weight = "param.fc2.weight" : tensor<64x64xf32>) {
        %0 = zb.fill 1.000000e+00 : tensor<f32>
        %1 = zb.cross_entropy_grad %F.0, %label.y, %0 : (tensor<8x8xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x8xf32>
        %2 = zb.linear_grad_input %1, %param.fc3.weight : (tensor<8x8xf32>, tensor<64x8xf32>) -> tensor<8x64xf32>
        %3 = zb.relu_grad %2, %F.2 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
        %4 = zb.linear_grad_input %3, %param.fc2.weight : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
        zb.yield "d_in.0" = %4, "B.0" = %1, "B.1" = %3 : tensor<8x64xf32>, tensor<8x8xf32>, tensor<8x64xf32>
      }
      zb.phase W(%F.1 = "F.1" : tensor<8x64xf32>, %in.0 = "in.0" : tensor<8x64xf32>, %B.0 = "B.0" : tensor<8x8xf32>, %B.1 = "B.1" : tensor<8x64xf32>) {
        %0 = zb.bias_grad %B.0 : tensor<8x8xf32> -> tensor<8xf32>
        %1 = zb.linear_grad_weight %F.1, %B.0 : (tensor<8x64xf32>, tensor<8x8xf32>) -> tensor<64x8xf32>
        %2 = zb.bias_grad %B.1 : tensor<8x64xf32> -> tensor<64xf32>
        %3 = zb.linear_grad_weight %in.0, %B.1 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<64x64xf32>
        zb.yield "grad.fc2.weight" = %3, "grad.fc2.bias" = %2, "grad.fc3.weight" = %1, "grad.fc3.bias" = %0 : tensor<64x64xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<8xf32>
      }
    }
  }
  zb.program @mlp_zb_h1 microbatches(2) placement [0, 1] attributes {pipeline = @mlp, schedule = "zb-h1"} {
    zb.rank 0 {
      %F0_0 = zb.compute F stage 0 mb 0
      %F0_1 = zb.compute F stage 0 mb 1
      %B0_0 = zb.compute B stage 0 mb 0 after(%F0_0)
      %W0_0 = zb.compute W stage 0 mb 0 after(%B0_0)
      %B0_1 = zb.compute B stage 0 mb 1 after(%F0_1)
      %W0_1 = zb.compute W stage 0 mb 1 after(%B0_1)
    }
    zb.rank 1 {
      %F1_0 = zb.compute F stage 1 mb 0
      %B1_0 = zb.compute B stage 1 mb 0 after(%F1_0)
      %F1_1 = zb.compute F stage 1 mb 1
      %B1_1 = zb.compute B stage 1 mb 1 after(%F1_1)
      %W1_0 = zb.compute W stage 1 mb 0 after(%B1_0)
      %W1_1 = zb.compute W stage 1 mb 1 after(%B1_1)
    }
  }
}

