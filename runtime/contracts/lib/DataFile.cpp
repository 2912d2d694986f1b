//===- DataFile.cpp - a model's data keys and a file of samples for them --===//
//
// The rules of DataFile.h, in the order a user fixes them: packed data for
// a model that is not packed (or the reverse), which key is missing, which
// has the wrong dtype or shape, which two keys disagree on the number of
// samples, which value is out of range, then a packed row's documents and
// positions (Note [Packed documents]).
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

namespace {

/// Element `i` of an I32 or I64 tensor.
int64_t integerAt(const StoredTensor &t, int64_t i) {
  if (t.dtype == "I32") {
    int32_t v;
    std::memcpy(&v, t.data.data() + 4 * i, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, t.data.data() + 8 * i, 8);
  return v;
}

const DataKey *findKey(const std::vector<DataKey> &keys, const char *name) {
  for (const DataKey &key : keys)
    if (key.key == name)
      return &key;
  return nullptr;
}

/// Where element `i` of a [N, ..., columns] tensor lies, for messages:
/// "sample n, row r, column c" (rows: every dimension of a sample but the
/// last, flattened).
std::string placeOf(int64_t i, int64_t perSample, int64_t columns) {
  int64_t sample = i / perSample, inSample = i % perSample;
  return fmt::format("sample {}, row {}, column {}", sample,
                     inSample / columns, inSample % columns);
}

/// The rows of packed documents (Note [Packed documents]): document
/// indices that never decrease within a row, and positions (if the model
/// reads them, in the same shape) that restart at 0 with each document.
std::string checkPackedRows(const std::string &path, const TensorFile &file,
                            const DataKey &documents,
                            const DataKey *positions) {
  if (documents.shape.empty() || !documents.integer)
    return {};
  int64_t columns = documents.shape.back();
  int64_t perSample = 1;
  for (int64_t d : documents.shape)
    perSample *= d;
  if (columns < 1 || perSample < 1)
    return {};
  const StoredTensor &docs = file.at(documents.key);
  const StoredTensor *pos =
      positions && positions->integer && positions->shape == documents.shape
          ? &file.at(positions->key)
          : nullptr;
  int64_t n = static_cast<int64_t>(docs.data.size()) / dtypeBytes(docs.dtype);
  for (int64_t i = 0; i < n; ++i) {
    bool rowStart = i % columns == 0;
    int64_t doc = integerAt(docs, i);
    int64_t before = rowStart ? doc : integerAt(docs, i - 1);
    if (doc < before)
      return fmt::format("'{}': tensor '{}' decreases at {} (document {} "
                         "after {}): a row's document indices must not "
                         "decrease, each document's tokens lie together",
                         path, documents.key, placeOf(i, perSample, columns),
                         doc, before);
    if (!pos)
      continue;
    bool starts = rowStart || doc != before;
    int64_t expected = starts ? 0 : integerAt(*pos, i - 1) + 1;
    if (int64_t p = integerAt(*pos, i); p != expected)
      return fmt::format("'{}': tensor '{}' holds {} at {}, where document {} "
                         "{}: positions restart at 0 where a row starts or "
                         "its document index changes, and otherwise "
                         "increase by 1 (expected {})",
                         path, positions->key, p,
                         placeOf(i, perSample, columns), doc,
                         starts ? "starts" : "goes on", expected);
  }
  return {};
}

} // namespace

std::string checkSampleTensors(const std::string &path, const TensorFile &file,
                               const std::vector<DataKey> &keys,
                               int64_t &samples, KeyScope scope) {
  samples = 0;
  const DataKey *documents = findKey(keys, kDocumentsKey);
  bool packed = file.count(kDocumentsKey) != 0;
  if (documents && !packed)
    return fmt::format("'{}' has no tensor '{}' (the model reads it): the "
                       "model masks its attention by document and these "
                       "samples are not packed documents; `zbc pack` writes "
                       "them",
                       path, kDocumentsKey);
  if (scope == KeyScope::Model && packed && !documents)
    return fmt::format("'{}' holds packed documents (tensor '{}') but the "
                       "model reads no documents input: its attention would "
                       "cross from one document into the next; train them "
                       "on a model with `zb.input \"documents\"`, or give "
                       "samples that are not packed",
                       path, kDocumentsKey);
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
                         "shape [{}]{}",
                         path, key.key, key.dtype, fmt::join(key.shape, ", "),
                         t.dtype, fmt::join(t.shape, ", "),
                         packed && key.shape.size() == 2
                             ? fmt::format(" (packed for another model? `zbc "
                                           "pack --microbatch-size {} "
                                           "--seq-len {}` writes [N, {}, {}])",
                                           key.shape[0], key.shape[1],
                                           key.shape[0], key.shape[1])
                             : std::string());
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
    int64_t n = static_cast<int64_t>(t.data.size()) / dtypeBytes(t.dtype);
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = integerAt(t, i);
      if ((v < 0 || v >= key.bound) && v != key.ignoreIndex)
        return fmt::format("'{}': tensor '{}' holds {} at element {}, "
                           "outside [0, {}){}",
                           path, key.key, v, i, key.bound,
                           key.ignoreIndex
                               ? fmt::format(" and not the ignore_index {} of "
                                             "the loss's cross-entropy",
                                             *key.ignoreIndex)
                           : v == kDefaultIgnoreIndex
                               ? std::string(" (-100, 'no loss here', is "
                                             "taken only by the labels of the "
                                             "zb.cross_entropy that is the "
                                             "loss)")
                               : std::string());
    }
  }
  if (documents)
    return checkPackedRows(path, file, *documents,
                           findKey(keys, kPositionsKey));
  return {};
}

} // namespace zbc::rt
