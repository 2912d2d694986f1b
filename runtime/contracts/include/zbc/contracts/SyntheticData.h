//===- SyntheticData.h - seeded parameters and data, bit for bit -*- C++ -*-===//
//
// The one definition of zbc's deterministic values, shared by the reference
// interpreter (test/lib/Interpreter/Init.cpp) and the runtime's data source,
// so that a compiled program and the oracle start from the same bytes.
//
// Every tensor gets its own std::mt19937_64, seeded from the run's seed and
// the tensor's phase key ("param.fc0.weight", "input.x"), so a value does not
// depend on the order of declarations or on which rank holds the tensor.
// Normal and uniform draws are written out here (Box-Muller, 53-bit
// uniforms) because the std:: distributions differ between standard
// libraries. Values are computed in double and rounded once to the tensor's
// element type.
//
// Microbatch j of step s draws its data with seed `dataSeed(seed, s, m, j)`
// (= seed + s*m + j), so step 0's microbatches are seed, seed+1, ...
//
// Plain C++17, header only: the runtime links no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_SYNTHETICDATA_H
#define ZBC_RUNTIME_SYNTHETICDATA_H

#include "zbc/contracts/Fnv1a.h"
#include "zbc/runtime/zbc_runtime.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string_view>

namespace zbc::rt {

/// How a parameter starts, as `zb.param ... init` declares it: zeros, ones,
/// normal(s) = N(0, s^2), uniform(a) = U(-a, a). The ABI's table (Note [ABI
/// enums] in zbc_runtime.h), so a program's `init` is one of these.
#define ZBC_RT_INIT_ENUMERATOR(NAME, Name, value) Name = value,
enum class InitKind : int32_t { ZBC_RT_INIT_KINDS(ZBC_RT_INIT_ENUMERATOR) };
#undef ZBC_RT_INIT_ENUMERATOR

inline uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The generator of the tensor under `key`: FNV-1a of the key, mixed with
/// the seed.
class Generator {
public:
  Generator(uint64_t seed, std::string_view key) {
    rng.seed(splitMix64(fnv1a64(key) ^ splitMix64(seed)));
  }
  /// Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller; 1 - uniform() lies in (0, 1], so log is
  /// finite).
  double normal() {
    double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    return radius * std::cos(2.0 * 3.14159265358979323846 * uniform());
  }
  /// Uniform in [0, bound).
  int64_t below(int64_t bound) {
    return static_cast<int64_t>(rng() % static_cast<uint64_t>(bound));
  }

  /// The next element of a parameter initialised as `kind` with `scale`.
  double initValue(InitKind kind, double scale) {
    switch (kind) {
    case InitKind::Zeros:
      return 0.0;
    case InitKind::Ones:
      return 1.0;
    case InitKind::Normal:
      return scale * normal();
    case InitKind::Uniform:
      return scale * (2.0 * uniform() - 1.0);
    }
    return 0.0;
  }
  /// The next element of float data (N(0, 1)).
  double floatData() { return normal(); }
  /// The next element of integer data (indices, labels) below `bound`.
  int64_t indexData(int64_t bound) { return below(bound); }

private:
  std::mt19937_64 rng;
};

/// The seed of microbatch `j` of step `step` of a run with `microbatches`
/// per step.
inline uint64_t dataSeed(uint64_t seed, int64_t step, int64_t microbatches,
                         int64_t j) {
  return seed + static_cast<uint64_t>(step) * static_cast<uint64_t>(microbatches) +
         static_cast<uint64_t>(j);
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_SYNTHETICDATA_H
