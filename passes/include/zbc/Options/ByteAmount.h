//===- ByteAmount.h - byte amounts as users write them ------------*- C++ -*-===//
//
// Note [Byte amounts]
// The one reading of a number of bytes given as text, for every option
// that is one (zbc's --mem-limit and --activation-budget, the memory-limit
// and activation-budget options of zbc-opt's passes and pipelines):
//  - a plain number: 80000000000, or in exponent form, 8e10, 1.5e9;
//  - a number and a unit, with or without a space between: kB, MB, GB, TB
//    are powers of 1000 (80GB = 80e9 bytes, as disks and clouds count),
//    KiB, MiB, GiB, TiB powers of 1024 (80GiB = 80 x 2^30, as GPUs count),
//    B is one byte; units ignore case (gb = GB: zbc has no bits to tell
//    apart), and a number may have a fraction when the unit makes it whole
//    (1.5GB; 0.5KiB);
//  - refused, each with what was given and why: a negative amount, a
//    fraction of a byte (1.5, 0.1KiB), more than the option accepts, an
//    unknown unit, no number.
// Amounts are exact: the decimal text is read as an integer and a power of
// ten (never through a double), so 1.1GB is 1100000000 bytes.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_OPTIONS_BYTEAMOUNT_H
#define ZBC_OPTIONS_BYTEAMOUNT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace zbc {

/// `text` as a number of bytes in [0, max] (Note [Byte amounts]). The
/// error says what was given and what is accepted, without the option's
/// name (the caller names it as its front end spells it).
llvm::Expected<int64_t> parseByteAmount(llvm::StringRef text, int64_t max);

} // namespace zbc

#endif // ZBC_OPTIONS_BYTEAMOUNT_H
