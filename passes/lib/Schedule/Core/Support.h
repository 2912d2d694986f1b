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
#include <cstdlib>
#include <string>

namespace zbc::sched {

/// An error carrying `message` (exceptions are off: llvm::Error instead).
inline llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A double for messages: whole numbers under 1e15 in full ("6000000",
/// "360960": a byte count quoted in an error is the one the check
/// compared), others in the shortest form that reads back as the same
/// number, at most 10 significant digits, so that the round-off of long
/// sums does not show ("0.5", "2146.344", "599.434", "1e+20").
inline std::string formatNumber(double x) {
  char buffer[32];
  // The range first: NaN and infinities fail it before any cast.
  if (x > -1e15 && x < 1e15 && x == static_cast<double>(static_cast<long long>(x))) {
    std::snprintf(buffer, sizeof buffer, "%.0f", x);
    return buffer;
  }
  for (int digits = 1; digits <= 10; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, x);
    if (std::strtod(buffer, nullptr) == x)
      break;
  }
  return buffer;
}

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_SUPPORT_H
