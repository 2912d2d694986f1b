//===- DataFile.h - a model's data keys and a file of samples for them -*- C++ -*-===//
//
// What a model reads per microbatch (its inputs and labels, each a data
// key: "input.x", "label.y") and the rules a safetensors file of samples
// must meet to feed them: a tensor per key, of the key's dtype and of shape
// [N, *shape] with the same N for every key (sample i is row i of each:
// inputs and labels stay paired), floats finite, indices within the bound
// of the op that reads them. `zbc run` checks a file before any rank
// starts, the ranks that read data check it again when they open it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_DATAFILE_H
#define ZBC_RUNTIME_DATAFILE_H

#include "zbc/contracts/SafeTensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbc::rt {

/// A data key as the model declares it.
struct DataKey {
  std::string key;
  std::string dtype; // the safetensors dtype: "F32", "BF16", "I32", "I64"
  bool integer = false;
  int64_t bound = 0;          // integer data lies in [0, bound)
  std::vector<int64_t> shape; // of one microbatch
};

/// Checks the tensors of `file` (read from `path`) against `keys` (file
/// comment); on success `samples` is N. An error naming the file, the key
/// and, for a value, its element; or "".
std::string checkSampleTensors(const std::string &path, const TensorFile &file,
                               const std::vector<DataKey> &keys,
                               int64_t &samples);

/// The index of the first element of `tensor` (F32 or BF16) that is NaN
/// or infinite, or -1 (also for other dtypes).
int64_t firstNonFinite(const StoredTensor &tensor);

/// The sample of a file of `samples` that global microbatch `microbatch`
/// (of `microbatches`, every replica's: replica d's j-th is d*m + j) of
/// batch `batch` reads: the file's samples in order, round and round. The
/// ranks (DataSource.cpp) and zbc-reference read by it.
inline int64_t sampleOf(int64_t batch, int64_t microbatches,
                        int64_t microbatch, int64_t samples) {
  return (batch * microbatches + microbatch) % samples;
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_DATAFILE_H
