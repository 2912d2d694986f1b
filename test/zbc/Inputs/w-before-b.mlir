// A program whose rank 0 runs W(0,0) before B(0,0) (check-errors.test).
zb.program @p microbatches(1) placement [0] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    %w = zb.compute W stage 0 mb 0
    %b = zb.compute B stage 0 mb 0 after(%f)
  }
}
