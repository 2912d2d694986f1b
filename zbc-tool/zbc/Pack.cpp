//===- Pack.cpp - documents packed into rows of a fixed length ------------===//
//
// planPack and fillPack (Pack.h, Note [Packing]): the pieces,
// first-fit-decreasing over a tree of the rows' free slots (the leftmost
// row with room in O(log rows)), then the four tensors slot by slot.
//
//===----------------------------------------------------------------------===//

#include "Pack.h"

#include "zbc/contracts/DataFile.h"

#include <algorithm>
#include <cstring>

using namespace zbc;

namespace {

/// The free slots of every row that may open (at most one per piece), as a
/// tree of maxima: the first row with room for `length` in O(log rows).
class FirstFit {
public:
  FirstFit(int64_t rows, int64_t seqLen) {
    while (leaves < rows)
      leaves *= 2;
    free.assign(2 * leaves, seqLen);
  }
  /// The first row with at least `length` free slots, which loses them.
  /// One row more than the pieces placed so far always has room.
  int64_t place(int64_t length) {
    int64_t node = 1;
    while (node < leaves)
      node = free[2 * node] >= length ? 2 * node : 2 * node + 1;
    free[node] -= length;
    for (int64_t up = node / 2; up >= 1; up /= 2)
      free[up] = std::max(free[2 * up], free[2 * up + 1]);
    return node - leaves;
  }

private:
  int64_t leaves = 1;
  std::vector<int64_t> free;
};

void put(rt::StoredTensor &t, int64_t i, int64_t v) {
  std::memcpy(t.data.data() + 8 * i, &v, 8);
}

} // namespace

namespace {

/// A row's attention work: its documents' squared lengths, its padding's.
double rowWork(const PackPlan &plan, const std::vector<int64_t> &row) {
  double work = 0;
  int64_t used = 0;
  for (int64_t p : row) {
    work += double(plan.pieces[p].length) * double(plan.pieces[p].length);
    used += plan.pieces[p].length;
  }
  return work + double(plan.seqLen - used) * double(plan.seqLen - used);
}

/// `items` in the random order of `seed` (a keyed permutation: the same on
/// every machine).
template <typename T> void shuffle(std::vector<T> &items, uint64_t seed) {
  std::vector<T> shuffled(items.size());
  uint64_t key = rt::splitMix64(seed ^ 0x7a62632d726f7773ull); // "zbc-rows"
  for (size_t i = 0; i < items.size(); ++i)
    shuffled[rt::keyedPermutation(i, items.size(), key)] = std::move(items[i]);
  items = std::move(shuffled);
}

/// The rows grouped into samples of `perSample` of similar total work:
/// heaviest row first, each into the sample of least work with room; then
/// the samples in the random order of `seed`.
void balance(std::vector<std::vector<int64_t>> &rows, const PackPlan &plan,
             int64_t perSample, uint64_t seed) {
  std::vector<int64_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return rowWork(plan, rows[a]) > rowWork(plan, rows[b]);
  });
  int64_t samples = (static_cast<int64_t>(rows.size()) + perSample - 1) /
                    perSample;
  std::vector<std::vector<int64_t>> members(samples);
  std::vector<double> work(samples, 0.0);
  for (int64_t r : order) {
    int64_t best = -1;
    for (int64_t s = 0; s < samples; ++s)
      if (static_cast<int64_t>(members[s].size()) < perSample &&
          (best < 0 || work[s] < work[best]))
        best = s;
    members[best].push_back(r);
    work[best] += rowWork(plan, rows[r]);
  }
  shuffle(members, seed);
  std::vector<std::vector<int64_t>> balanced;
  for (const std::vector<int64_t> &sample : members)
    for (int64_t r : sample)
      balanced.push_back(std::move(rows[r]));
  rows = std::move(balanced);
}

} // namespace

PackPlan zbc::planPack(const std::vector<PackDocument> &documents,
                       int64_t seqLen, int64_t microbatchSize,
                       PackOrder rowOrder, uint64_t seed) {
  PackPlan plan;
  plan.seqLen = seqLen;
  plan.microbatchSize = microbatchSize;
  PackSummary &summary = plan.summary;
  summary.documents = static_cast<int64_t>(documents.size());
  std::vector<PackPiece> &pieces = plan.pieces;
  for (int64_t d = 0; d < summary.documents; ++d) {
    int64_t length = documents[d].length;
    summary.split += length > seqLen;
    for (int64_t offset = 0; offset < length; offset += seqLen) {
      int64_t piece = std::min(seqLen, length - offset);
      if (piece == 1 && offset > 0) {
        ++summary.droppedTails;
        continue;
      }
      pieces.push_back({d, offset, piece});
      summary.tokens += piece;
    }
  }
  summary.pieces = static_cast<int64_t>(pieces.size());

  // First-fit-decreasing; a row's pieces in the order placed.
  std::vector<int64_t> order(pieces.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return pieces[a].length > pieces[b].length;
  });
  FirstFit fit(std::max<int64_t>(1, summary.pieces), seqLen);
  for (int64_t p : order) {
    int64_t row = fit.place(pieces[p].length);
    if (row == static_cast<int64_t>(plan.rows.size()))
      plan.rows.emplace_back();
    plan.rows[row].push_back(p);
  }
  summary.rows = static_cast<int64_t>(plan.rows.size());
  if (rowOrder == PackOrder::Shuffled)
    shuffle(plan.rows, seed);
  else if (rowOrder == PackOrder::Balanced)
    balance(plan.rows, plan, microbatchSize, seed);
  summary.samples = (summary.rows + microbatchSize - 1) / microbatchSize;
  int64_t allRows = summary.samples * microbatchSize;
  summary.paddingRows = allRows - summary.rows;
  summary.slots = allRows * seqLen;

  // The attention work: every document's squared length, the padding's too;
  // and each sample's (the padding rows fill the last one).
  double padding = double(seqLen) * double(seqLen);
  double work = double(summary.paddingRows) * padding;
  std::vector<double> sampleWork(summary.samples, 0.0);
  if (!sampleWork.empty())
    sampleWork.back() += double(summary.paddingRows) * padding;
  for (size_t r = 0; r < plan.rows.size(); ++r) {
    double w = rowWork(plan, plan.rows[r]);
    work += w;
    sampleWork[r / microbatchSize] += w;
  }
  summary.attentionWork =
      allRows ? work / (double(allRows) * double(seqLen) * double(seqLen)) : 0;
  double most = 0;
  for (double w : sampleWork)
    most = std::max(most, w);
  summary.sampleWorkSpread =
      work > 0 && summary.samples
          ? most / (work / double(summary.samples))
          : 1.0;
  return plan;
}

void zbc::fillPack(const PackPlan &plan, const rt::TokenCorpus &stream,
                   const std::vector<PackDocument> &documents,
                   rt::TensorFile &tensors) {
  const PackSummary &summary = plan.summary;
  int64_t seqLen = plan.seqLen;
  int64_t allRows = summary.rows + summary.paddingRows;
  rt::StoredTensor tokens;
  tokens.dtype = "I64";
  tokens.shape = {summary.samples, plan.microbatchSize, seqLen};
  tokens.data.resize(static_cast<size_t>(summary.slots) * 8);
  rt::StoredTensor positions = tokens, documentIds = tokens, targets = tokens;
  for (int64_t r = 0; r < allRows; ++r) {
    int64_t slot = r * seqLen, end = slot + seqLen, id = 0;
    if (r < summary.rows)
      for (int64_t p : plan.rows[r]) {
        const PackPiece &piece = plan.pieces[p];
        const PackDocument &doc = documents[piece.document];
        for (int64_t j = 0; j < piece.length; ++j, ++slot) {
          int64_t at = piece.offset + j;
          put(tokens, slot, stream.at(doc.begin + at));
          put(positions, slot, j);
          put(documentIds, slot, id);
          put(targets, slot,
              at + 1 < doc.length ? stream.at(doc.begin + at + 1)
                                  : rt::kDefaultIgnoreIndex);
        }
        ++id;
      }
    for (int64_t j = 0; slot < end; ++j, ++slot) {
      put(tokens, slot, 0);
      put(positions, slot, j);
      put(documentIds, slot, id);
      put(targets, slot, rt::kDefaultIgnoreIndex);
    }
  }
  tensors.clear();
  tensors["input.tokens"] = std::move(tokens);
  tensors[rt::kPositionsKey] = std::move(positions);
  tensors[rt::kDocumentsKey] = std::move(documentIds);
  tensors["label.targets"] = std::move(targets);
}
