//===- PlanMemory.cpp - zb-plan-memory: one arena per rank ----------------===//
//
// Proves each zb.program (verifyScheduleProgram), accounts its memory
// (ProgramMemory.h) and writes the plan of MemoryPlan.h onto its ranks as
// attributes, which convert-zb-to-emitc lowers.
//
//===----------------------------------------------------------------------===//

#include "zbc/Passes/Passes.h"

#include "zbc/Analysis/MemoryPlan.h"
#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/Support/FormatVariadic.h"

#define DEBUG_TYPE "zb-plan-memory"

namespace zbc {
#define GEN_PASS_DEF_ZBPLANMEMORYPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

struct ZBPlanMemoryPass final
    : zbc::impl::ZBPlanMemoryPassBase<ZBPlanMemoryPass> {
  using Base::Base;
  void runOnOperation() override;
};

DictionaryAttr placementAttr(Builder &b, const Placement &placement) {
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("key", b.getStringAttr(placement.key)),
      b.getNamedAttr("offset", b.getI64IntegerAttr(placement.offset)),
      b.getNamedAttr("bytes", b.getI64IntegerAttr(placement.bytes))};
  // A whole gradient under zero 2 is the stage's for the step, of no
  // microbatch (Note [Sharded gradients]).
  if (placement.stage >= 0)
    fields.push_back(b.getNamedAttr("stage", b.getI64IntegerAttr(placement.stage)));
  if (placement.stage >= 0 && placement.microbatch >= 0)
    fields.push_back(
        b.getNamedAttr("mb", b.getI64IntegerAttr(placement.microbatch)));
  return b.getDictionaryAttr(fields);
}

} // namespace

void ZBPlanMemoryPass::runOnOperation() {
  SmallVector<ProgramOp> programs(getOperation().getOps<ProgramOp>());
  if (programs.empty()) {
    getOperation().emitError("zb-plan-memory found no 'zb.program'");
    return signalPassFailure();
  }
  for (ProgramOp program : programs) {
    if (failed(verifyScheduleProgram(program)))
      return signalPassFailure();
    FailureOr<std::vector<RankPlan>> planned = planProgramMemory(program);
    if (failed(planned))
      return signalPassFailure();
    std::vector<RankPlan> &plans = *planned;
    // The limit bounds what a rank allocates (Note [Rank budget]): the
    // proof held the peak to it, the packing may add to it.
    if (std::optional<uint64_t> limit = program.getMemoryLimit())
      for (auto [r, plan] : llvm::enumerate(plans))
        if (plan.arenaBytes > static_cast<int64_t>(*limit)) {
          program.emitError("rank ")
              << r << "'s arena of " << plan.arenaBytes
              << " bytes is over the memory limit of " << *limit
              << ": its peak is " << plan.peakBytes << " and the memory "
              << "plan's packing adds " << plan.arenaBytes - plan.peakBytes;
          return signalPassFailure();
        }

    Builder b(program.getContext());
    std::string summary;
    int r = 0;
    for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
      const RankPlan &plan = plans[r++];
      SmallVector<Attribute> entries;
      for (const Placement &placement : plan.persistent)
        entries.push_back(placementAttr(b, placement));
      for (const Placement &placement : plan.buffers)
        entries.push_back(placementAttr(b, placement));
      rank.setArenaBytesAttr(b.getI64IntegerAttr(plan.arenaBytes));
      rank.setPeakBytesAttr(b.getI64IntegerAttr(plan.peakBytes));
      rank.setMemoryPlanAttr(b.getArrayAttr(entries));
      if (!plan.hostBuffers.empty()) {
        SmallVector<Attribute> hostEntries;
        for (const Placement &placement : plan.hostBuffers)
          hostEntries.push_back(placementAttr(b, placement));
        rank.setHostArenaBytesAttr(b.getI64IntegerAttr(plan.hostArenaBytes));
        rank.setHostPeakBytesAttr(b.getI64IntegerAttr(plan.hostPeakBytes));
        rank.setHostMemoryPlanAttr(b.getArrayAttr(hostEntries));
      }
      summary += llvm::formatv("{0}rank {1}: arena {2}, peak {3} ({4:F3}x)",
                               summary.empty() ? "" : "; ", r - 1,
                               plan.arenaBytes, plan.peakBytes,
                               plan.peakBytes ? double(plan.arenaBytes) /
                                                    double(plan.peakBytes)
                                              : 1.0)
                     .str();
      if (!plan.hostBuffers.empty())
        summary += llvm::formatv(", host arena {0}, host peak {1}",
                                 plan.hostArenaBytes, plan.hostPeakBytes)
                       .str();
    }
    if (report)
      program.emitRemark("memory plan of @")
          << program.getSymName() << ": " << summary;
  }
}
