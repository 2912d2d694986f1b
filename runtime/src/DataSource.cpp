//===- DataSource.cpp - synthetic, safetensors and text microbatches ------===//

#include "DataSource.h"

#include "zbc/runtime/BFloat16.h"
#include "zbc/runtime/SafeTensors.h"
#include "zbc/runtime/SyntheticData.h"

#include <fmt/format.h>

#include <cstring>

namespace zbc::rt {
namespace {

const char *dtypeOf(int32_t element) {
  switch (element) {
  case ZBC_RT_F32:
    return "F32";
  case ZBC_RT_BF16:
    return "BF16";
  case ZBC_RT_I32:
    return "I32";
  default:
    return "I64";
  }
}

bool isIndexElement(int32_t element) {
  return element == ZBC_RT_I32 || element == ZBC_RT_I64;
}

} // namespace

std::string DataSource::open(const zbc_rt_program &p, const std::string &path,
                             uint64_t seed) {
  program_ = &p;
  seed_ = seed;
  if (path.empty() || p.data_count == 0) {
    kind_ = Kind::Synthetic;
    return {};
  }
  if (!isSafeTensorsPath(path)) {
    kind_ = Kind::Text;
    int64_t sequence = 0;
    for (int32_t d = 0; d < p.data_count; ++d) {
      const zbc_rt_data &data = p.data[d];
      TextDataKey key{data.key, isIndexElement(data.element), data.bound,
                      std::vector<int64_t>(data.shape,
                                           data.shape + data.rank_of_shape)};
      if (std::string error = checkTextKey(key, sequence); !error.empty())
        return fmt::format("'{}' as text: {}", path, error);
      roles_.push_back(*textRoleOf(data.key));
      rows_ = data.shape[0];
    }
    return loadTextCorpus(path, sequence, text_);
  }
  kind_ = Kind::SafeTensors;
  TensorFile file;
  if (std::string error = readSafeTensors(path, file); !error.empty())
    return error;
  samples_.resize(p.data_count);
  count_.assign(p.data_count, 0);
  for (int32_t d = 0; d < p.data_count; ++d) {
    const zbc_rt_data &data = p.data[d];
    auto it = file.find(data.key);
    if (it == file.end())
      return fmt::format("'{}' has no tensor '{}' (this rank reads it)", path,
                         data.key);
    const StoredTensor &t = it->second;
    bool shapeMatches =
        t.shape.size() == static_cast<size_t>(data.rank_of_shape) + 1;
    for (int32_t i = 0; shapeMatches && i < data.rank_of_shape; ++i)
      shapeMatches = t.shape[i + 1] == data.shape[i];
    if (t.dtype != dtypeOf(data.element) || !shapeMatches || t.shape[0] < 1)
      return fmt::format("'{}': tensor '{}' must be {} of shape [N, {}] "
                         "(N >= 1 samples of one microbatch each)",
                         path, data.key, dtypeOf(data.element),
                         fmt::join(data.shape, data.shape + data.rank_of_shape,
                                   ", "));
    if (isIndexElement(data.element)) {
      // Integer data must be in range for the ops that read it.
      int64_t n = static_cast<int64_t>(t.data.size()) /
                  zbc_rt_element_bytes(data.element);
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = data.element == ZBC_RT_I32
                        ? reinterpret_cast<const int32_t *>(t.data.data())[i]
                        : reinterpret_cast<const int64_t *>(t.data.data())[i];
        if (v < 0 || v >= data.bound)
          return fmt::format("'{}': tensor '{}' holds {} at element {}, "
                             "outside [0, {})",
                             path, data.key, v, i, data.bound);
      }
    }
    count_[d] = t.shape[0];
    samples_[d] = t.data;
  }
  return {};
}

void DataSource::fill(int32_t index, const BatchPosition &at, char *dst,
                      int64_t bytes) const {
  const zbc_rt_data &data = program_->data[index];
  switch (kind_) {
  case Kind::SafeTensors: {
    int64_t sample = (at.batch * at.microbatches + at.microbatch) % count_[index];
    std::memcpy(dst, samples_[index].data() + sample * bytes,
                static_cast<size_t>(bytes));
    return;
  }
  case Kind::Text: {
    int64_t first = firstSampleOf(at.batch, at.microbatches, at.microbatch, rows_);
    if (data.element == ZBC_RT_I32)
      fillText(text_, roles_[index], seed_, at.heldOut, first, rows_,
               reinterpret_cast<int32_t *>(dst));
    else
      fillText(text_, roles_[index], seed_, at.heldOut, first, rows_,
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
