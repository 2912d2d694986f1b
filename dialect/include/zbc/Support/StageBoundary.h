//===- StageBoundary.h - where a stage's products go ---------------*- C++ -*-===//
//
// Note [Stage boundaries]
// A stage talks to its neighbours only, and in one pattern: its forward's
// activation (the `out.*` keys) is read by the next stage (as `in.*`), its
// backward's input gradient (`d_in.*`) by the previous stage (as `d_out.*`).
// This is that rule, once, for every layer that routes a message: the
// dialect's verifiers, the schedule library's dependences, transfers and
// proof, the memory model and plan, the PyTorch CSV reader and the code
// generator. Plain C++, no MLIR: the bottom of the layering.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SUPPORT_STAGEBOUNDARY_H
#define ZBC_SUPPORT_STAGEBOUNDARY_H

namespace zbc {

/// The stage that reads what `stage` sends: the next one for an activation,
/// the previous one for an input gradient.
template <typename Int>
constexpr Int consumerStage(bool activation, Int stage) {
  return activation ? stage + 1 : stage - 1;
}

/// The stage that sent what `stage` receives: the previous one for an
/// activation, the next one for an input gradient.
template <typename Int>
constexpr Int producerStage(bool activation, Int stage) {
  return activation ? stage - 1 : stage + 1;
}

} // namespace zbc

#endif // ZBC_SUPPORT_STAGEBOUNDARY_H
