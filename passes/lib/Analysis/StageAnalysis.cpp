//===- StageAnalysis.cpp - work and memory of a pipeline stage ------------===//
//
// Costs are sums of getOpCost over each phase's ops. Memory is derived from
// the phase keys (PhaseKeys.h): a per-microbatch tensor is live from the
// point it becomes available (in/input/label when the microbatch starts,
// d_out when the backward starts, a yielded key once its phase ends) until
// the last phase that reads it. What is live between F and the backward is
// the stage's M_B in the Zero Bubble paper's terms; what is live between B
// and W is its M_W.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/StageAnalysis.h"

#include "zbc/Analysis/RecomputePlan.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

static OpCost costOf(PhaseOp phase) {
  OpCost cost;
  for (Operation &op : phase.getBodyBlock().without_terminator())
    cost += getOpCost(&op);
  return cost;
}

namespace {
/// When a per-microbatch key becomes available and when it is last read, as
/// phase positions (0 = F, 1 = B or BW, 2 = W).
struct Lifetime {
  unsigned available = 0;
  unsigned lastRead = 0;
  bool read = false;
  bool providedAtF = false; // in.I or data: what a recomputed F keeps
  int64_t bytes = 0;
};
} // namespace

StageFigures zbc::analyzeStage(StageOp stage) {
  StageFigures figures;
  figures.index = stage.getIndex();
  SmallVector<PhaseOp> phases = stage.getPhases();
  figures.split = phases.size() == 3;
  figures.forward = costOf(phases[0]);
  figures.inputGrad = costOf(phases[1]);
  if (figures.split)
    figures.weightGrad = costOf(phases[2]);
  for (ParamOp param : stage.getBody().front().getOps<ParamOp>())
    figures.paramBytes += param.getNumBytes();

  // Note [Selective recomputation]: what an R reads and costs.
  RecomputePlan plan = recomputePlanOf(stage);
  for (Operation *op : plan.runs)
    figures.recompute += getOpCost(op);
  llvm::StringSet<> readByR;
  for (auto [arg, key] : llvm::zip(phases[0].getBodyBlock().getArguments(),
                                   phases[0].getArgKeyList()))
    if (plan.reads(arg))
      readByR.insert(key);

  llvm::StringMap<Lifetime> lifetimes;
  for (auto [position, phase] : llvm::enumerate(phases)) {
    for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                     phase.getArgKeyList())) {
      KeyKind kind = PhaseKey::parse(key)->kind;
      if (!isActivationKey(kind))
        continue;
      auto [it, inserted] = lifetimes.try_emplace(key);
      Lifetime &life = it->second;
      if (inserted) {
        // Not yielded here: provided from outside. Received gradients
        // arrive with the backward; data and activations with F.
        life.available = kind == KeyKind::DOut ? 1 : 0;
        life.providedAtF = kind != KeyKind::DOut;
        life.bytes = getNumBytes(arg.getType());
      }
      life.lastRead = position;
      life.read = true;
    }
    for (auto [key, value] : llvm::zip(phase.getYield().getKeyList(),
                                       phase.getYield().getValues())) {
      if (!isActivationKey(PhaseKey::parse(key)->kind))
        continue;
      Lifetime &life = lifetimes[key];
      life.available = position;
      life.bytes = getNumBytes(value.getType());
    }
  }
  // Held after phase p: available by the end of p and read after p.
  auto heldAfter = [&](unsigned p) {
    int64_t bytes = 0;
    for (auto &entry : lifetimes) {
      const Lifetime &life = entry.getValue();
      if (life.read && life.available <= p && life.lastRead > p)
        bytes += life.bytes;
    }
    return bytes;
  };
  figures.bytesAfterF = heldAfter(0);
  for (auto &entry : lifetimes) {
    const Lifetime &life = entry.getValue();
    bool stash = life.read && life.available == 0 && life.lastRead > 0 &&
                 PhaseKey::parse(entry.getKey())->kind == KeyKind::SavedF;
    // Kept by a recomputed F: an input a backward or the R reads, and the
    // stash the R does not rebuild.
    if ((life.providedAtF && life.read &&
         (life.lastRead > 0 || readByR.contains(entry.getKey()))) ||
        (stash && !plan.rebuilds(entry.getKey())))
      figures.bytesKeptForRecompute += life.bytes;
    if (stash)
      figures.bytesStashed += life.bytes;
  }
  figures.bytesAfterB = figures.split ? heldAfter(1) : 0;
  return figures;
}

const char *StageFigures::saturatedPhase() const {
  if (forward.saturated())
    return "F";
  if (inputGrad.saturated())
    return split ? "B" : "BW";
  if (weightGrad.saturated())
    return "W";
  return nullptr;
}

LogicalResult zbc::verifyCostable(StageOp stage, const StageFigures &figures) {
  if (const char *phase = figures.saturatedPhase())
    return stage.emitOpError("stage ")
           << figures.index << " has more than 2^63-1 FLOPs in its " << phase
           << " phase; zbc cannot cost (or schedule) a stage that large";
  return success();
}
