// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=2 data-parallel=2" --zb-insert-p2p --zb-insert-collectives --zb-verify-schedule | FileCheck %s
// RUN: zbc-dsl-gpt --tied --layers 2 | zbc-opt --zb-backward --zb-schedule="schedule=1f1b microbatches=2" --zb-insert-p2p --zb-insert-collectives --zb-verify-schedule | FileCheck %s --check-prefix=TIED
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=2" --zb-insert-p2p --zb-insert-collectives | FileCheck %s --check-prefix=ONE
// RUN: zbc-dsl-gpt --tied --layers 2 | zbc-opt --zb-backward --zb-schedule="schedule=1f1b microbatches=2" --zb-insert-p2p --zb-insert-collectives | sed 's/\(allreduce_tied1 = .*\) 65536 bytes/\1 256 bytes/' | not zbc-opt --zb-verify-schedule 2>&1 | FileCheck %s --check-prefix=BYTES
// RUN: zbc-dsl-gpt --tied --layers 2 | zbc-opt --zb-backward --zb-schedule="schedule=1f1b microbatches=2" --zb-insert-p2p --zb-insert-collectives | sed 's/\(allreduce_tied1 = .*\) after(%BW1_1)/\1/' | not zbc-opt --zb-verify-schedule 2>&1 | FileCheck %s --check-prefix=UNWAITED
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=2 data-parallel=2" --zb-insert-p2p --zb-insert-collectives | sed '/%allreduce0 = /d' | not zbc-opt --zb-verify-schedule 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=2 data-parallel=2" --zb-insert-p2p --zb-insert-collectives | sed 's/: 20992 bytes/: 20000 bytes/' | not zbc-opt --zb-verify-schedule 2>&1 | FileCheck %s --check-prefix=SUM
// RUN: zbc-dsl-gpt --tied --layers 2 | zbc-opt --zb-lower-to-program="schedule=zb-h1 microbatches=4 data-parallel=2 memory-limit=3000000" | FileCheck %s --check-prefix=LIMIT
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=2 data-parallel=2 zero=1" --zb-insert-p2p --zb-insert-collectives --zb-verify-schedule | FileCheck %s --check-prefix=ZERO
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=2 data-parallel=2 zero=1" --zb-insert-p2p --zb-insert-collectives | sed '/%allgather1 = /d; s/, %allgather1)/)/' | not zbc-opt --zb-verify-schedule 2>&1 | FileCheck %s --check-prefix=UNGATHERED
// RUN: not zbc-opt %examples/mlp.mlir --zb-lower-to-program="schedule=zb-h1 microbatches=2 zero=1" 2>&1 | FileCheck %s --check-prefix=ONEREPLICA

// Tests that with two data-parallel replicas each rank sums its stage's
// gradients over the replicas with one all-reduce right after the last W
// of the step, waiting for it (the program records its replicas), and that
// the proof holds.
// CHECK-LABEL: zb.program @mlp_zb_h1
// CHECK-SAME:  replicas = 2
// CHECK:       zb.rank 0 {
// CHECK:         %[[W0:.+]] = zb.compute W stage 0 mb 1
// CHECK-NEXT:    zb.all_reduce grads stage 0 over "replicas" ["fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"] : 20992 bytes after(%[[W0]])
// CHECK-NEXT:  }
// CHECK:       zb.rank 1 {
// CHECK:         %[[W1:.+]] = zb.compute W stage 1 mb 1
// CHECK-NEXT:    zb.all_reduce grads stage 1 over "replicas" ["fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"] : 18720 bytes after(%[[W1]])
// CHECK-NEXT:  }

// Tests that a parameter held by stages on two ranks (the GPT's tied
// embedding and head) is summed over its holders on both, even with one
// replica, after each holder's last backward; nothing else is.
// TIED:       zb.rank 0 {
// TIED:         %[[B0:.+]] = zb.compute BW stage 0 mb 1
// TIED-NEXT:    zb.all_reduce grads stage 0 over "tied:wte" ["wte"] : 65536 bytes after(%[[B0]])
// TIED:       zb.rank 1 {
// TIED:         %[[B1:.+]] = zb.compute BW stage 1 mb 1
// TIED-NEXT:    zb.all_reduce grads stage 1 over "tied:wte" ["wte"] : 65536 bytes after(%[[B1]])
// TIED-NOT:   over "replicas"

// Tests that one replica of an untied model sums nothing.
// ONE-LABEL:  zb.program @mlp_zb_h1
// ONE-NOT:    zb.all_reduce

// Tests that the proof refuses holders that disagree on a collective's
// bytes, naming the group, both ranks and the collective.
// BYTES: error: group "tied:wte": the 1st collective rank 0 issues over it is all-reduce of stage 0's gradients over "tied:wte" (wte, 65536 bytes), but rank 1's is all-reduce of stage 1's gradients over "tied:wte" (wte, 256 bytes)
// BYTES: note: rank 1's 1st

// Tests that the proof refuses an all-reduce that does not wait for the
// backward writing the gradients it sums.
// UNWAITED: error: all-reduce of stage 1's gradients over "tied:wte" (wte, 65536 bytes) does not wait for BW(1,1), the last compute writing the gradients it sums

// Tests that the proof refuses a data-parallel program that leaves a
// gradient unsummed over the replicas, naming the rank and the parameter.
// MISSING: error: rank 0 never sums the gradient of 'fc0.bias' over "replicas" (the program runs as replicas)

// Tests that an all-reduce's bytes are its parameters' f32 gradients'.
// SUM: error: says 20000 bytes, but its parameters' f32 gradients are 20992

// Tests that a memory limit is fitted on trial programs with their
// collectives: the proof of each trial asks for the tied sums.
// LIMIT-LABEL: zb.program @gpt_zb_h1
// LIMIT-SAME:  activation_budget = 3000000
// LIMIT-SAME:  replicas = 2
// LIMIT:       zb.all_reduce grads stage 0 over "replicas"
// LIMIT:       zb.all_reduce grads stage 0 over "tied:wte"

// Tests Note [Sharded optimizer]: with zero=1 each stage's gradients are
// reduce-scattered after its last W (the padded bytes: these sizes divide
// by 2), and a gather of its parameters opens the rank's order, waited for
// by its first compute.
// ZERO-LABEL: zb.program @mlp_zb_h1
// ZERO-SAME:  replicas = 2
// ZERO-SAME:  zero = 1
// ZERO:       zb.rank 0 {
// ZERO-NEXT:    %[[G0:.+]] = zb.all_gather params stage 0 over "replicas" ["fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"] : 20992 bytes
// ZERO-NEXT:    zb.compute F stage 0 mb 0 after(%[[G0]])
// ZERO:         %[[W0:.+]] = zb.compute W stage 0 mb 1
// ZERO-NEXT:    zb.reduce_scatter grads stage 0 over "replicas" ["fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"] : 20992 bytes after(%[[W0]])
// ZERO:       zb.rank 1 {
// ZERO-NEXT:    zb.all_gather params stage 1 over "replicas"
// ZERO-NOT:   zb.all_reduce

// Tests that the proof refuses a sharded program that does not gather a
// rank's parameters.
// UNGATHERED: error: rank 1 never gathers 'fc2.bias' over "replicas" (the optimizer state is sharded)

// Tests that zero=1 needs replicas to shard over.
// ONEREPLICA: error: 'zb.pipeline' op zero=1 shards the optimizer over data-parallel replicas: give data-parallel=D with D >= 2 (zbc: --data-parallel D)
