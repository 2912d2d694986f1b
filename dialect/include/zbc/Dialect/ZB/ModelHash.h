//===- ModelHash.h - a name for a model that changes with it ------*- C++ -*-===//
//
// FNV-1a-64 of a zb.pipeline as printed (without locations and without the
// costs a schedule plans with, Note [Costs in the IR]), in hex: what
// a checkpoint and a measured cost file name their model by, so that one
// made for another model, or for this one changed, is refused even under
// the same name. The passes after the split (zb-schedule, zb-insert-p2p,
// zb-plan-memory) leave the pipeline as it is, so the hash is the same
// wherever in the pipeline of passes it is taken.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_MODELHASH_H
#define ZBC_DIALECT_ZB_MODELHASH_H

#include "zbc/Dialect/ZB/ZBOps.h"

#include <string>

namespace zbc::zb {

std::string modelHashOf(PipelineOp pipeline);

} // namespace zbc::zb

#endif // ZBC_DIALECT_ZB_MODELHASH_H
