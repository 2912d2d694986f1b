//===- MemoryPlan.cpp - one arena per rank, every buffer at a fixed offset ===//
//
// Note [Memory plan] (MemoryPlan.h): the persistent part in declaration
// order, then the buffers of Note [Program memory] and every compute's body
// values packed greedily by size over one fine timeline of the rank's order.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/MemoryPlan.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Analysis/StageAnalysis.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Support/StageBoundary.h"

#include <algorithm>
#include <map>
#include <set>
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
///
/// What is placed is kept in order of offset, so an item reads it from the
/// bottom and stops at the first gap it fits: a rank of a large model
/// places tens of thousands of values among thousands of stashed buffers,
/// and the memory fit plans more than once (Note [Rank budget]).
int64_t packInOrder(std::vector<Item> &items, const std::vector<size_t> &order) {
  std::vector<size_t> placed; // by offset
  int64_t extent = 0;
  for (size_t i : order) {
    Item &item = items[i];
    int64_t offset = 0;
    for (size_t j : placed) {
      const Item &other = items[j];
      if (other.offset >= offset + item.bytes)
        break; // nothing from here up is below the gap: it fits
      if (other.from < item.until && item.from < other.until)
        offset = std::max(offset, alignUp(other.offset + other.bytes));
    }
    item.offset = offset;
    extent = std::max(extent, offset + item.bytes);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), i,
                                   [&](size_t a, size_t b) {
                                     return items[a].offset < items[b].offset;
                                   }),
                  i);
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

std::pair<int, std::string>
zbc::bufferOfYield(int stage, StringRef key, const std::vector<int> &rankOfStage) {
  std::optional<PhaseKey> parsed = PhaseKey::parse(key);
  if (parsed && (parsed->kind == KeyKind::Out || parsed->kind == KeyKind::DIn)) {
    int consumer = consumerStage(parsed->kind == KeyKind::Out, stage);
    if (consumer >= 0 && consumer < static_cast<int>(rankOfStage.size()) &&
        rankOfStage[consumer] == rankOfStage[stage])
      return {consumer, parsed->counterpart()->str()};
  }
  return {stage, key.str()};
}

std::string zbc::scratchKey(ComputeKind phase, int op, int result) {
  std::string key = ("scratch." + stringifyComputeKind(phase)).str() + "." +
                    std::to_string(op) + ".";
  return key + (result < 0 ? std::string("ws") : std::to_string(result));
}

namespace {

/// The bodies a compute of `kind` runs on `stage` (an R runs F's).
SmallVector<PhaseOp, 2> bodiesOf(StageOp stage, ComputeKind kind) {
  if (kind == ComputeKind::BW && !stage.getPhase(ComputeKind::BW))
    return {stage.getPhase(ComputeKind::B), stage.getPhase(ComputeKind::W)};
  if (kind == ComputeKind::R)
    return {stage.getPhase(ComputeKind::F)};
  return {stage.getPhase(kind)};
}

} // namespace

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
  Sharding sharding = shardingOf(program);

  // The values of what each kind of compute runs on each stage, with the
  // length of its timeline: the same for every microbatch and rank, so
  // computed once (an F apart for microbatches that are recomputed: Note
  // [Recomputation in the IR]).
  struct Bodies {
    std::vector<BodyValue> values;
    int length = 0;
  };
  std::map<std::tuple<int, ComputeKind, YieldsKept>, Bodies> bodiesAt;
  std::map<int, RecomputePlan> recomputePlans; // by stage, where one runs
  auto bodies = [&](const sched::ProgramOp &op,
                    const std::set<std::pair<int, int>> &recomputed)
      -> const Bodies & {
    ComputeKind kind = toComputeKind(op.kind);
    YieldsKept kept =
        yieldsKeptBy(kind, recomputed.count({op.stage, op.microbatch}) > 0);
    auto [it, inserted] = bodiesAt.try_emplace({op.stage, kind, kept});
    if (inserted) {
      const RecomputePlan *plan = nullptr;
      if (kept != YieldsKept::All) {
        auto [at, fresh] = recomputePlans.try_emplace(op.stage);
        if (fresh)
          at->second = recomputePlanOf(stages[op.stage]);
        plan = &at->second;
      }
      it->second.values = bodyValuesOf(bodiesOf(stages[op.stage], kind),
                                       it->second.length, kept, plan);
    }
    return it->second;
  };

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
        if (llvm::none_of(params, [&](ParamOp held) {
              return held.getName() == param.getName();
            }))
          params.push_back(param); // a tied parameter once per rank
      for (PhaseOp phase : stages[s].getPhases())
        for (StringRef key : phase.getYield().getKeyList())
          holdsLoss |= key == "loss";
    }
    // (Note [Master weights] for what each holds.)
    for (ParamOp param : params)
      persist(keyOf(KeyKind::Param, param.getName()),
              paramHoldingOf(param.getType(), sharding).param);
    // Under zero 2 the whole gradient and its shard are buffers of the
    // step, placed below with the others (Note [Sharded gradients]).
    for (ParamOp param : params)
      if (!sharding.gradsSharded)
        persist(keyOf(KeyKind::Grad, param.getName()),
                paramHoldingOf(param.getType(), sharding).grad);
    for (ParamOp param : params)
      if (int64_t bytes = paramHoldingOf(param.getType(), sharding).master)
        persist(masterKeyOf(param.getName()), bytes);
    for (ParamOp param : params)
      for (std::string &key : optimizerStateKeys(optimizer, param.getName()))
        persist(std::move(key),
                paramHoldingOf(param.getType(), sharding).stateCopy);
    if (holdsLoss)
      persist("loss", memory[r].lossAccumulator);

    // Everything else on the fine timeline of Note [Memory plan].
    const std::vector<sched::ProgramOp> &ops = p.ranks[r].ops;
    std::set<std::pair<int, int>> recomputed = recomputedOf(ops);
    int slots = 1;
    auto runsBody = [&](const sched::ProgramOp &op) {
      return op.what == sched::OpClass::Compute && !sched::isCopy(op.kind);
    };
    for (int index : memory[r].opAt)
      if (runsBody(ops[index]))
        slots = std::max(slots, bodies(ops[index], recomputed).length + 1);
    using BufferId = std::tuple<int, std::string, int>; // stage, key, mb
    std::map<BufferId, int> writtenAt;
    std::map<BufferId, std::pair<int, int>> handedOver;
    std::vector<Item> items, scratchItems;
    std::vector<Placement> placements, scratch;
    for (auto [k, index] : llvm::enumerate(memory[r].opAt)) {
      const sched::ProgramOp &op = ops[index];
      if (!runsBody(op))
        continue;
      int base = static_cast<int>(k) * slots;
      for (const BodyValue &v : bodies(op, recomputed).values) {
        int from = base + v.from, until = base + v.until + 1;
        if (v.handedOver) {
          handedOver[{op.stage, v.bufferKey, op.microbatch}] = {from, until};
          continue;
        }
        if (!v.bufferKey.empty()) {
          auto [stage, key] = bufferOfYield(op.stage, v.bufferKey, p.rankOfStage);
          writtenAt[{stage, key, op.microbatch}] = from;
          continue;
        }
        scratchItems.push_back({v.bytes, from, until, 0});
        scratch.push_back({scratchKey(v.phase, v.op, v.result), op.stage,
                           op.microbatch, 0, v.bytes, from, until});
      }
    }
    // The buffers first, then the scratch, in the plan as in the packing.
    for (const BufferLife &buffer : memory[r].buffers) {
      BufferId id{buffer.stage, buffer.key, buffer.microbatch};
      int from = buffer.from * slots, until = buffer.until * slots;
      if (auto it = handedOver.find(id); it != handedOver.end())
        std::tie(from, until) = it->second;
      else if (auto it = writtenAt.find(id); it != writtenAt.end())
        from = it->second;
      else
        from = buffer.firstWrite() * slots;
      items.push_back({buffer.bytes, from, std::max(until, from + 1), 0});
      placements.push_back({buffer.key, buffer.stage, buffer.microbatch, 0,
                            buffer.bytes, from, std::max(until, from + 1)});
    }
    items.insert(items.end(), scratchItems.begin(), scratchItems.end());
    placements.insert(placements.end(), scratch.begin(), scratch.end());
    int64_t extent = packGreedyBySize(items);
    for (auto [placement, item] : llvm::zip(placements, items)) {
      placement.offset = offset + item.offset;
      plan.buffers.push_back(std::move(placement));
    }
    for (Placement &placement : plan.persistent)
      placement.until = static_cast<int>(memory[r].opAt.size()) * slots;
    plan.arenaBytes = offset + extent;
    plan.peakBytes = memory[r].peak;

    // The host arena: the host copies of offloaded stashes, packed the
    // same way over the rank's order (a copy's bytes are written by the
    // copy queue, so positions are fine enough).
    std::vector<Item> hostItems;
    for (const BufferLife &buffer : memory[r].hostBuffers)
      hostItems.push_back({buffer.bytes, buffer.from, buffer.until, 0});
    plan.hostArenaBytes = packGreedyBySize(hostItems);
    for (auto [buffer, item] : llvm::zip(memory[r].hostBuffers, hostItems))
      plan.hostBuffers.push_back({buffer.key, buffer.stage, buffer.microbatch,
                                  item.offset, item.bytes, item.from,
                                  item.until});
    plan.hostPeakBytes = memory[r].hostPeak;
  }
  return plans;
}

FailureOr<std::vector<RankPlan>> zbc::planProgramMemory(ProgramOp program) {
  PipelineOp pipeline = pipelineOfProgram(program);
  if (!pipeline)
    return program.emitError("zb-plan-memory needs the program's pipeline "
                             "(its tensors) to plan its memory; the program "
                             "names none");
  ProgramModel model = modelOfProgram(program, pipeline);
  FailureOr<std::vector<RankMemory>> memory =
      analyzeProgramMemory(program, pipeline, model);
  if (failed(memory))
    return failure();
  return planProgramMemory(program, pipeline, model, *memory);
}
