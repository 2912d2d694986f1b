//===- Executor.h - evaluates the ops of one zb block -----------*- C++ -*-===//
//
// The part of the interpreter that knows ops: an Executor holds the tensor of
// every SSA value evaluated so far in one block (a model body or a phase
// body), binds block arguments and leaves to caller-supplied tensors after
// checking them against their IR types, and evaluates each tensor op with
// its kernel. runModel, runPhase and runPipelineStep (Interpreter.cpp) only
// decide which tensors go in and where results go.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_LIB_INTERPRETER_EXECUTOR_H
#define ZBC_LIB_INTERPRETER_EXECUTOR_H

#include "zbc/Interpreter/Tensor.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <string>

namespace zbc::interp::detail {

class Executor {
public:
  /// `context` prefixes every error ("stage 1, microbatch 0: ").
  /// `lossWeight` is zb.loss_seed's value: the weight of the microbatch
  /// the block runs for in its step's loss (Note [Loss over real tokens]).
  Executor(Precision precision, std::string context, double lossWeight = 1.0)
      : precision(precision), context(std::move(context)),
        lossWeight(lossWeight) {}

  /// An error at `op`'s location: "<context>'zb.foo' op ...".
  mlir::InFlightDiagnostic error(mlir::Operation *op);

  /// Makes `tensor`, converted to the run's precision (and rounded to bf16
  /// if `value` is a bf16 tensor, Note [bf16] at store), the value of `value`,
  /// after checking it against `value`'s type; on a mismatch, reports at
  /// `where` that `what` (e.g. "feed 'input.x'") does not fit.
  mlir::LogicalResult bind(mlir::Operation *where, mlir::Value value,
                           const Tensor &tensor, const llvm::Twine &what);

  /// Evaluates a tensor op, a backward op, zb.fill or zb.cut on the values
  /// computed so far.
  mlir::LogicalResult execute(mlir::Operation *op);

  /// The tensor of an evaluated (or bound) value; null if there is none.
  const Tensor *lookup(mlir::Value value) const;

  Precision getPrecision() const { return precision; }

private:
  mlir::FailureOr<Tensor> compute(mlir::Operation *op);
  /// Makes `tensor` the value of `value`; the one place Note [bf16] is
  /// applied (Executor.cpp).
  void store(mlir::Value value, Tensor tensor);

  Precision precision;
  std::string context;
  double lossWeight;
  llvm::DenseMap<mlir::Value, Tensor> values;
};

} // namespace zbc::interp::detail

#endif // ZBC_LIB_INTERPRETER_EXECUTOR_H
