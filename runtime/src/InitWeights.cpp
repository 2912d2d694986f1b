//===- InitWeights.cpp - --init: parameters from a Hugging Face checkpoint --===//
//
// loadInitialWeights (Note [Initial weights], InitWeights.h).
//
//===----------------------------------------------------------------------===//

#include "InitWeights.h"

#include "zbc/contracts/BFloat16.h"
#include "zbc/contracts/HuggingFaceCheckpoint.h"
#include "zbc/contracts/MappedFile.h"
#include "zbc/contracts/SafeTensors.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>

namespace zbc::rt {
namespace {

/// The fp32 value of IEEE half bits (exact).
float fromHalf(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24); // subnormal
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), exponent - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// This process's file-backed resident bytes (RssFile), or -1.
int64_t residentFileBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("RssFile:", 0) == 0)
      return std::atoll(line.c_str() + 8) * 1024; // "RssFile:  123 kB"
  return -1;
}

/// Checks each parameter's tensor, and with `read` loads it into the arena
/// and counts what it read.
std::string visitInitialWeights(zbc_rt_rank *rank, const std::string &path,
                                InitialWeightsRead *read) {
  const bool copy = read != nullptr;
  const int64_t residentBefore = copy ? residentFileBytes() : -1;
  const zbc_rt_program &p = *rank->program;
  CheckpointLayout layout;
  if (std::string e = readCheckpointLayout(path, layout); !e.empty())
    return e;
  CheckpointHeaders headers;
  std::map<std::string, MappedFile> mapped; // each file once a tensor is read
  std::vector<float> values;
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    std::string file;
    TensorLocation t;
    if (std::string e = locateInitTensor(
            layout,
            InitParam{param.name, std::vector<int64_t>(
                                      param.shape,
                                      param.shape + param.rank_of_shape)},
            headers, file, t);
        !e.empty())
      return e;
    if (!copy)
      continue;
    auto [at, fresh] = mapped.try_emplace(file);
    MappedFile &f = at->second;
    if (fresh) {
      if (std::string e = f.map(file); !e.empty())
        return e;
      ++read->files;
    }
    if (f.size() < t.end) // the file shrank since its header
      return fmt::format("--init: '{}' is shorter than its header says", file);
    const char *bytes = f.data() + t.begin;
    const size_t count = static_cast<size_t>((t.end - t.begin) /
                                             dtypeBytes(t.dtype));
    values.resize(count);
    if (t.dtype == "F32") {
      std::memcpy(values.data(), bytes, count * 4);
    } else if (t.dtype == "BF16") {
      // bf16 is f32's upper half: a shift the compiler vectorises.
      for (size_t e = 0; e < count; ++e) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * e, 2);
        values[e] = fromBFloat16(bits);
      }
    } else {
      for (size_t e = 0; e < count; ++e) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * e, 2);
        values[e] = fromHalf(bits);
      }
    }
    ++read->tensors;
    read->bytes += t.end - t.begin;
    if (std::string e = writeWholeWeights(rank, param, values); !e.empty())
      return e;
  }
  if (!copy)
    return {};
  // Measured while the files are still mapped.
  const int64_t residentAfter = residentFileBytes();
  if (residentBefore >= 0 && residentAfter >= 0)
    read->filePagesTouched = residentAfter - residentBefore;
  return refreshWorkingCopies(rank);
}

} // namespace

std::string checkInitialWeights(zbc_rt_rank *rank, const std::string &path) {
  return visitInitialWeights(rank, path, /*read=*/nullptr);
}

std::string loadInitialWeights(zbc_rt_rank *rank, const std::string &path,
                               InitialWeightsRead &read) {
  read = InitialWeightsRead();
  return visitInitialWeights(rank, path, &read);
}

} // namespace zbc::rt
