//===- InsertP2P.cpp - zb-insert-p2p: the transfers of a program ----------===//
//
// The IR side of insertTransfers (passes/lib/Schedule/Program/InsertTransfers.cpp,
// which decides every place): reads a compute-only zb.program with its
// pipeline's messages into a sched::Program, inserts the transfers, and
// rewrites each rank's body in the new order (writeRankBodies,
// ProgramTable.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "zb-insert-p2p"

namespace zbc {
#define GEN_PASS_DEF_ZBINSERTP2PPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

struct ZBInsertP2PPass final : zbc::impl::ZBInsertP2PPassBase<ZBInsertP2PPass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult insert(ProgramOp program);
};

} // namespace

LogicalResult ZBInsertP2PPass::insert(ProgramOp program) {
  PipelineOp pipeline = pipelineOfProgram(program);
  if (!pipeline)
    return program.emitOpError(
        "names no 'zb.pipeline' (its 'pipeline' attribute): zb-insert-p2p "
        "takes the messages' keys and types from the pipeline's stages");
  ProgramModel model = modelOfProgram(program, pipeline);
  // A program with transfers (a compute+comms schedule file's) keeps the
  // user's order; zb-verify-schedule and zb-plan-memory prove it.
  for (const sched::RankProgram &rank : model.program.ranks)
    for (const sched::ProgramOp &op : rank.ops)
      if (op.what != sched::OpClass::Compute)
        return success();
  if (llvm::Error error = insertTransfers(model.program))
    return program.emitOpError(llvm::toString(std::move(error)));

  writeRankBodies(program, model);
  program.walk([&](Operation *op) {
    numSends += isa<SendOp>(op);
    numGroups += isa<GroupOp>(op);
  });
  return success();
}

void ZBInsertP2PPass::runOnOperation() {
  SmallVector<ProgramOp> programs(getOperation().getOps<ProgramOp>());
  if (programs.empty()) {
    getOperation().emitError("zb-insert-p2p found no 'zb.program'; run "
                             "zb-schedule first");
    return signalPassFailure();
  }
  for (ProgramOp program : programs)
    if (failed(insert(program)))
      return signalPassFailure();
}
