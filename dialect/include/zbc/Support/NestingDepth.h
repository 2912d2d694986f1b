//===- NestingDepth.h - bound the nesting of text before parsing --*- C++ -*-===//
//
// llvm::json and MLIR's parser both recurse once per level of brackets, so a
// file nested a hundred thousand deep overflows the stack before either can
// report anything. This scan finds the first place where the text nests
// deeper than a limit (limits::kMaxJSONDepth, limits::kMaxIRDepth), in one
// pass without recursion, so callers can refuse it with a located error.
// Strings (and, in IR, `//` comments) are skipped; in IR, `<` opens and `>`
// closes except in the arrow `->`. Unbalanced text is the parser's to reject:
// the depth never goes below 0 here. Plain C++, header only.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SUPPORT_NESTINGDEPTH_H
#define ZBC_SUPPORT_NESTINGDEPTH_H

#include <optional>
#include <string_view>

namespace zbc {

enum class NestingSyntax { JSON, IR };

/// A 1-based line and column.
struct TextPosition {
  int line = 1, column = 1;
};

/// Where `text` first nests deeper than `maxDepth`, or nullopt.
inline std::optional<TextPosition>
findExcessNesting(std::string_view text, int maxDepth, NestingSyntax syntax) {
  bool ir = syntax == NestingSyntax::IR;
  int depth = 0;
  TextPosition at;
  bool inString = false, escaped = false, inComment = false;
  char previous = 0;
  for (char c : text) {
    TextPosition here = at;
    if (c == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
    char before = previous;
    previous = c;
    if (inComment) {
      inComment = c != '\n';
      continue;
    }
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    switch (c) {
    case '"':
      inString = true;
      break;
    case '/':
      if (ir && before == '/')
        inComment = true;
      break;
    case '<':
      if (!ir)
        break;
      [[fallthrough]];
    case '(':
    case '[':
    case '{':
      if (++depth > maxDepth)
        return here;
      break;
    case '>':
      if (!ir || before == '-')
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

} // namespace zbc

#endif // ZBC_SUPPORT_NESTINGDEPTH_H
