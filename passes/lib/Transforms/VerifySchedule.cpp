//===- VerifySchedule.cpp - zb-verify-schedule: prove a zb.program --------===//
//
// Reads each zb.program into a sched::Program (ProgramTable.h), proves it
// with verifyProgram (Program.h), and, with its pipeline, accounts every
// byte of every rank (ProgramMemory.h) against the program's memory_limit.
// Errors land on the op they are about, with notes at the others; `report`
// adds a remark with the figures.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"

#include "zbc/Analysis/ProgramMemory.h"
#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Options/ByteAmount.h"
#include "zbc/Support/CollectiveGroups.h"
#include "zbc/contracts/Shards.h"
#include "zbc/Support/Limits.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <map>

#define DEBUG_TYPE "zb-verify-schedule"

namespace zbc {
#define GEN_PASS_DEF_ZBVERIFYSCHEDULEPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

struct ZBVerifySchedulePass final
    : zbc::impl::ZBVerifySchedulePassBase<ZBVerifySchedulePass> {
  using Base::Base;
  void runOnOperation() override;
};

/// The op a (rank, index) of the model names; the rank itself for -1.
Operation *opOf(ProgramOp program, const ProgramModel &model, int rank,
                int op) {
  if (rank >= 0 && rank < static_cast<int>(model.ops.size()) && op >= 0 &&
      op < static_cast<int>(model.ops[rank].size()))
    return model.ops[rank][op];
  int r = 0;
  for (RankOp rankOp : program.getBody().front().getOps<RankOp>())
    if (r++ == rank)
      return rankOp;
  return program;
}

/// What each collective of `program` moves (Note [Collective groups], Note
/// [Sharded optimizer]): parameters of its stage, its bytes their f32
/// gradients' (padded to whole shards for a reduce-scatter) or their
/// working copies' (padded, for an all-gather), a tied group its own
/// parameter only; and that every gradient a rank must sum (a tied
/// parameter's, or any with replicas > 1) is summed once, and with `zero`
/// every parameter gathered once.
LogicalResult verifyCollectiveContents(ProgramOp program, PipelineOp pipeline) {
  SmallVector<StageOp> stages(pipeline.getBody().front().getOps<StageOp>());
  std::map<std::string, std::vector<int>> tied =
      tiedHoldersOf(pipeline, program);
  int64_t replicas = program.getReplicas().value_or(1);
  bool sharded = replicas > 1 && program.getZero().value_or(0) > 0;
  struct Held {
    int64_t elements = 0, elementBytes = 4;
  };
  for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
    int64_t r = rank.getRank();
    std::map<std::string, Held> held; // the rank's parameters
    for (auto [s, stage] : llvm::enumerate(stages))
      if (static_cast<int64_t>(s) < program.getNumStages() &&
          program.getRankOfStage(s) == r)
        for (ParamOp param : stage.getBody().front().getOps<ParamOp>()) {
          auto type = cast<RankedTensorType>(param.getType());
          held[param.getName().str()] = {
              type.getNumElements(),
              type.getElementType().getIntOrFloatBitWidth() / 8};
        }
    std::map<std::string, Operation *> summedBy, gatheredBy;
    for (Operation &op : rank.getBody().front()) {
      if (!isCollective(&op) || isValueCollective(&op))
        continue;
      auto stageIndex = op.getAttrOfType<IntegerAttr>("stage").getInt();
      if (stageIndex >= static_cast<int64_t>(stages.size()))
        continue; // the op's verifier said
      StageOp stage = stages[stageIndex];
      std::string over = op.getAttrOfType<StringAttr>("over").str();
      std::string_view tiedParam = tiedParamOf(over);
      bool gathers = isa<AllGatherOp>(op), scatters = isa<ReduceScatterOp>(op);
      std::map<std::string, Operation *> &by = gathers ? gatheredBy : summedBy;
      int64_t bytes = 0;
      for (StringRef name : op.getAttrOfType<ArrayAttr>("params")
                                .getAsValueRange<StringAttr>()) {
        bool inStage = llvm::any_of(
            stage.getBody().front().getOps<ParamOp>(),
            [&](ParamOp param) { return param.getName() == name; });
        if (!inStage)
          return op.emitError("moves '")
                 << name << "', which stage " << stageIndex
                 << " does not hold";
        if (!tiedParam.empty() && name != StringRef(tiedParam))
          return op.emitError("sums '")
                 << name << "' over \"" << over
                 << "\", the holders of another parameter";
        auto [it, first] = by.try_emplace(name.str(), &op);
        if (!first) {
          InFlightDiagnostic diag = op.emitError("moves '")
                                    << name << "' a second time";
          diag.attachNote(it->second->getLoc()) << "the first";
          return diag;
        }
        const Held &param = held[name.str()];
        int64_t elements = gathers || scatters
                               ? paddedElements(param.elements, replicas)
                               : param.elements;
        bytes += elements * (gathers ? param.elementBytes : 4);
      }
      auto given = op.getAttrOfType<IntegerAttr>("bytes").getInt();
      if (bytes != given)
        return op.emitError("says ")
               << given << " bytes, but its parameters' "
               << (gathers ? "working copies" : "f32 gradients")
               << (gathers || scatters ? ", padded to whole shards," : "")
               << " are " << bytes;
    }
    for (const auto &[name, param] : held) {
      std::string group = tiedGroupOf(name);
      bool isTied = tied.count(group) > 0;
      if (sharded && (!gatheredBy.count(name) ||
                      !isa<AllGatherOp>(gatheredBy[name])))
        return rank.emitError("rank ")
               << r << " never gathers '" << name << "' over \""
               << kReplicasGroup << "\" (the optimizer state is sharded)";
      if (!isTied && replicas == 1)
        continue;
      std::string over = isTied ? group : std::string(kReplicasGroup);
      auto it = summedBy.find(name);
      bool right =
          it != summedBy.end() &&
          it->second->getAttrOfType<StringAttr>("over").getValue() == over &&
          (isTied || !sharded ? isa<AllReduceOp>(it->second)
                              : isa<ReduceScatterOp>(it->second));
      if (!right)
        return rank.emitError("rank ")
               << r << " never "
               << (sharded && !isTied ? "reduce-scatters" : "sums")
               << " the gradient of '" << name << "' over \"" << over << "\""
               << (isTied ? " (stages on other ranks hold it too)"
                          : " (the program runs as replicas)");
    }
  }
  return success();
}

} // namespace

LogicalResult zbc::verifyScheduleProgram(ProgramOp program,
                                         ScheduleProof *proof,
                                         int64_t memoryLimit) {
  PipelineOp pipeline = pipelineOfProgram(program);
  ProgramModel model = modelOfProgram(program, pipeline);
  if (std::optional<sched::ProgramError> error =
          sched::verifyProgram(model.program)) {
    InFlightDiagnostic diag =
        opOf(program, model, error->rank, error->op)->emitError(error->message);
    for (const sched::ProgramNote &note : error->notes)
      diag.attachNote(opOf(program, model, note.rank, note.op)->getLoc())
          << note.message;
    return failure();
  }
  size_t numOps = 0;
  for (const sched::RankProgram &rank : model.program.ranks)
    numOps += rank.ops.size();
  if (proof) {
    proof->ranks = static_cast<int>(model.program.ranks.size());
    proof->ops = numOps;
  }
  if (!pipeline)
    return success();
  if (failed(verifyCollectiveContents(program, pipeline)))
    return failure();

  FailureOr<std::vector<RankMemory>> memory =
      analyzeProgramMemory(program, pipeline, model);
  if (failed(memory))
    return failure();
  std::optional<uint64_t> limit = program.getMemoryLimit();
  if (memoryLimit > 0)
    limit = static_cast<uint64_t>(memoryLimit);
  for (auto [r, mem] : llvm::enumerate(*memory)) {
    if (!limit || mem.peak <= static_cast<int64_t>(*limit))
      continue;
    // The first op over the limit, and the largest buffers live there.
    int k = 0;
    while (mem.live[k] <= static_cast<int64_t>(*limit))
      ++k;
    std::vector<const BufferLife *> there;
    for (const BufferLife &b : mem.buffers)
      if (b.from <= k && k < b.until)
        there.push_back(&b);
    std::stable_sort(there.begin(), there.end(),
                     [](const BufferLife *a, const BufferLife *b) {
                       return a->bytes > b->bytes;
                     });
    std::string largest;
    for (size_t i = 0; i < std::min<size_t>(3, there.size()); ++i)
      largest += (i ? ", " : "") + there[i]->name + " (" +
                 std::to_string(there[i]->bytes) + ")";
    Operation *at = model.ops[r][mem.opAt[k]];
    at->emitError("rank ")
        << r << " holds " << mem.live[k] << " bytes at "
        << model.program.name(model.program.ranks[r].ops[mem.opAt[k]])
        << ", over the memory "
        << "limit of " << *limit << ": " << mem.persistent()
        << " for parameters, gradients and optimizer state, "
        << mem.temporaries[k] << " of this op's temporaries"
        << (largest.empty() ? std::string() : ", and the largest buffers "
                                              "live here are " + largest);
    return failure();
  }
  if (proof)
    for (const RankMemory &mem : *memory) {
      proof->peakBytes.push_back(mem.peak);
      proof->hostPeakBytes.push_back(mem.hostPeak);
    }
  return success();
}

namespace {
/// ", host peak bytes per rank [...]" where a rank offloads, else nothing.
std::string hostPeaksText(const ScheduleProof &proof) {
  if (llvm::all_of(proof.hostPeakBytes, [](int64_t b) { return b == 0; }))
    return {};
  std::string peaks;
  for (int64_t bytes : proof.hostPeakBytes)
    peaks += (peaks.empty() ? "" : ", ") + std::to_string(bytes);
  return ", host peak bytes per rank [" + peaks + "]";
}
} // namespace

void ZBVerifySchedulePass::runOnOperation() {
  SmallVector<ProgramOp> programs(getOperation().getOps<ProgramOp>());
  if (programs.empty()) {
    getOperation().emitError("zb-verify-schedule found no 'zb.program'");
    return signalPassFailure();
  }
  llvm::Expected<int64_t> memoryLimit =
      parseByteAmount(memoryLimitText, limits::kMaxTensorBytes);
  if (!memoryLimit) {
    programs.front().emitError("zb-verify-schedule option memory-limit: ")
        << llvm::toString(memoryLimit.takeError());
    return signalPassFailure();
  }
  for (ProgramOp program : programs) {
    ScheduleProof proof;
    if (failed(verifyScheduleProgram(program, &proof, *memoryLimit)))
      return signalPassFailure();
    if (report) {
      std::string peaks;
      for (int64_t bytes : proof.peakBytes)
        peaks += (peaks.empty() ? "" : ", ") + std::to_string(bytes);
      emitRemark(program.getLoc())
          << "verified: " << proof.ranks << " ranks, " << proof.ops
          << " ops, peak bytes per rank ["
          << (proof.peakBytes.empty() ? std::string("no pipeline: not counted")
                                      : peaks)
          << "]" << hostPeaksText(proof);
    }
  }
}
