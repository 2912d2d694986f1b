//===- SplitReport.cpp - the `zbc split` report ---------------------------===//
//
// Everything printed comes from analyzeStage (StageAnalysis.h) on the IR the
// passes produced; exact integers, so the numbers can be checked.
//
//===----------------------------------------------------------------------===//

#include "SplitReport.h"

#include "zbc/Analysis/StageAnalysis.h"
#include "zbc/Dialect/ZB/ZBOps.h"

#include "llvm/Support/Format.h"

using namespace mlir;
using namespace zbc;

LogicalResult zbc::printSplitReport(zb::PipelineOp pipeline,
                                    llvm::raw_ostream &os) {
  SmallVector<StageFigures> stages;
  for (zb::StageOp stage : pipeline.getBody().front().getOps<zb::StageOp>()) {
    stages.push_back(analyzeStage(stage));
    if (failed(verifyCostable(stage, stages.back())))
      return failure();
  }

  os << "pipeline @" << pipeline.getSymName() << ": " << stages.size()
     << (stages.size() == 1 ? " stage" : " stages")
     << "; FLOPs per microbatch, bytes per microbatch\n\n";
  os << llvm::format("  %5s  %16s %16s %16s  %14s %14s %14s  %12s %12s  %12s\n",
                     "stage", "F matmul", "B matmul", "W matmul", "F elemwise",
                     "B elemwise", "W elemwise", "after F", "after B",
                     "params");
  StageFigures total;
  auto row = [&](const char *label, const StageFigures &s) {
    os << llvm::format(
        "  %5s  %16lld %16lld %16lld  %14lld %14lld %14lld  %12lld %12lld  %12lld\n",
        label, (long long)s.forward.matmulFlops,
        (long long)s.inputGrad.matmulFlops, (long long)s.weightGrad.matmulFlops,
        (long long)s.forward.elementwiseFlops,
        (long long)s.inputGrad.elementwiseFlops,
        (long long)s.weightGrad.elementwiseFlops, (long long)s.bytesAfterF,
        (long long)s.bytesAfterB, (long long)s.paramBytes);
  };
  for (const StageFigures &s : stages) {
    row(std::to_string(s.index).c_str(), s);
    total.forward += s.forward;
    total.inputGrad += s.inputGrad;
    total.weightGrad += s.weightGrad;
    total.bytesAfterF += s.bytesAfterF;
    total.bytesAfterB += s.bytesAfterB;
    total.paramBytes += s.paramBytes;
  }
  row("total", total);
  return success();
}
