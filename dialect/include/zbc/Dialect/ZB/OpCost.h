//===- OpCost.h - FLOPs of one op, matmul and elementwise apart --*- C++ -*-===//
//
// The value KernelOpInterface::getFlops returns (ZBInterfaces.td) and the
// cost model (zbc/Analysis/CostModel.h) sums: matmul-class FLOPs (linear,
// matmul, attention and their gradients; attention counted dense, as the
// Zero Bubble paper does) kept apart from elementwise FLOPs, so that the
// former can be compared with the paper's formulas. Counts saturate at
// INT64_MAX instead of overflowing. Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_OPCOST_H
#define ZBC_DIALECT_ZB_OPCOST_H

#include <cstdint>
#include <initializer_list>
#include <limits>

namespace zbc {

/// The product of `factors` (nonnegative counts: dimensions, elements,
/// FLOPs per element), saturating at INT64_MAX; a factor of 0 or less
/// (a dynamic dimension, which zb types never have) gives 0.
inline int64_t saturatingProduct(std::initializer_list<int64_t> factors) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t result = 1;
  bool saturated = false;
  for (int64_t factor : factors) {
    if (factor <= 0)
      return 0;
    saturated = saturated || __builtin_mul_overflow(result, factor, &result);
  }
  return saturated ? kMax : result;
}

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

} // namespace zbc

#endif // ZBC_DIALECT_ZB_OPCOST_H
