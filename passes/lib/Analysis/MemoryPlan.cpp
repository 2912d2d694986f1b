//===- MemoryPlan.cpp - one arena per rank, every buffer at a fixed offset ===//
//
// Note [Memory plan] (MemoryPlan.h): the persistent part in declaration
// order, then the scratch region, then the buffers of Note [Program memory]
// packed greedily by size over their intervals in the rank's order. Phase
// scratch is packed the same way over the ops of the body.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/MemoryPlan.h"

#include "zbc/Analysis/StageAnalysis.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"

#include <algorithm>
#include <map>
#include <optional>
#include <numeric>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

int64_t alignUp(int64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

/// Something to place: `bytes` needed over [from, until) of some timeline.
struct Item {
  int64_t bytes = 0;
  int from = 0, until = 0;
  int64_t offset = 0;
};

/// Places `items` in `order`, each at the lowest aligned offset where it
/// overlaps, in time, nothing placed in the bytes it would take. Returns
/// the extent of the layout.
int64_t packInOrder(std::vector<Item> &items, const std::vector<size_t> &order) {
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> taken; // [offset, end) in time
  int64_t extent = 0;
  for (size_t i : order) {
    Item &item = items[i];
    taken.clear();
    for (size_t j : placed)
      if (items[j].from < item.until && item.from < items[j].until)
        taken.push_back({items[j].offset, items[j].offset + items[j].bytes});
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (begin >= offset + item.bytes)
        break;
      offset = std::max(offset, alignUp(end));
    }
    item.offset = offset;
    extent = std::max(extent, offset + item.bytes);
    placed.push_back(i);
  }
  return alignUp(extent);
}

/// Greedy by size: largest first (ties: earlier first, then in order),
/// TFLite's "greedy by size".
int64_t packGreedyBySize(std::vector<Item> &items) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].bytes != items[b].bytes)
      return items[a].bytes > items[b].bytes;
    return items[a].from < items[b].from;
  });
  return packInOrder(items, order);
}

} // namespace

bool zbc::isYieldedIntoBuffer(StringRef key) {
  std::optional<PhaseKey> parsed = PhaseKey::parse(key);
  if (!parsed)
    return false;
  switch (parsed->kind) {
  case KeyKind::Out:
  case KeyKind::DIn:
  case KeyKind::SavedF:
  case KeyKind::SavedB:
    return true;
  default:
    return false;
  }
}

namespace {

/// The scratch items of phase bodies run one after another (one phase, or a
/// fused BW's B then W): each value from its op to its last use on the
/// common timeline, each workspace at its op. A value yielded into a buffer
/// takes no scratch, except what B hands W in a fused sequence (B.I), which
/// lives in the sequence's scratch from its op in B to its last use in W.
class ScratchItems {
public:
  void add(PhaseOp phase, bool handsOverSavedB, PhaseOp reader = {}) {
    Block &body = phase.getBodyBlock();
    llvm::DenseMap<Operation *, int> position;
    int base = next;
    for (Operation &op : body)
      position[&op] = next++;
    llvm::DenseSet<Value> intoBuffers;
    llvm::DenseMap<Value, std::string> handedOver;
    YieldOp yield = phase.getYield();
    for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues())) {
      std::optional<PhaseKey> parsed = PhaseKey::parse(key);
      if (handsOverSavedB && parsed && parsed->kind == KeyKind::SavedB)
        handedOver[value] = key.str();
      else if (isYieldedIntoBuffer(key))
        intoBuffers.insert(value);
    }
    for (Operation &op : body) {
      int from = position[&op];
      for (Value result : op.getResults()) {
        if (intoBuffers.contains(result))
          continue;
        int until = from;
        for (Operation *user : result.getUsers())
          until = std::max(until, position.lookup(user));
        auto key = handedOver.find(result);
        if (key != handedOver.end()) {
          // Until its last reader in W, which runs after all of B.
          until = std::max(until, base + static_cast<int>(body.getOperations().size()));
          until = std::max(until, lastUseIn(reader, key->second));
          keys.push_back(key->second);
        } else {
          keys.push_back("");
        }
        items.push_back({getNumBytes(result.getType()), from, until + 1, 0});
        values.push_back(result);
        ops.push_back(nullptr);
      }
      if (int64_t bytes = workspaceBytes(&op)) {
        items.push_back({bytes, from, from + 1, 0});
        values.push_back(Value());
        ops.push_back(&op);
        keys.push_back("");
      }
    }
  }

  /// Packs every item; fills `scratch` (its `bytes` the whole extent) and
  /// the offsets of what is handed over.
  int64_t pack(PhaseScratch &scratch, llvm::StringMap<int64_t> *handedOver) {
    int64_t bytes = packGreedyBySize(items);
    for (size_t i = 0; i < items.size(); ++i) {
      if (values[i])
        scratch.offsetOf[values[i]] = items[i].offset;
      else
        scratch.workspaceOf[ops[i]] = items[i].offset;
      if (handedOver && !keys[i].empty())
        (*handedOver)[keys[i]] = items[i].offset;
    }
    scratch.bytes = bytes;
    return bytes;
  }

private:
  /// The position (on the common timeline, W placed after B) of the last op
  /// of `reader` that reads its argument `key`.
  int lastUseIn(PhaseOp reader, StringRef key) {
    if (!reader)
      return 0;
    int position = next, last = 0;
    llvm::DenseMap<Operation *, int> at;
    for (Operation &op : reader.getBodyBlock())
      at[&op] = position++;
    for (auto [arg, argKey] : llvm::zip(reader.getBodyBlock().getArguments(),
                                        reader.getArgKeyList()))
      if (argKey == key)
        for (Operation *user : arg.getUsers())
          last = std::max(last, at.lookup(user));
    return last;
  }

  std::vector<Item> items;
  std::vector<Value> values;
  std::vector<Operation *> ops;
  std::vector<std::string> keys;
  int next = 0;
};

} // namespace

PhaseScratch zbc::planPhaseScratch(PhaseOp phase) {
  ScratchItems items;
  items.add(phase, /*handsOverSavedB=*/false);
  PhaseScratch scratch;
  items.pack(scratch, nullptr);
  return scratch;
}

FusedScratch zbc::planFusedScratch(StageOp stage) {
  PhaseOp b = stage.getPhase(ComputeKind::B), w = stage.getPhase(ComputeKind::W);
  FusedScratch fused;
  // B's values, then W's, on one timeline: W's items start after B's.
  ScratchItems items;
  items.add(b, /*handsOverSavedB=*/true, w);
  items.add(w, /*handsOverSavedB=*/false);
  PhaseScratch all;
  fused.bytes = items.pack(all, &fused.handedOver);
  for (PhaseOp phase : {b, w}) {
    PhaseScratch &part = phase == b ? fused.b : fused.w;
    part.bytes = fused.bytes;
    phase.getBodyBlock().walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (auto it = all.offsetOf.find(result); it != all.offsetOf.end())
          part.offsetOf[result] = it->second;
      if (auto it = all.workspaceOf.find(op); it != all.workspaceOf.end())
        part.workspaceOf[op] = it->second;
    });
  }
  return fused;
}

std::string zbc::scratchKey(ComputeKind kind) {
  return ("scratch." + stringifyComputeKind(kind)).str();
}

std::vector<std::string> zbc::optimizerStateKeys(StringRef optimizer,
                                                 StringRef name) {
  if (optimizer == "adamw")
    return {("exp_avg." + name).str(), ("exp_avg_sq." + name).str()};
  return {("momentum." + name).str()};
}

std::vector<RankPlan>
zbc::planProgramMemory(ProgramOp program, PipelineOp pipeline,
                       const ProgramModel &model,
                       const std::vector<RankMemory> &memory) {
  const sched::Program &p = model.program;
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  std::string optimizer = program.getOptimizer().value_or("sgd").str();

  // The scratch each phase kind of each stage needs (a fused BW of a split
  // stage runs B, then W, in the same region).
  std::vector<std::map<ComputeKind, int64_t>> scratchOf(stages.size());
  std::vector<std::optional<FusedScratch>> fusedOf(stages.size());
  for (auto [s, stage] : llvm::enumerate(stages)) {
    for (PhaseOp phase : stage.getPhases())
      scratchOf[s][phase.getKind()] = planPhaseScratch(phase).bytes;
    if (!scratchOf[s].count(ComputeKind::BW)) {
      fusedOf[s] = planFusedScratch(stage);
      scratchOf[s][ComputeKind::BW] = fusedOf[s]->bytes;
    }
  }

  std::vector<RankPlan> plans(memory.size());
  for (size_t r = 0; r < memory.size(); ++r) {
    RankPlan &plan = plans[r];
    int64_t offset = 0;
    auto persist = [&](std::string key, int64_t bytes) {
      plan.persistent.push_back({std::move(key), -1, -1, offset, bytes, 0,
                                 static_cast<int>(memory[r].opAt.size())});
      offset += alignUp(bytes);
    };
    // Parameters, then their gradients, then their state, so that each kind
    // is one contiguous run (a checkpoint writes them as they lie).
    SmallVector<ParamOp> params;
    bool holdsLoss = false;
    for (int s = 0; s < p.numStages(); ++s) {
      if (p.rankOfStage[s] != static_cast<int>(r))
        continue;
      for (ParamOp param : stages[s].getBody().front().getOps<ParamOp>())
        params.push_back(param);
      for (PhaseOp phase : stages[s].getPhases())
        for (StringRef key : phase.getYield().getKeyList())
          holdsLoss |= key == "loss";
    }
    for (ParamOp param : params)
      persist(keyOf(KeyKind::Param, param.getName()),
              getNumBytes(param.getType()));
    for (ParamOp param : params)
      persist(keyOf(KeyKind::Grad, param.getName()),
              getNumBytes(param.getType()));
    for (ParamOp param : params)
      for (std::string &key : optimizerStateKeys(optimizer, param.getName()))
        persist(std::move(key), getNumBytes(param.getType()));
    if (holdsLoss)
      persist("loss", memory[r].lossAccumulator);

    // The buffers, and each compute's scratch over its own position. What a
    // fused BW's B hands its W lives inside that compute's scratch
    // (planFusedScratch): it is placed with it, below.
    auto handedOverInFusedBW = [&](const BufferLife &buffer) {
      return buffer.role == BufferRole::Kept && buffer.until == buffer.from &&
             fusedOf[buffer.stage] &&
             fusedOf[buffer.stage]->handedOver.count(buffer.key);
    };
    std::vector<Item> items;
    std::vector<const BufferLife *> packed, inScratch;
    for (const BufferLife &buffer : memory[r].buffers) {
      if (handedOverInFusedBW(buffer)) {
        inScratch.push_back(&buffer);
        continue;
      }
      items.push_back({buffer.bytes, buffer.firstWrite(), buffer.until, 0});
      packed.push_back(&buffer);
    }
    std::vector<Placement> scratch;
    const std::vector<sched::ProgramOp> &ops = p.ranks[r].ops;
    for (auto [k, index] : llvm::enumerate(memory[r].opAt)) {
      const sched::ProgramOp &op = ops[index];
      if (op.what != sched::OpClass::Compute)
        continue;
      ComputeKind kind = toComputeKind(op.kind);
      int64_t bytes = scratchOf[op.stage][kind];
      if (bytes == 0)
        continue;
      scratch.push_back({scratchKey(kind), op.stage, op.microbatch, 0, bytes});
      items.push_back({bytes, static_cast<int>(k), static_cast<int>(k) + 1, 0});
    }
    int64_t extent = packGreedyBySize(items);
    for (auto [buffer, item] : llvm::zip(packed, items))
      plan.buffers.push_back({buffer->key, buffer->stage, buffer->microbatch,
                              offset + item.offset, buffer->bytes, item.from,
                              item.until});
    for (auto [placement, item] :
         llvm::zip(scratch, llvm::drop_begin(items, packed.size()))) {
      placement.offset = offset + item.offset;
      placement.from = item.from;
      placement.until = item.until;
      plan.buffers.push_back(placement);
    }
    for (const BufferLife *buffer : inScratch) {
      const Placement *region = nullptr;
      for (const Placement &placement : plan.buffers)
        if (placement.key == scratchKey(ComputeKind::BW) &&
            placement.stage == buffer->stage &&
            placement.microbatch == buffer->microbatch)
          region = &placement;
      int64_t at = region ? region->offset : offset;
      plan.buffers.push_back(
          {buffer->key, buffer->stage, buffer->microbatch,
           at + fusedOf[buffer->stage]->handedOver.lookup(buffer->key),
           buffer->bytes, buffer->firstWrite(), buffer->until});
    }
    plan.arenaBytes = offset + extent;
    plan.peakBytes = memory[r].peak;
  }
  return plans;
}
