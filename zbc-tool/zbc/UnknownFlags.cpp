//===- UnknownFlags.cpp - a mistyped flag or subcommand, in one line ------===//
//
// checkFlagsKnown (UnknownFlags.h). The flags are the registered options
// of the subcommand (llvm::cl keeps them per subcommand, with --help and
// --version in each); a suggestion is the visible one nearest by edit
// distance, or the only one the word begins.
//
//===----------------------------------------------------------------------===//

#include "UnknownFlags.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

using namespace llvm;
namespace cl = llvm::cl;

namespace {

/// The nearest of `names` to `word`: the closest by edit distance if close
/// enough to be a typo, else the only name that begins with `word`.
std::optional<std::string> nearest(StringRef word,
                                   ArrayRef<std::string> names) {
  std::optional<std::string> best, prefixed;
  unsigned bestDistance = std::max<unsigned>(2, word.size() / 3) + 1;
  int prefixes = 0;
  for (const std::string &name : names) {
    unsigned d = word.edit_distance(name, /*AllowReplacements=*/true,
                                    bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = name;
    }
    if (word.size() >= 3 && StringRef(name).starts_with(word)) {
      ++prefixes;
      prefixed = name;
    }
  }
  if (best)
    return best;
  return prefixes == 1 ? prefixed : std::nullopt;
}

/// The flags of `sub` that --help shows, without their dashes.
std::vector<std::string> visibleFlags(cl::SubCommand &sub) {
  std::vector<std::string> names;
  for (auto &entry : sub.OptionsMap)
    if (entry.second->getOptionHiddenFlag() == cl::NotHidden &&
        !entry.first.empty())
      names.push_back(entry.first.str());
  llvm::sort(names); // a tie goes to the first in --help's order
  return names;
}

} // namespace

bool zbc::checkFlagsKnown(ArrayRef<const char *> args, raw_ostream &os) {
  cl::SubCommand *sub = &cl::SubCommand::getTopLevel();
  std::string command = "zbc";
  size_t first = 0;
  if (!args.empty() && !StringRef(args[0]).starts_with("-")) {
    StringRef word = args[0];
    std::vector<std::string> names;
    for (cl::SubCommand *s : cl::getRegisteredSubcommands())
      if (!s->getName().empty() && s != &cl::SubCommand::getAll()) {
        names.push_back(s->getName().str());
        if (s->getName() == word)
          sub = s;
      }
    if (sub == &cl::SubCommand::getTopLevel()) {
      llvm::sort(names);
      os << "zbc: error: unknown subcommand '" << word << "'";
      if (std::optional<std::string> guess = nearest(word, names))
        os << "; did you mean '" << *guess << "'?";
      os << " (zbc --help lists them)\n";
      return false;
    }
    command += " " + word.str();
    first = 1;
  }
  for (size_t i = first; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (arg == "--")
      break; // the rest are positional
    if (!arg.starts_with("-") || arg == "-")
      continue;
    StringRef name = arg.ltrim('-');
    bool inlineValue = name.contains('=');
    name = name.take_until([](char c) { return c == '='; });
    cl::Option *option = sub->OptionsMap.lookup(name);
    if (option) {
      // Its value is the next word (which may begin with '-': --lr -1).
      if (!inlineValue &&
          option->getValueExpectedFlag() == cl::ValueRequired)
        ++i;
      continue;
    }
    os << "zbc: error: unknown flag '" << arg.take_until([](char c) {
      return c == '=';
    }) << "' for " << command;
    if (std::optional<std::string> guess = nearest(name, visibleFlags(*sub)))
      os << "; did you mean '" << (guess->size() == 1 ? "-" : "--") << *guess
         << "'?";
    os << " (" << command << " --help lists them)\n";
    return false;
  }
  return true;
}
