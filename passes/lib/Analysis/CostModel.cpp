//===- CostModel.cpp - FLOPs of zb ops, as each op states them ------------===//
//
// getOpCost asks the op: every zb op that runs a kernel states its FLOPs
// through KernelOpInterface (the accounting, and its table of per-element
// constants, is in dialect/lib/ZBCosts.cpp); every other op costs nothing.
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/CostModel.h"

#include "zbc/Dialect/ZB/ZBOps.h"

using namespace zbc;

OpCost zbc::getOpCost(mlir::Operation *op) {
  if (auto kernel = llvm::dyn_cast<zb::KernelOpInterface>(op))
    return kernel.getFlops();
  return OpCost();
}
