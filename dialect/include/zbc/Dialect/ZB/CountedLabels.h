//===- CountedLabels.h - the labels a pipeline's loss counts -----*- C++ -*-===//
//
// The step's loss is a mean over the labels its zb.cross_entropy counts
// (Note [Loss over real tokens] in zbc/contracts/LossWeights.h): which data
// key those labels are, and the value that marks one as not counted. The
// code generator writes them into each rank's program, the reference
// interpreter reads them from its feeds; both weigh microbatches by them.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_COUNTEDLABELS_H
#define ZBC_DIALECT_ZB_COUNTEDLABELS_H

#include "zbc/Dialect/ZB/ZBOps.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zbc::zb {

struct CountedLabels {
  std::string key;     // "label.targets"
  int64_t ignoreIndex; // labels equal to it are not counted
};

/// The labels of the zb.cross_entropy whose result the last stage's F
/// yields as the loss, when they are a data label (a phase argument keyed
/// label.N); nullopt for any other loss, whose microbatches all weigh 1.
std::optional<CountedLabels> countedLabelsOf(PipelineOp pipeline);

} // namespace zbc::zb

#endif // ZBC_DIALECT_ZB_COUNTEDLABELS_H
