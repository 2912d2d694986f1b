//===- ByteAmountTest.cpp - byte amounts as users write them --------------===//
//
// Note [Byte amounts] (zbc/Options/ByteAmount.h): plain and exponent
// numbers, decimal and binary units in any case, exact fractions that come
// to whole bytes; and each refusal (negative, a fraction of a byte, over
// the bound, an unknown unit, no number) in the words every front end
// prints after the option's name. Then the compile options that are byte
// amounts read them.
//
//===----------------------------------------------------------------------===//

#include "zbc/Options/ByteAmount.h"
#include "zbc/Options/CompileOptions.h"

#include "gtest/gtest.h"

using namespace zbc;

namespace {

constexpr int64_t kMax = int64_t(1) << 50;

int64_t bytes(llvm::StringRef text) {
  llvm::Expected<int64_t> read = parseByteAmount(text, kMax);
  if (!read) {
    ADD_FAILURE() << text.str() << ": " << llvm::toString(read.takeError());
    return -1;
  }
  return *read;
}

std::string refusal(llvm::StringRef text, int64_t max = kMax) {
  llvm::Expected<int64_t> read = parseByteAmount(text, max);
  if (read)
    return "read as " + std::to_string(*read);
  return llvm::toString(read.takeError());
}

TEST(ByteAmount, PlainAndExponentNumbers) {
  EXPECT_EQ(bytes("0"), 0);
  EXPECT_EQ(bytes("80000000000"), 80000000000);
  EXPECT_EQ(bytes("8e10"), 80000000000);
  EXPECT_EQ(bytes("8E+10"), 80000000000);
  EXPECT_EQ(bytes("1.5e9"), 1500000000);
  EXPECT_EQ(bytes("25000e-3"), 25);
  EXPECT_EQ(bytes(" 4096 "), 4096);
  EXPECT_EQ(bytes("007"), 7);
}

TEST(ByteAmount, DecimalAndBinaryUnits) {
  EXPECT_EQ(bytes("80GB"), 80000000000);
  EXPECT_EQ(bytes("80GiB"), int64_t(80) << 30);
  EXPECT_EQ(bytes("80 GiB"), int64_t(80) << 30);
  EXPECT_EQ(bytes("3kB"), 3000);
  EXPECT_EQ(bytes("3KB"), 3000);
  EXPECT_EQ(bytes("3KiB"), 3072);
  EXPECT_EQ(bytes("2MB"), 2000000);
  EXPECT_EQ(bytes("2MiB"), 2 << 20);
  EXPECT_EQ(bytes("1TB"), 1000000000000);
  EXPECT_EQ(bytes("1TiB"), int64_t(1) << 40);
  EXPECT_EQ(bytes("512B"), 512);
  // Units ignore case: zbc has no bits to tell apart.
  EXPECT_EQ(bytes("80gb"), 80000000000);
  EXPECT_EQ(bytes("80gib"), int64_t(80) << 30);
  // A fraction the unit makes whole, read exactly (never through a double).
  EXPECT_EQ(bytes("1.5GB"), 1500000000);
  EXPECT_EQ(bytes("1.1GB"), 1100000000);
  EXPECT_EQ(bytes("0.5KiB"), 512);
  EXPECT_EQ(bytes(".25MiB"), 262144);
  EXPECT_EQ(bytes("8e1GB"), 80000000000);
}

TEST(ByteAmount, Refusals) {
  const std::string accepted =
      "a number of bytes (80000000000, 8e10) or a number and a unit: kB, "
      "MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024); "
      "units ignore case";
  EXPECT_EQ(refusal("-1"), "'-1' is negative: a byte amount is 0 or more");
  EXPECT_EQ(refusal("-1GB"), "'-1GB' is negative: a byte amount is 0 or more");
  EXPECT_EQ(refusal("1.5"), "'1.5' is not a whole number of bytes");
  EXPECT_EQ(refusal("0.1KiB"), "'0.1KiB' is not a whole number of bytes");
  EXPECT_EQ(refusal("1e-3"), "'1e-3' is not a whole number of bytes");
  EXPECT_EQ(refusal("2TiB", int64_t(1) << 40),
            "'2TiB' is more than 1099511627776 bytes, the most accepted");
  EXPECT_EQ(refusal("1e19", INT64_MAX),
            "'1e19' is more than 9223372036854775807 bytes, the most accepted");
  EXPECT_EQ(refusal("1e99999999999"),
            "'1e99999999999' is more than 1125899906842624 bytes, the most "
            "accepted");
  EXPECT_EQ(refusal("99999999999999999999999999"),
            "'99999999999999999999999999' has more than 25 significant "
            "digits: write it with an exponent or a unit");
  for (const char *bad : {"", "GB", "80GX", "80 G B", "1e", "1eGB", "1..5",
                          "0x10", "80Gb/s", "nan", "inf", "+5"})
    EXPECT_EQ(refusal(bad), "'" + std::string(bad) +
                                "' is not a byte amount: " + accepted)
        << bad;
}

/// Gives the byte options of CompileOptions::bind a byte amount with a unit.
struct ByteOptionReader {
  std::vector<std::string> errors;
  template <typename T> void operator()(T &field, const OptionInfo &info) {
    llvm::StringRef name = info.name;
    const char *text = name == "memory-limit"        ? "80GiB"
                       : name == "activation-budget" ? "1.5GB"
                                                     : nullptr;
    if (!text)
      return;
    if (llvm::Error e = readOptionValue(text, field, info.bounds))
      errors.push_back(llvm::toString(std::move(e)));
  }
};

TEST(ByteAmount, CompileOptionsReadThem) {
  CompileOptions options;
  ByteOptionReader reader;
  options.bind(reader);
  EXPECT_TRUE(reader.errors.empty()) << reader.errors.front();
  EXPECT_EQ(options.memoryLimit, int64_t(80) << 30);
  EXPECT_EQ(options.activationBudget.givenBytes(), 1.5e9);
  ActivationBudget budget;
  EXPECT_EQ(llvm::toString(readOptionValue("0.5", budget, std::nullopt)),
            "activation budget must be 'default', 'none' or bytes: '0.5' is "
            "not a whole number of bytes");
}

} // namespace
