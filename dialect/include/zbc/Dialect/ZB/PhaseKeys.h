//===- PhaseKeys.h - the keys by which zb phases exchange tensors -*- C++ -*-===//
//
// A `zb.phase` reads block arguments and yields values by key. The key says
// where a tensor comes from and who may read it; the rules here are the one
// place that says so, for the verifiers, zb-autodiff, zb-split-backward, the
// memory analysis, the interpreter and code generation (RankTables.cpp,
// ZBToEmitC.cpp):
//
//   in.I       activation I received from the previous stage   (F, by F on)
//   out.I      activation I sent to the next stage             (yielded by F)
//   d_out.I    gradient of out.I, received from the next stage (by B/BW on)
//   d_in.I     gradient of in.I, sent to the previous stage    (yielded by B/BW)
//   input.N    data input N                                    (by F on)
//   label.N    label N                                         (by F on)
//   param.N    parameter N                                     (any phase)
//   grad.N     gradient of parameter N, summed over microbatches (W/BW)
//   loss       the loss of the microbatch (yielded by the last stage's F)
//   F.I, B.I   a tensor F or B keeps for a later phase (activation memory)
//
// "by X on" means: provided to phase X and every later phase of the same
// microbatch; the runtime holds it until its last reader is done.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_DIALECT_ZB_PHASEKEYS_H
#define ZBC_DIALECT_ZB_PHASEKEYS_H

#include "zbc/Dialect/ZB/ZBTypes.h"
#include "zbc/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir {
class Operation;
} // namespace mlir

namespace zbc::zb {

enum class KeyKind {
  In,
  Out,
  DOut,
  DIn,
  Input,
  Label,
  Param,
  Grad,
  Loss,
  SavedF,
  SavedB
};

/// A parsed key: its kind and its suffix (index or name; empty for `loss`).
struct PhaseKey {
  KeyKind kind;
  std::string suffix;

  /// Parses "in.0", "param.fc0.weight", ...; nullopt if malformed.
  static std::optional<PhaseKey> parse(StringRef key);
  std::string str() const;

  /// The key on the other side of a stage boundary or of the optimizer:
  /// out.I <-> in.I (the next stage's), d_in.I <-> d_out.I (the previous
  /// stage's), param.N <-> grad.N; nullopt for the other kinds.
  std::optional<PhaseKey> counterpart() const;
};

/// Every key is built here, never concatenated by hand: keyOf(KeyKind::In, 0)
/// is "in.0", keyOf(KeyKind::Grad, "fc0.weight") is "grad.fc0.weight".
std::string keyOf(KeyKind kind, StringRef suffix);
std::string keyOf(KeyKind kind, int64_t index);

/// True if `phase` may read a key of this kind that comes from outside the
/// stage (is not yielded by an earlier phase of it).
bool isExternalInputOf(KeyKind kind, ComputeKind phase);
/// True if `phase` may yield a key of this kind.
bool isYieldableBy(KeyKind kind, ComputeKind phase);
/// True for keys whose tensors are per microbatch and held between phases:
/// everything but parameters and their gradients.
bool isActivationKey(KeyKind kind);

/// The key a leaf op is fed under: "input.x" for zb.input "x", "label.y" for
/// zb.label "y", "param.w" for zb.param "w"; nullopt for any other op.
std::optional<std::string> getLeafKey(mlir::Operation *op);

} // namespace zbc::zb

#endif // ZBC_DIALECT_ZB_PHASEKEYS_H
