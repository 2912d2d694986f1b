//===- SafeTensors.cpp - the safetensors file format, both ways -----------===//
//
// The writer builds the JSON header with fmt, tensors in name order at
// consecutive offsets, the header padded with spaces to 8 bytes (the format
// allows it), and renames a temporary file into place so that a reader
// never sees half a file. The reader parses just the JSON the format uses
// (objects, arrays, strings, integers) and checks every offset and size
// against the file before it copies a byte.
//
//===----------------------------------------------------------------------===//

#include "zbc/runtime/SafeTensors.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace zbc::rt {

int64_t dtypeBytes(const std::string &dtype) {
  if (dtype == "F32" || dtype == "I32")
    return 4;
  if (dtype == "F64" || dtype == "I64")
    return 8;
  if (dtype == "F16" || dtype == "BF16")
    return 2;
  return 0;
}

namespace {

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The JSON subset of a safetensors header.
class Parser {
public:
  explicit Parser(const std::string &text) : text_(text) {}

  struct Value {
    enum Kind { Object, Array, String, Number } kind = Number;
    std::string string;
    int64_t number = 0;
    std::vector<std::pair<std::string, Value>> members;
    std::vector<Value> elements;
  };

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
    if (pos_ == start || pos_ - start > 18)
      return false;
    out.number = std::stoll(text_.substr(start, pos_ - start));
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

std::string writeSafeTensors(const std::string &path, const TensorFile &tensors,
                             const std::map<std::string, std::string> &metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &[key, value] : metadata) {
      header += fmt::format("{}{}:{}", first ? "" : ",", quoted(key),
                            quoted(value));
      first = false;
    }
    header += "}";
  }
  int64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    std::string shape;
    for (int64_t d : tensor.shape)
      shape += fmt::format("{}{}", shape.empty() ? "" : ",", d);
    int64_t end = offset + static_cast<int64_t>(tensor.data.size());
    header += fmt::format(
        "{}{}:{{\"dtype\":{},\"shape\":[{}],\"data_offsets\":[{},{}]}}",
        header.size() > 1 ? "," : "", quoted(name), quoted(tensor.dtype), shape,
        offset, end);
    offset = end;
  }
  header += "}";
  while (header.size() % 8)
    header += ' ';
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return fmt::format("cannot write '{}': {}", temporary,
                         std::strerror(errno));
    uint64_t length = header.size();
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<unsigned char>(length >> (8 * i));
    out.write(reinterpret_cast<const char *>(bytes), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto &[name, tensor] : tensors)
      out.write(tensor.data.data(),
                static_cast<std::streamsize>(tensor.data.size()));
    out.flush();
    if (!out)
      return fmt::format("cannot write '{}': {}", temporary,
                         std::strerror(errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    return fmt::format("cannot rename '{}' to '{}': {}", temporary, path,
                       std::strerror(errno));
  return {};
}

std::string readSafeTensors(const std::string &path, TensorFile &tensors) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fmt::format("cannot read '{}': {}", path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  int64_t size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  unsigned char bytes[8];
  if (size < 8 || !in.read(reinterpret_cast<char *>(bytes), 8))
    return fmt::format("'{}' is not a safetensors file: shorter than its "
                       "8-byte header length",
                       path);
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (length > static_cast<uint64_t>(size - 8) || length > (100u << 20))
    return fmt::format("'{}' is not a safetensors file: its header claims "
                       "{} bytes, the file has {}",
                       path, length, size - 8);
  std::string header(length, '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  Parser::Value root;
  std::string error;
  if (!Parser(header).parse(root, error) ||
      root.kind != Parser::Value::Object)
    return fmt::format("'{}': its header is not a JSON object ({})", path,
                       error.empty() ? "not an object" : error);
  int64_t dataSize = size - 8 - static_cast<int64_t>(length);
  for (const auto &[name, entry] : root.members) {
    if (name == "__metadata__")
      continue;
    auto field = [&](const char *key) -> const Parser::Value * {
      for (const auto &[k, v] : entry.members)
        if (k == key)
          return &v;
      return nullptr;
    };
    const Parser::Value *dtype = field("dtype"), *shape = field("shape"),
                        *offsets = field("data_offsets");
    if (entry.kind != Parser::Value::Object || !dtype ||
        dtype->kind != Parser::Value::String || !shape ||
        shape->kind != Parser::Value::Array || !offsets ||
        offsets->kind != Parser::Value::Array || offsets->elements.size() != 2)
      return fmt::format("'{}': tensor '{}' lacks a dtype, shape or "
                         "data_offsets",
                         path, name);
    StoredTensor tensor;
    tensor.dtype = dtype->string;
    int64_t elements = 1;
    for (const Parser::Value &d : shape->elements) {
      if (d.kind != Parser::Value::Number || d.number < 0 ||
          d.number > (int64_t(1) << 40))
        return fmt::format("'{}': tensor '{}' has a bad shape", path, name);
      tensor.shape.push_back(d.number);
      elements *= d.number;
      if (elements > (int64_t(1) << 40))
        return fmt::format("'{}': tensor '{}' is too large", path, name);
    }
    int64_t begin = offsets->elements[0].number,
            end = offsets->elements[1].number;
    int64_t width = dtypeBytes(tensor.dtype);
    if (width == 0)
      return fmt::format("'{}': tensor '{}' has dtype '{}', which zbc does "
                         "not read",
                         path, name, tensor.dtype);
    if (begin < 0 || end < begin || end > dataSize ||
        end - begin != elements * width)
      return fmt::format("'{}': tensor '{}' claims bytes [{}, {}) of {} "
                         "(its shape needs {}): the file is truncated or "
                         "corrupt",
                         path, name, begin, end, dataSize, elements * width);
    tensor.data.resize(static_cast<size_t>(end - begin));
    in.seekg(static_cast<std::streamoff>(8 + length + begin));
    if (!in.read(tensor.data.data(), end - begin))
      return fmt::format("'{}': cannot read tensor '{}'", path, name);
    tensors[name] = std::move(tensor);
  }
  return {};
}

} // namespace zbc::rt
