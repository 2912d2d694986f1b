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
// and with vocabulary parallelism (Note [Vocabulary passes], Problem.h):
//   S(r, j)     needs Activation(last, j)
//   T(r, j)     needs VocabStats(j)       (every rank's S, and barrier 1)
//   B/BW(last, j) also needs VocabStats(j), or VocabGrad(j) (every rank's
//               T, and barrier 2) with two barriers
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

/// VocabStats(j) and VocabGrad(j) are the two barriers of Note [Vocabulary
/// passes] (Problem.h): made by every rank's S(r, j) (T(r, j)) together,
/// with the collectives after them; their `stage` is 0.
enum class Product : uint8_t {
  Activation = 0,
  InputGrad = 1,
  Stash = 2,
  VocabStats = 3,
  VocabGrad = 4
};
constexpr int kNumProducts = 5;

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
  case Kind::S:
    return Product::VocabStats;
  case Kind::T:
    return Product::VocabGrad;
  }
  return std::nullopt;
}

/// The product action `a` makes (with every other rank's pass of its
/// microbatch, for S and T), if any.
inline std::optional<ProductRef> productOf(const Action &a) {
  if (std::optional<Product> made = productMadeBy(a.kind))
    return ProductRef{*made, isVocabPass(a.kind) ? 0 : a.stage, a.microbatch};
  return std::nullopt;
}

/// The stage that reads `product` made by `stage` (Note [Stage boundaries]):
/// a stash never leaves its stage.
inline int consumerOf(Product product, int stage) {
  if (product == Product::Stash || product == Product::VocabStats ||
      product == Product::VocabGrad)
    return stage;
  return consumerStage(product == Product::Activation, stage);
}

/// Calls `fn(ProductRef)` for each product `a` needs, in a fixed order (at
/// most two), on a pipeline of `numStages` stages: its own stage's, and
/// across a boundary (Note [Stage boundaries]) its neighbour's. `restored`
/// says whether a's (stage, microbatch) has an R or an L (ScheduleTable::
/// recomputedMask, offloadedMask), whose stash its backward then reads.
/// `vocabBarriers` is the problem's (Note [Vocabulary passes]): with
/// vocabulary parallelism the last stage's backward waits for the output
/// layer's input gradient, summed in the last barrier.
template <typename Fn>
inline void forEachDependence(const Action &a, int numStages, Fn &&fn,
                              bool restored = false, int vocabBarriers = 0) {
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
    else if (vocabBarriers > 0)
      fn(ProductRef{vocabBarriers == 1 ? Product::VocabStats
                                       : Product::VocabGrad,
                    0, a.microbatch});
    return;
  case Kind::W:
    fn(ProductRef{Product::InputGrad, a.stage, a.microbatch});
    return;
  case Kind::S:
    fn(ProductRef{Product::Activation, numStages - 1, a.microbatch});
    return;
  case Kind::T:
    fn(ProductRef{Product::VocabStats, 0, a.microbatch});
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
