//===- LeafKeys.h - the phase keys of inputs, labels and params -*- C++ -*-===//
//
// A zb.input "x" is fed under "input.x", a zb.label "y" under "label.y" and a
// zb.param "w" under "param.w" (PhaseKeys.h). The interpreter needs this in
// three places (running a model, seeding a stage's environment, generating
// data), so it is spelled once here.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_LIB_INTERPRETER_LEAFKEYS_H
#define ZBC_LIB_INTERPRETER_LEAFKEYS_H

#include "zbc/Dialect/ZB/ZBOps.h"

#include <optional>
#include <string>

namespace zbc::interp::detail {

/// The key a leaf op is fed under; nullopt for any other op.
inline std::optional<std::string> getLeafKey(mlir::Operation *op) {
  if (auto input = llvm::dyn_cast<zb::InputOp>(op))
    return "input." + input.getName().str();
  if (auto label = llvm::dyn_cast<zb::LabelOp>(op))
    return "label." + label.getName().str();
  if (auto param = llvm::dyn_cast<zb::ParamOp>(op))
    return "param." + param.getName().str();
  return std::nullopt;
}

/// The static shape of a tensor type (the dialect allows no other).
inline Shape getShape(mlir::Type type) {
  auto tensor = llvm::cast<mlir::RankedTensorType>(type);
  return Shape(tensor.getShape().begin(), tensor.getShape().end());
}

} // namespace zbc::interp::detail

#endif // ZBC_LIB_INTERPRETER_LEAFKEYS_H
