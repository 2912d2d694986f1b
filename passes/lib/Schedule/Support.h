//===- Support.h - small helpers of the schedule library --------*- C++ -*-===//
//
// Private to passes/lib/Schedule: how its errors are made and how it prints
// numbers in messages, in one place.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_SUPPORT_H
#define ZBC_SCHEDULE_SUPPORT_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdio>
#include <string>

namespace zbc::sched {

/// An error carrying `message` (exceptions are off: llvm::Error instead).
inline llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A double in its shortest form ("0.5", "12", "1e+20"), for messages.
inline std::string formatNumber(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_SUPPORT_H
