//===- DataFile.cpp - a model's data keys and a file of samples for them --===//
//
// The rules of DataFile.h, in the order a user fixes them: which key is
// missing, which has the wrong dtype or shape, which two keys disagree on
// the number of samples, then which value is out of range.
//
//===----------------------------------------------------------------------===//

#include "zbc/contracts/DataFile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace zbc::rt {

int64_t firstNonFinite(const StoredTensor &tensor) {
  if (tensor.dtype == "F32") {
    int64_t n = static_cast<int64_t>(tensor.data.size() / 4);
    for (int64_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, tensor.data.data() + 4 * i, 4);
      if (!std::isfinite(v))
        return i;
    }
  } else if (tensor.dtype == "BF16") {
    int64_t n = static_cast<int64_t>(tensor.data.size() / 2);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, tensor.data.data() + 2 * i, 2);
      if ((v & 0x7f80) == 0x7f80) // every exponent bit: Inf or NaN
        return i;
    }
  }
  return -1;
}

std::string checkSampleTensors(const std::string &path, const TensorFile &file,
                               const std::vector<DataKey> &keys,
                               int64_t &samples) {
  samples = 0;
  const DataKey *counted = nullptr; // the key that set `samples`
  for (const DataKey &key : keys) {
    auto it = file.find(key.key);
    if (it == file.end())
      return fmt::format("'{}' has no tensor '{}' (the model reads it)", path,
                         key.key);
    const StoredTensor &t = it->second;
    bool shapeMatches = t.shape.size() == key.shape.size() + 1;
    for (size_t i = 0; shapeMatches && i < key.shape.size(); ++i)
      shapeMatches = t.shape[i + 1] == key.shape[i];
    if (t.dtype != key.dtype || !shapeMatches || t.shape[0] < 1)
      return fmt::format("'{}': tensor '{}' must be {} of shape [N, {}] (N "
                         ">= 1 samples of one microbatch each); it is {} of "
                         "shape [{}]",
                         path, key.key, key.dtype, fmt::join(key.shape, ", "),
                         t.dtype, fmt::join(t.shape, ", "));
    if (counted && t.shape[0] != samples)
      return fmt::format("'{}': tensor '{}' has {} samples, '{}' has {}: "
                         "every data key needs one sample per microbatch "
                         "read, so that sample i of each is read together",
                         path, key.key, t.shape[0], counted->key, samples);
    samples = t.shape[0];
    counted = &key;
  }
  for (const DataKey &key : keys) {
    const StoredTensor &t = file.at(key.key);
    int64_t perSample = 1;
    for (int64_t d : key.shape)
      perSample *= d;
    if (int64_t bad = firstNonFinite(t); bad >= 0)
      return fmt::format("'{}': tensor '{}' holds a NaN or infinity at "
                         "element {} (sample {}): training on it would turn "
                         "the weights non-finite",
                         path, key.key, bad, bad / std::max<int64_t>(1, perSample));
    if (!key.integer)
      continue;
    int64_t width = dtypeBytes(t.dtype);
    int64_t n = static_cast<int64_t>(t.data.size()) / width;
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = 0;
      if (width == 4) {
        int32_t v32;
        std::memcpy(&v32, t.data.data() + 4 * i, 4);
        v = v32;
      } else {
        std::memcpy(&v, t.data.data() + 8 * i, 8);
      }
      if (v < 0 || v >= key.bound)
        return fmt::format("'{}': tensor '{}' holds {} at element {}, "
                           "outside [0, {})",
                           path, key.key, v, i, key.bound);
    }
  }
  return {};
}

} // namespace zbc::rt
