//===- JsonSubset.h - the JSON that zbc's runtime files use -------*- C++ -*-===//
//
// A reader of the JSON subset that safetensors headers and checkpoint
// manifests are written in: objects, arrays, strings and integers (no
// reals, booleans or null). Plain C++17; the runtime links no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_JSONSUBSET_H
#define ZBC_RUNTIME_JSONSUBSET_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zbc::rt {

struct JsonValue {
  enum Kind { Object, Array, String, Number } kind = Number;
  std::string string;
  int64_t number = 0;
  std::vector<std::pair<std::string, JsonValue>> members;
  std::vector<JsonValue> elements;

  /// The member `key` of an object, or null.
  const JsonValue *find(const std::string &key) const {
    for (const auto &[name, value] : members)
      if (name == key)
        return &value;
    return nullptr;
  }
};

/// Parses all of `text`; false and `error` (with the byte offset) if it is
/// not a value of the subset.
bool parseJson(const std::string &text, JsonValue &out, std::string &error);

/// `text` as a JSON string literal.
std::string jsonQuoted(const std::string &text);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_JSONSUBSET_H
