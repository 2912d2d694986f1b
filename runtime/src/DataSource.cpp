//===- DataSource.cpp - synthetic, safetensors and token-stream microbatches ===//

#include "DataSource.h"

#include "zbc/contracts/BFloat16.h"
#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/SafeTensors.h"
#include "zbc/contracts/SyntheticData.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

namespace zbc::rt {
namespace {

/// The safetensors dtype of an element type (the ABI's table).
const char *dtypeOf(int32_t element) {
#define ZBC_RT_DTYPE(NAME, Name, value, bytes, dtype)                          \
  if (element == value)                                                        \
    return dtype;
  ZBC_RT_ELEMENTS(ZBC_RT_DTYPE)
#undef ZBC_RT_DTYPE
  return "";
}

bool isIndexElement(int32_t element) {
  return element == ZBC_RT_I32 || element == ZBC_RT_I64;
}

/// Data key `index` of `p` as the file rules see it (DataFile.h).
DataKey dataKeyOf(const zbc_rt_program &p, int32_t index) {
  const zbc_rt_data &data = p.data[index];
  DataKey key;
  key.key = data.key;
  key.dtype = dtypeOf(data.element);
  key.integer = isIndexElement(data.element);
  key.bound = data.bound;
  key.shape.assign(data.shape, data.shape + data.rank_of_shape);
  return key;
}

/// The data keys of `p` as the file rules see them; the labels the loss
/// counts may hold its ignore_index (Note [Packed documents] in DataFile.h,
/// Note [Loss over real tokens]).
std::vector<DataKey> dataKeysOf(const zbc_rt_program &p) {
  std::vector<DataKey> keys;
  for (int32_t d = 0; d < p.data_count; ++d)
    keys.push_back(dataKeyOf(p, d));
  if (p.counted_labels >= 0 && p.counted_labels < p.data_count)
    keys[p.counted_labels].ignoreIndex = p.ignore_index;
  return keys;
}

} // namespace

std::string DataSource::open(const zbc_rt_program &p, const std::string &path,
                             TokenType binTokens, uint64_t seed) {
  program_ = &p;
  seed_ = seed;
  if (path.empty() || p.data_count == 0) {
    kind_ = Kind::Synthetic;
    return {};
  }
  std::vector<DataKey> keys = dataKeysOf(p);
  DataFormat format = dataFormatOf(path);
  if (format != DataFormat::SafeTensors) {
    kind_ = Kind::Tokens;
    int64_t sequence = 0;
    int64_t vocabulary = std::numeric_limits<int64_t>::max();
    for (const DataKey &key : keys) {
      if (std::string error = checkTokenKey(key, format, sequence, vocabulary);
          !error.empty())
        return fmt::format("'{}': {}", path, error);
      roles_.push_back(*tokenRoleOf(key.key));
      rows_ = key.shape[0];
    }
    return loadTokenCorpus(path, binTokens, sequence, vocabulary, tokens_);
  }
  kind_ = Kind::SafeTensors;
  TensorFile file;
  if (std::string error = readSafeTensors(path, file); !error.empty())
    return error;
  if (std::string error = checkSampleTensors(path, file, keys, samples_);
      !error.empty())
    return error;
  tensors_.resize(p.data_count);
  for (int32_t d = 0; d < p.data_count; ++d)
    tensors_[d] = std::move(file.at(keys[d].key).data);
  return {};
}

std::string DataSource::openHeldOut(const std::string &path) {
  if (kind_ != Kind::SafeTensors)
    return {}; // a rank that reads no data
  std::vector<DataKey> keys = dataKeysOf(*program_);
  TensorFile file;
  if (std::string error = readSafeTensors(path, file); !error.empty())
    return error;
  if (std::string error =
          checkSampleTensors(path, file, keys, heldOutSamples_);
      !error.empty())
    return error;
  heldOutTensors_.resize(keys.size());
  for (size_t d = 0; d < keys.size(); ++d)
    heldOutTensors_[d] = std::move(file.at(keys[d].key).data);
  return {};
}

std::string DataSource::keyNames() const {
  std::string names;
  for (int32_t d = 0; program_ && d < program_->data_count; ++d)
    names += fmt::format("{}'{}'", names.empty() ? "" : ", ",
                         program_->data[d].key);
  return names;
}

void DataSource::fill(int32_t index, const BatchPosition &at, char *dst,
                      int64_t bytes) const {
  const zbc_rt_data &data = program_->data[index];
  switch (kind_) {
  case Kind::SafeTensors: {
    // An evaluation batch reads the held-out samples (--eval-data); its
    // microbatches past them wrap and count for nothing (add_loss).
    bool heldOut = at.heldOut && heldOutSamples_ > 0;
    int64_t sample = sampleOf(at.batch, at.microbatches, at.microbatch,
                              heldOut ? heldOutSamples_ : samples_);
    const std::vector<char> &tensor =
        heldOut ? heldOutTensors_[index] : tensors_[index];
    std::memcpy(dst, tensor.data() + sample * bytes,
                static_cast<size_t>(bytes));
    return;
  }
  case Kind::Tokens: {
    int64_t first = firstSampleOf(at.batch, at.microbatches, at.microbatch, rows_);
    if (data.element == ZBC_RT_I32)
      fillTokens(tokens_, roles_[index], seed_, at.heldOut, first, rows_,
                 reinterpret_cast<int32_t *>(dst));
    else
      fillTokens(tokens_, roles_[index], seed_, at.heldOut, first, rows_,
                 reinterpret_cast<int64_t *>(dst));
    return;
  }
  case Kind::Synthetic: {
    Generator gen(dataSeed(seed_, at.batch, at.microbatches, at.microbatch),
                  data.key);
    int64_t n = bytes / zbc_rt_element_bytes(data.element);
    for (int64_t i = 0; i < n; ++i) {
      if (data.element == ZBC_RT_F32)
        reinterpret_cast<float *>(dst)[i] = static_cast<float>(gen.floatData());
      else if (data.element == ZBC_RT_BF16) // Note [bf16]: rounded once
        reinterpret_cast<uint16_t *>(dst)[i] =
            toBFloat16(static_cast<float>(gen.floatData()));
      else if (data.element == ZBC_RT_I32)
        reinterpret_cast<int32_t *>(dst)[i] =
            static_cast<int32_t>(gen.indexData(data.bound));
      else
        reinterpret_cast<int64_t *>(dst)[i] = gen.indexData(data.bound);
    }
    return;
  }
  }
}

} // namespace zbc::rt
