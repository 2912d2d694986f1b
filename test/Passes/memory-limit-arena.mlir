// Tests that a memory limit bounds what a rank allocates, its arena (Note
// [Rank budget], Note [Memory plan]), not only its peak: the plan's packing
// adds to the peak, and the arena is the one allocation a rank makes.
//
// The fit plans the budget it settles on and goes on below it where an
// arena is over: gpt-small on 4 ranks under zb-auto at 120,000,000 bytes
// fitted the peaks alone to rank 3's 119,871,492, whose arena was
// 120,920,128. zb-plan-memory holds every arena to the program's limit, so
// this compile fails where the fit forgets the packing.
// RUN: zbc-opt %examples/gpt-small.mlir --zb-backward="stages=4" --zb-stage-costs --zb-schedule="schedule=zb-auto microbatches=8 memory-limit=120000000" --zb-insert-p2p --zb-plan-memory=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIT
// FIT: remark: memory plan of @gpt_zb_auto: rank 0: arena {{[0-9]+}}, peak
// FIT-NOT: error

// zb-h1 keeps what it keeps whatever the budget: its peak fits 100,000,000
// and its arena does not, and the plan names the rank.
// RUN: not zbc-opt %examples/gpt-small.mlir --zb-backward="stages=4" --zb-stage-costs --zb-schedule="schedule=zb-h1 microbatches=8 memory-limit=100000000" --zb-insert-p2p --zb-plan-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=OVER
// OVER: error: rank 3's arena of 100472896 bytes is over the memory limit of 100000000: its peak is 99948548 and the memory plan's packing adds 524348

// Where nothing fits, zb-schedule says what would: each lever's least arena
// (its order at the smallest budget the schedule takes, planned) and what a
// rank holds before any activation. Each figure is a limit that fits: the
// last two RUNs compile at them.
// RUN: not zbc-opt %examples/llama.mlir "--zb-lower-to-program=stages=4 schedule=zb-auto microbatches=4 memory-limit=1300000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WOULD
// WOULD: remark: zb-schedule: no order fits memory-limit 1300000; the least arena each lever allocates: without levers 1429312, --recompute full 1437504, --recompute selective 1429760, --recompute checkpoint 1387840; a rank holds up to 715012 bytes of parameters, gradients and optimizer state before any activation{{$}}
// RUN: not zbc-opt %examples/llama.mlir "--zb-lower-to-program=stages=4 schedule=zb-auto microbatches=4 memory-limit=700000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALONE
// ALONE: a rank holds up to 715012 bytes of parameters, gradients and optimizer state before any activation, more than the limit alone
// RUN: zbc-opt %examples/llama.mlir "--zb-lower-to-program=stages=4 schedule=zb-auto microbatches=4 memory-limit=1429312" -o /dev/null
// RUN: zbc-opt %examples/llama.mlir "--zb-lower-to-program=stages=4 schedule=zb-auto microbatches=4 memory-limit=1387840 recompute=checkpoint" -o /dev/null

// A larger limit never refuses what the schedule's own order fits: zb-v's
// builder takes no budget the fit tries between 1,300,000 and the bytes a
// microbatch's stash needs, while its default order's arenas are at most
// 1,214,016; the fit takes that order (no activation_budget recorded).
// RUN: zbc-dsl-llama --layers 4 --hidden 64 --intermediate 128 --heads 4 --kv-heads 2 --vocab 256 --seq 16 --max-positions 16 --batch 1 --no-cuts -o %t-tiny.mlir
// RUN: zbc-opt %t-tiny.mlir "--zb-lower-to-program=stages=8 schedule=zb-v microbatches=8 optimizer=adamw memory-limit=1300000" -o - | FileCheck %s --check-prefix=OWN
// OWN: zb.program @llama_zb_v
// OWN-NOT: activation_budget
// OWN-SAME: memory_limit = 1300000
