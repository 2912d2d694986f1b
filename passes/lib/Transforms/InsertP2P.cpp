//===- InsertP2P.cpp - zb-insert-p2p: the transfers of a program ----------===//
//
// The IR side of insertTransfers (passes/lib/Schedule/InsertTransfers.cpp,
// which decides every place): reads a compute-only zb.program with its
// pipeline's messages into a sched::Program, inserts the transfers, and
// rewrites each rank's body in the new order. Computes keep their
// locations; a transfer takes the location of the compute it serves.
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

Payload toPayload(sched::Payload payload) {
  return payload == sched::Payload::Act ? Payload::Act : Payload::Grad;
}

} // namespace

LogicalResult ZBInsertP2PPass::insert(ProgramOp program) {
  PipelineOp pipeline = pipelineOfProgram(program);
  if (!pipeline)
    return program.emitOpError(
        "names no 'zb.pipeline' (its 'pipeline' attribute): zb-insert-p2p "
        "takes the messages' keys and types from the pipeline's stages");
  ProgramModel model = modelOfProgram(program, pipeline);
  for (const sched::RankProgram &rank : model.program.ranks)
    for (const sched::ProgramOp &op : rank.ops)
      if (op.what != sched::OpClass::Compute)
        return program.emitOpError(
            "has transfers already; zb-insert-p2p adds them to a "
            "compute-only program");
  if (llvm::Error error = insertTransfers(model.program))
    return program.emitOpError(llvm::toString(std::move(error)));

  MLIRContext *context = program.getContext();
  Type token = TokenType::get(context);
  for (auto [r, rankOp] : llvm::enumerate(program.getBody().front().getOps<RankOp>())) {
    // The computes' locations, in order, before the body goes.
    SmallVector<Location> computeLocs;
    for (ComputeOp compute : rankOp.getBody().front().getOps<ComputeOp>())
      computeLocs.push_back(compute.getLoc());
    Block &body = rankOp.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      op.erase();

    const std::vector<sched::ProgramOp> &ops = model.program.ranks[r].ops;
    std::vector<Value> tokenOf(ops.size());
    // A transfer is placed for the compute after it (a recv) or before it
    // (a send); its location is that compute's.
    std::vector<Location> locOf(ops.size(), program.getLoc());
    {
      int c = 0;
      Location last = program.getLoc();
      for (size_t i = 0; i < ops.size(); ++i)
        if (ops[i].what == sched::OpClass::Compute)
          locOf[i] = last = computeLocs[c++];
        else
          locOf[i] = ops[i].what == sched::OpClass::Send || c >= static_cast<int>(computeLocs.size())
                         ? last
                         : computeLocs[c];
    }
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    auto deps = [&](const sched::ProgramOp &op) {
      SmallVector<Value> values;
      for (int d : op.deps)
        values.push_back(tokenOf[d]);
      return values;
    };
    auto transfer = [&](OpBuilder &builder, size_t i) -> Value {
      const sched::ProgramOp &op = ops[i];
      auto payload = PayloadAttr::get(context, toPayload(op.payload));
      Type type = model.types.lookup(op.type);
      IntegerAttr stream =
          op.stream >= 0 ? builder.getI64IntegerAttr(op.stream) : IntegerAttr();
      SmallVector<Value> after = deps(op);
      if (op.what == sched::OpClass::Send) {
        ++numSends;
        return SendOp::create(builder, locOf[i], token, payload,
                              builder.getI64IntegerAttr(op.stage),
                              builder.getI64IntegerAttr(op.microbatch),
                              builder.getI64IntegerAttr(op.peer),
                              builder.getStringAttr(op.key), TypeAttr::get(type),
                              stream, after)
            .getDone();
      }
      return RecvOp::create(builder, locOf[i], token, payload,
                            builder.getI64IntegerAttr(op.stage),
                            builder.getI64IntegerAttr(op.microbatch),
                            builder.getI64IntegerAttr(op.peer),
                            builder.getStringAttr(op.key), TypeAttr::get(type),
                            stream, after)
          .getDone();
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      const sched::ProgramOp &op = ops[i];
      if (op.group >= 0)
        continue; // built with its group
      switch (op.what) {
      case sched::OpClass::Compute:
        tokenOf[i] = ComputeOp::create(b, locOf[i], toComputeKind(op.kind),
                                       op.stage, op.microbatch, deps(op))
                         .getDone();
        break;
      case sched::OpClass::Send:
      case sched::OpClass::Recv:
        tokenOf[i] = transfer(b, i);
        break;
      case sched::OpClass::Group: {
        ++numGroups;
        Location loc = locOf[op.members.front()];
        auto group = GroupOp::create(b, loc, token, deps(op));
        OpBuilder inner = OpBuilder::atBlockEnd(&group.getBody().emplaceBlock());
        for (int m : op.members)
          tokenOf[m] = transfer(inner, m);
        tokenOf[i] = group.getDone();
        break;
      }
      }
    }
  }
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
