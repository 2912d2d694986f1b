//===- ByteAmount.cpp - byte amounts as users write them ------------------===//
//
// Note [Byte amounts] (ByteAmount.h): a decimal number, exactly, times a
// unit, which must come to a whole number of bytes within the option's
// bounds.
//
//===----------------------------------------------------------------------===//

#include "zbc/Options/ByteAmount.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

using namespace llvm;

namespace {

using Wide = unsigned __int128;

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// What every refusal of a malformed amount says is accepted.
constexpr const char *kAccepted =
    "a number of bytes (80000000000, 8e10) or a number and a unit: kB, MB, "
    "GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024); units "
    "ignore case";

/// The bytes of a unit (lower case), or 0 for none known.
Wide unitBytes(StringRef unit) {
  struct Unit {
    const char *name;
    Wide bytes;
  };
  static const Unit kUnits[] = {
      {"", 1},           {"b", 1},
      {"kb", 1000},      {"mb", 1000000},
      {"gb", 1000000000}, {"tb", Wide(1000000000) * 1000},
      {"kib", Wide(1) << 10}, {"mib", Wide(1) << 20},
      {"gib", Wide(1) << 30}, {"tib", Wide(1) << 40}};
  for (const Unit &u : kUnits)
    if (unit == u.name)
      return u.bytes;
  return 0;
}

/// Significant digits kept exactly: 10^25 times a TiB stays below 2^127.
constexpr int kMaxDigits = 25;

} // namespace

Expected<int64_t> zbc::parseByteAmount(StringRef text, int64_t max) {
  StringRef rest = text.trim();
  auto malformed = [&] {
    return fail("'" + text + "' is not a byte amount: " + kAccepted);
  };
  if (rest.consume_front("-"))
    return fail("'" + text + "' is negative: a byte amount is 0 or more");
  // The mantissa as an integer and the power of ten it is scaled by.
  Wide mantissa = 0;
  int64_t exponent = 0;
  int digits = 0, significant = 0;
  bool point = false;
  while (!rest.empty() &&
         (isDigit(rest.front()) || (rest.front() == '.' && !point))) {
    char c = rest.front();
    rest = rest.drop_front();
    if (c == '.') {
      point = true;
      continue;
    }
    ++digits;
    if (mantissa == 0 && c == '0') {
      if (point)
        --exponent;
      continue;
    }
    if (++significant > kMaxDigits)
      return fail("'" + text + "' has more than " + Twine(kMaxDigits) +
                  " significant digits: write it with an exponent or a "
                  "unit");
    mantissa = mantissa * 10 + Wide(c - '0');
    if (point)
      --exponent;
  }
  if (digits == 0)
    return malformed();
  // An exponent: e or E, an optional sign, digits.
  if (rest.size() >= 2 && (rest.front() == 'e' || rest.front() == 'E')) {
    StringRef power = rest.drop_front();
    bool negative = power.consume_front("-");
    if (!negative)
      power.consume_front("+");
    size_t n = 0;
    while (n < power.size() && isDigit(power[n]))
      ++n;
    if (n == 0)
      return malformed();
    int64_t e = 0;
    if (power.take_front(n).getAsInteger(10, e) || e > 100000)
      return fail("'" + text + "' is more than " + Twine(max) +
                  " bytes, the most accepted");
    exponent += negative ? -e : e;
    rest = power.drop_front(n);
  }
  Wide unit = unitBytes(rest.trim().lower());
  if (!unit)
    return malformed();
  auto tooLarge = [&] {
    return fail("'" + text + "' is more than " + Twine(max) +
                " bytes, the most accepted");
  };
  Wide bytes = mantissa * unit; // below 2^127: kMaxDigits
  if (bytes == 0)
    return int64_t(0);
  for (; exponent > 0; --exponent) {
    if (bytes > Wide(max))
      return tooLarge();
    bytes *= 10;
  }
  for (; exponent < 0; ++exponent) {
    if (bytes % 10)
      return fail("'" + text + "' is not a whole number of bytes");
    bytes /= 10;
  }
  if (bytes > Wide(max))
    return tooLarge();
  return static_cast<int64_t>(bytes);
}
