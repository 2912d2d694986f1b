//===- DataBounds.cpp - the range of a model's integer data ---------------===//
//
// indexDataBound of DataBounds.h: a walk over the uses of the data, through
// cuts and phase keys, tightened by every op that reads it as indices,
// labels, positions or document ids.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/DataBounds.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"

#include "llvm/ADT/DenseSet.h"

#include <optional>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

void zb::appendArgsWithKey(StageOp stage, StringRef key,
                           SmallVectorImpl<Value> &out) {
  for (PhaseOp phase : stage.getPhases())
    for (auto [arg, argKey] : llvm::zip(phase.getBodyBlock().getArguments(),
                                        phase.getArgKeyList()))
      if (argKey == key)
        out.push_back(arg);
}

namespace {

/// The values that carry what `yield` yields under `key` to later readers:
/// F.i / B.i within the stage, out.i as in.i of the next stage.
void appendReadersOfYield(YieldOp yield, StringRef key,
                          SmallVectorImpl<Value> &out) {
  std::optional<PhaseKey> parsed = PhaseKey::parse(key);
  auto stage = yield->getParentOfType<StageOp>();
  if (!parsed || !stage)
    return;
  if (parsed->kind == KeyKind::SavedF || parsed->kind == KeyKind::SavedB)
    appendArgsWithKey(stage, key, out);
  if (parsed->kind == KeyKind::Out)
    if (auto next = dyn_cast_or_null<StageOp>(stage->getNextNode()))
      appendArgsWithKey(next, parsed->counterpart()->str(), out);
}

/// Calls `read(user, n)` for every op that reads the data flowing into
/// `roots` (operand `n` of `user`), followed through cuts and phase keys.
void forEachReader(ArrayRef<Value> roots,
                   function_ref<void(Operation *, unsigned)> read) {
  SmallVector<Value> work(roots.begin(), roots.end());
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      unsigned n = use.getOperandNumber();
      if (auto op = dyn_cast<CutOp>(user))
        work.push_back(op.getOutputs()[n]);
      else if (auto op = dyn_cast<YieldOp>(user))
        appendReadersOfYield(op, op.getKeyList()[n], work);
      else
        read(user, n);
    }
  }
}

/// The row length of the document ids `user` reads as operand `n`, if it
/// reads them as an attention's documents (Note [Document masks]): a row
/// holds at most that many documents, numbered from 0.
std::optional<int64_t> documentsBound(Operation *user, unsigned n) {
  Value documents;
  if (auto op = dyn_cast<CausalAttentionOp>(user))
    documents = op.getDocuments();
  else if (auto op = dyn_cast<AttentionOp>(user))
    documents = op.getDocuments();
  else if (auto op = dyn_cast<CausalAttentionGradOp>(user))
    documents = op.getDocuments();
  else if (auto op = dyn_cast<AttentionGradOp>(user))
    documents = op.getDocuments();
  if (!documents || user->getOperand(n) != documents)
    return std::nullopt;
  return cast<RankedTensorType>(documents.getType()).getShape().back();
}

} // namespace

int64_t zb::indexDataBound(ArrayRef<Value> roots) {
  std::optional<int64_t> bound;
  auto tighten = [&](int64_t b) { bound = bound ? std::min(*bound, b) : b; };
  forEachReader(roots, [&](Operation *user, unsigned n) {
    if (auto op = dyn_cast<EmbeddingOp>(user); op && n == 0)
      tighten(op.getTable().getType().getDimSize(0));
    else if (auto op = dyn_cast<EmbeddingGradOp>(user); op && n == 0)
      tighten(static_cast<int64_t>(op.getVocab()));
    else if (auto op = dyn_cast<CrossEntropyOp>(user); op && n == 1)
      tighten(op.getLogits().getType().getShape().back());
    else if (auto op = dyn_cast<CrossEntropyGradOp>(user); op && n == 1)
      tighten(op.getLogits().getType().getShape().back());
    else if (auto op = dyn_cast<RopeOp>(user); op && n == 1)
      tighten(static_cast<int64_t>(op.getMaxPositions()));
    else if (auto op = dyn_cast<RopeGradOp>(user); op && n == 1)
      tighten(static_cast<int64_t>(op.getMaxPositions()));
    else if (std::optional<int64_t> row = documentsBound(user, n))
      tighten(*row);
  });
  return bound && *bound > 0 ? *bound : 2;
}

int64_t zb::indexDataBound(PipelineOp pipeline, StringRef key) {
  SmallVector<Value> readers;
  for (StageOp stage : pipeline.getBody().front().getOps<StageOp>())
    appendArgsWithKey(stage, key, readers);
  return indexDataBound(readers);
}
