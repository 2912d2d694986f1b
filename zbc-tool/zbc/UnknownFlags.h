//===- UnknownFlags.h - a mistyped flag or subcommand, in one line -*- C++ -*-===//
//
// LLVM's command-line parser answers a mistyped flag with a cascade: the
// flag's value becomes a positional ("Too many positional arguments"), a
// single-dash word is read as a group of one-letter flags ("-o may not
// occur within a group"), its suggestion may come from another subcommand
// ("Did you mean '-o'?" for --optimiser), and "See:" names the build's
// absolute path. zbc reads the command line first against the subcommand's
// own flags and refuses the first unknown one in one line: the flag, the
// nearest flag of that subcommand, and where the list is.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_UNKNOWNFLAGS_H
#define ZBC_TOOL_UNKNOWNFLAGS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

namespace zbc {

/// Whether every flag of `args` (argv without argv[0]) is one of its
/// subcommand's (args[0], or zbc's own without one) and the subcommand
/// exists; if not, says which to `os`, in one line, and returns false.
bool checkFlagsKnown(llvm::ArrayRef<const char *> args, llvm::raw_ostream &os);

} // namespace zbc

#endif // ZBC_TOOL_UNKNOWNFLAGS_H
