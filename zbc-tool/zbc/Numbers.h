//===- Numbers.h - strict number parsing for command-line values --*- C++ -*-===//
//
// Every numeric option of zbc goes through these, so a value is either the
// whole text read exactly and within range, or an error that names the
// option, what was given and the range accepted. (llvm::cl's own int and
// double parsers take '' as 0 and print messages without "error:".)
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_NUMBERS_H
#define ZBC_TOOL_NUMBERS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace zbc {

/// `text` as a decimal integer in [min, max]; `option` ("--ranks") names it.
llvm::Expected<int64_t> parseInteger(llvm::StringRef option,
                                     llvm::StringRef text, int64_t min,
                                     int64_t max);

/// `text` as a finite number in [min, max].
llvm::Expected<double> parseNumber(llvm::StringRef option, llvm::StringRef text,
                                   double min, double max);

} // namespace zbc

#endif // ZBC_TOOL_NUMBERS_H
