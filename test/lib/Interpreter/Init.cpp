//===- Init.cpp - deterministic parameters and microbatch data ------------===//
//
// initParams, randomFeeds and randomMicrobatches of Interpreter.h. The values
// themselves come from the runtime's zbc/contracts/SyntheticData.h, the one
// definition that compiled programs draw from too: a zb.model, the
// zb.pipeline made from it and the per-rank programs get the same parameters
// and the same data.
//
// Integer data must be valid for the ops that read it, so its range comes
// from the IR (zbc/Dialect/ZB/DataBounds.h, which the code generator reads
// too).
//
//===----------------------------------------------------------------------===//

#include "zbc/Interpreter/Interpreter.h"

#include "IRHelpers.h"

#include "zbc/Dialect/ZB/DataBounds.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/contracts/SyntheticData.h"



using namespace mlir;

namespace zbc::interp {
using zb::getLeafKey;
using detail::getShape;

namespace {

using rt::Generator;

rt::InitKind initKindOf(zb::InitKind kind) {
  // The dialect's kinds and the ABI's share names (Note [ABI enums]).
  switch (kind) {
#define ZBC_INTERPRETER_INIT(NAME, Name, value)                                \
  case zb::InitKind::Name:                                                     \
    return rt::InitKind::Name;
    ZBC_RT_INIT_KINDS(ZBC_INTERPRETER_INIT)
#undef ZBC_INTERPRETER_INIT
  }
  return rt::InitKind::Zeros;
}

Tensor initParam(zb::ParamOp param, uint64_t seed, Precision precision) {
  std::string key = *getLeafKey(param);
  Generator gen(seed, key);
  double scale = param.getScale() ? param.getScale()->convertToDouble() : 0.0;
  Tensor t = Tensor::zeros(getShape(param.getType()), precision);
  rt::InitKind kind = initKindOf(param.getInit());
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, gen.initValue(kind, scale));
  return t;
}

Tensor randomFeed(StringRef key, Type type, ArrayRef<Value> readers,
                  uint64_t seed, Precision precision) {
  Generator gen(seed, key);
  Shape shape = getShape(type);
  if (isa<FloatType>(cast<RankedTensorType>(type).getElementType())) {
    Tensor t = Tensor::zeros(shape, precision);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, gen.floatData());
    return t;
  }
  int64_t bound = zb::indexDataBound(readers);
  Tensor t = Tensor::intZeros(shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.setInt(i, gen.indexData(bound));
  return t;
}

} // namespace

TensorMap initParams(zb::ModelOp model, uint64_t seed, Precision precision) {
  TensorMap params;
  for (zb::ParamOp param : model.getBody().front().getOps<zb::ParamOp>())
    params[*getLeafKey(param)] = initParam(param, seed, precision);
  return params;
}

TensorMap initParams(zb::PipelineOp pipeline, uint64_t seed,
                     Precision precision) {
  TensorMap params;
  for (zb::StageOp stage : pipeline.getBody().front().getOps<zb::StageOp>())
    for (zb::ParamOp param : stage.getBody().front().getOps<zb::ParamOp>())
      params[*getLeafKey(param)] = initParam(param, seed, precision);
  return params;
}

TensorMap randomFeeds(zb::ModelOp model, uint64_t seed, Precision precision) {
  TensorMap feeds;
  for (Operation &op : model.getBody().front()) {
    if (!isa<zb::InputOp, zb::LabelOp>(op))
      continue;
    std::string key = *getLeafKey(&op);
    Value result = op.getResult(0);
    feeds[key] = randomFeed(key, result.getType(), {result}, seed, precision);
  }
  return feeds;
}

TensorMap randomFeeds(zb::PipelineOp pipeline, uint64_t seed,
                      Precision precision) {
  // An input may be declared by several stages; its readers in all of them
  // bound its range.
  std::map<std::string, std::pair<Type, SmallVector<Value>>> leaves;
  for (zb::StageOp stage : pipeline.getBody().front().getOps<zb::StageOp>())
    for (Operation &op : stage.getBody().front()) {
      if (!isa<zb::InputOp, zb::LabelOp>(op))
        continue;
      std::string key = *getLeafKey(&op);
      auto &[type, readers] = leaves[key];
      type = op.getResult(0).getType();
      zb::appendArgsWithKey(stage, key, readers);
    }
  TensorMap feeds;
  for (auto &[key, leaf] : leaves)
    feeds[key] = randomFeed(key, leaf.first, leaf.second, seed, precision);
  return feeds;
}

std::vector<TensorMap> randomMicrobatches(zb::PipelineOp pipeline,
                                          int64_t count, uint64_t seed,
                                          Precision precision) {
  std::vector<TensorMap> microbatches;
  for (int64_t m = 0; m < count; ++m)
    microbatches.push_back(
        randomFeeds(pipeline, rt::dataSeed(seed, 0, count, m), precision));
  return microbatches;
}

} // namespace zbc::interp
