//===- SplitBackward.cpp - BW phase -> B (input grad) + W (weight grad) ---===//
//
// The zero-bubble split. W takes the largest set of backward ops whose
// results feed only parameter gradients (grad.* yields) or other W ops,
// found in one reverse walk; B keeps the rest, which is what d_in.* (the
// critical path to the previous stage) depends on. Values B computes and W
// reads are handed over as B.j keys; arguments each side reads are rebound
// by key. Ops carrying zb.fuse_weight_grad (set by zb-autodiff on the
// gradient code of a forward op marked so) stay in B: a selective split.
//
// Both phases contain exactly the ops of BW, unchanged, so B-then-W computes
// bitwise what BW did.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/Sequence.h"

#define DEBUG_TYPE "zb-split-backward"

namespace zbc {
#define GEN_PASS_DEF_ZBSPLITBACKWARDPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

/// One side (B or W) of the split under construction.
struct Side {
  SmallVector<Operation *> ops;
  SmallVector<Value> args;           // BW values this side reads as arguments
  SmallVector<std::string> argKeys;  // their keys
  SmallVector<Value> yields;         // BW values this side yields
  SmallVector<std::string> yieldKeys;

  void addArg(Value v, StringRef key) {
    if (!llvm::is_contained(args, v)) {
      args.push_back(v);
      argKeys.push_back(key.str());
    }
  }

  /// Orders the arguments as BW had them, hand-overs from B last, so the
  /// phase signatures read alike.
  void sortArgs() {
    SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(0, args.size()));
    auto rank = [&](unsigned i) -> unsigned {
      auto arg = dyn_cast<BlockArgument>(args[i]);
      return arg ? arg.getArgNumber() : ~0u;
    };
    llvm::stable_sort(order, [&](unsigned a, unsigned b) { return rank(a) < rank(b); });
    SmallVector<Value> sortedArgs;
    SmallVector<std::string> sortedKeys;
    for (unsigned i : order) {
      sortedArgs.push_back(args[i]);
      sortedKeys.push_back(argKeys[i]);
    }
    args = std::move(sortedArgs);
    argKeys = std::move(sortedKeys);
  }
};

struct ZBSplitBackwardPass final
    : zbc::impl::ZBSplitBackwardPassBase<ZBSplitBackwardPass> {
  using Base::Base;
  void runOnOperation() override;
  void splitStage(StageOp stage, PhaseOp bw);
};

bool isGradKey(StringRef key) {
  return PhaseKey::parse(key)->kind == KeyKind::Grad;
}

/// Builds a phase of `kind` from a side: arguments bound by key, the side's
/// ops cloned in order, and its yields.
PhaseOp buildPhase(OpBuilder &b, Location loc, ComputeKind kind, Side &side) {
  SmallVector<StringRef> keys(side.argKeys.begin(), side.argKeys.end());
  auto phase = PhaseOp::create(b, loc, kind, b.getStrArrayAttr(keys));
  SmallVector<Type> types = llvm::to_vector(
      llvm::map_range(side.args, [](Value v) { return v.getType(); }));
  Block *body = b.createBlock(&phase.getBody(), {}, types,
                              SmallVector<Location>(types.size(), loc));
  IRMapping map;
  map.map(side.args, body->getArguments());
  for (Operation *op : side.ops)
    b.clone(*op, map);
  SmallVector<Value> values = llvm::to_vector(
      llvm::map_range(side.yields, [&](Value v) { return map.lookup(v); }));
  SmallVector<StringRef> yieldKeys(side.yieldKeys.begin(),
                                   side.yieldKeys.end());
  YieldOp::create(b, loc, values, b.getStrArrayAttr(yieldKeys));
  b.setInsertionPointAfter(phase);
  return phase;
}

} // namespace

void ZBSplitBackwardPass::splitStage(StageOp stage, PhaseOp bw) {
  Block &body = bw.getBodyBlock();
  YieldOp yield = bw.getYield();
  SmallVector<StringRef> yieldKeys = yield.getKeyList();

  // Classify: walking backwards, an op is W if it has uses and every use is
  // a W op or a grad.* yield.
  llvm::DenseSet<Operation *> isW;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (op.hasAttr(kFuseWeightGradAttrName) || op.use_empty())
      continue;
    bool onlyFeedsWeightGrads = llvm::all_of(op.getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (user == yield.getOperation())
        return isGradKey(yieldKeys[use.getOperandNumber()]);
      return isW.contains(user);
    });
    if (onlyFeedsWeightGrads)
      isW.insert(&op);
  }

  Side bSide, wSide;
  for (Operation &op : body.without_terminator())
    (isW.contains(&op) ? wSide : bSide).ops.push_back(&op);
  numWOps += wSide.ops.size();
  numBOps += bSide.ops.size();

  SmallVector<StringRef> argKeys = bw.getArgKeyList();
  auto isBValue = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && !isW.contains(def);
  };
  // Arguments: each side reads the BW arguments its ops use.
  for (Side *side : {&bSide, &wSide})
    for (Operation *op : side->ops)
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand))
          side->addArg(arg, argKeys[arg.getArgNumber()]);

  // Yields: d_in.* and parameter gradients computed in B are B's; the other
  // parameter gradients (computed in W, or passed through from an argument)
  // are W's.
  for (auto [key, value] : llvm::zip(yieldKeys, yield.getValues())) {
    Side &side = (!isGradKey(key) || isBValue(value)) ? bSide : wSide;
    side.yields.push_back(value);
    side.yieldKeys.push_back(key.str());
    if (auto arg = dyn_cast<BlockArgument>(value))
      side.addArg(arg, argKeys[arg.getArgNumber()]);
  }

  // What W reads from B is handed over as B.j.
  unsigned numHandedOver = 0;
  for (Operation *op : wSide.ops)
    for (Value operand : op->getOperands())
      if (isBValue(operand) && !llvm::is_contained(wSide.args, operand)) {
        std::string key = keyOf(KeyKind::SavedB, numHandedOver++);
        bSide.yields.push_back(operand);
        bSide.yieldKeys.push_back(key);
        wSide.addArg(operand, key);
      }

  bSide.sortArgs();
  wSide.sortArgs();
  OpBuilder b(bw);
  buildPhase(b, bw.getLoc(), ComputeKind::B, bSide);
  buildPhase(b, bw.getLoc(), ComputeKind::W, wSide);
  bw.erase();
}

void ZBSplitBackwardPass::runOnOperation() {
  getOperation().walk([&](StageOp stage) {
    if (PhaseOp bw = stage.getPhase(ComputeKind::BW))
      splitStage(stage, bw);
  });
}
