//===- RankTables.h - what one rank's program holds, as plain tables -*- C++ -*-===//
//
// The first half of convert-zb-to-emitc: from a planned zb.program (its
// order, its memory_plan attributes) and its pipeline, everything the rank's
// C++ holds, as data: the buffers of its arena (zbc_rt_buffer), its ops in
// order (zbc_rt_op), each compute's frame, its parameters and data, and per
// stage phase the slot layout the phase's function is written against. The
// second half (ZBToEmitC.cpp) only prints these as EmitC; the runtime reads
// the same tables (runtime/include/zbc/runtime/zbc_runtime.h), so a field
// here is a field there.
//
// Note [Frames]
// One C++ function serves a phase for every microbatch, so it names its
// tensors by frame slot (ZBC_RT_FRAME(k)), and each compute op of the order
// has a frame: the buffer id behind each slot for its microbatch. A phase's
// slots are, in order: its block arguments other than parameters (the
// microbatch's received, data and kept buffers), the values it yields
// straight into buffers (out.I, d_in.I, F.I, B.I: Note [Memory plan]), the
// data an F loads that only later phases read, the values of its body that
// live in the compute's scratch, and the workspaces of its kernels.
// Parameters and gradient accumulators are persistent: the body names them
// by buffer id. A fused BW of a split stage runs the B function, then the W
// function, each with its own frame.
//
// A copy of a stash (Note [Offload in the IR]) has a frame too: its (from,
// to) buffer pairs, one per F.I of the microbatch, plain buffer ids: an
// offload copies each F.I into its host copy (a ZBC_RT_HOST buffer, in the
// host arena), a reload each host copy into its reloaded buffer, which the
// frames of the microbatch's B, W and BW then name for F.I.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_CODEGEN_RANKTABLES_H
#define ZBC_CODEGEN_RANKTABLES_H

#include "zbc/Analysis/MemoryPlan.h"
#include "zbc/Analysis/ProgramMemory.h"
#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/runtime/zbc_runtime.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace zbc::codegen {

/// The runtime's enums, expanded from the ABI's tables (Note [ABI enums] in
/// zbc_runtime.h): the same values, spelled ZBC_RT_* in the generated code.
#define ZBC_CODEGEN_ENUMERATOR(NAME, Name, value) Name = value,
#define ZBC_CODEGEN_ELEMENT(NAME, Name, value, bytes, dtype) Name = value,
enum class BufferKind : int32_t { ZBC_RT_BUFFER_KINDS(ZBC_CODEGEN_ENUMERATOR) };
enum class Element : int32_t { ZBC_RT_ELEMENTS(ZBC_CODEGEN_ELEMENT) };
enum class OpKind : int32_t { ZBC_RT_OP_KINDS(ZBC_CODEGEN_ENUMERATOR) };
#undef ZBC_CODEGEN_ENUMERATOR
#undef ZBC_CODEGEN_ELEMENT
const char *spell(BufferKind kind);
const char *spell(Element element);
const char *spell(OpKind kind);

struct Buffer {
  std::string name;
  int64_t offset = 0, bytes = 0;
  BufferKind kind = BufferKind::Temp;
  Element element = Element::F32;
};

/// Where a slot's buffer comes from, per microbatch.
struct Slot {
  enum Source { Keyed, Value, Workspace } source = Keyed;
  int stage = 0;       // Keyed: the buffer (stage, key) of the microbatch
  std::string key;
  mlir::Value value;   // Value: a scratch value of the body
  mlir::Operation *op = nullptr; // Workspace: the op that needs it
};

/// One stage phase, as its C++ function sees it (Note [Frames]), for one way
/// of running it: an F runs as itself, as an F whose microbatch is
/// recomputed (its F.I in scratch), or as an R (Note [Recomputation in the
/// IR] in zbc/Analysis/ProgramMemory.h).
struct PhaseLayout {
  mutable zb::PhaseOp phase; // op handles are used as values
  int stage = 0;
  zb::ComputeKind kind = zb::ComputeKind::F; // the compute it serves
  YieldsKept kept = YieldsKept::All;
  std::string function; // "stage1_F", "stage1_F_for_recompute", "stage1_R"
  /// An R adds no loss: its F did.
  bool addsLoss() const { return usesYield(kept, "loss", nullptr); }
  /// Its stage's RecomputePlan, for a recomputed F and an R.
  std::shared_ptr<const RecomputePlan> plan;
  bool runsOp(mlir::Operation *op) const {
    return zbc::runsOp(kept, plan.get(), op);
  }
  std::vector<Slot> slots;
  llvm::DenseMap<mlir::Value, int> slotOf;
  llvm::DenseMap<mlir::Operation *, int> workspaceSlotOf;
  /// F: (slot, data index) of each tensor it loads.
  std::vector<std::pair<int, int>> loads;
  /// A yielded value that has a slot before its key's buffer: an argument
  /// passed through (the input gradient of a stage of one bias_add is its
  /// output gradient), or a value yielded under a second key with a buffer
  /// of its own (a stage that starts with a bias_add sends the value
  /// upstream as d_in and keeps it for W). Its kernel (or the sender) wrote
  /// it into slot `from`; a copy of `elements` fills slot `to` (Note [Yield
  /// copies] in passes/lib/Analysis/ProgramMemory.cpp counts its bytes).
  struct Copy {
    int from = 0, to = 0;
    int64_t elements = 0;
  };
  std::vector<Copy> copies;
  int kernelCalls = 0; // loads, kernels, copies, accumulations
  /// Each op's index in the body: the plan names scratch by it
  /// (scratchKey).
  llvm::DenseMap<mlir::Operation *, int> opIndex;
};

struct OrderOp {
  OpKind what = OpKind::F;
  int stage = 0, microbatch = 0, position = 0;
  int frame = -1, frameSize = 0, secondFrame = -1, secondFrameSize = 0;
  int buffer = -1, peer = -1, firstMember = -1, memberCount = 0;
  /// Transfer: it carries a gradient (B's d_in), not an activation (a
  /// group: false; its members say).
  bool gradient = false;
  std::string name;
  /// Compute: the phase functions it runs (two for a fused BW of a split
  /// stage). Transfers: the ops it waits for first.
  std::vector<const PhaseLayout *> phases;
  std::vector<int> waits;
  /// All-reduce: the group it runs over (Note [Collective groups]); its
  /// parameters are collectiveParams[firstMember ...].
  std::string over;
  /// Parameters (indices into params) whose step follows this op.
  std::vector<int> updates;
  bool topLevel = true;
};

struct Param {
  std::string name; // "fc0.weight"
  int param = -1, grad = -1, state0 = -1, state1 = -1;
  int master = -1; // a bf16 parameter's f32 master copy
  int init = 0;
  double scale = 0;
  std::vector<int64_t> shape;
  int tied = -1; // index into RankTables::tied
  int gradShard = -1; // zero 2: the shard of the summed gradient
};

/// A parameter that stages on several ranks use: its holders, ascending.
struct Tied {
  std::string name;
  std::vector<int> ranks;
};

struct Data {
  std::string key; // "input.x"
  Element element = Element::F32;
  int64_t bound = 0;
  std::vector<int64_t> shape;
};

struct RankTables {
  int rank = 0, ranks = 0, stages = 0, microbatches = 0;
  std::string model, schedule, optimizer;
  std::string modelHash; // of the pipeline's IR, hex (checkpoints check it)
  std::string hfConfig;  // the pipeline's hf_config, or ""
  int64_t arenaBytes = 0, peakBytes = 0;
  int64_t hostArenaBytes = 0, hostPeakBytes = 0; // Note [Offload in the IR]
  std::vector<Buffer> buffers;
  std::vector<OrderOp> ops;
  int positions = 0;
  std::vector<int> frames;
  std::vector<Param> params;
  /// Data-parallel replicas the program runs as, and the parameters of
  /// each all-reduce op, consecutive.
  int replicas = 1;
  std::vector<int> collectiveParams;
  int zero = 0; // 1: the optimizer sharded (Note [Sharded optimizer])
  /// Every tied parameter of the pipeline (the same list on every rank).
  std::vector<Tied> tied;
  std::vector<Data> data;
  int loss = -1;
  int64_t tokensPerMicrobatch = 0;
  /// Note [Loss over real tokens]: the data index of the labels the loss
  /// counts on this rank (-1: none here, or every microbatch weighs 1), and
  /// the label value that is not counted.
  int countedLabels = -1;
  int64_t ignoreIndex = -100;
  int maxKernelCalls = 0;
  /// The phase functions, by (stage, kind, YieldsKept), in stage order.
  std::map<std::tuple<int, int, int>, PhaseLayout> layouts;
  /// Parameters updated at the end of the step (no op yields their grad).
  std::vector<int> updatesAtEnd;
  /// Buffer id of "param.N" and "grad.N" keys.
  std::map<std::string, int> persistentId;
};

/// The tables of every rank of `program`, which zb-plan-memory planned.
/// Fails with an error on the op at fault: an element type the runtime has
/// no kernels for, an op it cannot run, a buffer the plan lacks.
mlir::FailureOr<std::vector<RankTables>>
buildRankTables(zb::ProgramOp program, zb::PipelineOp pipeline);

} // namespace zbc::codegen

#endif // ZBC_CODEGEN_RANKTABLES_H
