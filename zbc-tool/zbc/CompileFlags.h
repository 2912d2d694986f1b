//===- CompileFlags.h - compile options as `zbc` flags -------------*- C++ -*-===//
//
// The `zbc` flags of the compile options: one flag per option of
// CompileOptions::bind in the groups a subcommand runs (`zbc compile` and
// `zbc run` all but the cut, `zbc schedule` the order's), read with the
// values' one reading (OptionValues.h), so an error names the flag, what
// was given and what is accepted.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_COMPILEFLAGS_H
#define ZBC_TOOL_COMPILEFLAGS_H

#include "zbc/Options/CompileOptions.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace zbc {

/// The flags of CompileOptions' `groups` in the subcommands `commands`,
/// their defaults those of `defaults`. Made once, at start-up (the flags
/// are llvm::cl's, registered when constructed).
class CompileFlags {
public:
  CompileFlags(llvm::cl::SubCommandGroup commands, unsigned groups,
               CompileOptions defaults = CompileOptions());
  CompileFlags(const CompileFlags &) = delete;

  /// The defaults with every flag given read over them.
  llvm::Expected<CompileOptions> read();
  /// Whether the flag of option `name` (CompileOptions::bind's) was given.
  bool given(llvm::StringRef name) const;
  /// The flag of option `name` as the user types it ("--mem-limit").
  std::string flagOf(llvm::StringRef name) const;

  /// CompileOptions::bind's callback: declares `field`'s flag.
  template <typename T> void operator()(T &field, const OptionInfo &info) {
    if (!(info.group & groups))
      return;
    Flag &flag = declare(info, optionValueText(field));
    flag.read = [&field, bounds = info.bounds](llvm::StringRef text) {
      return readOptionValue(text, field, bounds);
    };
  }

private:
  struct Flag {
    std::string name; // CompileOptions::bind's
    std::unique_ptr<std::string> help; // the flag's, which it points to
    std::unique_ptr<llvm::cl::opt<std::string>> option;
    std::function<llvm::Error(llvm::StringRef)> read;
  };
  Flag &declare(const OptionInfo &info, const std::string &defaultText);

  llvm::cl::SubCommandGroup commands;
  unsigned groups;
  CompileOptions values;
  std::vector<Flag> flags;
};

} // namespace zbc

#endif // ZBC_TOOL_COMPILEFLAGS_H
