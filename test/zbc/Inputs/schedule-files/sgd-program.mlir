zb.program @p microbatches(2) placement [0, 1] attributes {optimizer = "sgd"} {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %f1 = zb.compute F stage 0 mb 1
    %b0 = zb.compute BW stage 0 mb 0 after(%f0)
    %b1 = zb.compute BW stage 0 mb 1 after(%f1)
  }
  zb.rank 1 {
    %f0 = zb.compute F stage 1 mb 0
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %f1 = zb.compute F stage 1 mb 1
    %b1 = zb.compute BW stage 1 mb 1 after(%f1)
  }
}
