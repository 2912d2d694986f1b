//===- CountedLabels.cpp - the labels a pipeline's loss counts ------------===//
//
// countedLabelsOf of CountedLabels.h: from the "loss" the F phase of a stage
// yields back to the zb.cross_entropy that computes it and the phase
// argument its labels are.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/CountedLabels.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

std::optional<CountedLabels> zb::countedLabelsOf(PipelineOp pipeline) {
  for (StageOp stage : pipeline.getBody().front().getOps<StageOp>()) {
    SmallVector<PhaseOp> phases = stage.getPhases();
    if (phases.empty())
      continue;
    PhaseOp forward = phases.front();
    for (auto [key, value] : llvm::zip(forward.getYield().getKeyList(),
                                       forward.getYield().getValues())) {
      if (key != keyOf(KeyKind::Loss, ""))
        continue;
      auto loss = value.getDefiningOp<CrossEntropyOp>();
      auto labels = loss ? dyn_cast<BlockArgument>(loss.getLabels())
                         : BlockArgument();
      if (!labels || labels.getOwner() != &forward.getBodyBlock())
        return std::nullopt;
      StringRef labelKey = forward.getArgKeyList()[labels.getArgNumber()];
      std::optional<PhaseKey> parsed = PhaseKey::parse(labelKey);
      if (!parsed || parsed->kind != KeyKind::Label)
        return std::nullopt;
      return CountedLabels{labelKey.str(), loss.getIgnoreIndex()};
    }
  }
  return std::nullopt;
}
