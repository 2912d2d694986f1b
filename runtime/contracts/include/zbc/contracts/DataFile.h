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
// Note [Packed documents]
// A packed file (`zbc pack`) holds several documents per row: beside
// `input.tokens` and `label.targets` it has `input.documents`, a document
// index per token, and `input.positions` restarting at 0 in each document.
// A model that masks attention by document declares `zb.input "documents"`.
// The rules, checked here:
//   - a row's document indices never decrease (a document's tokens lie
//     together; padding is the row's last "document");
//   - with `input.positions` of the same shape, a position is 0 where the
//     row starts or its document index changes, and otherwise the one
//     before it plus 1 (a document split across rows restarts at 0);
//   - a model with a documents input needs a file with one (a token stream
//     has none: TokenData.h refuses it), and a file with `input.documents`
//     needs a model that reads it: otherwise its attention would cross
//     documents silently. Only a caller that holds every data key of the
//     model (`zbc run`, `zbc inspect --model`: KeyScope::Model) can tell
//     the second; a rank holds only the keys it reads.
// The labels of the `zb.cross_entropy` that is the loss may also hold its
// ignore_index (-100): no loss there (the last token of a document,
// padding); no other data may.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_DATAFILE_H
#define ZBC_RUNTIME_DATAFILE_H

#include "zbc/contracts/SafeTensors.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zbc::rt {

/// The data keys of packed documents (Note [Packed documents]).
inline constexpr const char *kDocumentsKey = "input.documents";
inline constexpr const char *kPositionsKey = "input.positions";

/// The ignore_index of zb.cross_entropy unless the model says otherwise
/// (PyTorch's and Hugging Face's convention).
inline constexpr int64_t kDefaultIgnoreIndex = -100;

/// A data key as the model declares it.
struct DataKey {
  std::string key;
  std::string dtype; // the safetensors dtype: "F32", "BF16", "I32", "I64"
  bool integer = false;
  int64_t bound = 0;          // integer data lies in [0, bound)
  std::vector<int64_t> shape; // of one microbatch
  /// The one value outside [0, bound) that integer data may also hold: for
  /// the labels of the zb.cross_entropy that is the loss (the labels it
  /// counts: CountedLabels.h, a program's `counted_labels`), its
  /// ignore_index (Note [Packed documents]); none for other data.
  std::optional<int64_t> ignoreIndex;
};

/// Which data keys a check is given: those one rank reads, or every data
/// key of the model (which also refuses a file's `input.documents` that the
/// model does not read: Note [Packed documents]).
enum class KeyScope { Rank, Model };

/// Checks the tensors of `file` (read from `path`) against `keys` (file
/// comment, Note [Packed documents]); on success `samples` is N. An error
/// naming the file, the key and, for a value, its element (a packed row's,
/// its sample, row and column); or "".
std::string checkSampleTensors(const std::string &path, const TensorFile &file,
                               const std::vector<DataKey> &keys,
                               int64_t &samples,
                               KeyScope scope = KeyScope::Rank);

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
