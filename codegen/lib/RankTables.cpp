//===- RankTables.cpp - what one rank's program holds, as plain tables ----===//
//
// buildRankTables of RankTables.h: the buffers and every compute's
// temporaries come from the rank's memory_plan (Note [Memory plan]), the
// order and positions from the program as the proof read it (ProgramModel,
// ProgramMemory), the frames from Note [Frames].
//
//===----------------------------------------------------------------------===//

#include "RankTables.h"

#include "zbc/Analysis/MemoryPlan.h"
#include "zbc/Analysis/ProgramMemory.h"
#include "zbc/Dialect/ZB/CountedLabels.h"
#include "zbc/Dialect/ZB/DataBounds.h"
#include "zbc/Dialect/ZB/ModelHash.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Support/CollectiveGroups.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;
using namespace zbc::codegen;

// Each enum's C spelling, from the ABI's tables (Note [ABI enums]).
#define ZBC_CODEGEN_SPELL_BUFFER(NAME, Name, value)                            \
  case BufferKind::Name:                                                       \
    return "ZBC_RT_" #NAME;
#define ZBC_CODEGEN_SPELL_ELEMENT(NAME, Name, value, bytes, dtype)             \
  case Element::Name:                                                          \
    return "ZBC_RT_" #NAME;
#define ZBC_CODEGEN_SPELL_OP(NAME, Name, value)                                \
  case OpKind::Name:                                                           \
    return "ZBC_RT_" #NAME;

const char *codegen::spell(BufferKind kind) {
  switch (kind) { ZBC_RT_BUFFER_KINDS(ZBC_CODEGEN_SPELL_BUFFER) }
  return "";
}

const char *codegen::spell(Element element) {
  switch (element) { ZBC_RT_ELEMENTS(ZBC_CODEGEN_SPELL_ELEMENT) }
  return "";
}

const char *codegen::spell(OpKind kind) {
  switch (kind) { ZBC_RT_OP_KINDS(ZBC_CODEGEN_SPELL_OP) }
  return "";
}

#undef ZBC_CODEGEN_SPELL_BUFFER
#undef ZBC_CODEGEN_SPELL_ELEMENT
#undef ZBC_CODEGEN_SPELL_OP

namespace {

/// The runtime's element type of a tensor type, if it has kernels for it.
/// (The ABI's table names each element type as MLIR spells it, in capitals:
/// Note [ABI enums].)
std::optional<Element> elementOf(Type type) {
  std::string spelled;
  llvm::raw_string_ostream(spelled)
      << cast<RankedTensorType>(type).getElementType();
#define ZBC_CODEGEN_ELEMENT_OF(NAME, Name, value, bytes, dtype)                \
  if (StringRef(#Name).equals_insensitive(spelled))                            \
    return Element::Name;
  ZBC_RT_ELEMENTS(ZBC_CODEGEN_ELEMENT_OF)
#undef ZBC_CODEGEN_ELEMENT_OF
  return std::nullopt;
}

/// The element types the runtime has kernels for, as MLIR spells them.
std::string runtimeElements() {
  std::string names;
#define ZBC_CODEGEN_ELEMENT_NAME(NAME, Name, value, bytes, dtype)              \
  names += (names.empty() ? "" : ", ") + StringRef(#Name).lower();
  ZBC_RT_ELEMENTS(ZBC_CODEGEN_ELEMENT_NAME)
#undef ZBC_CODEGEN_ELEMENT_NAME
  return names;
}

std::vector<int64_t> shapeOf(Type type) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
  return {shape.begin(), shape.end()};
}

OpKind computeWhat(ComputeKind kind) {
  switch (kind) {
  case ComputeKind::F:
    return OpKind::F;
  case ComputeKind::B:
    return OpKind::B;
  case ComputeKind::W:
    return OpKind::W;
  case ComputeKind::BW:
    return OpKind::BW;
  case ComputeKind::R:
    return OpKind::R;
  }
  return OpKind::F;
}

using KeyedId = std::map<std::tuple<int, std::string, int>, int>;

/// One entry of a rank's memory_plan or host_memory_plan (Note [Memory
/// plan]): its key, offset and bytes, and the stage and microbatch of a
/// per-microbatch buffer (null for persistent state).
struct PlanEntry {
  StringAttr key;
  IntegerAttr offset, bytes, stage, mb;
  /// Whether it lies inside an arena of `arenaBytes`.
  bool inside(int64_t arenaBytes) const {
    return offset.getInt() >= 0 && bytes.getInt() >= 0 &&
           offset.getInt() + bytes.getInt() <= arenaBytes;
  }
};

/// `entry` read as a plan entry; nullopt without a key, offset and bytes.
std::optional<PlanEntry> planEntryOf(Attribute entry) {
  auto dict = dyn_cast<DictionaryAttr>(entry);
  if (!dict)
    return std::nullopt;
  PlanEntry e{dict.getAs<StringAttr>("key"), dict.getAs<IntegerAttr>("offset"),
              dict.getAs<IntegerAttr>("bytes"), dict.getAs<IntegerAttr>("stage"),
              dict.getAs<IntegerAttr>("mb")};
  if (!e.key || !e.offset || !e.bytes)
    return std::nullopt;
  return e;
}

/// Builds one rank's tables; errors go to the ops at fault.
class RankBuilder {
public:
  RankBuilder(ProgramOp program, PipelineOp pipeline,
              const ProgramModel &model, const RankMemory &memory, int rank)
      : program(program), pipeline(pipeline), model(model), memory(memory),
        rank(rank) {}

  FailureOr<RankTables> build(RankOp rankOp);

private:
  const sched::Program &p() const { return model.program; }
  bool onThisRank(int stage) const {
    return stage >= 0 && stage < p().numStages() &&
           p().rankOfStage[stage] == rank;
  }
  LogicalResult readPlan(RankOp rankOp);
  LogicalResult readHostPlan(RankOp rankOp);
  /// The (from, to) buffer pairs of a copy of (stage, microbatch)'s stash.
  LogicalResult copyFrame(OrderOp &op, bool offload, Operation *at);
  LogicalResult readParamsAndData();
  /// Lays out `phase` of `stage` as a compute of `kind` runs it, writing the
  /// yields `kept` says into their buffers.
  LogicalResult layOut(int stage, PhaseOp phase, ComputeKind kind,
                       YieldsKept kept,
                       std::shared_ptr<const RecomputePlan> plan = nullptr);
  /// The buffer a phase of `stage` yields `key` into (Note [Frames]).
  Slot yieldTarget(int stage, const PhaseKey &key) const;
  FailureOr<int> frameOf(const PhaseLayout &layout, int microbatch,
                         const std::string &opName, Operation *at);
  LogicalResult readOrder();

  ProgramOp program;
  PipelineOp pipeline;
  const ProgramModel &model;
  const RankMemory &memory;
  int rank;
  /// The (stage, microbatch) pairs this rank recomputes, and those whose
  /// stash it offloads (Note [Offload in the IR]).
  std::set<std::pair<int, int>> recomputed, offloaded;
  /// Per offloaded (stage, microbatch): each F.I key's host copy.
  std::map<std::pair<int, int>, std::map<std::string, int>> hostCopies;
  SmallVector<StageOp> stages;
  RankTables t;
  KeyedId keyed;                                    // non-scratch buffers
  std::map<std::tuple<int, std::string, int>, int64_t> scratchAt;
  std::vector<std::map<std::string, Type>> keyTypes; // per stage
  std::map<std::string, int> dataIndex;
};

LogicalResult RankBuilder::readPlan(RankOp rankOp) {
  ArrayAttr plan = rankOp.getMemoryPlanAttr();
  if (!plan || !rankOp.getArenaBytesAttr() || !rankOp.getPeakBytesAttr())
    return rankOp.emitOpError("has no memory plan; run zb-plan-memory before "
                              "convert-zb-to-emitc");
  t.arenaBytes = rankOp.getArenaBytesAttr().getInt();
  t.peakBytes = rankOp.getPeakBytesAttr().getInt();
  for (Attribute entry : plan) {
    std::optional<PlanEntry> e = planEntryOf(entry);
    if (!e)
      return rankOp.emitOpError("has a memory_plan entry without key, offset "
                                "and bytes: ")
             << entry;
    auto [key, offset, bytes, stage, mb] = *e;
    if (!e->inside(t.arenaBytes))
      return rankOp.emitOpError("places '")
             << key.getValue() << "' outside its arena of " << t.arenaBytes
             << " bytes";
    Buffer buffer{key.str(), offset.getInt(), bytes.getInt(),
                  BufferKind::Temp, Element::F32};
    if (!stage || !mb) {
      // Persistent, or (a stage, no microbatch) under zero 2 a whole
      // gradient or its shard, buffers of the step (Note [Sharded
      // gradients]).
      std::optional<PhaseKey> parsed = PhaseKey::parse(key.getValue());
      bool grad = parsed && parsed->kind == KeyKind::Grad;
      if (stage) {
        if (!grad && !key.getValue().starts_with(gradShardKeyOf("")))
          return rankOp.emitOpError("plans '")
                 << key.getValue() << "' for stage " << stage.getInt()
                 << " and no microbatch; only gradients are planned so";
        buffer.kind = BufferKind::StepGrad;
      } else {
        buffer.kind = !parsed                          ? BufferKind::State
                      : parsed->kind == KeyKind::Param ? BufferKind::Param
                      : grad                           ? BufferKind::Grad
                      : parsed->kind == KeyKind::Loss  ? BufferKind::Loss
                                                       : BufferKind::State;
      }
      t.persistentId[buffer.name] = static_cast<int>(t.buffers.size());
      if (buffer.kind == BufferKind::Loss)
        t.loss = static_cast<int>(t.buffers.size());
      t.buffers.push_back(std::move(buffer));
      continue;
    }
    int s = static_cast<int>(stage.getInt()), j = static_cast<int>(mb.getInt());
    if (key.getValue().starts_with("scratch.")) {
      scratchAt[{s, key.str(), j}] = offset.getInt();
      continue;
    }
    // F.I back from the host (Note [Offload in the IR]): F.I's type, its
    // own buffer.
    StringRef stashKey = key.getValue();
    std::string reloadedPrefix = reloadedKeyOf("");
    bool reloaded = stashKey.consume_front(reloadedPrefix);
    std::optional<PhaseKey> parsed = PhaseKey::parse(stashKey);
    if (!parsed || s < 0 || s >= static_cast<int>(keyTypes.size()) ||
        !keyTypes[s].count(stashKey.str()) ||
        (reloaded && parsed->kind != KeyKind::SavedF))
      return rankOp.emitOpError("plans '")
             << key.getValue() << "' of stage " << s
             << ", which no phase of that stage reads or yields";
    switch (parsed->kind) {
    case KeyKind::In:
    case KeyKind::DOut: {
      int producer = parsed->kind == KeyKind::In ? s - 1 : s + 1;
      buffer.kind =
          onThisRank(producer) ? BufferKind::Yielded : BufferKind::Received;
      break;
    }
    case KeyKind::Input:
    case KeyKind::Label:
      buffer.kind = BufferKind::Data;
      break;
    default:
      buffer.kind = BufferKind::Yielded;
      break;
    }
    if (reloaded)
      buffer.kind = BufferKind::Reloaded;
    buffer.element =
        elementOf(keyTypes[s][stashKey.str()]).value_or(Element::F32);
    buffer.name = llvm::formatv("{0} of stage {1} mb {2}", key.getValue(), s, j);
    keyed[{s, key.str(), j}] = static_cast<int>(t.buffers.size());
    t.buffers.push_back(std::move(buffer));
  }
  return readHostPlan(rankOp);
}

LogicalResult RankBuilder::readHostPlan(RankOp rankOp) {
  ArrayAttr plan = rankOp.getHostMemoryPlanAttr();
  if (!plan)
    return success();
  if (!rankOp.getHostArenaBytesAttr() || !rankOp.getHostPeakBytesAttr())
    return rankOp.emitOpError("has a host_memory_plan without "
                              "host_arena_bytes and host_peak_bytes");
  t.hostArenaBytes = rankOp.getHostArenaBytesAttr().getInt();
  t.hostPeakBytes = rankOp.getHostPeakBytesAttr().getInt();
  for (Attribute entry : plan) {
    std::optional<PlanEntry> e = planEntryOf(entry);
    if (!e || !e->stage || !e->mb)
      return rankOp.emitOpError("has a host_memory_plan entry without key, "
                                "stage, mb, offset and bytes: ")
             << entry;
    auto [key, offset, bytes, stage, mb] = *e;
    int s = static_cast<int>(stage.getInt()), j = static_cast<int>(mb.getInt());
    std::optional<PhaseKey> parsed = PhaseKey::parse(key.getValue());
    if (!parsed || parsed->kind != KeyKind::SavedF || s < 0 ||
        s >= static_cast<int>(keyTypes.size()) ||
        !keyTypes[s].count(key.str()))
      return rankOp.emitOpError("plans a host copy of '")
             << key.getValue() << "' of stage " << s
             << ", which is not a stash of that stage";
    if (!e->inside(t.hostArenaBytes))
      return rankOp.emitOpError("places the host copy of '")
             << key.getValue() << "' outside its host arena of "
             << t.hostArenaBytes << " bytes";
    Buffer buffer{llvm::formatv("host {0} of stage {1} mb {2}",
                                key.getValue(), s, j)
                      .str(),
                  offset.getInt(), bytes.getInt(), BufferKind::Host,
                  elementOf(keyTypes[s][key.str()]).value_or(Element::F32)};
    hostCopies[{s, j}][key.str()] = static_cast<int>(t.buffers.size());
    t.buffers.push_back(std::move(buffer));
  }
  return success();
}

LogicalResult RankBuilder::copyFrame(OrderOp &op, bool offload,
                                     Operation *at) {
  auto copies = hostCopies.find({op.stage, op.microbatch});
  if (copies == hostCopies.end())
    return at->emitOpError("copies the stash of stage ")
           << op.stage << " microbatch " << op.microbatch
           << ", which has no host copy in the memory plan";
  op.frame = static_cast<int>(t.frames.size());
  for (const auto &[key, host] : copies->second) {
    std::string deviceKey = offload ? key : reloadedKeyOf(key);
    auto device = keyed.find({op.stage, deviceKey, op.microbatch});
    if (device == keyed.end())
      return at->emitOpError("copies '")
             << deviceKey << "' of stage " << op.stage << " microbatch "
             << op.microbatch << ", which the memory plan lacks";
    t.frames.push_back(offload ? device->second : host);
    t.frames.push_back(offload ? host : device->second);
  }
  op.frameSize = static_cast<int>(t.frames.size()) - op.frame;
  return success();
}

LogicalResult RankBuilder::readParamsAndData() {
  std::string optimizer = t.optimizer;
  for (auto [s, stage] : llvm::enumerate(stages)) {
    if (!onThisRank(static_cast<int>(s)))
      continue;
    for (ParamOp op : stage.getBody().front().getOps<ParamOp>()) {
      if (llvm::any_of(t.params, [&](const Param &held) {
            return held.name == op.getName();
          }))
        continue; // tied to an earlier stage of this rank: one copy
      Param param;
      param.name = op.getName().str();
      auto idOf = [&](const std::string &key) -> int {
        auto it = t.persistentId.find(key);
        return it == t.persistentId.end() ? -1 : it->second;
      };
      param.param = idOf(keyOf(KeyKind::Param, param.name));
      param.grad = idOf(keyOf(KeyKind::Grad, param.name));
      std::vector<std::string> state =
          optimizerStateKeys(optimizer, param.name);
      param.state0 = state.size() > 0 ? idOf(state[0]) : -1;
      param.state1 = state.size() > 1 ? idOf(state[1]) : -1;
      if (param.param < 0 || param.grad < 0 || param.state0 < 0 ||
          (state.size() > 1 && param.state1 < 0))
        return op.emitOpError("has no place in the memory plan of rank ")
               << rank << " (parameter, gradient or optimizer state)";
      std::optional<Element> element = elementOf(op.getType());
      if (!element || (*element != Element::F32 && *element != Element::BF16))
        return op.emitOpError("is ")
               << op.getType()
               << "; the runtime trains f32 and bf16 parameters only";
      // The working copy has the parameter's type; its gradient, state and
      // master copy are f32 (Note [Master weights]).
      t.buffers[param.param].element = *element;
      param.master = idOf(masterKeyOf(param.name));
      param.gradShard = idOf(gradShardKeyOf(param.name));
      if ((param.gradShard >= 0) !=
          (t.buffers[param.grad].kind == BufferKind::StepGrad))
        return op.emitOpError("has ")
               << (param.gradShard >= 0 ? "a gradient shard beside a "
                                          "persistent whole gradient"
                                        : "a whole gradient of the step "
                                          "and no shard to keep its sum")
               << " in the memory plan of rank " << rank;
      if (*element != Element::F32 && param.master < 0)
        return op.emitOpError("has no master copy in the memory plan of rank ")
               << rank;
      // The dialect's kinds and the ABI's share names (Note [ABI enums]).
      switch (op.getInit()) {
#define ZBC_CODEGEN_INIT(NAME, Name, value)                                    \
  case InitKind::Name:                                                         \
    param.init = ZBC_RT_##NAME;                                                \
    break;
        ZBC_RT_INIT_KINDS(ZBC_CODEGEN_INIT)
#undef ZBC_CODEGEN_INIT
      }
      param.scale = op.getScale() ? op.getScale()->convertToDouble() : 0.0;
      param.shape = shapeOf(op.getType());
      t.params.push_back(std::move(param));
    }
    // Data: every input and label key a phase of the stage reads.
    for (PhaseOp phase : stage.getPhases())
      for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                       phase.getArgKeyList())) {
        std::optional<PhaseKey> parsed = PhaseKey::parse(key);
        if (!parsed || (parsed->kind != KeyKind::Input &&
                        parsed->kind != KeyKind::Label) ||
            dataIndex.count(key.str()))
          continue;
        Data data;
        data.key = key.str();
        data.element = *elementOf(arg.getType());
        if (data.element == Element::I32 || data.element == Element::I64)
          data.bound = indexDataBound(pipeline, key);
        data.shape = shapeOf(arg.getType());
        dataIndex[data.key] = static_cast<int>(t.data.size());
        t.data.push_back(std::move(data));
      }
  }
  if (std::optional<CountedLabels> counted = countedLabelsOf(pipeline)) {
    auto index = dataIndex.find(counted->key);
    if (index != dataIndex.end()) {
      t.countedLabels = index->second;
      t.ignoreIndex = counted->ignoreIndex;
    }
  }
  // The throughput unit: the label elements of one microbatch.
  for (StageOp stage : stages)
    for (LabelOp label : stage.getBody().front().getOps<LabelOp>())
      if (!t.tokensPerMicrobatch)
        t.tokensPerMicrobatch = cast<RankedTensorType>(label.getType()).getNumElements();
  return success();
}

Slot RankBuilder::yieldTarget(int stage, const PhaseKey &key) const {
  Slot slot;
  std::tie(slot.stage, slot.key) = bufferOfYield(stage, key.str(), p().rankOfStage);
  return slot;
}

LogicalResult RankBuilder::layOut(int stage, PhaseOp phase, ComputeKind kind,
                                  YieldsKept kept,
                                  std::shared_ptr<const RecomputePlan> plan) {
  PhaseLayout layout;
  layout.phase = phase;
  layout.stage = stage;
  layout.kind = kind;
  layout.kept = kept;
  layout.function =
      llvm::formatv("stage{0}_{1}{2}", stage, stringifyComputeKind(kind),
                    kept == YieldsKept::AllButRebuilt ? "_for_recompute" : "");
  layout.plan = plan;
  auto push = [&](Slot slot) {
    layout.slots.push_back(std::move(slot));
    return static_cast<int>(layout.slots.size()) - 1;
  };
  auto checkElement = [&](Value value, Operation *at) -> LogicalResult {
    if (elementOf(value.getType()))
      return success();
    return at->emitOpError("has a value of type ")
           << value.getType()
           << "; the runtime has kernels for " << runtimeElements()
           << " only (floats f32 and bf16, integer indices)";
  };
  Block &body = phase.getBodyBlock();
  // (build() checked the arguments' element types, before anything read
  // them.)
  for (auto [arg, key] : llvm::zip(body.getArguments(), phase.getArgKeyList())) {
    std::optional<PhaseKey> parsed = PhaseKey::parse(key);
    if (parsed && parsed->kind == KeyKind::Param)
      continue; // named by its buffer id
    if (kept == YieldsKept::OnlyRebuilt && !plan->reads(arg))
      continue; // what the R does not run reads it
    Slot slot;
    slot.stage = stage;
    slot.key = key.str();
    layout.slotOf[arg] = push(slot);
  }
  // Note [Selective recomputation]: an R reads what a kept F.I holds from
  // its buffer.
  // In the kept keys' order: the map's own order follows the values'
  // addresses, which differ from run to run.
  if (kept == YieldsKept::OnlyRebuilt) {
    SmallVector<std::pair<std::string, Value>> readKept;
    for (const auto &[value, key] : plan->readFromKept)
      readKept.push_back({key, value});
    llvm::sort(readKept, [](const auto &a, const auto &b) {
      return a.first < b.first;
    });
    for (const auto &[key, value] : readKept) {
      Slot slot;
      slot.stage = stage;
      slot.key = key;
      layout.slotOf[value] = push(slot);
    }
  }
  YieldOp yield = phase.getYield();
  for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues())) {
    // A yield this compute drops (Note [Recomputation in the IR]) stays in
    // its scratch, where its op writes it.
    if (!writesIntoBuffer(kept, key, plan.get()))
      continue;
    if (isa<BlockArgument>(value) && !layout.slotOf.count(value))
      return yield.emitOpError("yields a parameter of its phase under '")
             << key << "'; the code generator writes yielded values where "
                       "the op computing them writes, and no op does";
    // A value with a slot already (an argument passed through, e.g. the
    // input gradient of a stage of one bias_add, or a value yielded under
    // an earlier key) is copied into this key's buffer.
    int target = push(yieldTarget(stage, *PhaseKey::parse(key)));
    if (auto first = layout.slotOf.find(value); first != layout.slotOf.end()) {
      layout.copies.push_back(
          {first->second, target,
           cast<RankedTensorType>(value.getType()).getNumElements()});
      continue;
    }
    layout.slotOf[value] = target;
  }
  if (kind == ComputeKind::F) { // an R reads the data F loaded
    for (const auto &[key, index] : dataIndex) {
      // Only this stage's data: a key some phase of the stage reads.
      bool read = false;
      for (PhaseOp other : stages[stage].getPhases())
        for (StringRef argKey : other.getArgKeyList())
          read |= argKey == key;
      if (!read)
        continue;
      int slot = -1;
      for (auto [arg, argKey] :
           llvm::zip(body.getArguments(), phase.getArgKeyList()))
        if (argKey == key)
          slot = layout.slotOf[arg];
      if (slot < 0) {
        Slot data;
        data.stage = stage;
        data.key = key;
        slot = push(data);
      }
      layout.loads.push_back({slot, index});
    }
  }
  for (Operation &op : body.without_terminator()) {
    if (!layout.runsOp(&op))
      continue;
    ++layout.kernelCalls;
    for (Value result : op.getResults()) {
      if (failed(checkElement(result, &op)))
        return failure();
      if (layout.slotOf.count(result))
        continue;
      Slot slot;
      slot.source = Slot::Value;
      slot.value = result;
      layout.slotOf[result] = push(slot);
    }
    auto kernel = dyn_cast<KernelOpInterface>(&op);
    if (kernel && kernel.getWorkspaceBytes()) {
      Slot slot;
      slot.source = Slot::Workspace;
      slot.op = &op;
      layout.workspaceSlotOf[&op] = push(slot);
    }
  }
  layout.kernelCalls +=
      static_cast<int>(layout.loads.size() + layout.copies.size());
  for (StringRef key : yield.getKeyList()) {
    std::optional<PhaseKey> parsed = PhaseKey::parse(key);
    if (parsed && (parsed->kind == KeyKind::Grad ||
                   (parsed->kind == KeyKind::Loss && layout.addsLoss())))
      ++layout.kernelCalls;
  }
  int index = 0;
  for (Operation &op : body)
    layout.opIndex[&op] = index++;
  t.layouts[{stage, static_cast<int>(kind), static_cast<int>(kept)}] =
      std::move(layout);
  return success();
}

FailureOr<int> RankBuilder::frameOf(const PhaseLayout &layout, int microbatch,
                                    const std::string &opName, Operation *at) {
  int start = static_cast<int>(t.frames.size());
  // Note [Offload in the IR]: the backward of an offloaded microbatch reads
  // its stash where the reload put it.
  bool reloaded = layout.kind != ComputeKind::F &&
                  offloaded.count({layout.stage, microbatch});
  for (const Slot &slot : layout.slots) {
    if (slot.source == Slot::Keyed) {
      std::string key = slot.key;
      if (reloaded && slot.stage == layout.stage &&
          PhaseKey::parse(key)->kind == KeyKind::SavedF)
        key = reloadedKeyOf(key);
      auto found = keyed.find({slot.stage, key, microbatch});
      if (found == keyed.end())
        return at->emitOpError("needs a buffer for '")
               << key << "' of stage " << slot.stage << " microbatch "
               << microbatch << ", which the memory plan lacks";
      t.frames.push_back(found->second);
      continue;
    }
    Operation *op = slot.source == Slot::Value ? slot.value.getDefiningOp()
                                               : slot.op;
    int result = slot.source == Slot::Value
                     ? static_cast<int>(cast<OpResult>(slot.value).getResultNumber())
                     : -1;
    std::string key =
        scratchKey(layout.kind, layout.opIndex.lookup(op), result);
    auto placed = scratchAt.find({layout.stage, key, microbatch});
    if (placed == scratchAt.end())
      return at->emitOpError("needs '")
             << key << "' of " << opName << ", which the memory plan lacks";
    Buffer buffer;
    int index = static_cast<int>(&slot - layout.slots.data());
    buffer.offset = placed->second;
    if (slot.source == Slot::Value) {
      buffer.bytes = getNumBytes(slot.value.getType());
      buffer.element = *elementOf(slot.value.getType());
      buffer.kind = BufferKind::Temp;
      buffer.name = llvm::formatv("slot {0} of {1} ({2})", index, opName,
                                  op->getName());
    } else {
      buffer.bytes = cast<KernelOpInterface>(op).getWorkspaceBytes();
      buffer.kind = BufferKind::Workspace;
      buffer.name = llvm::formatv("workspace of {0} ({1})", opName,
                                  op->getName());
    }
    t.frames.push_back(static_cast<int>(t.buffers.size()));
    t.buffers.push_back(std::move(buffer));
  }
  return start;
}

LogicalResult RankBuilder::readOrder() {
  const std::vector<sched::ProgramOp> &ops = p().ranks[rank].ops;
  std::vector<int> pos(ops.size(), 0);
  for (auto [k, index] : llvm::enumerate(memory.opAt))
    pos[index] = static_cast<int>(k);
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].group >= 0)
      pos[i] = pos[ops[i].group];
  t.positions = static_cast<int>(memory.opAt.size());
  // A dependence on a group's member waits for the group: it completes as
  // one (Note [p2p semantics]).
  auto unitOf = [&](int op) { return ops[op].group >= 0 ? ops[op].group : op; };
  std::vector<bool> waited(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    const sched::ProgramOp &sop = ops[i];
    Operation *irOp = model.ops[rank][i];
    OrderOp op;
    std::vector<int> &waits =
        sop.group >= 0 ? t.ops[sop.group].waits : op.waits; // a group waits
                                                            // for its members
    op.stage = sop.stage;
    op.microbatch = sop.microbatch;
    op.position = pos[i];
    op.name = p().name(sop);
    op.topLevel = sop.group < 0;
    for (int d : sop.deps) {
      int unit = unitOf(d);
      // Computes are done when the next op starts; transfers and copies
      // are waited for.
      if ((ops[unit].what == sched::OpClass::Compute &&
           !sched::isCopy(ops[unit].kind)) ||
          waited[unit])
        continue;
      waited[unit] = true;
      waits.push_back(unit);
    }
    if (sop.what == sched::OpClass::Compute && sched::isCopy(sop.kind)) {
      bool offload = sop.kind == sched::Kind::O;
      op.what = offload ? OpKind::Offload : OpKind::Reload;
      if (failed(copyFrame(op, offload, irOp)))
        return failure();
      t.ops.push_back(std::move(op));
      continue;
    }
    switch (sop.what) {
    case sched::OpClass::Compute: {
      ComputeKind kind = toComputeKind(sop.kind);
      op.what = computeWhat(kind);
      std::vector<ComputeKind> kinds = {kind};
      StageOp stage = stages[sop.stage];
      if (kind == ComputeKind::BW && !stage.getPhase(ComputeKind::BW)) {
        kinds = {ComputeKind::B, ComputeKind::W}; // fused BW of a split stage
        // What B hands W lives and dies inside this compute: to the ledger,
        // a temporary (Note [Program memory]).
        for (StringRef key : stage.getPhase(ComputeKind::W).getArgKeyList())
          if (PhaseKey::parse(key)->kind == KeyKind::SavedB)
            if (auto it = keyed.find({sop.stage, key.str(), sop.microbatch});
                it != keyed.end())
              t.buffers[it->second].kind = BufferKind::Temp;
      }
      YieldsKept kept =
          yieldsKeptBy(kind, recomputed.count({sop.stage, sop.microbatch}) > 0);
      for (auto [n, k] : llvm::enumerate(kinds)) {
        auto it = t.layouts.find(
            {sop.stage, static_cast<int>(k), static_cast<int>(kept)});
        if (it == t.layouts.end())
          return irOp->emitOpError("runs ")
                 << stringifyComputeKind(k) << " of stage " << sop.stage
                 << ", which has no such phase";
        FailureOr<int> frame =
            frameOf(it->second, sop.microbatch, op.name, irOp);
        if (failed(frame))
          return failure();
        int size = static_cast<int>(it->second.slots.size());
        if (n == 0) {
          op.frame = *frame;
          op.frameSize = size;
        } else {
          op.secondFrame = *frame;
          op.secondFrameSize = size;
        }
        op.phases.push_back(&it->second);
      }
      break;
    }
    case sched::OpClass::Send:
    case sched::OpClass::Recv: {
      bool send = sop.what == sched::OpClass::Send;
      op.what = send ? OpKind::Send : OpKind::Recv;
      op.peer = sop.peer;
      op.gradient = sop.payload != sched::Product::Activation;
      int stage = sop.stage;
      std::string key = sop.key;
      if (!send) {
        // Received into the consumer's in.I / d_out.I.
        stage = sched::consumerOf(sop.payload, stage);
        std::optional<PhaseKey> parsed = PhaseKey::parse(key);
        if (!parsed || !parsed->counterpart())
          return irOp->emitOpError("carries '") << key << "', not a message key";
        key = parsed->counterpart()->str();
      }
      auto it = keyed.find({stage, key, sop.microbatch});
      if (it == keyed.end())
        return irOp->emitOpError("has no buffer in the memory plan ('")
               << key << "' of stage " << stage << " microbatch "
               << sop.microbatch << ")";
      op.buffer = it->second;
      break;
    }
    case sched::OpClass::Collective: {
      if (isValueCollective(irOp))
        return irOp->emitOpError("is a collective of a microbatch's values, "
                                 "which the rank programs do not run yet");
      op.what = sop.collective == sched::CollectiveKind::AllReduce
                    ? OpKind::AllReduce
                : sop.collective == sched::CollectiveKind::ReduceScatter
                    ? OpKind::ReduceScatter
                    : OpKind::AllGather;
      op.over = sop.over;
      op.firstMember = static_cast<int>(t.collectiveParams.size());
      for (StringRef name : irOp->getAttrOfType<ArrayAttr>("params")
                                .getAsValueRange<StringAttr>()) {
        auto held = llvm::find_if(
            t.params, [&](const Param &param) { return param.name == name; });
        if (held == t.params.end())
          return irOp->emitOpError("reduces '")
                 << name << "', which rank " << rank << " does not hold";
        t.collectiveParams.push_back(
            static_cast<int>(held - t.params.begin()));
      }
      op.memberCount = static_cast<int>(t.collectiveParams.size()) -
                       op.firstMember;
      break;
    }
    case sched::OpClass::Group:
      op.what = OpKind::Group;
      op.firstMember = sop.members.empty() ? -1 : sop.members.front();
      op.memberCount = static_cast<int>(sop.members.size());
      for (auto [n, member] : llvm::enumerate(sop.members))
        if (member != op.firstMember + static_cast<int>(n))
          return irOp->emitOpError("has members that do not follow it in "
                                   "order");
      break;
    }
    t.ops.push_back(std::move(op));
  }
  // Each parameter's step follows the last compute that reads it or yields
  // its gradient (the last W of its stage, as a rule).
  for (auto [index, param] : llvm::enumerate(t.params)) {
    std::string paramKey = keyOf(KeyKind::Param, param.name);
    std::string gradKey = keyOf(KeyKind::Grad, param.name);
    int last = -1;
    for (auto [i, op] : llvm::enumerate(t.ops))
      for (const PhaseLayout *layout : op.phases) {
        bool touches = false;
        for (StringRef key : layout->phase.getArgKeyList())
          touches |= key == paramKey;
        for (StringRef key : layout->phase.getYield().getKeyList())
          touches |= key == gradKey;
        if (touches)
          last = static_cast<int>(i);
      }
    if (last >= 0)
      t.ops[last].updates.push_back(static_cast<int>(index));
    else
      t.updatesAtEnd.push_back(static_cast<int>(index));
  }
  for (const OrderOp &op : t.ops) {
    int calls = 0;
    for (const PhaseLayout *layout : op.phases)
      calls += layout->kernelCalls;
    t.maxKernelCalls = std::max(t.maxKernelCalls, calls);
  }
  return success();
}

FailureOr<RankTables> RankBuilder::build(RankOp rankOp) {
  stages.assign(pipeline.getBody().front().getOps<StageOp>().begin(),
                pipeline.getBody().front().getOps<StageOp>().end());
  t.rank = rank;
  t.ranks = static_cast<int>(p().ranks.size());
  t.stages = p().numStages();
  t.microbatches = p().microbatches;
  t.model = pipeline.getSymName().str();
  auto schedule = program->getAttrOfType<StringAttr>("schedule");
  t.schedule = (schedule ? schedule.getValue() : program.getSymName()).str();
  t.optimizer = program.getOptimizer().value_or("sgd").str();
  keyTypes.resize(stages.size());
  for (auto [s, stage] : llvm::enumerate(stages))
    for (PhaseOp phase : stage.getPhases()) {
      for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                       phase.getArgKeyList()))
        keyTypes[s][key.str()] = arg.getType();
      YieldOp yield = phase.getYield();
      for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues()))
        keyTypes[s][key.str()] = value.getType();
    }
  for (auto [s, stage] : llvm::enumerate(stages))
    if (onThisRank(static_cast<int>(s)))
      for (PhaseOp phase : stage.getPhases())
        for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                         phase.getArgKeyList()))
          if (!elementOf(arg.getType()))
            return phase.emitOpError("reads '")
                   << key << "' as " << arg.getType()
                   << "; the runtime has kernels for " << runtimeElements()
                   << " only (floats f32 and bf16, integer indices)";
  if (failed(readPlan(rankOp)) || failed(readParamsAndData()))
    return failure();
  recomputed = recomputedOf(p().ranks[rank].ops);
  for (const sched::ProgramOp &op : p().ranks[rank].ops)
    if (op.what == sched::OpClass::Compute && op.kind == sched::Kind::O)
      offloaded.insert({op.stage, op.microbatch});
  for (auto [s, stage] : llvm::enumerate(stages)) {
    if (!onThisRank(static_cast<int>(s)))
      continue;
    for (PhaseOp phase : stage.getPhases())
      if (failed(layOut(static_cast<int>(s), phase, phase.getKind(),
                        YieldsKept::All)))
        return failure();
    // The two ways a recomputed microbatch runs F (Note [Recomputation in
    // the IR]), where one is.
    bool recomputes = llvm::any_of(recomputed, [&](std::pair<int, int> sj) {
      return sj.first == static_cast<int>(s);
    });
    PhaseOp forward = stage.getPhase(ComputeKind::F);
    auto plan = std::make_shared<const RecomputePlan>(recomputePlanOf(stage));
    if (recomputes &&
        (failed(layOut(static_cast<int>(s), forward, ComputeKind::F,
                       YieldsKept::AllButRebuilt, plan)) ||
         failed(layOut(static_cast<int>(s), forward, ComputeKind::R,
                       YieldsKept::OnlyRebuilt, plan))))
      return failure();
  }
  if (failed(readOrder()))
    return failure();
  return std::move(t);
}

} // namespace

FailureOr<std::vector<RankTables>>
codegen::buildRankTables(ProgramOp program, PipelineOp pipeline) {
  ProgramModel model = modelOfProgram(program, pipeline);
  FailureOr<std::vector<RankMemory>> memory =
      analyzeProgramMemory(program, pipeline, model);
  if (failed(memory))
    return failure();
  SmallVector<RankOp> rankOps(program.getBody().front().getOps<RankOp>());
  if (rankOps.size() != memory->size())
    return program.emitOpError("has ")
           << rankOps.size() << " zb.rank ops for " << memory->size()
           << " ranks";
  std::string modelHash = modelHashOf(pipeline);
  // Parameters whose stages run on more than one rank (their groups'
  // order: Note [Collective groups]).
  std::vector<Tied> tied;
  for (const auto &[group, ranks] : tiedHoldersOf(pipeline, program))
    tied.push_back({std::string(tiedParamOf(group)), ranks});
  std::vector<RankTables> tables;
  for (auto [r, rankOp] : llvm::enumerate(rankOps)) {
    RankBuilder builder(program, pipeline, model, (*memory)[r],
                        static_cast<int>(r));
    FailureOr<RankTables> t = builder.build(rankOp);
    if (failed(t))
      return failure();
    t->modelHash = modelHash;
    t->hfConfig = pipeline.getHfConfig().value_or("").str();
    t->tied = tied;
    for (Param &param : t->params)
      for (auto [g, entry] : llvm::enumerate(tied))
        if (entry.name == param.name)
          param.tied = static_cast<int>(g);
    t->replicas = static_cast<int>(program.getReplicas().value_or(1));
    Sharding sharding = shardingOf(program);
    t->zero = sharding.gradsSharded ? 2 : sharding.sharded ? 1 : 0;
    // Each all-reduce's group as the runtime names it (zbc_runtime.h).
    for (OrderOp &op : t->ops) {
      if (!zbc_rt_op_is_collective(static_cast<int32_t>(op.what)))
        continue;
      op.peer = op.over == kReplicasGroup ? ZBC_RT_GROUP_REPLICAS
                                          : ZBC_RT_GROUP_PIPELINE;
      std::string_view param = tiedParamOf(op.over);
      for (auto [g, entry] : llvm::enumerate(tied))
        if (!param.empty() && entry.name == param)
          op.peer = static_cast<int>(g);
    }
    tables.push_back(std::move(*t));
  }
  return tables;
}
