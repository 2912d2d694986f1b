//===- ModelHash.cpp - a name for a model that changes with it ------------===//

#include "zbc/Dialect/ZB/ModelHash.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

std::string zbc::zb::modelHashOf(PipelineOp pipeline) {
  // The costs a schedule plans with (Note [Costs in the IR]) describe the
  // model's cost, not the model: printed without them, and put back.
  llvm::SmallVector<std::pair<mlir::Operation *, mlir::Attribute>> costs;
  auto setAside = [&](mlir::Operation *op) {
    if (mlir::Attribute attr = op->getAttr("costs")) {
      costs.push_back({op, attr});
      op->removeAttr("costs");
    }
  };
  setAside(pipeline);
  for (StageOp stage : pipeline.getBody().front().getOps<StageOp>())
    setAside(stage);
  std::string text;
  llvm::raw_string_ostream os(text);
  pipeline->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  for (auto [op, attr] : costs)
    op->setAttr("costs", attr);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return llvm::formatv("{0}", llvm::format_hex_no_prefix(hash, 16)).str();
}
