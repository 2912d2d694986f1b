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
#include "zbc/contracts/Shards.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

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

/// A parameter a rank holds: its elements and their bytes, the first
/// compute of the step that reads it and the last that writes its
/// gradient.
struct HeldParam {
  int64_t elements = 0, elementBytes = 4;
  ComputeOp firstReader, lastWriter;
};

/// A collective to insert: what it does, over which group, and the
/// parameters it moves with their bytes.
using Kind = sched::CollectiveKind;
struct Collective {
  Kind kind;
  std::string over;
  std::vector<std::string> params;
  int64_t bytes = 0;
};

/// Adds `param` to the collective of `kind` over `over` in `list`, or to a
/// new one (`alone`: always a new one, a tied parameter's own group).
void add(std::vector<Collective> &list, Kind kind, StringRef over,
         StringRef param, int64_t bytes, bool alone = false) {
  auto it = llvm::find_if(list, [&](const Collective &c) {
    return c.kind == kind && c.over == over;
  });
  if (it == list.end() || alone) {
    list.push_back({kind, over.str(), {}, 0});
    it = std::prev(list.end());
  }
  it->params.push_back(param.str());
  it->bytes += bytes;
}

/// The replicas' first, then the tied parameters' by name: every holder of
/// two tied parameters issues them in one order.
std::vector<Collective> sorted(std::vector<Collective> list) {
  llvm::stable_sort(list, [](const Collective &a, const Collective &b) {
    bool aTied = !tiedParamOf(a.over).empty();
    bool bTied = !tiedParamOf(b.over).empty();
    return aTied != bTied ? !aTied : a.over < b.over;
  });
  return list;
}

/// The op of `c` for stage `of`'s compute, waiting for `deps`.
Operation *create(OpBuilder &b, ComputeOp of, Type token, const Collective &c,
                  ValueRange deps) {
  SmallVector<StringRef> params(c.params.begin(), c.params.end());
  auto stage = b.getI64IntegerAttr(of.getStage());
  auto over = b.getStringAttr(c.over);
  auto names = b.getStrArrayAttr(params);
  auto bytes = b.getI64IntegerAttr(c.bytes);
  switch (c.kind) {
  case Kind::AllReduce:
    return AllReduceOp::create(b, of.getLoc(), token, stage, over, names,
                               bytes, deps);
  case Kind::ReduceScatter:
    return ReduceScatterOp::create(b, of.getLoc(), token, stage, over, names,
                                   bytes, deps);
  case Kind::AllGather:
    return AllGatherOp::create(b, of.getLoc(), token, stage, over, names,
                               bytes, deps);
  case Kind::Broadcast:
  case Kind::Reduce:
    break; // a microbatch's values, not a stage's: not placed here
  }
  llvm_unreachable("zb-insert-collectives places gradient and parameter "
                   "collectives only");
}

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
  // A program with its gradient collectives (a schedule file's) keeps them.
  program.walk([&](Operation *op) {
    kept |= isCollective(op) && !isValueCollective(op);
  });
  if (kept)
    return success();
  int64_t replicas = program.getReplicas().value_or(1);
  bool dataParallel = replicas > 1;
  // Note [Sharded optimizer]: each replica keeps its shard of the sums and
  // gathers the parameters back before they are read.
  bool sharded = dataParallel && program.getZero().value_or(0) > 0;
  std::map<std::string, std::vector<int>> tied =
      tiedHoldersOf(pipeline, program);
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  Type token = TokenType::get(program.getContext());

  for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
    int64_t r = rank.getRank();
    // The first compute of each stage on this rank, and the last writing
    // its gradients.
    std::map<int64_t, ComputeOp> firstOfStage, lastOfStage;
    for (ComputeOp compute : rank.getBody().front().getOps<ComputeOp>()) {
      firstOfStage.try_emplace(compute.getStage(), compute);
      if (writesGradients(compute))
        lastOfStage[compute.getStage()] = compute;
    }
    // Each parameter once (a stage of this rank may hold it again: one
    // copy, one gradient), with its first reader and last writer over its
    // stages.
    std::vector<std::string> order;
    std::map<std::string, HeldParam> held;
    for (auto [s, stage] : llvm::enumerate(stages)) {
      if (program.getRankOfStage(s) != r)
        continue;
      auto writer = lastOfStage.find(static_cast<int64_t>(s));
      auto reader = firstOfStage.find(static_cast<int64_t>(s));
      for (ParamOp param : stage.getBody().front().getOps<ParamOp>()) {
        auto [it, inserted] = held.try_emplace(param.getName().str());
        HeldParam &p = it->second;
        if (inserted) {
          order.push_back(param.getName().str());
          auto type = cast<RankedTensorType>(param.getType());
          p.elements = type.getNumElements();
          p.elementBytes = type.getElementType().getIntOrFloatBitWidth() / 8;
        }
        if (writer != lastOfStage.end() &&
            (!p.lastWriter || p.lastWriter->isBeforeInBlock(writer->second)))
          p.lastWriter = writer->second;
        if (reader != firstOfStage.end() &&
            (!p.firstReader ||
             reader->second->isBeforeInBlock(p.firstReader)))
          p.firstReader = reader->second;
      }
    }
    // One sum per (last writer, group): the replicas' for the untied
    // parameters of the writer's stage, one per tied parameter; with a
    // sharded optimizer one gather per first reader.
    std::map<Operation *, std::vector<Collective>> sums, gathers;
    for (const std::string &name : order) {
      const HeldParam &param = held[name];
      if (sharded && param.firstReader)
        add(gathers[param.firstReader], Kind::AllGather,
            kReplicasGroup, name,
            paddedElements(param.elements, replicas) * param.elementBytes);
      if (!param.lastWriter)
        continue; // a stage whose backward writes no gradient of it
      std::string group = tiedGroupOf(name);
      if (tied.count(group))
        add(sums[param.lastWriter], Kind::AllReduce, group, name,
            param.elements * 4, /*alone=*/true);
      else if (sharded)
        add(sums[param.lastWriter], Kind::ReduceScatter, kReplicasGroup,
            name, paddedElements(param.elements, replicas) * 4);
      else if (dataParallel)
        add(sums[param.lastWriter], Kind::AllReduce, kReplicasGroup,
            name, param.elements * 4);
    }
    // Sums right after their writer, waiting for it; gathers at the start
    // of the rank's order, so that they run under what comes before their
    // reader, which waits for them. Both in the order of the rank's
    // computes, the same on every member.
    for (ComputeOp compute :
         llvm::to_vector(rank.getBody().front().getOps<ComputeOp>())) {
      if (auto it = sums.find(compute); it != sums.end()) {
        OpBuilder b(compute.getContext());
        b.setInsertionPointAfter(compute);
        for (const Collective &sum : sorted(it->second)) {
          b.setInsertionPointAfter(
              create(b, compute, token, sum, ValueRange{compute.getDone()}));
          ++numCollectives;
        }
      }
    }
    OpBuilder top = OpBuilder::atBlockBegin(&rank.getBody().front());
    for (ComputeOp compute :
         llvm::to_vector(rank.getBody().front().getOps<ComputeOp>())) {
      auto it = gathers.find(compute);
      if (it == gathers.end())
        continue;
      for (const Collective &gather : sorted(it->second)) {
        Operation *op = create(top, compute, token, gather, ValueRange{});
        top.setInsertionPointAfter(op);
        compute.getDepsMutable().append(op->getResult(0));
        ++numCollectives;
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
