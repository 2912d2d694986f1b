// Tests zb-checkpoint-backward (Note [Checkpointed backward] in
// passes/lib/Transforms/CheckpointBackward.cpp) on the example GPT (four
// stages, one block each in the middle). Stage 1's forward narrows to one
// tensor at the residual sum between its attention and its MLP (%6): that
// checkpoint is all F keeps (F.0); in.0, its other end, is the stage's
// input. Its B rebuilds the MLP's values from F.0 right before the MLP's
// gradient code needs them, and the attention's from in.0 after that, one
// segment at a time; its W rebuilds what it reads again. The verifier's
// peaks under 1F1B fall from the plain pipeline's to:
//   plain       [2196480, 1731584, 1469440, 1553924]
//   checkpoint  [1294080, 1076992, 1044224, 1358084]
// (e2e-checkpoint-equivalence trains every schedule both ways: bitwise
// equal, measured peaks = these). A second run changes nothing, and a
// pipeline that has its program is refused.
//
// zb-schedule recompute=auto checkpoints the backward where nothing else
// fits: at memory-limit 1500000, below the 1553924 bytes the last rank
// holds at its backward in every plain order (its one microbatch's stash),
// zb-auto fits neither without R ops nor with one before every backward,
// and with auto it checkpoints and proves.
//
// RUN: zbc-opt %examples/gpt.mlir --zb-backward --zb-checkpoint-backward -o %t.mlir
// RUN: FileCheck %s --check-prefix=STAGE1 < %t.mlir
// RUN: zbc-opt %t.mlir --zb-checkpoint-backward | diff - %t.mlir
// RUN: zbc-opt %t.mlir --zb-schedule="schedule=1f1b microbatches=4" --zb-insert-p2p --zb-verify-schedule=report=true -o %t.program.mlir 2>&1 | FileCheck %s --check-prefix=VERIFIED
// RUN: not zbc-opt %t.program.mlir --zb-checkpoint-backward -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROGRAM
// RUN: not zbc-opt %examples/gpt.mlir --zb-backward --zb-schedule="schedule=zb-auto microbatches=4 memory-limit=1500000" --zb-insert-p2p --zb-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not zbc-opt %examples/gpt.mlir --zb-backward --zb-schedule="schedule=zb-auto microbatches=4 memory-limit=1500000 recompute=full" --zb-insert-p2p --zb-verify-schedule -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: zbc-opt %examples/gpt.mlir --zb-backward --zb-schedule="schedule=zb-auto microbatches=4 memory-limit=1500000 recompute=auto" --zb-insert-p2p --zb-verify-schedule=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO

// STAGE1-LABEL: zb.stage 1 {
// STAGE1:         %6 = zb.add %in.0, %5
// STAGE1:         zb.yield "out.0" = %13, "F.0" = %6 :
// STAGE1:       zb.phase B(
// STAGE1-SAME:      %F.0 = "F.0"
// STAGE1-SAME:      %in.0 = "in.0"
// STAGE1-NEXT:    %0 = zb.linear_grad_input %d_out.0, %param.h1.mlp.proj.weight
// STAGE1-NEXT:    %1 = zb.layernorm %F.0, %param.h1.ln2.gamma, %param.h1.ln2.beta
// STAGE1-NEXT:    %2 = zb.linear %1, %param.h1.mlp.fc.weight
// STAGE1-NEXT:    %3 = zb.bias_add %2, %param.h1.mlp.fc.bias
// STAGE1-NEXT:    %4 = zb.gelu_grad %0, %3
// STAGE1:         %8 = zb.linear_grad_input %7, %param.h1.attn.proj.weight
// STAGE1-NEXT:    %9 = zb.layernorm %in.0, %param.h1.ln1.gamma, %param.h1.ln1.beta
// STAGE1-NEXT:    %10 = zb.linear %9, %param.h1.attn.qkv.weight
// STAGE1-NEXT:    %11 = zb.bias_add %10, %param.h1.attn.qkv.bias
// STAGE1-NEXT:    %12 = zb.causal_attention_grad %8, %11 heads(4)
// STAGE1:       zb.phase W(
// STAGE1-NOT:     "F.1"
// STAGE1:         %4 = zb.gelu %3
// STAGE1-NEXT:    %5 = zb.linear_grad_weight %4, %d_out.0
// STAGE1:         %14 = zb.causal_attention %13 heads(4)
// STAGE1-NEXT:    %15 = zb.linear_grad_weight %14, %B.2
// STAGE1-LABEL: zb.stage 2 {

// VERIFIED: remark: verified: 4 ranks, 80 ops, peak bytes per rank [1294080, 1076992, 1044224, 1358084]

// PROGRAM: error: 'zb.pipeline' op has its zb.program already; checkpointing the backward changes the stash that program was proven for

// NONE: error: rank 0 holds 1653760 bytes at W(0,0), over the memory limit of 1500000
// FULL: error: rank 3 holds 1522692 bytes at W(3,0), over the memory limit of 1500000
// AUTO: remark: zb-schedule: no order fits memory-limit 1500000 with the stash kept, recomputed or offloaded; the backward is checkpointed (zb-checkpoint-backward)
// AUTO: remark: verified: 4 ranks, 96 ops, peak bytes per rank [1294080, 1142528, 1109760, 1472260]
