// Tests zb-plan-memory (Note [Memory plan]) on the example MLP under ZB-H1
// with one microbatch, the case whose bytes verify-schedule-memory.mlir
// names one by one: the persistent part in declaration order (parameters,
// gradients, SGD momentum), then the buffers and every compute's body
// values ("scratch.W.3.0": result 0 of op 3 of W) packed over their
// lifetimes on the plan's fine timeline; the peak is the verifier's figure,
// and rank 0's arena is exactly its peak (at W everything else is dead, and
// what W needs packs without a gap: its weight gradient reuses the bytes of
// out.0, whose send completed, and of F's temporaries).
//
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1" --zb-insert-p2p --zb-plan-memory=report=true -o - 2>&1 | FileCheck %s
// RUN: zbc-opt %examples/mlp.mlir --zb-backward --zb-schedule="schedule=zb-h1 microbatches=1 optimizer=adamw" --zb-insert-p2p --zb-plan-memory -o - 2>&1 | FileCheck %s --check-prefix=ADAMW
// RUN: not zbc-opt %s --split-input-file --zb-plan-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: zbc-opt %examples/mlp.mlir --zb-lower-to-program="schedule=zb-h1 microbatches=2 data-parallel=2 zero=2" --zb-plan-memory -o - | grep -o '{[^{}]*key = "grad[^{}]*}' | FileCheck %s --check-prefix=ZERO2

// CHECK: remark: memory plan of @mlp_zb_h1: rank 0: arena 94720, peak 94720 (1.000x); rank 1: arena 81472, peak 81284 (1.002x)
// CHECK-LABEL: zb.rank 0 attributes {arena_bytes = 94720 : i64, memory_plan = [
// CHECK-SAME: {bytes = 4096 : i64, key = "param.fc0.weight", offset = 0 : i64}, {bytes = 256 : i64, key = "param.fc0.bias", offset = 4096 : i64}
// CHECK-SAME: {bytes = 4096 : i64, key = "grad.fc0.weight", offset = 20992 : i64}
// CHECK-SAME: {bytes = 256 : i64, key = "momentum.fc1.bias", offset = 62720 : i64}
// The buffers start at 62976, where the persistent part ends.
// CHECK-SAME: {bytes = 2048 : i64, key = "out.0", mb = 0 : i64, offset = 62976 : i64, stage = 0 : i64}
// CHECK-SAME: {bytes = 2048 : i64, key = "scratch.F.0.0", mb = 0 : i64, offset = 62976 : i64, stage = 0 : i64}
// CHECK-SAME: {bytes = 16384 : i64, key = "scratch.W.3.0", mb = 0 : i64, offset = 62976 : i64, stage = 0 : i64}
// CHECK-SAME: peak_bytes = 94720 : i64}
// CHECK-LABEL: zb.rank 1 attributes {arena_bytes = 81472 : i64
// CHECK-SAME: {bytes = 4 : i64, key = "loss", offset = 56256 : i64}
// CHECK-SAME: key = "label.y", mb = 0 : i64
// CHECK-SAME: peak_bytes = 81284 : i64}

// AdamW keeps two copies per parameter, under PyTorch's names.
// ADAMW-LABEL: zb.rank 0 attributes
// ADAMW-SAME: key = "exp_avg.fc0.weight"
// ADAMW-SAME: key = "exp_avg_sq.fc0.weight"

// Tests Note [Sharded gradients]: under zero=2 no gradient persists; the
// whole gradient (padded to whole shards) and the replica's shard of its
// sum are buffers of their stage for the step, of no microbatch.
// ZERO2-NOT: key = "grad.fc0.weight", offset = {{[0-9]+}} : i64}
// ZERO2: {bytes = 4096 : i64, key = "grad.fc0.weight", offset = {{[0-9]+}} : i64, stage = 0 : i64}
// ZERO2: {bytes = 2048 : i64, key = "grad_shard.fc0.weight", offset = {{[0-9]+}} : i64, stage = 0 : i64}
// ZERO2: {bytes = 32 : i64, key = "grad.fc3.bias", offset = {{[0-9]+}} : i64, stage = 1 : i64}
// ZERO2: {bytes = 16 : i64, key = "grad_shard.fc3.bias", offset = {{[0-9]+}} : i64, stage = 1 : i64}

// Tests that a program without its pipeline has no tensors to plan.
// ERR: error: zb-plan-memory needs the program's pipeline (its tensors) to plan its memory; the program names none
zb.program @alone microbatches(1) placement [0] {
  zb.rank 0 {
    %f = zb.compute F stage 0 mb 0
    %b = zb.compute BW stage 0 mb 0 after(%f)
  }
}
