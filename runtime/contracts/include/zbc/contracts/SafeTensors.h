//===- SafeTensors.h - the safetensors file format, both ways ----*- C++ -*-===//
//
// Hugging Face's safetensors: an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw
// little-endian data. What `zbc run --save` writes per rank, what a rank's
// --data reads, and what the tests compare against the reference trainer;
// PyTorch (`safetensors.torch.load_file`) and Hugging Face tools read it.
//
// Plain C++17: the runtime and the test tools link it, neither needs LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_SAFETENSORS_H
#define ZBC_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zbc::rt {

struct StoredTensor {
  std::string dtype; // "F32", "I32", "I64", "F64"
  std::vector<int64_t> shape;
  std::vector<char> data;
};

using TensorFile = std::map<std::string, StoredTensor>;

/// Writes `tensors` (and `metadata`, strings only) to `path` through a
/// temporary file renamed into place; returns an error message or "".
std::string writeSafeTensors(const std::string &path, const TensorFile &tensors,
                             const std::map<std::string, std::string> &metadata = {});

/// The string entries of a file's "__metadata__" (others are skipped).
using SafeTensorsMetadata = std::map<std::string, std::string>;

/// Reads `path` (and, if asked, its metadata); returns an error message
/// (naming the file and what is wrong) or "".
std::string readSafeTensors(const std::string &path, TensorFile &tensors,
                            SafeTensorsMetadata *metadata = nullptr);

/// One tensor of a file's header: its dtype, shape and bytes [begin, end)
/// of the file (offsets from the file's start, checked against its size).
struct TensorLocation {
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
};

/// Reads only `path`'s header (its length, then its JSON), checked as
/// readSafeTensors checks it: every tensor's bytes lie inside the file and
/// match its dtype and shape. Returns an error message or "".
std::string readSafeTensorsHeader(const std::string &path,
                                  std::map<std::string, TensorLocation> &tensors,
                                  SafeTensorsMetadata *metadata = nullptr);

/// The file's bytes, both ways; `path` only names it in errors.
std::string encodeSafeTensors(const TensorFile &tensors,
                              const std::map<std::string, std::string> &metadata = {});
std::string decodeSafeTensors(const std::string &path, const std::string &bytes,
                              TensorFile &tensors,
                              SafeTensorsMetadata *metadata = nullptr);

/// All of `path`'s bytes; an error message or "".
std::string readFileBytes(const std::string &path, std::string &bytes);
/// Writes `bytes` to `path` so that `path` holds either its old content or
/// all of the new, also across a crash: a temporary file (PATH.tmp, with
/// permissions `mode`), fsync, rename, fsync of the directory. An error
/// message naming `path` ("cannot write 'PATH': No space left on device"),
/// the temporary removed; or "".
std::string writeFileAtomically(const std::string &path,
                                const std::string &bytes, int mode = 0644);

/// Bytes per element of a dtype name; 0 if unknown.
int64_t dtypeBytes(const std::string &dtype);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_SAFETENSORS_H
