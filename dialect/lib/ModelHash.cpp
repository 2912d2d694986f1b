//===- ModelHash.cpp - a name for a model that changes with it ------------===//

#include "zbc/Dialect/ZB/ModelHash.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

std::string zbc::zb::modelHashOf(PipelineOp pipeline) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pipeline->print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return llvm::formatv("{0}", llvm::format_hex_no_prefix(hash, 16)).str();
}
