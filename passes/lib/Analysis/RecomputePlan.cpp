//===- RecomputePlan.cpp - what a stage's R rebuilds and runs -------------===//
//
// Note [Selective recomputation] (RecomputePlan.h): the R's ops are the
// backward slice of the rebuilt keys' values in F's body, cut at the
// arguments and at every value a kept F.I holds.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/RecomputePlan.h"

#include "zbc/Analysis/CostModel.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

bool isStashKey(StringRef key) {
  std::optional<PhaseKey> parsed = PhaseKey::parse(key);
  return parsed && parsed->kind == KeyKind::SavedF;
}

/// The slice of `forward` that computes `targets`, each value a kept F.I
/// holds (`keptKeyOf`) read rather than computed: the ops it runs, the
/// kept values and the arguments it reads.
struct Slice {
  llvm::SmallPtrSet<Operation *, 16> ops;
  llvm::DenseMap<Value, std::string> kept;
  llvm::DenseSet<Value> arguments;
};

Slice sliceOf(ArrayRef<Value> targets,
              const llvm::DenseMap<Value, std::string> &keptKeyOf) {
  Slice slice;
  SmallVector<Value> work(targets.begin(), targets.end());
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (auto kept = keptKeyOf.find(value); kept != keptKeyOf.end()) {
      slice.kept.try_emplace(value, kept->second);
      continue;
    }
    if (isa<BlockArgument>(value)) {
      slice.arguments.insert(value);
      continue;
    }
    Operation *op = value.getDefiningOp();
    if (slice.ops.insert(op).second)
      llvm::append_range(work, op->getOperands());
  }
  return slice;
}

/// The first kept F.I key of each value F yields under one, given the
/// rebuilt keys.
llvm::DenseMap<Value, std::string>
keptValuesOf(YieldOp yield, const llvm::StringSet<> &rebuilt) {
  llvm::DenseMap<Value, std::string> kept;
  for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues()))
    if (isStashKey(key) && !rebuilt.contains(key))
      kept.try_emplace(value, key.str());
  return kept;
}

SmallVector<Value> valuesYieldedUnder(YieldOp yield,
                                      const llvm::StringSet<> &keys) {
  SmallVector<Value> values;
  for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues()))
    if (keys.contains(key))
      values.push_back(value);
  return values;
}

} // namespace

bool RecomputePlan::reads(Value value) const {
  return readFromKept.count(value) || readArguments.contains(value);
}

RecomputePlan zbc::recomputePlanOf(StageOp stage) {
  RecomputePlan plan;
  PhaseOp forward = stage.getPhase(ComputeKind::F);
  YieldOp yield = forward.getYield();
  if (std::optional<ArrayAttr> listed = stage.getRebuilt()) {
    for (Attribute key : *listed)
      plan.rebuilt.insert(cast<StringAttr>(key).getValue());
  } else {
    for (StringRef key : yield.getKeyList())
      if (isStashKey(key))
        plan.rebuilt.insert(key);
  }
  Slice slice = sliceOf(valuesYieldedUnder(yield, plan.rebuilt),
                        keptValuesOf(yield, plan.rebuilt));
  plan.runs = std::move(slice.ops);
  plan.readFromKept = std::move(slice.kept);
  plan.readArguments = std::move(slice.arguments);
  return plan;
}

std::vector<std::string> zbc::selectiveRebuiltKeys(StageOp stage) {
  YieldOp yield = stage.getPhase(ComputeKind::F).getYield();
  // Every F.I starts kept; in yield order, one is rebuilt when the ops that
  // make it from the inputs and what is still kept have no matmul-class
  // FLOPs. Rebuilding one never puts a matmul into the slice of one
  // rebuilt before it: that slice then reaches through a matmul-free one.
  llvm::StringSet<> rebuilt;
  std::vector<std::string> order;
  for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues())) {
    if (!isStashKey(key))
      continue;
    llvm::StringSet<> tried = rebuilt;
    tried.insert(key);
    llvm::DenseMap<Value, std::string> kept = keptValuesOf(yield, tried);
    Slice slice = sliceOf({value}, kept);
    bool cheap = llvm::all_of(slice.ops, [](Operation *op) {
      return getOpCost(op).matmulFlops == 0;
    });
    if (!cheap)
      continue;
    rebuilt.insert(key);
    order.push_back(key.str());
  }
  return order;
}
