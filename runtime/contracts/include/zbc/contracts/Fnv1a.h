//===- Fnv1a.h - the runtime's one string hash --------------------*- C++ -*-===//
//
// 64-bit FNV-1a: what names a tensor's generator (SyntheticData.h), a
// program's and a command line's fingerprint (the ranks' start-up checks)
// and a checkpoint file's checksum. Not cryptographic: it catches accidents
// (another compile, a flipped bit), not tampering. Header only.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_FNV1A_H
#define ZBC_RUNTIME_FNV1A_H

#include <cstdint>
#include <string_view>

namespace zbc::rt {

inline constexpr uint64_t kFnv1aBasis = 0xcbf29ce484222325ull;

/// `hash` (the basis, or an earlier result) extended by `bytes`.
inline uint64_t fnv1a64(std::string_view bytes, uint64_t hash = kFnv1aBasis) {
  for (char c : bytes)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_FNV1A_H
