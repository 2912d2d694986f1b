//===- CompileFlags.cpp - compile options as `zbc` flags ------------------===//

#include "CompileFlags.h"

#include "Options.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;
using namespace zbc;

CompileFlags::CompileFlags(cl::SubCommandGroup commands, unsigned groups,
                           CompileOptions defaults)
    : commands(std::move(commands)), groups(groups),
      values(std::move(defaults)) {
  values.bind(*this);
}

CompileFlags::Flag &CompileFlags::declare(const OptionInfo &info,
                                          const std::string &defaultText) {
  Flag flag;
  flag.name = info.name;
  // The help says the default where there is one to say (a count's 0 is
  // "not given", outside its bounds).
  flag.help = std::make_unique<std::string>(info.help);
  double number = 0;
  bool outOfBounds = info.bounds && to_float(defaultText, number) &&
                     (number < info.bounds->min || number > info.bounds->max);
  if (!defaultText.empty() && defaultText != "default" && !outOfBounds)
    *flag.help += " (default: " + defaultText + ")";
  // Read as text, so that a bad value gets zbc's words, not llvm::cl's.
  flag.option = std::make_unique<cl::opt<std::string>>(
      StringRef(info.toolName ? info.toolName : info.name),
      cl::desc(*flag.help),
      cl::value_desc(info.valueName), cl::sub(commands), cl::cat(zbcCategory));
  flags.push_back(std::move(flag));
  return flags.back();
}

Expected<CompileOptions> CompileFlags::read() {
  for (Flag &flag : flags) {
    if (!flag.option->getNumOccurrences())
      continue;
    if (Error e = flag.read(flag.option->getValue()))
      return createStringError(inconvertibleErrorCode(),
                               "--" + flag.option->ArgStr + ": " +
                                   toString(std::move(e)));
  }
  return values;
}

bool CompileFlags::given(StringRef name) const {
  for (const Flag &flag : flags)
    if (flag.name == name)
      return flag.option->getNumOccurrences() > 0;
  return false;
}

std::string CompileFlags::flagOf(StringRef name) const {
  for (const Flag &flag : flags)
    if (flag.name == name)
      return ("--" + flag.option->ArgStr).str();
  return ("--" + name).str();
}
