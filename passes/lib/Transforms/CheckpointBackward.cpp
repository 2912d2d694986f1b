//===- CheckpointBackward.cpp - rebuild the stash inside the backward -----===//
//
// Note [Checkpointed backward]
// A recomputed microbatch (an R before its backward, Recompute.h) has its
// whole stash again while its backward runs: its R rebuilds every F.I the
// backward reads before the backward starts. So at the backward a rank holds
// the microbatch's full stash plus the backward's temporaries, recomputed or
// not, and no order of F, R, B and W gets below that (docs/benchmarks.md:
// gpt-small's last stage sets the least memory limit of every order there).
// Activation checkpointing goes below it by recomputing inside the backward,
// one segment at a time: the forward keeps only its checkpoints, and the
// backward rebuilds each segment's values from the checkpoint before it just
// when it reaches that segment, so they die with it.
//
// zb-checkpoint-backward writes that into a stage's phases, so nothing after
// it needs to know: the stash becomes the checkpoints, and each backward
// phase (B, W, BW) computes what it read from the rest itself.
//   Checkpoints: a value of F's body is one where the forward narrows to a
//     single tensor: no other activation (an op's result, or an in.I) made
//     up to its op is read by a later op. Parameters and data are read
//     where they are held (param.*, input.*, label.*), so they never
//     count; nor does the yield (what the stash holds is what is decided).
//     In a transformer these are the residual stream between sublayers and
//     every value of the final norm, head and loss.
//   The stash: an F.I that is a checkpoint stays; the others go, and a
//     checkpoint some rebuilt value is computed from becomes an F.I if it
//     was not one. The F.I keep F's yield order and are renumbered F.0,
//     F.1, ... (the keys' dense indices).
//   The backward phases: walking each in order, at the first op that reads
//     an F.I that went, the ops of F that computed it are cloned in right
//     before that op, reading checkpoints, inputs (in.I, data) and
//     parameters as arguments of the phase, each F op at most once per
//     phase. Since a backward visits its segments last to first, a segment's
//     values are made when its gradient code starts and die at their last
//     use there: the phase's temporaries (Note [Program memory]) hold one
//     segment at a time.
// The clones are F's own ops on the same operands, so every value is bitwise
// what F computed, and the step's parameters equal those of the stage
// without checkpoints. A W that reads a rebuilt value rebuilds it again (a
// split stage recomputes twice what both B and W read): the cost model
// prices each phase's body as it is, so the schedule sees the longer B and
// W. A stage whose F.I are all checkpoints is left as it is, so the pass is
// idempotent.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"

#include "zbc/Analysis/ProgramTable.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "zb-checkpoint-backward"

namespace zbc {
#define GEN_PASS_DEF_ZBCHECKPOINTBACKWARDPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

KeyKind kindOf(StringRef key) { return PhaseKey::parse(key)->kind; }

/// The checkpoints of F's body: results of ops across which no other
/// activation is read (Note [Checkpointed backward]).
llvm::DenseSet<Value> checkpointsOf(PhaseOp forward) {
  Block &body = forward.getBodyBlock();
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int> position;
  for (Operation &op : body.without_terminator()) {
    position[&op] = static_cast<int>(ops.size());
    ops.push_back(&op);
  }
  int n = static_cast<int>(ops.size());
  // crossing[i]: activations made at or before op i and read after it,
  // each counted over [where it is made, its last reader) by differences.
  std::vector<int> crossing(n + 1, 0);
  auto count = [&](Value value, int madeAt) {
    int lastRead = madeAt;
    for (Operation *user : value.getUsers())
      if (auto it = position.find(user); it != position.end())
        lastRead = std::max(lastRead, it->second);
    int from = std::max(madeAt, 0);
    if (from < lastRead) {
      ++crossing[from];
      --crossing[lastRead];
    }
  };
  for (auto [arg, key] : llvm::zip(body.getArguments(), forward.getArgKeyList()))
    if (kindOf(key) == KeyKind::In)
      count(arg, -1);
  for (auto [i, op] : llvm::enumerate(ops))
    for (Value result : op->getResults())
      count(result, static_cast<int>(i));
  for (int i = 1; i <= n; ++i)
    crossing[i] += crossing[i - 1];
  llvm::DenseSet<Value> checkpoints;
  for (auto [i, op] : llvm::enumerate(ops)) {
    if (op->getNumResults() != 1 || crossing[i] != 1)
      continue;
    // The one activation across is this op's result: is it read later?
    Value result = op->getResult(0);
    if (llvm::any_of(result.getUsers(), [&](Operation *user) {
          auto it = position.find(user);
          return it != position.end() && it->second > static_cast<int>(i);
        }))
      checkpoints.insert(result);
  }
  return checkpoints;
}

/// Rewrites one stage (Note [Checkpointed backward]); returns the ops cloned
/// into its backward phases (0: nothing to rebuild, the stage unchanged).
FailureOr<int> checkpointStage(StageOp stage) {
  PhaseOp forward = stage.getPhase(ComputeKind::F);
  if (!forward)
    return 0;
  if (stage.getRebuilt())
    return stage.emitOpError("has a selective recomputation policy "
                             "(`rebuilt`); checkpoint the backward before "
                             "zb-schedule writes one");
  YieldOp fYield = forward.getYield();
  llvm::DenseSet<Value> checkpoints = checkpointsOf(forward);
  // What F yields under each F.I key, and each value's first F.I key.
  llvm::StringMap<Value> stashed;
  llvm::DenseMap<Value, std::string> stashKeyOf;
  int nextIndex = 0;
  for (auto [key, value] : llvm::zip(fYield.getKeyList(), fYield.getValues()))
    if (std::optional<PhaseKey> parsed = PhaseKey::parse(key);
        parsed && parsed->kind == KeyKind::SavedF) {
      stashed[key] = value;
      stashKeyOf.try_emplace(value, key.str());
      nextIndex = std::max(nextIndex, std::stoi(parsed->suffix) + 1);
    }
  auto rebuilt = [&](StringRef key) {
    auto it = stashed.find(key);
    return it != stashed.end() && !isa<BlockArgument>(it->second) &&
           !checkpoints.contains(it->second);
  };
  if (llvm::none_of(stashed.keys(), rebuilt))
    return 0;

  SmallVector<StringRef> fArgKeys = forward.getArgKeyList();
  // Checkpoints a rebuilt value reads that F did not stash: F yields them
  // under new keys (renumbered below with the others).
  SmallVector<std::pair<std::string, Value>> newStash;
  int cloned = 0;
  for (PhaseOp phase : stage.getPhases()) {
    if (phase.getKind() == ComputeKind::F)
      continue;
    Block &body = phase.getBodyBlock();
    SmallVector<std::string> argKeys = llvm::map_to_vector(
        phase.getArgKeyList(), [](StringRef k) { return k.str(); });
    // The phase's argument under `key`, added if it has none.
    auto argumentFor = [&](StringRef key, Value like) -> Value {
      for (auto [arg, argKey] : llvm::zip(body.getArguments(), argKeys))
        if (argKey == key)
          return arg;
      argKeys.push_back(key.str());
      return body.addArgument(like.getType(), like.getLoc());
    };
    IRMapping rebuiltValues; // F value -> its value in this phase
    // F's `value` in this phase, its ops cloned before `before`.
    std::function<Value(Value, Operation *)> materialize =
        [&](Value value, Operation *before) -> Value {
      if (Value done = rebuiltValues.lookupOrNull(value))
        return done;
      Value result;
      if (auto arg = dyn_cast<BlockArgument>(value)) {
        result = argumentFor(fArgKeys[arg.getArgNumber()], value);
      } else if (checkpoints.contains(value)) {
        auto it = stashKeyOf.find(value);
        if (it == stashKeyOf.end()) {
          std::string key = keyOf(KeyKind::SavedF, nextIndex++);
          it = stashKeyOf.try_emplace(value, key).first;
          newStash.push_back({key, value});
        }
        result = argumentFor(it->second, value);
      } else {
        Operation *op = value.getDefiningOp();
        for (Value operand : op->getOperands())
          rebuiltValues.map(operand, materialize(operand, before));
        OpBuilder b(before);
        Operation *clone = b.clone(*op, rebuiltValues);
        ++cloned;
        for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
          rebuiltValues.map(from, to);
        return rebuiltValues.lookup(value);
      }
      rebuiltValues.map(value, result);
      return result;
    };
    // The original operations, not the clones inserted while walking.
    SmallVector<Operation *> ops =
        llvm::map_to_vector(body, [](Operation &op) { return &op; });
    for (Operation *op : ops)
      for (OpOperand &use : op->getOpOperands()) {
        auto arg = dyn_cast<BlockArgument>(use.get());
        if (!arg || arg.getOwner() != &body ||
            !rebuilt(argKeys[arg.getArgNumber()]))
          continue;
        Value value = materialize(stashed[argKeys[arg.getArgNumber()]], op);
        arg.replaceAllUsesWith(value);
      }
    // Drop the arguments nothing reads any more (the rebuilt F.I).
    llvm::BitVector unused(body.getNumArguments());
    SmallVector<StringRef> keptKeys;
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      if (arg.use_empty())
        unused.set(i);
      else
        keptKeys.push_back(argKeys[i]);
    }
    body.eraseArguments(unused);
    phase.setArgKeysAttr(Builder(phase).getStrArrayAttr(keptKeys));
  }

  // F's stash: what a backward phase still reads, in F's yield order, then
  // the new checkpoints; renumbered densely.
  llvm::StringSet<> read;
  for (PhaseOp phase : stage.getPhases())
    if (phase.getKind() != ComputeKind::F)
      for (StringRef key : phase.getArgKeyList())
        read.insert(key);
  SmallVector<std::string> keys;
  SmallVector<Value> values;
  for (auto [key, value] : llvm::zip(fYield.getKeyList(), fYield.getValues()))
    if (kindOf(key) != KeyKind::SavedF || read.contains(key)) {
      keys.push_back(key.str());
      values.push_back(value);
    }
  for (auto &[key, value] : newStash) {
    keys.push_back(key);
    values.push_back(value);
  }
  llvm::StringMap<std::string> renamed;
  for (std::string &key : keys)
    if (kindOf(key) == KeyKind::SavedF) {
      std::string dense = keyOf(KeyKind::SavedF, renamed.size());
      renamed[key] = dense;
      key = dense;
    }
  OpBuilder b(fYield);
  YieldOp::create(b, fYield.getLoc(), values,
                  b.getStrArrayAttr(SmallVector<StringRef>(keys.begin(),
                                                           keys.end())));
  fYield.erase();
  for (PhaseOp phase : stage.getPhases()) {
    if (phase.getKind() == ComputeKind::F)
      continue;
    SmallVector<std::string> argKeys;
    for (StringRef key : phase.getArgKeyList())
      argKeys.push_back(renamed.count(key) ? renamed[key] : key.str());
    phase.setArgKeysAttr(b.getStrArrayAttr(
        SmallVector<StringRef>(argKeys.begin(), argKeys.end())));
  }
  return cloned;
}

/// Every stage of `pipeline` (zbc::checkpointBackward), adding the ops
/// cloned into its backward phases to `clonedOps`.
FailureOr<int> checkpointPipeline(PipelineOp pipeline, int64_t &clonedOps) {
  if (programOfPipeline(pipeline))
    return pipeline.emitOpError(
        "has its zb.program already; checkpointing the backward changes "
        "the stash that program was proven for");
  int stages = 0;
  for (StageOp stage : pipeline.getBody().front().getOps<StageOp>()) {
    FailureOr<int> ops = checkpointStage(stage);
    if (failed(ops))
      return failure();
    clonedOps += *ops;
    stages += *ops > 0;
  }
  return stages;
}

struct ZBCheckpointBackwardPass final
    : zbc::impl::ZBCheckpointBackwardPassBase<ZBCheckpointBackwardPass> {
  using Base::Base;
  void runOnOperation() override {
    WalkResult walk = getOperation().walk([&](PipelineOp pipeline) {
      int64_t cloned = 0;
      FailureOr<int> rewritten = checkpointPipeline(pipeline, cloned);
      if (failed(rewritten))
        return WalkResult::interrupt();
      numStages += *rewritten;
      numCloned += cloned;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

FailureOr<int> zbc::checkpointBackward(PipelineOp pipeline) {
  int64_t cloned = 0;
  return checkpointPipeline(pipeline, cloned);
}
