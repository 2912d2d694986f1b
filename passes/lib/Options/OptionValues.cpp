//===- OptionValues.cpp - the typed values of compile options -------------===//
//
// Each value type's one reading and writing as text (OptionValues.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/Options/OptionValues.h"

#include "zbc/Options/ByteAmount.h"
#include "zbc/Options/CompileOptions.h"
#include "zbc/Schedule/Problem.h"

#include "llvm/ADT/Twine.h"

#include <cmath>
#include <cstdio>

using namespace llvm;
using namespace zbc;

namespace {

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// A bound as typed: 1e+30 as "1e+30", 4096 as "4096".
std::string shortest(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

/// An exact double, read back as the same number.
std::string exact(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", x);
  return buffer;
}

/// The message of an integer outside [min, max] (or no integer at all).
Error notAnInteger(StringRef text, int64_t min, int64_t max) {
  return fail("'" + text + "' is not an integer in [" + Twine(min) + ", " +
              Twine(max) + "]");
}

Error notANumber(StringRef text, double min, double max) {
  return fail("'" + text + "' is not a number in [" + shortest(min) + ", " +
              shortest(max) + "]");
}

/// `text` as an integer in [min, max].
Expected<int64_t> readInteger(StringRef text, int64_t min, int64_t max) {
  int64_t value;
  // getAsInteger reads the whole text or fails, and fails on overflow.
  if (text.trim().getAsInteger(10, value) || value < min || value > max)
    return notAnInteger(text, min, max);
  return value;
}

/// `text` as an integer within `bounds` (any int64 without), a byte amount
/// where the bounds say so.
Expected<int64_t> readInteger(StringRef text, const std::optional<Bounds> &bounds) {
  if (bounds && bounds->bytes) {
    Expected<int64_t> bytes =
        parseByteAmount(text, static_cast<int64_t>(bounds->max));
    if (bytes && *bytes < static_cast<int64_t>(bounds->min))
      return fail("'" + text + "' is less than " +
                  Twine(static_cast<int64_t>(bounds->min)) + " bytes");
    return bytes;
  }
  return readInteger(text, bounds ? static_cast<int64_t>(bounds->min) : INT64_MIN,
                     bounds ? static_cast<int64_t>(bounds->max) : INT64_MAX);
}

/// The names of an enum's values, in order, for its reading and its error.
template <typename Enum, size_t N>
Error readName(StringRef text, Enum &value, const char *what,
               const std::pair<Enum, const char *> (&names)[N]) {
  for (const auto &[candidate, name] : names)
    if (text == name) {
      value = candidate;
      return Error::success();
    }
  std::string listed;
  for (size_t i = 0; i < N; ++i)
    listed += (i == 0 ? "'" : i + 1 == N ? " or '" : ", '") +
              std::string(names[i].second) + "'";
  return fail(Twine(what) + " must be " + listed + ", got '" + text + "'");
}

constexpr std::pair<RecomputeLever, const char *> kLevers[] = {
    {RecomputeLever::None, "none"},
    {RecomputeLever::Full, "full"},
    {RecomputeLever::Selective, "selective"},
    {RecomputeLever::Auto, "auto"},
    {RecomputeLever::Checkpoint, "checkpoint"}};
constexpr std::pair<OffloadLever, const char *> kOffloads[] = {
    {OffloadLever::None, "none"},
    {OffloadLever::Full, "full"},
    {OffloadLever::Auto, "auto"}};
constexpr std::pair<Optimizer, const char *> kOptimizers[] = {
    {Optimizer::SGD, "sgd"}, {Optimizer::AdamW, "adamw"}};

template <typename Enum, size_t N>
const char *nameOf(Enum value, const std::pair<Enum, const char *> (&names)[N]) {
  for (const auto &[candidate, name] : names)
    if (candidate == value)
      return name;
  return "?";
}

} // namespace

const char *zbc::leverName(RecomputeLever lever) {
  return nameOf(lever, kLevers);
}

sched::RecomputeMode zbc::scheduleModeOf(RecomputeLever lever) {
  switch (lever) {
  case RecomputeLever::Full:
    return sched::RecomputeMode::Full;
  case RecomputeLever::Selective:
    return sched::RecomputeMode::Selective;
  case RecomputeLever::Auto:
    return sched::RecomputeMode::Auto;
  case RecomputeLever::None:
  case RecomputeLever::Checkpoint:
    return sched::RecomputeMode::None;
  }
  return sched::RecomputeMode::None;
}

const char *zbc::optimizerName(Optimizer optimizer) {
  return nameOf(optimizer, kOptimizers);
}

Error zbc::readOptionValue(StringRef text, std::string &value,
                           const std::optional<Bounds> &) {
  value = text.str();
  return Error::success();
}

Error zbc::readOptionValue(StringRef text, int64_t &value,
                           const std::optional<Bounds> &bounds) {
  Expected<int64_t> read = readInteger(text, bounds);
  if (!read)
    return read.takeError();
  value = *read;
  return Error::success();
}

Error zbc::readOptionValue(StringRef text, std::optional<int64_t> &value,
                           const std::optional<Bounds> &bounds) {
  // Written as nothing: unset (how optionValueText writes it).
  if (text.empty()) {
    value.reset();
    return Error::success();
  }
  Expected<int64_t> read = readInteger(text, bounds);
  if (!read)
    return read.takeError();
  value = *read;
  return Error::success();
}

Error zbc::readOptionValue(StringRef text, double &value,
                           const std::optional<Bounds> &bounds) {
  double min = bounds ? bounds->min : -HUGE_VAL;
  double max = bounds ? bounds->max : HUGE_VAL;
  double read;
  if (text.trim().getAsDouble(read) || !std::isfinite(read) || read < min ||
      read > max)
    return notANumber(text, min, max);
  value = read;
  return Error::success();
}

Error zbc::readOptionValue(StringRef text, RecomputeLever &value,
                           const std::optional<Bounds> &) {
  return readName(text, value, "recompute mode", kLevers);
}

Error zbc::readOptionValue(StringRef text, OffloadLever &value,
                           const std::optional<Bounds> &) {
  return readName(text, value, "offload mode", kOffloads);
}

Error zbc::readOptionValue(StringRef text, Optimizer &value,
                           const std::optional<Bounds> &) {
  return readName(text, value, "optimizer", kOptimizers);
}

Error zbc::readOptionValue(StringRef text, ActivationBudget &value,
                           const std::optional<Bounds> &) {
  // Note [Two memory limits]: a compile's budget is bytes (Note [Byte
  // amounts]); `zbc schedule`'s and a cost file's, in the units of their
  // M_B, are read by sched::parseActivationBudget.
  if (text == "default" || text == "none") {
    value = ActivationBudget::fromProblem(
        cantFail(sched::parseActivationBudget(text)));
    return Error::success();
  }
  Expected<int64_t> bytes = parseByteAmount(text, limits::kMaxTensorBytes);
  if (!bytes)
    return fail("activation budget must be 'default', 'none' or bytes: " +
                toString(bytes.takeError()));
  value = ActivationBudget::bytes(static_cast<double>(*bytes));
  return Error::success();
}

std::string zbc::optionValueText(const std::string &value) { return value; }
std::string zbc::optionValueText(int64_t value) { return std::to_string(value); }
std::string zbc::optionValueText(const std::optional<int64_t> &value) {
  return value ? std::to_string(*value) : std::string();
}
std::string zbc::optionValueText(double value) { return exact(value); }
std::string zbc::optionValueText(RecomputeLever value) {
  return leverName(value);
}
std::string zbc::optionValueText(OffloadLever value) {
  return nameOf(value, kOffloads);
}
std::string zbc::optionValueText(Optimizer value) { return optimizerName(value); }
std::string zbc::optionValueText(const ActivationBudget &value) {
  return sched::activationBudgetText(value.forProblem());
}

Expected<int64_t> zbc::parseInteger(StringRef option, StringRef text,
                                    int64_t min, int64_t max) {
  Expected<int64_t> value = readInteger(text, min, max);
  if (!value)
    return fail(option + ": " + toString(value.takeError()));
  return value;
}

Expected<double> zbc::parseNumber(StringRef option, StringRef text, double min,
                                  double max) {
  double value = 0;
  if (Error e = readOptionValue(text, value, Bounds{min, max}))
    return fail(option + ": " + toString(std::move(e)));
  return value;
}
