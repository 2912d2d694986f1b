//===- CostModel.h - FLOPs of zb ops from their shapes ------------*- C++ -*-===//
//
// The one cost model of zbc: FLOPs per op, computed from the operand and
// result shapes, for model-level and backward ops alike. Matmul-class FLOPs
// (linear, matmul, attention and their gradients; attention counted dense,
// as the Zero Bubble paper does) are kept apart from elementwise FLOPs, so
// the former can be compared with the paper's formulas. Used by
// zb-partition to balance stages and by the stage analysis to report F, B
// and W work; the schedulers will read it too.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_ANALYSIS_COSTMODEL_H
#define ZBC_ANALYSIS_COSTMODEL_H

#include <cstdint>
#include <limits>

namespace mlir {
class Operation;
} // namespace mlir

namespace zbc {

/// a + b for FLOP counts (nonnegative), saturating at INT64_MAX: the cost
/// model saturates absurd shapes instead of overflowing, and sums keep that.
inline int64_t addFlops(int64_t a, int64_t b) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return a > kMax - b ? kMax : a + b;
}

struct OpCost {
  int64_t matmulFlops = 0;      // 2*M*N*K per matrix product
  int64_t elementwiseFlops = 0; // a few FLOPs per element touched
  int64_t total() const { return addFlops(matmulFlops, elementwiseFlops); }
  /// True once a count has saturated: the true number is unknown, and no
  /// schedule or report may use it (the passes that read costs refuse it).
  bool saturated() const {
    return total() == std::numeric_limits<int64_t>::max();
  }
  OpCost &operator+=(const OpCost &o) {
    matmulFlops = addFlops(matmulFlops, o.matmulFlops);
    elementwiseFlops = addFlops(elementwiseFlops, o.elementwiseFlops);
    return *this;
  }
};

/// The cost of one zb tensor op, model-level or backward; zero for ops that
/// compute nothing (leaves, cuts, the loss, phases, yields). A zb.fill counts
/// one FLOP per element. The constants are tabled in CostModel.cpp.
OpCost getOpCost(mlir::Operation *op);

} // namespace zbc

#endif // ZBC_ANALYSIS_COSTMODEL_H
