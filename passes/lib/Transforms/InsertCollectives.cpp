//===- InsertCollectives.cpp - zb-insert-collectives: gradient reductions --===//
//
// Puts the gradient reductions of a data-parallel or tied program into the
// program itself, where the schedule can place them and the proof can see
// them (Note [Collectives in the program] in Program.h): each one right
// after the last compute of the step that writes its gradients, so that it
// overlaps the rest of the rank's cool-down. The rule for which group sums
// what is Note [Collective groups] (CollectiveGroups.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Support/CollectiveGroups.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

#include <map>

namespace zbc {
#define GEN_PASS_DEF_ZBINSERTCOLLECTIVESPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

struct ZBInsertCollectivesPass final
    : zbc::impl::ZBInsertCollectivesPassBase<ZBInsertCollectivesPass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult insert(ProgramOp program);
};

/// A parameter a rank holds: the bytes of its (f32) gradient and the last
/// compute of the step that writes it.
struct HeldParam {
  int64_t gradBytes = 0;
  ComputeOp lastWriter;
};

bool writesGradients(ComputeOp op) {
  return op.getKind() == ComputeKind::W || op.getKind() == ComputeKind::BW;
}

} // namespace

LogicalResult ZBInsertCollectivesPass::insert(ProgramOp program) {
  PipelineOp pipeline = pipelineOfProgram(program);
  if (!pipeline)
    return program.emitOpError(
        "names no 'zb.pipeline' (its 'pipeline' attribute): "
        "zb-insert-collectives takes the parameters from the pipeline's "
        "stages");
  bool kept = false;
  program.walk([&](AllReduceOp) { kept = true; });
  if (kept)
    return success();
  bool dataParallel = program.getReplicas().value_or(1) > 1;
  std::map<std::string, std::vector<int>> tied =
      tiedHoldersOf(pipeline, program);
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  Type token = TokenType::get(program.getContext());

  for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
    int64_t r = rank.getRank();
    // The last compute writing each stage's gradients on this rank.
    std::map<int64_t, ComputeOp> lastOfStage;
    for (ComputeOp compute : rank.getBody().front().getOps<ComputeOp>())
      if (writesGradients(compute))
        lastOfStage[compute.getStage()] = compute;
    // Each parameter once (a stage of this rank may hold it again: one
    // copy, one gradient), with the last writer over its stages.
    std::vector<std::string> order;
    std::map<std::string, HeldParam> held;
    for (auto [s, stage] : llvm::enumerate(stages)) {
      if (program.getRankOfStage(s) != r)
        continue;
      auto writer = lastOfStage.find(static_cast<int64_t>(s));
      for (ParamOp param : stage.getBody().front().getOps<ParamOp>()) {
        auto [it, inserted] = held.try_emplace(param.getName().str());
        if (inserted) {
          order.push_back(param.getName().str());
          auto type = cast<RankedTensorType>(param.getType());
          it->second.gradBytes = type.getNumElements() * 4; // f32 gradients
        }
        if (writer == lastOfStage.end())
          continue;
        ComputeOp &last = it->second.lastWriter;
        if (!last || last->isBeforeInBlock(writer->second))
          last = writer->second;
      }
    }
    // One all-reduce per (last writer, group): the replicas' for the
    // untied parameters of the writer's stage, one per tied parameter.
    struct Reduction {
      std::string over;
      std::vector<std::string> params;
      int64_t bytes = 0;
    };
    llvm::MapVector<Operation *, std::vector<Reduction>> after;
    for (const std::string &name : order) {
      const HeldParam &param = held[name];
      if (!param.lastWriter)
        continue; // a stage whose backward writes no gradient of it
      std::string group = tiedGroupOf(name);
      bool isTied = tied.count(group);
      if (!isTied && !dataParallel)
        continue;
      std::vector<Reduction> &reductions = after[param.lastWriter];
      std::string over = isTied ? group : kReplicasGroup;
      auto it = llvm::find_if(reductions, [&](const Reduction &reduction) {
        return reduction.over == over;
      });
      if (it == reductions.end() || isTied) {
        reductions.push_back({over, {}, 0});
        it = std::prev(reductions.end());
      }
      it->params.push_back(name);
      it->bytes += param.gradBytes;
    }
    for (auto &[writer, reductions] : after) {
      auto compute = cast<ComputeOp>(writer);
      OpBuilder b(compute.getContext());
      b.setInsertionPointAfter(compute);
      // The replicas' first, then the tied parameters' by name: every
      // holder of two tied parameters issues them in one order.
      llvm::stable_sort(reductions, [](const Reduction &a, const Reduction &b) {
        bool aTied = !tiedParamOf(a.over).empty();
        bool bTied = !tiedParamOf(b.over).empty();
        return aTied != bTied ? !aTied : a.over < b.over;
      });
      for (const Reduction &reduction : reductions) {
        SmallVector<StringRef> params(reduction.params.begin(),
                                      reduction.params.end());
        auto op = AllReduceOp::create(
            b, compute.getLoc(), token,
            b.getI64IntegerAttr(compute.getStage()),
            b.getStringAttr(reduction.over), b.getStrArrayAttr(params),
            b.getI64IntegerAttr(reduction.bytes),
            ValueRange{compute.getDone()});
        b.setInsertionPointAfter(op);
        ++numAllReduces;
      }
    }
  }
  return success();
}

void ZBInsertCollectivesPass::runOnOperation() {
  for (ProgramOp program : getOperation().getOps<ProgramOp>())
    if (failed(insert(program)))
      return signalPassFailure();
}
