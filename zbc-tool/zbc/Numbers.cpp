//===- Numbers.cpp - strict number parsing for command-line values --------===//

#include "Numbers.h"

#include "llvm/ADT/Twine.h"

#include <cmath>
#include <cstdio>

using namespace llvm;

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

static std::string shortest(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

Expected<int64_t> zbc::parseInteger(StringRef option, StringRef text,
                                    int64_t min, int64_t max) {
  int64_t value;
  // getAsInteger reads the whole text or fails, and fails on overflow.
  if (text.trim().getAsInteger(10, value) || value < min || value > max)
    return fail(option + ": '" + text + "' is not an integer in [" +
                Twine(min) + ", " + Twine(max) + "]");
  return value;
}

Expected<double> zbc::parseNumber(StringRef option, StringRef text, double min,
                                  double max) {
  double value;
  if (text.trim().getAsDouble(value) || !std::isfinite(value) || value < min ||
      value > max)
    return fail(option + ": '" + text + "' is not a number in [" +
                shortest(min) + ", " + shortest(max) + "]");
  return value;
}
