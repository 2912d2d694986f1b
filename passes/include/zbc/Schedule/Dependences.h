//===- Dependences.h - what waits for what: the one rule ----------*- C++ -*-===//
//
// The dependence rule of every pipeline schedule, in one place, as CIRCT's
// Scheduling/Problems.h keeps dependences first-class for both its
// algorithms and verifyPrecedence(). The schedulers (zb-auto's evaluator and
// ILP, zb-v), the simulator, zb-schedule's `after` tokens, zb-insert-p2p and
// zb-verify-schedule all ask it, so none of them spells the rule again.
//
// Actions exchange three products per (stage, microbatch):
//   Activation(s, j)  the forward output of stage s, made by F(s, j);
//   InputGrad(s, j)   the gradient of stage s's input, made by B(s, j) or by
//                     the fused BW(s, j), whichever the table has;
//   Stash(s, j)       the stash rebuilt by R(s, j) when the microbatch is
//                     recomputed (Note [Recomputation as an action]), or
//                     brought back by L(s, j) when it is offloaded (Note
//                     [Offload as actions]): restored, in both cases.
// and wait for them:
//   F(s, j)     needs Activation(s-1, j)                  (none for s = 0)
//   R(s, j)     needs Activation(s, j)   (its F, which kept its inputs)
//   O(s, j)     needs Activation(s, j)   (its F: the stash it copies)
//   L(s, j)     needs nothing here: its O precedes it on the rank, and the
//               copy queues order the rest (Simulator.h)
//   B/BW(s, j)  needs Activation(s, j)   (its own F: the stash)
//               or, restored, Stash(s, j)                 (its R or L)
//               and   InputGrad(s+1, j)                   (none for the last)
//   W(s, j)     needs InputGrad(s, j)    (its B: what B hands W)
// A product of another rank crosses the network (comm, a transfer); one of
// the same rank is an `after` token. Plain C++: no IR, no allocation.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_DEPENDENCES_H
#define ZBC_SCHEDULE_DEPENDENCES_H

#include "zbc/Schedule/ScheduleTable.h"
#include "zbc/Support/StageBoundary.h"

#include <cstdint>
#include <optional>

namespace zbc::sched {

enum class Product : uint8_t { Activation = 0, InputGrad = 1, Stash = 2 };
constexpr int kNumProducts = 3;

struct ProductRef {
  Product product;
  int stage;
  int microbatch;
  bool operator==(const ProductRef &o) const {
    return product == o.product && stage == o.stage &&
           microbatch == o.microbatch;
  }
};

/// The product `kind` makes: F an activation, B and BW an input gradient,
/// R and L a stash, W and O none.
inline std::optional<Product> productMadeBy(Kind kind) {
  switch (kind) {
  case Kind::F:
    return Product::Activation;
  case Kind::R:
  case Kind::L:
    return Product::Stash;
  case Kind::O:
    return std::nullopt;
  case Kind::B:
  case Kind::BW:
    return Product::InputGrad;
  case Kind::W:
    return std::nullopt;
  }
  return std::nullopt;
}

/// The product action `a` makes, if any.
inline std::optional<ProductRef> productOf(const Action &a) {
  if (std::optional<Product> made = productMadeBy(a.kind))
    return ProductRef{*made, a.stage, a.microbatch};
  return std::nullopt;
}

/// The stage that reads `product` made by `stage` (Note [Stage boundaries]):
/// a stash never leaves its stage.
inline int consumerOf(Product product, int stage) {
  if (product == Product::Stash)
    return stage;
  return consumerStage(product == Product::Activation, stage);
}

/// Calls `fn(ProductRef)` for each product `a` needs, in a fixed order (at
/// most two), on a pipeline of `numStages` stages: its own stage's, and
/// across a boundary (Note [Stage boundaries]) its neighbour's. `restored`
/// says whether a's (stage, microbatch) has an R or an L (ScheduleTable::
/// recomputedMask, offloadedMask), whose stash its backward then reads.
template <typename Fn>
inline void forEachDependence(const Action &a, int numStages, Fn &&fn,
                              bool restored = false) {
  switch (a.kind) {
  case Kind::F:
    if (a.stage > 0)
      fn(ProductRef{Product::Activation, producerStage(true, a.stage),
                    a.microbatch});
    return;
  case Kind::R:
  case Kind::O:
    fn(ProductRef{Product::Activation, a.stage, a.microbatch});
    return;
  case Kind::L:
    return;
  case Kind::B:
  case Kind::BW:
    fn(ProductRef{restored ? Product::Stash : Product::Activation, a.stage,
                  a.microbatch});
    if (a.stage + 1 < numStages)
      fn(ProductRef{Product::InputGrad, producerStage(false, a.stage),
                    a.microbatch});
    return;
  case Kind::W:
    fn(ProductRef{Product::InputGrad, a.stage, a.microbatch});
    return;
  }
}

/// A dense index for a product of a pipeline with `numStages` stages and
/// `microbatches` microbatches: [0, kNumProducts * numStages * microbatches).
inline int64_t productIndex(const ProductRef &d, int numStages,
                            int microbatches) {
  return (static_cast<int64_t>(d.product) * numStages + d.stage) *
             microbatches +
         d.microbatch;
}

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_DEPENDENCES_H
