// RUN: zbc-opt %s --split-input-file --zb-verify-schedule --verify-diagnostics | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=2 data-parallel=2" --zb-insert-p2p | sed 's/zb.rank \([01]\) {/&\n%m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32>/' > %t.mlir
// RUN: zbc-opt %t.mlir --zb-insert-collectives | FileCheck %s --check-prefix=GRADS
// RUN: not zbc-opt %t.mlir --zb-insert-collectives --zb-verify-schedule 2>&1 | FileCheck %s --check-prefix=MEMORY

// Note [Value collectives] (passes/include/zbc/Schedule/Program.h): the
// collectives vocabulary parallelism needs, a microbatch's tensor broadcast
// from a root or combined (sum, max) over a group, proven like the
// gradient collectives: matched k-th to k-th per group, joined into the
// deadlock search with the transfers. These programs have no pipeline, so
// only the proof runs (the memory model's refusal is the last case).

// Tests that a program with value collectives still gets its gradient
// sums (a program that has its gradient collectives keeps them).
// GRADS-COUNT-2: zb.all_reduce grads

// Tests that the memory model refuses a value no phase makes or reads
// rather than count its bytes wrong.
// MEMORY: error: 'zb.reduce' op moves the value 'vocab.max', which no phase of the pipeline makes or reads: the memory model cannot place its buffer

// Tests a valid program: the last stage's hidden states broadcast from
// rank 1, the maximum and the sums all-reduced over the pipeline, the
// embedding's rows summed to rank 0; it prints back as it was written.
// ROUNDTRIP-LABEL: zb.program @valid
// ROUNDTRIP: %reduce_embed.out_0 = zb.reduce sum "embed.out" mb 0 to 0 over "pipeline" : tensor<4x8xf32>
// ROUNDTRIP: %broadcast_vocab.x_0 = zb.broadcast "vocab.x" mb 0 from 1 over "pipeline" : tensor<4x8xf32> after(%F1_0)
// ROUNDTRIP: %allreduce_vocab.max_0 = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32> after(%broadcast_vocab.x_0)
// ROUNDTRIP: %allreduce_vocab.stats_0 = zb.reduce softmax "vocab.stats" mb 0 over "pipeline" : tensor<4x4xf32> after(%allreduce_vocab.max_0)
zb.program @valid microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %e = zb.reduce sum "embed.out" mb 0 to 0 over "pipeline" : tensor<4x8xf32>
    %f = zb.compute F stage 0 mb 0 after(%e)
    %s = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f)
    %x = zb.broadcast "vocab.x" mb 0 from 1 over "pipeline" : tensor<4x8xf32>
    %m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32> after(%x)
    %st = zb.reduce softmax "vocab.stats" mb 0 over "pipeline" : tensor<4x4xf32> after(%m)
    %g = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b = zb.compute BW stage 0 mb 0 after(%f, %g, %s)
  }
  zb.rank 1 {
    %e = zb.reduce sum "embed.out" mb 0 to 0 over "pipeline" : tensor<4x8xf32>
    %a = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    %f = zb.compute F stage 1 mb 0 after(%a)
    %x = zb.broadcast "vocab.x" mb 0 from 1 over "pipeline" : tensor<4x8xf32> after(%f)
    %m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32> after(%x)
    %st = zb.reduce softmax "vocab.stats" mb 0 over "pipeline" : tensor<4x4xf32> after(%m)
    %b = zb.compute BW stage 1 mb 0 after(%f, %st)
    %s = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b)
  }
}

// -----

// Tests that the proof refuses ranks that issue the vocabulary collectives
// in different orders: rank 1 takes the maximum before the sum, rank 0 the
// sum first (the run finds it where rank 0 issues its first). MPI and NCCL would combine the wrong tensors without a word.
zb.program @order microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f0)
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0, %s0)
    // expected-error @+1 {{group "pipeline": the 1st collective rank 0 issues over it is sum all-reduce of "vocab.sum" mb 0 over "pipeline" (16 bytes), but rank 1's is max all-reduce of "vocab.max" mb 0 over "pipeline" (16 bytes) (the members of a group issue its collectives in the same order, each the same collective of the same microbatch's values)}}
    %s = zb.reduce sum "vocab.sum" mb 0 over "pipeline" : tensor<4xf32>
    %m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32>
  }
  zb.rank 1 {
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
    // expected-note @+1 {{rank 1's 1st}}
    %m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32>
    %s = zb.reduce sum "vocab.sum" mb 0 over "pipeline" : tensor<4xf32>
  }
}

// -----

// Tests that the proof refuses members whose k-th collectives are of
// different microbatches, though of the same key and bytes.
zb.program @microbatch microbatches(2) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f0)
    %f1 = zb.compute F stage 0 mb 1
    %s1 = zb.send act stage 0 mb 1 to 1 "out.0" : tensor<4xf32> after(%f1)
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0, %s0)
    %g1 = zb.recv grad stage 1 mb 1 from 1 "d_in.0" : tensor<4xf32>
    %b1 = zb.compute BW stage 0 mb 1 after(%f1, %g1, %s1)
    // expected-error @+1 {{the 1st collective rank 0 issues over it is max all-reduce of "vocab.max" mb 0 over "pipeline" (16 bytes), but rank 1's is max all-reduce of "vocab.max" mb 1}}
    %m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32>
  }
  zb.rank 1 {
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
    %a1 = zb.recv act stage 0 mb 1 from 0 "out.0" : tensor<4xf32>
    %f1 = zb.compute F stage 1 mb 1 after(%a1)
    %b1 = zb.compute BW stage 1 mb 1 after(%f1)
    %s1 = zb.send grad stage 1 mb 1 to 0 "d_in.0" : tensor<4xf32> after(%b1)
    // expected-note @+1 {{rank 1's 1st}}
    %m = zb.reduce max "vocab.max" mb 1 over "pipeline" : tensor<4xf32>
  }
}

// -----

// Tests that the proof refuses members that disagree on a broadcast's root.
zb.program @root microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %f0 = zb.compute F stage 0 mb 0
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f0)
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0, %s0)
    // expected-error @+1 {{is broadcast of "vocab.x" mb 0 from 0 over "pipeline" (128 bytes), but rank 1's is broadcast of "vocab.x" mb 0 from 1}}
    %x = zb.broadcast "vocab.x" mb 0 from 0 over "pipeline" : tensor<4x8xf32>
  }
  zb.rank 1 {
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
    // expected-note @+1 {{rank 1's 1st}}
    %x = zb.broadcast "vocab.x" mb 0 from 1 over "pipeline" : tensor<4x8xf32>
  }
}

// -----

// Tests that the proof refuses a collective that waits on a transfer that
// waits on it: rank 1's maximum waits for the activation rank 0 sends, and
// rank 0 sends it only after a compute that waits for the maximum.
zb.program @cycle microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32>
    // expected-error @+2 {{deadlock: ranks 0 and 1 wait for each other}}
    // expected-note @+1 {{rank 0 waits here}}
    %f0 = zb.compute F stage 0 mb 0 after(%m)
    %s0 = zb.send act stage 0 mb 0 to 1 "out.0" : tensor<4xf32> after(%f0)
    %g0 = zb.recv grad stage 1 mb 0 from 1 "d_in.0" : tensor<4xf32>
    %b0 = zb.compute BW stage 0 mb 0 after(%f0, %g0, %s0)
  }
  zb.rank 1 {
    %a0 = zb.recv act stage 0 mb 0 from 0 "out.0" : tensor<4xf32>
    // expected-note @+1 {{rank 1 waits here}}
    %m = zb.reduce max "vocab.max" mb 0 over "pipeline" : tensor<4xf32> after(%a0)
    %f0 = zb.compute F stage 1 mb 0 after(%a0)
    %b0 = zb.compute BW stage 1 mb 0 after(%f0)
    %s0 = zb.send grad stage 1 mb 0 to 0 "d_in.0" : tensor<4xf32> after(%b0)
  }
}

// -----

// Tests that a root outside the group is refused: over "replicas" a rank
// of one program is its group alone.
zb.program @outside microbatches(1) placement [0, 1] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    // expected-error @+1 {{broadcast of "vocab.x" mb 0 from 1 over "replicas" (128 bytes): root rank 1 is not a member of group "replicas"}}
    %x = zb.broadcast "vocab.x" mb 0 from 1 over "replicas" : tensor<4x8xf32>
  }
  zb.rank 1 {
    %f = zb.compute F stage 1 mb 0
  }
}

// -----

// Tests the op verifiers: a microbatch the program does not have.
zb.program @range microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.reduce' op microbatch 1 is out of range [0, 1)}}
    %m = zb.reduce max "vocab.max" mb 1 over "pipeline" : tensor<4xf32>
  }
  zb.rank 1 {
  }
}

// -----

// Tests the op verifiers: a root the program does not have.
zb.program @norank microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.broadcast' op root rank 2 is out of range [0, 2)}}
    %x = zb.broadcast "vocab.x" mb 0 from 2 over "pipeline" : tensor<4x8xf32>
  }
  zb.rank 1 {
  }
}

// -----

// Tests the op verifiers: the softmax merge takes zb.vocab_stats' four
// planes.
zb.program @planes microbatches(1) placement [0, 1] {
  zb.rank 0 {
    // expected-error @+1 {{'zb.reduce' op merges the softmax statistics of zb.vocab_stats, four planes of rows (tensor<4x...>), not 'tensor<3x8xf32>'}}
    %s = zb.reduce softmax "vocab.stats" mb 0 over "pipeline" : tensor<3x8xf32>
  }
  zb.rank 1 {
  }
}
