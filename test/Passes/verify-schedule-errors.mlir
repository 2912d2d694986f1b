// RUN: zbc-opt %s --split-input-file --zb-verify-schedule --verify-diagnostics

// Tests that two ranks each waiting on a recv that the other sends only
// later is a deadlock, reported as the cycle of waiting ranks: rank 0 sends
// its activation only after the backward that waits for rank 1's gradient.
zb.program @cycle microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    %g = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    // expected-error @+2 {{deadlock: ranks 0 and 1 wait for each other}}
    // expected-note @+1 {{rank 0 waits here}}
    %b = zb.compute BW stage 0 mb 0 after(%f, %g)
    %s = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f)
  }
  zb.rank 1 {
    %a = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    // expected-note @+1 {{rank 1 waits here}}
    %f = zb.compute F stage 1 mb 0 after(%a)
    %b = zb.compute BW stage 1 mb 0 after(%f)
    %s = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b)
  }
}

// -----

// Tests that a compute whose input has no recv on its rank is refused at
// the compute (rank 1 receives microbatch 0 only).
zb.program @missing_recv microbatches(2) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f0)
    %f1 = zb.compute F stage 0 mb 1
    %s1 = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<4xf32> after(%f1)
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0)
    %g1 = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<4xf32>
    %b1 = zb.compute BW stage 0 mb 1 after(%f1, %g1)
  }
  zb.rank 1 {
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
    // expected-error @+1 {{F(1,1) needs the activation of stage 0 microbatch 1 (out.0) from rank 0, but rank 1 has no recv of it}}
    %f1 = zb.compute F stage 1 mb 1
    %b1 = zb.compute BW stage 1 mb 1 after(%f1)
    %s1 = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<4xf32> after(%b1)
  }
}

// -----

// Tests that reusing a send's buffer before its recv can have been posted
// deadlocks under rendezvous (eager buffering would hide it): rank 0 posts
// its gradient recv into the buffer of its second send, rank 1 its second
// recv into the buffer of its gradient send, each waiting for its send.
zb.program @reuse microbatches(2) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f0)
    %f1 = zb.compute F stage 0 mb 1
    %s1 = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<4xf32> after(%f1)
    // expected-error @+2 {{deadlock: ranks 0 and 1 wait for each other}}
    // expected-note @+1 {{rank 0 waits here}}
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32> after(%s1)
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0)
    %g1 = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<4xf32>
    %b1 = zb.compute BW stage 0 mb 1 after(%f1, %g1)
  }
  zb.rank 1 {
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
    // expected-note @+1 {{rank 1 waits here}}
    %a1 = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<4xf32> after(%s0)
    %f1 = zb.compute F stage 1 mb 1 after(%a1)
    %b1 = zb.compute BW stage 1 mb 1 after(%f1)
    %s1 = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<4xf32> after(%b1)
  }
}

// -----

// Tests that a recv of another shape than its send is refused at both.
zb.program @shape microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    // expected-error @+1 {{send act stage 0 mb 0 to 1 (out.0) on rank 0 meets recv act stage 0 mb 0 from 0 (out.0) on rank 1: both are the 1st message from rank 0 to rank 1 (messages match in issue order), and they disagree on the type (tensor<4xf32> against tensor<8xf32>)}}
    %s = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f)
    %g = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b = zb.compute BW stage 0 mb 0 after(%f, %g)
  }
  zb.rank 1 {
    // expected-note @+1 {{the recv it meets}}
    %a = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<8xf32>
    %f = zb.compute F stage 1 mb 0 after(%a)
    %b = zb.compute BW stage 1 mb 0 after(%f)
    %s = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b)
  }
}

// -----

// Tests that two messages between the same ranks posted in another order
// on the two sides (which tagless p2p would silently swap) are an error.
zb.program @swap microbatches(2) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    // expected-error @+1 {{disagree on the microbatch (send act stage 0 mb 0 to 1 (out.0) against recv act stage 0 mb 1 from 0 (out.0))}}
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f0)
    %f1 = zb.compute F stage 0 mb 1
    %s1 = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<4xf32> after(%f1)
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0)
    %g1 = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<4xf32>
    %b1 = zb.compute BW stage 0 mb 1 after(%f1, %g1)
  }
  zb.rank 1 {
    // expected-note @+1 {{the recv it meets}}
    %a1 = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<4xf32>
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
    %f1 = zb.compute F stage 1 mb 1 after(%a1)
    %b1 = zb.compute BW stage 1 mb 1 after(%f1)
    %s1 = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<4xf32> after(%b1)
  }
}

// -----

// Tests that a backward before its forward is refused at the backward.
zb.program @b_before_f microbatches(1) placement [0] {
  zb.rank 0 {
    // expected-error @+1 {{rank 0, stage 0, microbatch 0: BW(0,0) (action 0) runs before F(0,0) (action 1)}}
    %b = zb.compute BW stage 0 mb 0
    %f = zb.compute F stage 0 mb 0
  }
}

// -----

// Tests that a group whose completion needs its peer's later group
// deadlocks under rendezvous: rank 1 receives both activations as one
// group, and the second is sent only after rank 0's first group, which
// waits for rank 1's gradient, completes.
zb.program @groups microbatches(2) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %g0 = zb.group after(%f0) {
      %s = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32>
      %r = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    }
    // expected-error @+2 {{deadlock: ranks 0 and 1 wait for each other}}
    // expected-note @+1 {{rank 0 waits here}}
    %f1 = zb.compute F stage 0 mb 1 after(%g0)
    %g1 = zb.group after(%f1) {
      %s = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<4xf32>
      %r = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<4xf32>
    }
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0)
    %b1 = zb.compute BW stage 0 mb 1 after(%f1, %g1)
  }
  zb.rank 1 {
    %g = zb.group {
      %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
      %a1 = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<4xf32>
    }
    // expected-note @+1 {{rank 1 waits here}}
    %f0 = zb.compute F stage 1 mb 0 after(%g)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
    %f1 = zb.compute F stage 1 mb 1 after(%g)
    %b1 = zb.compute BW stage 1 mb 1 after(%f1)
    %s1 = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<4xf32> after(%b1)
  }
}
