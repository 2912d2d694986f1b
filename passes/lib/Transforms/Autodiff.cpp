//===- Autodiff.cpp - zb.model -> zb.pipeline with F and BW phases --------===//
//
// Reverse-mode differentiation of each stage of a model. For stage k the pass
// builds a zb.stage holding
//   - declarations of the inputs, labels and parameters the stage reads;
//   - an F phase: the stage's forward ops, reading in.i / input.* / label.* /
//     param.*, yielding out.i (the closing cut's operands), `loss` on the last
//     stage, and F.j for every forward tensor the backward needs;
//   - a BW phase: the gradient rules of the stage's ops in reverse order,
//     seeded with d_out.i (or zb.loss_seed for the loss), accumulating with zb.add
//     where a value has several uses, yielding d_in.i and grad.NAME.
// Forward values reach the backward only through `forward(v)`, which turns
// each one into a BW argument: a leaf or in.i keeps its key, a computed value
// becomes a stash key F.j. Dead gradient code (the input gradient of a
// stage's first layer, say) is removed, and with it any stash it needed.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "zb-autodiff"

namespace zbc {
#define GEN_PASS_DEF_ZBAUTODIFFPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

/// The ops of one stage of a model and its boundaries.
struct StageSlice {
  unsigned index = 0;
  SmallVector<Operation *> ops; // compute ops in program order
  CutOp opening;                // null for stage 0
  CutOp closing;                // null for the last stage
  // Whether some earlier stage needs this stage's input gradient (d_in): it
  // has parameters, or an earlier one does. Where none does, the stage
  // sends no gradient back, so its B has no work (Note [No gradient
  // upstream]).
  bool upstreamNeedsGrad = false;
  // Whether this stage uses a parameter.
  bool hasParams = false;
  // Parameters written in this stage's range that nothing uses: they stay
  // declared (the runtime still owns them) with a zero gradient.
  SmallVector<ParamOp> unusedParams;
};

/// The key of a value that a stage reads from outside: a leaf's key, or
/// in.i for the i-th result of the stage's opening cut.
std::optional<std::string> externalKey(Value v, CutOp opening) {
  Operation *def = v.getDefiningOp();
  if (std::optional<std::string> key = getLeafKey(def))
    return key;
  if (opening && def == opening.getOperation())
    return keyOf(KeyKind::In, cast<OpResult>(v).getResultNumber());
  return std::nullopt;
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
}

ArrayAttr keysAttr(Builder &b, ArrayRef<std::string> keys) {
  return b.getStrArrayAttr(SmallVector<StringRef>(keys.begin(), keys.end()));
}

/// Builds the zb.stage of one slice.
class StageBuilder {
public:
  StageBuilder(ModelOp model, StageSlice slice, bool isLast)
      : model(model), slice(slice), isLast(isLast) {}

  LogicalResult build(OpBuilder &b);

private:
  void collectExternals();
  void buildForward(OpBuilder &b, Location loc);
  LogicalResult buildBackward(OpBuilder &b, Location loc);
  void finishForward(OpBuilder &b);

  /// The BW argument for forward value `v`, created on first request.
  Value forward(Value v);
  void accumulate(Value v, Value grad, Location loc);

  ModelOp model;
  StageSlice slice;
  bool isLast;

  // Values the stage reads from outside, in first-use order, with keys.
  SmallVector<Value> externals;
  SmallVector<std::string> externalKeys;

  PhaseOp fPhase, bwPhase;
  IRMapping fMap;                         // model value -> F value
  llvm::DenseMap<Value, Value> bwArgOf;   // model value -> BW argument
  SmallVector<std::string> bwKeys;        // key of each BW argument
  llvm::DenseMap<Value, Value> grads;     // model value -> its gradient
  OpBuilder *bwBuilder = nullptr;
};

} // namespace

void StageBuilder::collectExternals() {
  llvm::DenseSet<Value> seen;
  auto visit = [&](Value v) {
    if (std::optional<std::string> key = externalKey(v, slice.opening))
      if (seen.insert(v).second) {
        externals.push_back(v);
        externalKeys.push_back(*key);
      }
  };
  for (Operation *op : slice.ops)
    for (Value operand : op->getOperands())
      visit(operand);
  if (slice.closing)
    for (Value operand : slice.closing.getInputs())
      visit(operand);
  if (isLast)
    visit(model.getLossOp().getLoss());
}

void StageBuilder::buildForward(OpBuilder &b, Location loc) {
  SmallVector<Type> types = llvm::to_vector(
      llvm::map_range(externals, [](Value v) { return v.getType(); }));
  fPhase = PhaseOp::create(b, loc, ComputeKind::F, keysAttr(b, externalKeys));
  Block *body = b.createBlock(&fPhase.getBody(), {}, types,
                              SmallVector<Location>(types.size(), loc));
  for (auto [value, arg] : llvm::zip(externals, body->getArguments()))
    fMap.map(value, arg);
  for (Operation *op : slice.ops)
    b.clone(*op, fMap);
  b.setInsertionPointAfter(fPhase);
}

Value StageBuilder::forward(Value v) {
  auto it = bwArgOf.find(v);
  if (it != bwArgOf.end())
    return it->second;
  // Computed forward values get a provisional stash key; the keys are
  // renumbered once dead code is gone.
  std::string key = externalKey(v, slice.opening).value_or("F.?");
  Value arg = bwPhase.getBodyBlock().addArgument(v.getType(), v.getLoc());
  bwArgOf[v] = arg;
  bwKeys.push_back(key);
  return arg;
}

void StageBuilder::accumulate(Value v, Value grad, Location loc) {
  if (!grad || !isFloatTensor(v))
    return;
  auto [it, inserted] = grads.try_emplace(v, grad);
  if (!inserted)
    it->second = AddOp::create(*bwBuilder, loc, it->second, grad);
}

LogicalResult StageBuilder::buildBackward(OpBuilder &b, Location loc) {
  bwPhase = PhaseOp::create(b, loc, ComputeKind::BW, b.getStrArrayAttr({}));
  Block *body = b.createBlock(&bwPhase.getBody());
  bwBuilder = &b;

  // Seeds: the gradients of what the stage sends on, or the microbatch's
  // weight in the step's loss (zb.loss_seed) for the loss.
  // A stage that neither has parameters nor feeds an upstream one receives
  // no gradient: nothing would use it.
  bool receivesGrad = slice.hasParams || slice.upstreamNeedsGrad;
  if (isLast) {
    Value loss = model.getLossOp().getLoss();
    grads[loss] =
        LossSeedOp::create(b, loc, cast<RankedTensorType>(loss.getType()));
  } else if (receivesGrad) {
    for (auto [i, out] : llvm::enumerate(slice.closing.getInputs())) {
      if (!isFloatTensor(out))
        continue;
      Value arg = body->addArgument(out.getType(), loc);
      bwKeys.push_back(keyOf(KeyKind::DOut, i));
      accumulate(out, arg, loc);
    }
  }

  auto forwardFn = [&](Value v) { return forward(v); };
  for (Operation *op : llvm::reverse(slice.ops)) {
    if (op->getNumResults() != 1)
      continue;
    auto it = grads.find(op->getResult(0));
    if (it == grads.end())
      continue; // does not reach what the stage sends on or the loss
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no gradient rule; zb-autodiff cannot "
                             "differentiate through it");
    Operation *before = body->empty() ? nullptr : &body->back();
    SmallVector<Value> operandGrads;
    rule.buildGradients(b, it->second, forwardFn, operandGrads);
    if (op->hasAttr(kFuseWeightGradAttrName)) {
      auto first = before ? std::next(before->getIterator()) : body->begin();
      for (Operation &created : llvm::make_range(first, body->end()))
        created.setAttr(kFuseWeightGradAttrName, b.getUnitAttr());
    }
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      accumulate(operand, grad, op->getLoc());
  }

  // Yield the input gradients (d_in.i) and parameter gradients (grad.NAME);
  // what does not reach the loss gets an explicit zero.
  SmallVector<Value> values;
  SmallVector<std::string> keys;
  auto gradOrZero = [&](Value v) -> Value {
    if (Value g = grads.lookup(v))
      return g;
    return FillOp::create(b, loc, cast<RankedTensorType>(v.getType()),
                          b.getF64FloatAttr(0.0));
  };
  if (slice.opening && slice.upstreamNeedsGrad)
    for (auto [i, in] : llvm::enumerate(slice.opening.getOutputs()))
      if (isFloatTensor(in)) {
        values.push_back(gradOrZero(in));
        keys.push_back(keyOf(KeyKind::DIn, i));
      }
  // A parameter that does not reach the loss is legal (it trains to
  // nothing) but almost always a mistake in the model: say so where it is.
  for (auto [value, key] : llvm::zip(externals, externalKeys))
    if (auto param = dyn_cast<ParamOp>(value.getDefiningOp())) {
      if (!grads.count(value))
        param.emitWarning("parameter '")
            << param.getName()
            << "' does not reach the loss; its gradient is always zero";
      values.push_back(gradOrZero(value));
      keys.push_back(keyOf(KeyKind::Grad, param.getName()));
    }
  for (ParamOp param : slice.unusedParams) {
    param.emitWarning("parameter '")
        << param.getName()
        << "' is never used; its gradient is always zero";
    values.push_back(gradOrZero(param.getResult()));
    keys.push_back(keyOf(KeyKind::Grad, param.getName()));
  }
  YieldOp::create(b, loc, values, keysAttr(b, keys));

  // Remove dead gradient code, then the arguments only it read.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  return success();
}

void StageBuilder::finishForward(OpBuilder &b) {
  Block &bwBody = bwPhase.getBodyBlock();
  // Drop unused BW arguments; number the stashed forward values densely.
  llvm::DenseMap<Value, Value> modelValueOf;
  for (auto &[modelValue, arg] : bwArgOf)
    modelValueOf[arg] = modelValue;
  SmallVector<std::string> keys;
  SmallVector<Value> stash;
  llvm::BitVector dead(bwBody.getNumArguments());
  for (BlockArgument arg : bwBody.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (arg.use_empty()) {
      dead.set(i);
      continue;
    }
    std::string key = bwKeys[i];
    if (key == "F.?") {
      key = keyOf(KeyKind::SavedF, static_cast<int64_t>(stash.size()));
      stash.push_back(modelValueOf.lookup(arg));
    }
    keys.push_back(key);
  }
  bwBody.eraseArguments(dead);
  bwPhase.setArgKeysAttr(keysAttr(b, keys));

  // F yields what the next stage receives, the loss, and the stash.
  SmallVector<Value> values;
  SmallVector<std::string> yieldKeys;
  if (slice.closing)
    for (auto [i, out] : llvm::enumerate(slice.closing.getInputs())) {
      values.push_back(fMap.lookup(out));
      yieldKeys.push_back(keyOf(KeyKind::Out, i));
    }
  if (isLast) {
    values.push_back(fMap.lookup(model.getLossOp().getLoss()));
    yieldKeys.push_back("loss");
  }
  for (auto [j, value] : llvm::enumerate(stash)) {
    values.push_back(fMap.lookup(value));
    yieldKeys.push_back(keyOf(KeyKind::SavedF, j));
  }
  b.setInsertionPointToEnd(&fPhase.getBodyBlock());
  YieldOp::create(b, fPhase.getLoc(), values, keysAttr(b, yieldKeys));
}

LogicalResult StageBuilder::build(OpBuilder &b) {
  Location loc = model.getLoc();
  auto stage = StageOp::create(b, loc, slice.index, /*rebuilt=*/ArrayAttr(),
                               /*costs=*/DictionaryAttr());
  b.setInsertionPointToStart(&stage.getBody().emplaceBlock());
  collectExternals();
  // Declarations first, in model order, so the stage says what to load.
  for (Operation &op : model.getBody().front())
    if (isa<InputOp, LabelOp, ParamOp>(op) &&
        (llvm::is_contained(externals, op.getResult(0)) ||
         llvm::is_contained(slice.unusedParams, dyn_cast<ParamOp>(op))))
      b.clone(op);
  buildForward(b, loc);
  if (failed(buildBackward(b, loc)))
    return failure();
  finishForward(b);
  return success();
}

namespace {
struct ZBAutodiffPass final
    : zbc::impl::ZBAutodiffPassBase<ZBAutodiffPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

/// Splits a model's body into its stages.
static SmallVector<StageSlice> sliceStages(ModelOp model) {
  SmallVector<StageSlice> slices(model.getNumStages());
  for (auto [i, slice] : llvm::enumerate(slices))
    slice.index = i;
  unsigned stage = 0;
  for (Operation &op : model.getBody().front()) {
    if (auto cut = dyn_cast<CutOp>(op)) {
      slices[stage].closing = cut;
      slices[++stage].opening = cut;
    } else if (auto param = dyn_cast<ParamOp>(op)) {
      if (param->use_empty())
        slices[stage].unusedParams.push_back(param);
    } else if (!isa<InputOp, LabelOp, LossOp>(op)) {
      slices[stage].ops.push_back(&op);
      if (llvm::any_of(op.getOperands(), [](Value v) {
            return isa_and_nonnull<ParamOp>(v.getDefiningOp());
          }))
        slices[stage].hasParams = true;
    }
  }
  for (size_t k = 1; k < slices.size(); ++k)
    slices[k].upstreamNeedsGrad =
        slices[k - 1].hasParams || slices[k - 1].upstreamNeedsGrad;
  return slices;
}

void ZBAutodiffPass::runOnOperation() {
  SmallVector<ModelOp> models(getOperation().getOps<ModelOp>());
  for (ModelOp model : models) {
    OpBuilder b(model);
    auto pipeline =
        PipelineOp::create(b, model.getLoc(), model.getSymNameAttr(),
                           model.getHfConfigAttr(), /*costs=*/DictionaryAttr());
    b.setInsertionPointToStart(&pipeline.getBody().emplaceBlock());
    SmallVector<StageSlice> slices = sliceStages(model);
    for (StageSlice &slice : slices) {
      // Legal (the rank passes on what it receives) but never what a user
      // wants from a pipeline rank.
      if (slice.ops.empty() && slice.closing)
        slice.closing.emitWarning("this 'zb.cut' ends stage ")
            << slice.index << ", which computes nothing: its rank only "
            << "passes on what it receives (a 'zb.cut' straight on an input, "
            << "or right after another cut)";
      StageBuilder builder(model, slice, slice.index + 1 == slices.size());
      if (failed(builder.build(b)))
        return signalPassFailure();
      b.setInsertionPointToEnd(&pipeline.getBody().front());
    }
    LLVM_DEBUG(llvm::dbgs() << "zb-autodiff: @" << model.getSymName() << ", "
                            << slices.size() << " stages\n");
    model.erase();
  }
}
