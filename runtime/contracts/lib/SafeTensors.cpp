//===- SafeTensors.cpp - the safetensors file format, both ways -----------===//
//
// The writer builds the JSON header with fmt, tensors in name order at
// consecutive offsets, the header padded with spaces to 8 bytes (the format
// allows it), and writes the file atomically (a temporary file, fsync,
// rename, fsync of the directory) so that a reader never sees half a
// file. The reader parses just the JSON the format uses
// (objects, arrays, strings, integers) and checks every offset and size
// against the file before it copies a byte; from a file, it reads the
// header first and each tensor's bytes only after (Note [Files checked
// first] in Files.h: a regular file only).
//
//===----------------------------------------------------------------------===//

#include "zbc/contracts/SafeTensors.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/JsonSubset.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

/// `size` bytes of `fd` at `offset` into `out`; an error naming `path`.
std::string readAt(int fd, const std::string &path, int64_t offset,
                   int64_t size, std::string &out) {
  out.resize(static_cast<size_t>(size));
  int64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out.data() + done, static_cast<size_t>(size - done),
                        offset + done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fmt::format("cannot read '{}': {}", path, std::strerror(errno));
    if (n == 0)
      return fmt::format("cannot read '{}': it ended after {} bytes (it "
                         "shrank while being read)",
                         path, offset + done);
    done += n;
  }
  return {};
}

/// The header length in the first 8 bytes of `prefix`, checked against the
/// file's `size`.
std::string checkHeaderLength(const std::string &path,
                              const std::string &prefix, int64_t size,
                              uint64_t &length) {
  length = 0;
  for (int i = 0; i < 8; ++i)
    length |= static_cast<uint64_t>(static_cast<unsigned char>(prefix[i]))
              << (8 * i);
  if (length > static_cast<uint64_t>(size - 8) || length > (100u << 20))
    return fmt::format("'{}' is not a safetensors file: its header claims "
                       "{} bytes, the file has {}",
                       path, length, size - 8);
  return {};
}

/// One tensor of a header: its dtype and shape, and where its bytes lie in
/// the data that follows the header.
struct HeaderEntry {
  std::string name;
  StoredTensor tensor; // without data
  int64_t begin = 0, end = 0;
};

/// Parses and checks a header against `dataSize` bytes of data.
std::string parseHeader(const std::string &path, const std::string &header,
                        int64_t dataSize, std::vector<HeaderEntry> &entries,
                        SafeTensorsMetadata *metadata) {
  JsonValue root;
  std::string error;
  if (!parseJson(header, root, error) || root.kind != JsonValue::Object)
    return fmt::format("'{}': its header is not a JSON object ({})", path,
                       error.empty() ? "not an object" : error);
  for (const auto &[name, entry] : root.members) {
    if (name == "__metadata__") {
      if (metadata && entry.kind == JsonValue::Object)
        for (const auto &[key, value] : entry.members)
          if (value.kind == JsonValue::String)
            (*metadata)[key] = value.string;
      continue;
    }
    const JsonValue *dtype = entry.find("dtype"), *shape = entry.find("shape"),
                    *offsets = entry.find("data_offsets");
    if (entry.kind != JsonValue::Object || !dtype ||
        dtype->kind != JsonValue::String || !shape ||
        shape->kind != JsonValue::Array || !offsets ||
        offsets->kind != JsonValue::Array || offsets->elements.size() != 2 ||
        offsets->elements[0].kind != JsonValue::Number ||
        offsets->elements[1].kind != JsonValue::Number)
      return fmt::format("'{}': tensor '{}' lacks a dtype, shape or "
                         "data_offsets",
                         path, name);
    HeaderEntry e;
    e.name = name;
    e.tensor.dtype = dtype->string;
    int64_t elements = 1;
    for (const JsonValue &d : shape->elements) {
      if (d.kind != JsonValue::Number || d.number < 0 ||
          d.number > (int64_t(1) << 40))
        return fmt::format("'{}': tensor '{}' has a bad shape", path, name);
      e.tensor.shape.push_back(d.number);
      elements *= d.number;
      if (elements > (int64_t(1) << 40))
        return fmt::format("'{}': tensor '{}' is too large", path, name);
    }
    e.begin = offsets->elements[0].number;
    e.end = offsets->elements[1].number;
    int64_t width = dtypeBytes(e.tensor.dtype);
    if (width == 0)
      return fmt::format("'{}': tensor '{}' has dtype '{}', which zbc does "
                         "not read",
                         path, name, e.tensor.dtype);
    if (e.begin < 0 || e.end < e.begin || e.end > dataSize ||
        e.end - e.begin != elements * width)
      return fmt::format("'{}': tensor '{}' claims bytes [{}, {}) of {} "
                         "(its shape needs {}): the file is truncated or "
                         "corrupt",
                         path, name, e.begin, e.end, dataSize,
                         elements * width);
    entries.push_back(std::move(e));
  }
  return {};
}

} // namespace

std::string encodeSafeTensors(const TensorFile &tensors,
                              const std::map<std::string, std::string> &metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &[key, value] : metadata) {
      header += fmt::format("{}{}:{}", first ? "" : ",", jsonQuoted(key),
                            jsonQuoted(value));
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
        header.size() > 1 ? "," : "", jsonQuoted(name),
        jsonQuoted(tensor.dtype), shape, offset, end);
    offset = end;
  }
  header += "}";
  while (header.size() % 8)
    header += ' ';
  std::string bytes(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>(length >> (8 * i));
  bytes.reserve(8 + header.size() + static_cast<size_t>(offset));
  bytes += header;
  for (const auto &[name, tensor] : tensors)
    bytes.append(tensor.data.data(), tensor.data.size());
  return bytes;
}

std::string writeSafeTensors(const std::string &path, const TensorFile &tensors,
                             const std::map<std::string, std::string> &metadata) {
  return writeFileAtomically(path, encodeSafeTensors(tensors, metadata));
}

std::string readFileBytes(const std::string &path, std::string &bytes) {
  int64_t size = 0;
  if (std::string error = regularFileError(path, "the file", size);
      !error.empty())
    return error;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fmt::format("cannot read '{}': {}", path, std::strerror(errno));
  std::string error = readAt(fd, path, 0, size, bytes);
  ::close(fd);
  return error;
}

std::string writeFileAtomically(const std::string &path,
                                const std::string &bytes, int mode) {
  // The error names `path`, the file the user asked for; the temporary is
  // removed, so that a failed write (a full disk) leaves nothing cut off.
  std::string temporary = path + ".tmp";
  auto failed = [&](int fd) {
    std::string error =
        fmt::format("cannot write '{}': {}", path, std::strerror(errno));
    if (fd >= 0)
      ::close(fd);
    ::unlink(temporary.c_str());
    return error;
  };
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  mode);
  if (fd < 0)
    return fmt::format("cannot write '{}': {}", path, std::strerror(errno));
  // The mode as given, whatever the umask (an executable script).
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0)
    return failed(fd);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = ENOSPC;
      return failed(fd);
    }
    done += static_cast<size_t>(n);
  }
  // A full disk may show only here (delayed allocation).
  if (::fsync(fd) != 0)
    return failed(fd);
  if (::close(fd) != 0)
    return failed(-1);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string error = fmt::format("cannot rename '{}' to '{}': {}", temporary,
                                    path, std::strerror(errno));
    ::unlink(temporary.c_str());
    return error;
  }
  // The rename itself lasts once the directory is on disk.
  std::string dir = path.find('/') == std::string::npos
                        ? std::string(".")
                        : path.substr(0, path.rfind('/'));
  if (int d = ::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY);
      d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  return {};
}

std::string readSafeTensors(const std::string &path, TensorFile &tensors,
                            SafeTensorsMetadata *metadata) {
  // The header first, checked against the file's size; only then each
  // tensor's bytes.
  std::map<std::string, TensorLocation> located;
  if (std::string error = readSafeTensorsHeader(path, located, metadata);
      !error.empty())
    return error;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fmt::format("cannot read '{}': {}", path, std::strerror(errno));
  std::string error;
  for (auto &[name, at] : located) {
    std::string data;
    error = readAt(fd, path, at.begin, at.end - at.begin, data);
    if (!error.empty())
      break;
    StoredTensor &t = tensors[name];
    t.dtype = at.dtype;
    t.shape = at.shape;
    t.data.assign(data.begin(), data.end());
  }
  ::close(fd);
  return error;
}

std::string readSafeTensorsHeader(
    const std::string &path, std::map<std::string, TensorLocation> &tensors,
    SafeTensorsMetadata *metadata) {
  int64_t size = 0;
  if (std::string error = regularFileError(path, "the safetensors file", size);
      !error.empty())
    return error;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fmt::format("cannot read '{}': {}", path, std::strerror(errno));
  std::string error, prefix, header;
  std::vector<HeaderEntry> entries;
  uint64_t length = 0;
  if (size < 8)
    error = fmt::format("'{}' is not a safetensors file: shorter than its "
                        "8-byte header length",
                        path);
  if (error.empty())
    error = readAt(fd, path, 0, 8, prefix);
  if (error.empty())
    error = checkHeaderLength(path, prefix, size, length);
  if (error.empty())
    error = readAt(fd, path, 8, static_cast<int64_t>(length), header);
  ::close(fd);
  if (!error.empty())
    return error; // `length` may be anything: nothing below may use it
  const int64_t dataStart = 8 + static_cast<int64_t>(length);
  error = parseHeader(path, header, size - dataStart, entries, metadata);
  if (!error.empty())
    return error;
  for (HeaderEntry &e : entries)
    tensors[e.name] = TensorLocation{e.tensor.dtype, e.tensor.shape,
                                     dataStart + e.begin, dataStart + e.end};
  return {};
}

std::string decodeSafeTensors(const std::string &path, const std::string &bytes,
                              TensorFile &tensors,
                              SafeTensorsMetadata *metadata) {
  int64_t size = static_cast<int64_t>(bytes.size());
  if (size < 8)
    return fmt::format("'{}' is not a safetensors file: shorter than its "
                       "8-byte header length",
                       path);
  uint64_t length = 0;
  if (std::string error = checkHeaderLength(path, bytes, size, length);
      !error.empty())
    return error;
  std::vector<HeaderEntry> entries;
  if (std::string error =
          parseHeader(path, bytes.substr(8, length),
                      size - 8 - static_cast<int64_t>(length), entries,
                      metadata);
      !error.empty())
    return error;
  for (HeaderEntry &e : entries) {
    const char *from = bytes.data() + 8 + length + e.begin;
    e.tensor.data.assign(from, from + (e.end - e.begin));
    tensors[e.name] = std::move(e.tensor);
  }
  return {};
}

} // namespace zbc::rt
