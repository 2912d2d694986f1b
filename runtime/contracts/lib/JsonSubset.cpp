//===- JsonSubset.cpp - the JSON that zbc's runtime files use -------------===//

#include "zbc/contracts/JsonSubset.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace zbc::rt {
namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : text_(text) {}

  using Value = JsonValue;

  bool parse(Value &out, std::string &error) {
    if (!value(out, 0)) {
      error = error_.empty() ? fmt::format("malformed JSON at byte {}", pos_)
                             : error_;
      return false;
    }
    skip();
    if (pos_ != text_.size()) {
      error = fmt::format("trailing text at byte {}", pos_);
      return false;
    }
    return true;
  }

private:
  void skip() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]))
      ++pos_;
  }
  bool value(Value &out, int depth) {
    if (depth > 16) {
      error_ = "JSON nested too deeply";
      return false;
    }
    skip();
    if (pos_ >= text_.size())
      return false;
    char c = text_[pos_];
    if (c == '{') {
      out.kind = Value::Object;
      ++pos_;
      skip();
      if (pos_ < text_.size() && text_[pos_] == '}')
        return ++pos_, true;
      while (true) {
        Value key, member;
        skip();
        if (!string(key) || (skip(), pos_ >= text_.size()) ||
            text_[pos_++] != ':' || !value(member, depth + 1))
          return false;
        out.members.emplace_back(key.string, std::move(member));
        skip();
        if (pos_ >= text_.size())
          return false;
        if (text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        return text_[pos_++] == '}';
      }
    }
    if (c == '[') {
      out.kind = Value::Array;
      ++pos_;
      skip();
      if (pos_ < text_.size() && text_[pos_] == ']')
        return ++pos_, true;
      while (true) {
        Value element;
        if (!value(element, depth + 1))
          return false;
        out.elements.push_back(std::move(element));
        skip();
        if (pos_ >= text_.size())
          return false;
        if (text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        return text_[pos_++] == ']';
      }
    }
    if (c == '"')
      return string(out);
    out.kind = Value::Number;
    size_t start = pos_;
    if (text_[pos_] == '-')
      ++pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
      ++pos_;
    size_t digits = pos_ - start - (text_[start] == '-' ? 1 : 0);
    if (digits == 0 || digits > 19)
      return false;
    // Whole numbers of int64_t only: one past its range is not a number.
    std::string literal = text_.substr(start, pos_ - start);
    errno = 0;
    char *end = nullptr;
    long long value = std::strtoll(literal.c_str(), &end, 10);
    if (errno == ERANGE || *end)
      return false;
    out.number = value;
    return true;
  }
  bool string(Value &out) {
    out.kind = Value::String;
    if (pos_ >= text_.size() || text_[pos_] != '"')
      return false;
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\') {
        if (++pos_ >= text_.size())
          return false;
      }
      out.string += text_[pos_++];
    }
    return pos_ < text_.size() && text_[pos_++] == '"';
  }

  const std::string &text_;
  size_t pos_ = 0;
  std::string error_;
};

} // namespace

bool parseJson(const std::string &text, JsonValue &out, std::string &error) {
  return Parser(text).parse(out, error);
}

std::string jsonQuoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

} // namespace zbc::rt
