//===- ProgramMemory.h - every byte a rank holds, op by op --------*- C++ -*-===//
//
// The one memory model of a zb.program (Note [Program memory]): which
// buffers each rank holds at each op of its order, from the pipeline's
// tensors and the program's order alone, never from timing. zb-verify-schedule
// reports its peak and holds it to the program's memory_limit; the memory
// plan (MemoryPlan.h) places the same buffers at fixed offsets, and the
// runtime's ledger counts the same ones, so the three agree byte for byte.
//
// Note [Program memory]
// A rank holds, for the whole step:
//   parameters (every param of its stages), their gradient accumulators,
//   the f32 master copies of bf16 ones, optimizer state ("sgd": one copy,
//   momentum; "adamw": two), all f32 (Note [Master weights] below), and the
//   loss accumulator of the last stage (one f32);
// and, per buffer, from the op where it appears to the op where it goes:
//   a received tensor (in.I, d_out.I): from its recv (or group) until the
//     last phase of its stage that reads it;
//   a key a phase yields and a later phase reads (F.I, B.I): from after that
//     phase until after its last reader;
//   data (input.N, label.N): from the stage's F until its last reader;
//   a tensor sent to another rank (out.I, d_in.I): from after the phase that
//     yields it until the first op that waits for the send (its token, or
//     its group's): the send is complete there and the buffer free; to the
//     end of the step if no op waits for it;
//   a tensor passed to a stage on the same rank: as the consumer's in.I or
//     d_out.I, from after the producing phase;
// and, during a compute op, its phase's own temporaries: the largest set of
// values of the phase body live at once (a value from its op to its last
// use; a yielded value the op keeps past its end, from its op to the end of
// the op), plus the workspace of the op that needs one (KernelOpInterface's
// getWorkspaceBytes). A fused BW of a split stage runs B's body, then W's,
// as one sequence: what B hands to W (B.I) lives from its op in B to its
// last use in W, and what B yields for later (d_in.I) through W to the end
// of the op.
// A microbatch that is recomputed changes three things (Note [Recomputation
// in the IR] below).
// Depends on this note: ProgramMemory.cpp, zb-verify-schedule, the memory
// plan and the runtime's ledger.
//
// Note [Recomputation in the IR]
// A `zb.compute R stage s mb j` runs ops of stage s's F body again, for a
// microbatch whose F did not keep its stash: what the stage's policy says
// its R rebuilds (Note [Selective recomputation] in RecomputePlan.h; by
// default every F.I, the F keeping only its inputs). That F writes what it
// sends and adds its loss as always, and what its R rebuilds stays in its
// scratch and dies with it; the R runs only the ops that rebuild it, reads
// the kept F.I it needs from their buffers, writes the rebuilt F.I and
// nothing else (its loss is not added again), and loads no data (it reads
// the microbatch's data buffers, which live on until it). So the buffers
// of a recomputed (s, j) differ in two ways: a rebuilt F.I lives from
// after the R, not after the F, and every key of F's inputs the R reads
// (in.I, input.N, label.N) lives at least until the R. The schedule
// library checks the order (an R after its F, before its backward, once:
// ScheduleTable::verify); the same rule of which yields a compute writes
// (yieldsKeptBy, with the stage's RecomputePlan) serves this model, the
// memory plan and the code generator.
//
// Note [Offload in the IR]
// `zb.offload stage s mb j` copies what F(s, j) kept for the backward (every
// F.I: the stash) to host memory and `zb.reload stage s mb j` copies it back,
// each on its rank's copy queue (device-to-host, host-to-device), one copy at
// a time per queue in issue order, beside the computes. Like a send, a copy
// is issued at its place in the order, once the ops in its `after` are done,
// and completes by itself; the ops that need it wait for its token. So the
// proof asks (VerifyProgram.cpp, checkStashCopyWaits): the offload waits for
// its F (it reads the stash), the reload for its offload (it reads the host
// copy), and the backward that reads the stash (B or BW; W after a B that
// waited) for its reload. The bytes, here: F.I lives on the device from its
// F until the first op that waits for the offload (the copy is over there:
// only then may the plan give its bytes to another buffer), on the host
// from the offload until the first op that waits for the reload, and on the
// device again, as a buffer of its own (reloadedKeyOf: the memory plan
// places it apart, so no bytes of the first are needed when it lands), from
// the reload until its last reader. zb-schedule issues each offload right
// after its F (and the offload before it: the queue keeps the table's
// order of O) and makes the action after the O's place in the table (its
// fence, Note [Offload as actions]) wait for it, so the bytes leave where
// the simulator says they do; tableOfProgram puts an O back at that place.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_PROGRAMMEMORY_H
#define ZBC_ANALYSIS_PROGRAMMEMORY_H

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Analysis/RecomputePlan.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace zbc {

/// Who writes a buffer, which says when its memory is first needed.
enum class BufferRole {
  Received, // in.I / d_out.I from another rank: written by its recv
  Data,     // input.N / label.N: written by the data source at the F
  Kept,     // F.I / B.I: written by the phase that yields it
  Sent,     // out.I / d_in.I to another rank: written by its phase
  Passed,   // in.I / d_out.I from a stage on the same rank: written by the
            // producing stage's phase
  Reloaded, // F.I of an offloaded microbatch back on the device: written by
            // its zb.reload (key reloadedKeyOf)
  Offloaded, // F.I's host copy (RankMemory::hostBuffers): written by its
             // zb.offload
  Accumulator, // a whole gradient under zero 2 (microbatch -1): zeroed and
               // added into from the step's first W or BW writing it, at
               // `from`, until its sum completes (Note [Sharded gradients]);
               // its shard (key gradShardKeyOf) is Received, from its sum
};

/// One buffer of a rank: live at the ops of its order in [from, until).
/// Received and Data buffers are written at `from`; the others by the
/// compute at `from - 1`, whose temporaries count them while it runs.
struct BufferLife {
  std::string name; // "in.0 of stage 1 mb 3", "send out.0 of stage 0 mb 3"
  std::string key;  // the key in the reading (or, Sent, the yielding) stage
  int stage = 0, microbatch = 0;
  BufferRole role = BufferRole::Kept;
  int64_t bytes = 0;
  int from = 0, until = 0; // positions in the rank's top-level order

  /// The position from which the buffer's memory is written.
  int firstWrite() const {
    return role == BufferRole::Received || role == BufferRole::Data ||
                   role == BufferRole::Reloaded ||
                   role == BufferRole::Offloaded ||
                   role == BufferRole::Accumulator
               ? from
               : from - 1;
  }
};

/// Note [Master weights]
/// Beside each parameter a rank holds its gradient accumulator and its
/// optimizer state, in f32 whatever the parameter's type; a parameter of a
/// float type narrower than f32 (bf16) also has an f32 master copy, which
/// the optimizer steps, the parameter being its rounded working copy (what
/// the phases read). Checkpoints, --save and initialisation hold the
/// master. The memory model, the memory plan ("master.<name>") and the
/// runtime's tables all take these figures from here.
/// With a sharded optimizer (Note [Sharded optimizer] in
/// zbc/contracts/Shards.h) the master and the state are one replica's
/// shard, and the parameter and its gradient are padded to whole shards.
/// With sharded gradients (zero 2) no gradient is held all step (`grad`
/// is 0): `accumulator` is the whole gradient the W's add into, held from
/// the first of them to its sum, and `gradShard` the replica's shard of the
/// sum, from the sum to the update (Note [Sharded gradients] in
/// zbc/contracts/Shards.h).
struct ParamHolding {
  int64_t param = 0, grad = 0, master = 0, stateCopy = 0; // bytes
  int64_t accumulator = 0, gradShard = 0;
};
/// How the replicas of a program hold its parameters.
struct Sharding {
  int64_t replicas = 1;
  bool sharded = false;     // zero >= 1 with replicas > 1
  bool gradsSharded = false; // zero >= 2 with replicas > 1
};
Sharding shardingOf(zb::ProgramOp program);
ParamHolding paramHoldingOf(mlir::Type paramType, Sharding sharding = {});
/// The memory plan's key of a parameter's master copy.
std::string masterKeyOf(llvm::StringRef name);
/// The memory plan's key of a replica's shard of a parameter's summed
/// gradient (zero 2); the whole accumulator keeps the gradient's key.
std::string gradShardKeyOf(llvm::StringRef name);

struct RankMemory {
  int64_t params = 0, grads = 0, masters = 0, optimizerState = 0,
          lossAccumulator = 0;
  std::vector<BufferLife> buffers;
  /// Per position: the index (in the model's rank ops) of the op there, and
  /// the temporaries it needs while it runs (0 for transfers and groups).
  std::vector<int> opAt;
  std::vector<int64_t> temporaries;
  /// Per position: every byte held while that op runs.
  std::vector<int64_t> live;
  int64_t peak = 0;
  int peakAt = 0; // position of the first op at the peak
  /// Host memory, apart (Note [Offload in the IR]): the host copies of
  /// offloaded stashes, and per position the bytes they hold.
  std::vector<BufferLife> hostBuffers;
  std::vector<int64_t> hostLive;
  int64_t hostPeak = 0;

  int64_t persistent() const {
    return params + grads + masters + optimizerState + lossAccumulator;
  }
};

/// Which of its phase's yields a compute writes into their buffers (Note
/// [Recomputation in the IR]): every one; all but the F.I its stage's R
/// rebuilds (an F whose microbatch is recomputed); only those (an R). The
/// two last ask the stage's RecomputePlan (Note [Selective recomputation]).
enum class YieldsKept { All, AllButRebuilt, OnlyRebuilt };
YieldsKept yieldsKeptBy(zb::ComputeKind kind, bool recomputed);
/// Whether a compute that keeps `kept` writes `key` into its buffer (`plan`:
/// its stage's, needed unless `kept` is All).
bool writesIntoBuffer(YieldsKept kept, llvm::StringRef key,
                      const RecomputePlan *plan);
/// Whether it does anything with the value it yields under `key`: writes
/// it into its buffer, accumulates it (a gradient) or adds it to the loss
/// (not an R). A value yielded only under keys it drops is read by nothing
/// at the yield, and dies at its last kernel use.
bool usesYield(YieldsKept kept, llvm::StringRef key, const RecomputePlan *plan);
/// Whether a compute that keeps `kept` runs `op` of its body: an R only the
/// ops of its stage's plan (and the yield), every other compute all.
bool runsOp(YieldsKept kept, const RecomputePlan *plan, mlir::Operation *op);
/// The memory plan's key of F.I's buffer after its reload: "reloaded.F.0".
std::string reloadedKeyOf(llvm::StringRef key);
/// The (stage, microbatch) pairs a rank's ops recompute (those with an R).
std::set<std::pair<int, int>>
recomputedOf(const std::vector<sched::ProgramOp> &ops);

/// One value (or kernel workspace) of phase bodies run in sequence (one
/// phase, or a fused BW's B then W), on their common timeline (op i of the
/// sequence at i, yields included), live over [from, until]: a value from
/// its op to its last use; one a later phase of the sequence reads (what B
/// hands W) until that reader's last use (`handedOver`); one yielded into a
/// buffer that outlives the sequence (`bufferKey`) to the sequence's end; a
/// workspace at its op. The one timeline Note [Program memory] counts a
/// compute's temporaries on, and the memory plan places them on. `kept`
/// says which yields go into buffers: one that does not is scratch, and is
/// not copied at the yield; an R (OnlyRebuilt) runs only the ops of its
/// `plan`, labels its values R, and has the values it reads from a kept
/// F.I in that buffer (copied at the yield where it also rebuilds them).
struct BodyValue {
  zb::ComputeKind phase;
  // The op's index in its body and which result; result -1: its workspace,
  // -2: a copy made at the yield (op is the yield's index; Note [Yield
  // copies] in ProgramMemory.cpp).
  int op = 0, result = 0;
  int from = 0, until = 0;
  int64_t bytes = 0;
  std::string bufferKey; // the key it is yielded into a buffer under
  bool handedOver = false;
};
std::vector<BodyValue> bodyValuesOf(llvm::ArrayRef<zb::PhaseOp> phases,
                                    int &length,
                                    YieldsKept kept = YieldsKept::All,
                                    const RecomputePlan *plan = nullptr);

/// True for the keys whose yielded value goes straight into a buffer of
/// Note [Program memory] (out.I, d_in.I, F.I, B.I) rather than into scratch.
bool isYieldedIntoBuffer(llvm::StringRef key);

/// Optimizer state per parameter byte: "sgd" (momentum) 1, "adamw" 2.
/// Fails on another name.
mlir::FailureOr<int> optimizerCopies(llvm::StringRef optimizer);

/// The memory of every rank of `model` (read from `program`), with the
/// tensors of `pipeline`, which must be the program's. Fails, with an error
/// on `program`, when the pipeline does not match it.
mlir::FailureOr<std::vector<RankMemory>>
analyzeProgramMemory(zb::ProgramOp program, zb::PipelineOp pipeline,
                     const ProgramModel &model);

} // namespace zbc

#endif // ZBC_ANALYSIS_PROGRAMMEMORY_H
