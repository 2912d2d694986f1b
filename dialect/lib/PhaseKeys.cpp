//===- PhaseKeys.cpp - the keys by which zb phases exchange tensors -------===//
//
// Parsing and the who-may-read/who-may-yield rules of PhaseKeys.h.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/PhaseKeys.h"

#include "zbc/Dialect/ZB/ZBOps.h"

#include "llvm/ADT/StringSwitch.h"

using namespace zbc;
using namespace zbc::zb;

namespace {
struct KeySpelling {
  KeyKind kind;
  const char *prefix;
  bool indexed; // the suffix is a decimal index, else a name
};
const KeySpelling kSpellings[] = {
    {KeyKind::In, "in", true},         {KeyKind::Out, "out", true},
    {KeyKind::DOut, "d_out", true},    {KeyKind::DIn, "d_in", true},
    {KeyKind::Input, "input", false},  {KeyKind::Label, "label", false},
    {KeyKind::Param, "param", false},  {KeyKind::Grad, "grad", false},
    {KeyKind::SavedF, "F", true},      {KeyKind::SavedB, "B", true},
};
} // namespace

std::optional<PhaseKey> PhaseKey::parse(StringRef key) {
  if (key == "loss")
    return PhaseKey{KeyKind::Loss, ""};
  auto [prefix, suffix] = key.split('.');
  if (suffix.empty())
    return std::nullopt;
  for (const KeySpelling &spelling : kSpellings) {
    if (prefix != spelling.prefix)
      continue;
    if (spelling.indexed) {
      unsigned index;
      if (suffix.getAsInteger(10, index) || std::to_string(index) != suffix)
        return std::nullopt;
    }
    return PhaseKey{spelling.kind, suffix.str()};
  }
  return std::nullopt;
}

std::string PhaseKey::str() const {
  if (kind == KeyKind::Loss)
    return "loss";
  for (const KeySpelling &spelling : kSpellings)
    if (spelling.kind == kind)
      return std::string(spelling.prefix) + "." + suffix;
  llvm_unreachable("unknown key kind");
}

std::optional<PhaseKey> PhaseKey::counterpart() const {
  switch (kind) {
  case KeyKind::Out:
    return PhaseKey{KeyKind::In, suffix};
  case KeyKind::In:
    return PhaseKey{KeyKind::Out, suffix};
  case KeyKind::DIn:
    return PhaseKey{KeyKind::DOut, suffix};
  case KeyKind::DOut:
    return PhaseKey{KeyKind::DIn, suffix};
  case KeyKind::Param:
    return PhaseKey{KeyKind::Grad, suffix};
  case KeyKind::Grad:
    return PhaseKey{KeyKind::Param, suffix};
  default:
    return std::nullopt;
  }
}

std::string zb::keyOf(KeyKind kind, StringRef suffix) {
  return PhaseKey{kind, suffix.str()}.str();
}

std::string zb::keyOf(KeyKind kind, int64_t index) {
  return keyOf(kind, std::to_string(index));
}

bool zb::isExternalInputOf(KeyKind kind, ComputeKind phase) {
  switch (kind) {
  case KeyKind::In:
  case KeyKind::Input:
  case KeyKind::Label:
  case KeyKind::Param:
    return true;
  case KeyKind::DOut:
    return phase != ComputeKind::F;
  default:
    return false;
  }
}

bool zb::isYieldableBy(KeyKind kind, ComputeKind phase) {
  switch (phase) {
  case ComputeKind::F:
    return kind == KeyKind::Out || kind == KeyKind::Loss ||
           kind == KeyKind::SavedF;
  case ComputeKind::B:
    // B yields parameter gradients only for ops kept out of W
    // (zb.fuse_weight_grad, a selective split).
    return kind == KeyKind::DIn || kind == KeyKind::SavedB ||
           kind == KeyKind::Grad;
  case ComputeKind::W:
    return kind == KeyKind::Grad;
  case ComputeKind::BW:
    return kind == KeyKind::DIn || kind == KeyKind::Grad;
  case ComputeKind::R:
    return false; // no phase is an R: R runs F's
  }
  llvm_unreachable("unknown compute kind");
}

bool zb::isActivationKey(KeyKind kind) {
  return kind != KeyKind::Param && kind != KeyKind::Grad;
}

std::optional<std::string> zb::getLeafKey(mlir::Operation *op) {
  if (auto input = dyn_cast<InputOp>(op))
    return keyOf(KeyKind::Input, input.getName());
  if (auto label = dyn_cast<LabelOp>(op))
    return keyOf(KeyKind::Label, label.getName());
  if (auto param = dyn_cast<ParamOp>(op))
    return keyOf(KeyKind::Param, param.getName());
  return std::nullopt;
}
