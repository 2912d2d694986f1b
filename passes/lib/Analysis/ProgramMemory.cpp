//===- ProgramMemory.cpp - every byte a rank holds, op by op --------------===//
//
// Note [Program memory] (ProgramMemory.h) in three steps: what each stage's
// phases read, yield and need as scratch (from the pipeline); where each
// (stage, microbatch, phase) and each transfer sits in its rank's order
// (from the model); and the buffers as intervals of positions, summed with a
// difference array. Linear in the ops and keys.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/ProgramMemory.h"


#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Support/StageBoundary.h"
#include "zbc/contracts/Shards.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

Sharding zbc::shardingOf(ProgramOp program) {
  Sharding sharding;
  sharding.replicas = program.getReplicas().value_or(1);
  int64_t zero = program.getZero().value_or(0);
  sharding.sharded = sharding.replicas > 1 && zero > 0;
  sharding.gradsSharded = sharding.replicas > 1 && zero > 1;
  return sharding;
}

ParamHolding zbc::paramHoldingOf(Type paramType, Sharding sharding) {
  auto type = cast<RankedTensorType>(paramType);
  int64_t elements = type.getNumElements();
  // Whole, or padded to whole shards and a shard (Note [Sharded optimizer]).
  int64_t whole = sharding.sharded
                      ? paddedElements(elements, sharding.replicas)
                      : elements;
  int64_t own = sharding.sharded ? shardElements(elements, sharding.replicas)
                                 : elements;
  ParamHolding holding;
  holding.param = whole * (type.getElementTypeBitWidth() / 8);
  holding.grad = whole * 4;
  if (sharding.gradsSharded) { // Note [Sharded gradients]
    holding.accumulator = holding.grad;
    holding.gradShard = own * 4;
    holding.grad = 0;
  }
  holding.stateCopy = own * 4;
  if (isa<FloatType>(type.getElementType()) &&
      type.getElementTypeBitWidth() < 32)
    holding.master = own * 4;
  return holding;
}

std::string zbc::masterKeyOf(StringRef name) {
  return ("master." + name).str();
}

std::string zbc::gradShardKeyOf(StringRef name) {
  return ("grad_shard." + name).str();
}

FailureOr<int> zbc::optimizerCopies(StringRef optimizer) {
  if (optimizer == "sgd")
    return 1;
  if (optimizer == "adamw")
    return 2;
  return failure();
}

namespace {

/// The phases of a stage in order (F, then B and W, or BW), as the slots a
/// key's producer and last reader are counted in.
struct PhaseInfo {
  ComputeKind kind;
  int64_t temporaries = 0; // the largest live set of its body
};

/// A per-microbatch key of a stage.
struct KeyInfo {
  KeyKind kind;
  std::string key;
  int64_t bytes = 0;
  int producer = -1;   // phase slot that yields it; -1: provided
  int lastReader = -1; // phase slot; -1: no phase of the stage reads it
  bool readByR = false; // an F's input an R reads too: live until the R
  bool rebuilt = false;  // an F.I an R writes: live from the R
};

struct StageInfo {
  std::vector<PhaseInfo> phases;
  std::vector<KeyInfo> keys; // activation keys, each once
  /// Each parameter it declares and its bytes: a parameter tied between
  /// two stages of one rank is held there once.
  std::vector<std::pair<std::string, ParamHolding>> params;
  int64_t lossBytes = 0; // the f32 loss accumulator, if the stage yields it
  int64_t fusedTemporaries = 0; // B then W as one BW (split stages only)
  // F's body when its microbatch is recomputed, and the R's (Note
  // [Selective recomputation]).
  int64_t forwardKeepingInputsTemporaries = 0, recomputeTemporaries = 0;
};

/// The largest set of values live at once while `phases` run one after the
/// other (bodyValuesOf's lifetimes).
int64_t temporariesOf(ArrayRef<PhaseOp> phases,
                      YieldsKept kept = YieldsKept::All,
                      const RecomputePlan *plan = nullptr) {
  int n = 0;
  std::vector<BodyValue> values = bodyValuesOf(phases, n, kept, plan);
  std::vector<int64_t> delta(n + 1, 0);
  for (const BodyValue &v : values) {
    delta[v.from] += v.bytes;
    delta[v.until + 1] -= v.bytes;
  }
  int64_t live = 0, peak = 0;
  for (int i = 0; i < n; ++i)
    peak = std::max(peak, live += delta[i]);
  return peak;
}

StageInfo stageInfoOf(StageOp stage, Sharding sharding) {
  StageInfo info;
  for (ParamOp param : stage.getBody().front().getOps<ParamOp>())
    info.params.emplace_back(param.getName().str(),
                             paramHoldingOf(param.getType(), sharding));
  llvm::StringMap<size_t> indexOf;
  auto keyAt = [&](StringRef key, Type type) -> KeyInfo & {
    auto [it, inserted] = indexOf.try_emplace(key, info.keys.size());
    if (inserted)
      info.keys.push_back({PhaseKey::parse(key)->kind, key.str(),
                           getNumBytes(type), -1, -1});
    return info.keys[it->second];
  };
  SmallVector<PhaseOp> phases = stage.getPhases();
  if (phases.size() == 3)
    info.fusedTemporaries = temporariesOf({phases[1], phases[2]});
  RecomputePlan plan = recomputePlanOf(stage);
  info.forwardKeepingInputsTemporaries =
      temporariesOf({phases[0]}, YieldsKept::AllButRebuilt, &plan);
  info.recomputeTemporaries =
      temporariesOf({phases[0]}, YieldsKept::OnlyRebuilt, &plan);
  for (auto [slot, phase] : llvm::enumerate(phases)) {
    info.phases.push_back({phase.getKind(), temporariesOf({phase})});
    for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                     phase.getArgKeyList()))
      if (isActivationKey(PhaseKey::parse(key)->kind)) {
        KeyInfo &read = keyAt(key, arg.getType());
        read.lastReader = static_cast<int>(slot);
        read.readByR |=
            phase.getKind() == ComputeKind::F && plan.reads(arg);
      }
    for (auto [key, value] : llvm::zip(phase.getYield().getKeyList(),
                                       phase.getYield().getValues())) {
      KeyKind kind = PhaseKey::parse(key)->kind;
      if (kind == KeyKind::Loss) {
        // An accumulator, f32 whatever the loss's type (Note [Master
        // weights]'s rule for accumulators).
        info.lossBytes = 4;
        continue;
      }
      if (isActivationKey(kind)) {
        KeyInfo &made = keyAt(key, value.getType());
        made.producer = static_cast<int>(slot);
        made.rebuilt = phase.getKind() == ComputeKind::F && plan.rebuilds(key);
      }
    }
  }
  return info;
}

/// Where a compute kind's (stage, microbatch) is recorded: the phase slot
/// it runs (BW is slot 1, as B), and an R apart, after the phases.
constexpr int kRecomputeSlot = 3;
int slotOf(ComputeKind kind) {
  switch (kind) {
  case ComputeKind::F:
    return 0;
  case ComputeKind::B:
  case ComputeKind::BW:
    return 1;
  case ComputeKind::W:
    return 2;
  case ComputeKind::R:
    return kRecomputeSlot;
  }
  return 0;
}

} // namespace

namespace {
/// The bytes of `buffers` live at each of `n` positions (a difference
/// array over their [from, until)).
std::vector<int64_t> heldAtEachPosition(const std::vector<BufferLife> &buffers,
                                        int n) {
  std::vector<int64_t> delta(n + 1, 0);
  for (const BufferLife &b : buffers) {
    delta[b.from] += b.bytes;
    delta[b.until] -= b.bytes;
  }
  std::vector<int64_t> held(n, 0);
  int64_t running = 0;
  for (int k = 0; k < n; ++k)
    held[k] = running += delta[k];
  return held;
}
} // namespace

std::set<std::pair<int, int>>
zbc::recomputedOf(const std::vector<sched::ProgramOp> &ops) {
  std::set<std::pair<int, int>> recomputed;
  for (const sched::ProgramOp &op : ops)
    if (op.what == sched::OpClass::Compute && op.kind == sched::Kind::R)
      recomputed.insert({op.stage, op.microbatch});
  return recomputed;
}

YieldsKept zbc::yieldsKeptBy(ComputeKind kind, bool recomputed) {
  if (kind == ComputeKind::R)
    return YieldsKept::OnlyRebuilt;
  if (kind == ComputeKind::F && recomputed)
    return YieldsKept::AllButRebuilt;
  return YieldsKept::All;
}

bool zbc::writesIntoBuffer(YieldsKept kept, StringRef key,
                           const RecomputePlan *plan) {
  if (!isYieldedIntoBuffer(key))
    return false;
  if (kept == YieldsKept::All)
    return true;
  return plan->rebuilds(key) == (kept == YieldsKept::OnlyRebuilt);
}

bool zbc::runsOp(YieldsKept kept, const RecomputePlan *plan, Operation *op) {
  return kept != YieldsKept::OnlyRebuilt || isa<YieldOp>(op) ||
         plan->runs.contains(op);
}

bool zbc::usesYield(YieldsKept kept, StringRef key, const RecomputePlan *plan) {
  if (writesIntoBuffer(kept, key, plan))
    return true;
  std::optional<PhaseKey> parsed = PhaseKey::parse(key);
  if (!parsed)
    return false;
  return parsed->kind == KeyKind::Grad ||
         (parsed->kind == KeyKind::Loss && kept != YieldsKept::OnlyRebuilt);
}

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

std::vector<BodyValue> zbc::bodyValuesOf(ArrayRef<PhaseOp> phases, int &length,
                                         YieldsKept kept,
                                         const RecomputePlan *plan) {
  auto runs = [&](Operation *op) { return runsOp(kept, plan, op); };
  llvm::DenseMap<Operation *, int> position;
  int n = 0;
  for (PhaseOp phase : phases)
    for (Operation &op : PhaseOp(phase).getBodyBlock())
      position[&op] = n++;
  length = n;
  // A yield uses a value only under a key the compute does something with.
  auto usedBy = [&](Operation *user, Value value) {
    auto yield = dyn_cast<YieldOp>(user);
    if (!yield)
      return runs(user);
    for (auto [key, yielded] : llvm::zip(yield.getKeyList(), yield.getValues()))
      if (yielded == value && usesYield(kept, key, plan))
        return true;
    return false;
  };
  auto lastUse = [&](Value value, int from) {
    int until = from;
    for (Operation *user : value.getUsers())
      if (usedBy(user, value))
        until = std::max(until, position.lookup(user));
    return until;
  };
  std::vector<BodyValue> values;
  auto intoBuffer = [&](StringRef key) {
    return writesIntoBuffer(kept, key, plan);
  };
  // A value an R reads from a kept F.I is in that buffer already.
  auto inBufferAlready = [&](Value value) {
    return isa<BlockArgument>(value) ||
           (kept == YieldsKept::OnlyRebuilt && plan->readFromKept.count(value));
  };
  for (size_t i = 0; i < phases.size(); ++i) {
    PhaseOp phase = phases[i];
    ComputeKind label =
        kept == YieldsKept::OnlyRebuilt ? ComputeKind::R : phase.getKind();
    llvm::StringMap<int> laterUse;
    for (PhaseOp later : phases.drop_front(i + 1))
      for (auto [arg, key] : llvm::zip(later.getBodyBlock().getArguments(),
                                       later.getArgKeyList()))
        laterUse[key] = std::max(laterUse.lookup(key), lastUse(arg, 0));
    YieldOp yield = phase.getYield();
    // A yielded value lives in its key's buffer: until a later phase of the
    // sequence reads it (handed over), else past the sequence's end.
    auto yieldedInto = [&](BodyValue &v, StringRef key) {
      v.bufferKey = key.str();
      if (laterUse.count(key)) {
        v.handedOver = true;
        v.until = std::max(v.until, laterUse.lookup(key));
      } else {
        v.until = n - 1;
      }
    };
    int index = 0;
    for (Operation &op : phase.getBodyBlock()) {
      if (!runs(&op)) {
        ++index;
        continue;
      }
      int from = position[&op];
      for (auto [r, result] : llvm::enumerate(op.getResults())) {
        BodyValue v{label, index, static_cast<int>(r), from,
                    lastUse(result, from), getNumBytes(result.getType())};
        // The first key with a buffer is where its op writes it; the
        // others are copies made at the yield (below).
        for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues()))
          if (value == result && intoBuffer(key)) {
            yieldedInto(v, key);
            break;
          }
        values.push_back(v);
      }
      if (&op == yield.getOperation()) {
        // Note [Yield copies]: a value yielded into a second buffer, or an
        // argument yielded into one (passed through: the input gradient of
        // a stage of one bias_add), is copied there at the yield
        // (convert-zb-to-emitc's zbc_rt_copy): that buffer is written, and
        // live, from the yield on.
        llvm::SmallPtrSet<Value, 4> placed;
        for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues())) {
          if (!intoBuffer(key))
            continue;
          bool copied = inBufferAlready(value) || !placed.insert(value).second;
          if (!copied)
            continue;
          BodyValue v{label, index, -2, from, from,
                      getNumBytes(value.getType())};
          yieldedInto(v, key);
          values.push_back(v);
        }
      }
      if (auto kernel = dyn_cast<KernelOpInterface>(&op))
        if (int64_t bytes = kernel.getWorkspaceBytes())
          values.push_back({label, index, -1, from, from, bytes});
      ++index;
    }
  }
  return values;
}


namespace {
/// Note [Sharded gradients]: under zero 2 each whole gradient of rank `r`
/// is a buffer from the first compute writing it (a W or BW of a stage
/// declaring it) to the first op waiting for the collective that sums it
/// (the step's end where none does), and its shard one from that
/// collective to the step's end, where the update reads it.
void addAccumulators(RankMemory &mem, const sched::Program &p,
                     const ProgramModel &model,
                     const std::vector<StageInfo> &stages, int r,
                     const std::vector<int> &pos,
                     const std::vector<int> &release) {
  const std::vector<sched::ProgramOp> &ops = p.ranks[r].ops;
  struct Life {
    int stage = -1, from = -1, sum = -1, until = -1;
    int64_t bytes = 0, shardBytes = 0;
  };
  std::map<std::string, Life> lives;
  for (int s = 0; s < p.numStages(); ++s)
    if (p.rankOfStage[s] == r)
      for (const auto &[name, holding] : stages[s].params)
        if (holding.accumulator > 0)
          lives.try_emplace(name, Life{s, -1, -1, -1, holding.accumulator,
                                       holding.gradShard});
  if (lives.empty())
    return;
  for (size_t i = 0; i < ops.size(); ++i) {
    const sched::ProgramOp &op = ops[i];
    if (op.what == sched::OpClass::Compute &&
        (op.kind == sched::Kind::W || op.kind == sched::Kind::BW) &&
        op.stage < static_cast<int>(stages.size())) {
      for (const auto &[name, holding] : stages[op.stage].params)
        if (auto it = lives.find(name);
            it != lives.end() && it->second.from < 0)
          it->second.from = pos[i];
    } else if (op.what == sched::OpClass::Collective &&
               op.collective != sched::CollectiveKind::AllGather) {
      for (StringRef name : collectiveParamsOf(model.ops[r][i]))
        if (auto it = lives.find(name.str()); it != lives.end()) {
          it->second.sum = pos[i];
          it->second.until = release[i];
        }
    }
  }
  int n = static_cast<int>(mem.opAt.size());
  for (auto &[name, life] : lives) {
    if (life.from < 0 || life.sum < 0)
      continue; // no compute of this rank writes it, or nothing sums it
    mem.buffers.push_back({"gradient " + name, keyOf(KeyKind::Grad, name),
                           life.stage, -1, BufferRole::Accumulator,
                           life.bytes, life.from,
                           std::max(life.until, life.from + 1)});
    mem.buffers.push_back({"gradient shard " + name, gradShardKeyOf(name),
                           life.stage, -1, BufferRole::Received,
                           life.shardBytes, life.sum, n});
  }
}
} // namespace

FailureOr<std::vector<RankMemory>>
zbc::analyzeProgramMemory(ProgramOp program, PipelineOp pipeline,
                          const ProgramModel &model) {
  const sched::Program &p = model.program;
  SmallVector<StageOp> stageOps(pipeline.getBody().front().getOps<StageOp>());
  if (static_cast<int>(stageOps.size()) != p.numStages())
    return program.emitOpError("places ")
           << p.numStages() << " stages but its pipeline @"
           << pipeline.getSymName() << " has " << stageOps.size();
  // Note [Value collectives]: a value's buffer lives from the phase that
  // makes it (or the collective that brings it) to the last phase that
  // reads it. No phase makes or reads one yet, so no byte count of such a
  // program would be exact: refuse it rather than undercount.
  for (const std::vector<Operation *> &ops : model.ops)
    for (Operation *op : ops)
      if (isValueCollective(op))
        return op->emitOpError("moves the value '")
               << op->getAttrOfType<StringAttr>("key").getValue()
               << "', which no phase of the pipeline makes or reads: the "
                  "memory model cannot place its buffer";
  std::vector<StageInfo> stages;
  for (StageOp stage : stageOps)
    stages.push_back(stageInfoOf(stage, shardingOf(program)));
  int copies = 1;
  if (auto optimizer = program.getOptimizer()) {
    FailureOr<int> n = optimizerCopies(*optimizer);
    if (failed(n))
      return program.emitOpError("optimizer '")
             << *optimizer << "' is not 'sgd' or 'adamw'";
    copies = *n;
  }

  std::vector<RankMemory> result(p.ranks.size());
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const std::vector<sched::ProgramOp> &ops = p.ranks[r].ops;
    RankMemory &mem = result[r];
    // Positions: a member sits where its group does.
    std::vector<int> pos(ops.size(), 0);
    int n = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].group >= 0) {
        pos[i] = pos[ops[i].group];
        continue;
      }
      pos[i] = n++;
      mem.opAt.push_back(static_cast<int>(i));
    }
    mem.temporaries.assign(n, 0);
    // Where each phase of each (stage, microbatch) runs, each recv is, and
    // where each send's buffer is released (the first op waiting for it).
    std::map<std::tuple<int, int, int>, int> computeAt; // stage, mb, slot
    std::map<std::tuple<sched::Product, int, int, std::string>, int> recvAt,
        sendRelease;
    std::set<std::pair<int, int>> recomputed = recomputedOf(ops);
    // Note [Offload in the IR]: per offloaded (stage, microbatch), where its
    // copies are issued and where the first op waiting for each is.
    struct StashCopies {
      int offloadAt = -1, offloadWaited = -1, reloadAt = -1, reloadWaited = -1;
    };
    std::map<std::pair<int, int>, StashCopies> stashCopies;
    std::vector<int> release(ops.size(), n);
    for (size_t i = 0; i < ops.size(); ++i)
      for (int d : ops[i].deps) {
        release[d] = std::min(release[d], pos[i]);
        for (int m : ops[d].members)
          release[m] = std::min(release[m], pos[i]);
      }
    for (size_t i = 0; i < ops.size(); ++i) {
      const sched::ProgramOp &op = ops[i];
      if (op.what == sched::OpClass::Compute && sched::isCopy(op.kind)) {
        StashCopies &c = stashCopies[{op.stage, op.microbatch}];
        (op.kind == sched::Kind::O ? c.offloadAt : c.reloadAt) = pos[i];
        (op.kind == sched::Kind::O ? c.offloadWaited : c.reloadWaited) =
            release[i];
      } else if (op.what == sched::OpClass::Compute) {
        ComputeKind kind = toComputeKind(op.kind);
        computeAt[{op.stage, op.microbatch, slotOf(kind)}] = pos[i];
        if (op.stage >= static_cast<int>(stages.size()))
          continue;
        const StageInfo &info = stages[op.stage];
        bool split = info.phases.size() == 3;
        if (kind == ComputeKind::BW && split) {
          // A fused backward of a split stage runs B, then W: it reads what
          // W reads, and its scratch is that of the two bodies in sequence.
          computeAt[{op.stage, op.microbatch, 2}] = pos[i];
          mem.temporaries[pos[i]] = info.fusedTemporaries;
          continue;
        }
        if (kind == ComputeKind::R) {
          mem.temporaries[pos[i]] = info.recomputeTemporaries;
          continue;
        }
        if (kind == ComputeKind::F && recomputed.count({op.stage, op.microbatch})) {
          mem.temporaries[pos[i]] = info.forwardKeepingInputsTemporaries;
          continue;
        }
        for (const PhaseInfo &phase : info.phases)
          if (phase.kind == kind)
            mem.temporaries[pos[i]] = phase.temporaries;
      } else if (op.what == sched::OpClass::Recv) {
        recvAt[{op.payload, op.stage, op.microbatch, op.key}] = pos[i];
      } else if (op.what == sched::OpClass::Send) {
        sendRelease[{op.payload, op.stage, op.microbatch, op.key}] = release[i];
      }
    }

    // The whole step's state (a tied parameter once per rank).
    std::set<std::string> paramsHeld;
    for (int s = 0; s < p.numStages(); ++s)
      if (p.rankOfStage[s] == static_cast<int>(r)) {
        for (const auto &[name, holding] : stages[s].params)
          if (paramsHeld.insert(name).second) {
            mem.params += holding.param;
            mem.grads += holding.grad;
            mem.masters += holding.master;
            mem.optimizerState += copies * holding.stateCopy;
          }
        mem.lossAccumulator += stages[s].lossBytes;
      }
    addAccumulators(mem, p, model, stages, static_cast<int>(r), pos,
                    release);

    auto add = [&](std::string name, const KeyInfo &key, int s, int j,
                   BufferRole role, int from, int until) {
      // A buffer its compute writes and the same op reads back (what B
      // hands W in a fused BW) is never live between ops, but the memory
      // plan still gives it a place: keep it, empty.
      bool writtenByCompute =
          role != BufferRole::Received && role != BufferRole::Data;
      if (key.bytes > 0 && (until > from || (writtenByCompute && until == from)))
        mem.buffers.push_back(
            {std::move(name), key.key, s, j, role, key.bytes, from, until});
    };
    for (int s = 0; s < p.numStages(); ++s) {
      if (p.rankOfStage[s] != static_cast<int>(r))
        continue;
      const StageInfo &info = stages[s];
      for (int j = 0; j < p.microbatches; ++j) {
        auto at = [&](int slot) -> std::optional<int> {
          auto it = computeAt.find({s, j, slot});
          if (it == computeAt.end())
            return std::nullopt;
          return it->second;
        };
        std::string of = " of stage " + std::to_string(s) + " mb " +
                         std::to_string(j);
        // Note [Recomputation in the IR]: what the R reads of F's inputs
        // lives until the R.
        std::optional<int> recomputeAt = at(kRecomputeSlot);
        for (const KeyInfo &key : info.keys) {
          std::optional<int> last =
              key.lastReader >= 0 ? at(key.lastReader) : std::nullopt;
          if (recomputeAt && key.readByR)
            last = last ? std::max(*last, *recomputeAt) : *recomputeAt;
          // Sent on: out.I forward, d_in.I backward, when the consumer is
          // on another rank (a consumer here counts it as its own input).
          if (key.kind == KeyKind::Out || key.kind == KeyKind::DIn) {
            bool act = key.kind == KeyKind::Out;
            int consumer = consumerStage(act, s);
            if (consumer < 0 || consumer >= p.numStages() ||
                p.rankOfStage[consumer] == static_cast<int>(r))
              continue;
            std::optional<int> made = at(key.producer);
            auto it = sendRelease.find({act ? sched::Product::Activation
                                            : sched::Product::InputGrad,
                                        s, j, key.key});
            if (made)
              add("send " + key.key + of, key, s, j, BufferRole::Sent,
                  *made + 1, it != sendRelease.end() ? it->second : n);
            continue;
          }
          if (!last)
            continue; // read by no phase of the stage
          int from = -1;
          BufferRole role = BufferRole::Kept;
          switch (key.kind) {
          case KeyKind::In:
          case KeyKind::DOut: {
            bool act = key.kind == KeyKind::In;
            int producer = act ? s - 1 : s + 1;
            if (producer < 0 || producer >= p.numStages())
              continue;
            std::string sent = PhaseKey::parse(key.key)->counterpart()->str();
            if (p.rankOfStage[producer] == static_cast<int>(r)) {
              role = BufferRole::Passed;
              auto it = computeAt.find({producer, j, act ? 0 : 1});
              if (it != computeAt.end())
                from = it->second + 1;
            } else {
              role = BufferRole::Received;
              auto it = recvAt.find({act ? sched::Product::Activation
                                         : sched::Product::InputGrad,
                                     producer, j, sent});
              if (it != recvAt.end())
                from = it->second;
            }
            break;
          }
          case KeyKind::Input:
          case KeyKind::Label:
            role = BufferRole::Data;
            if (std::optional<int> f = at(0))
              from = *f;
            break;
          default: // F.I, B.I: after the phase that yields them (an F.I
                   // the R of a recomputed microbatch rebuilds: after it)
            if (key.producer >= 0)
              if (std::optional<int> made =
                      recomputeAt && key.rebuilt ? recomputeAt
                          : at(key.producer))
                from = *made + 1;
            break;
          }
          auto copied = stashCopies.find({s, j});
          if (from >= 0 && key.kind == KeyKind::SavedF &&
              copied != stashCopies.end() && copied->second.offloadAt >= 0) {
            // Note [Offload in the IR]: on the device until the offload is
            // waited for, on the host from the offload until the reload is,
            // and on the device again, in a buffer of its own, from the
            // reload.
            const StashCopies &c = copied->second;
            add(key.key + of, key, s, j, role, from,
                std::max(from, c.offloadWaited));
            if (c.reloadAt >= 0) {
              add(reloadedKeyOf(key.key) + of, key, s, j, BufferRole::Reloaded,
                  c.reloadAt, *last + 1);
              mem.buffers.back().key = reloadedKeyOf(key.key);
            }
            if (key.bytes > 0)
              mem.hostBuffers.push_back(
                  {"host " + key.key + of, key.key, s, j, BufferRole::Offloaded,
                   key.bytes, c.offloadAt,
                   c.reloadAt >= 0 ? std::max(c.reloadWaited, c.offloadAt + 1)
                                   : n});
            continue;
          }
          if (from >= 0)
            add(key.key + of, key, s, j, role, from, *last + 1);
        }
      }
    }

    std::vector<int64_t> held = heldAtEachPosition(mem.buffers, n);
    mem.live.assign(n, 0);
    for (int k = 0; k < n; ++k) {
      mem.live[k] = mem.persistent() + held[k] + mem.temporaries[k];
      if (mem.live[k] > mem.peak) {
        mem.peak = mem.live[k];
        mem.peakAt = k;
      }
    }
    if (n == 0)
      mem.peak = mem.persistent();
    mem.hostLive = heldAtEachPosition(mem.hostBuffers, n);
    for (int64_t bytes : mem.hostLive)
      mem.hostPeak = std::max(mem.hostPeak, bytes);
  }
  return result;
}

std::string zbc::reloadedKeyOf(StringRef key) {
  return ("reloaded." + key).str();
}
