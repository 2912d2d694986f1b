//===- ScheduleTable.cpp - invariants every schedule satisfies ------------===//

#include "zbc/Schedule/ScheduleTable.h"
#include "Core/Support.h"

#include "llvm/ADT/STLExtras.h"


#include <map>
#include <tuple>
#include <vector>

using namespace zbc::sched;

ScheduleTable ScheduleTable::empty(const Problem &problem,
                                   Placement placement) {
  ScheduleTable table;
  table.microbatches = problem.microbatches;
  table.rankOfStage =
      placeStages(placement, problem.ranks, problem.numStages());
  table.ranks.resize(problem.ranks);
  return table;
}

std::string Action::str() const {
  return std::string(kindName(kind)) + "(" + std::to_string(stage) + "," +
         std::to_string(microbatch) + ")";
}

std::string Action::csvStr() const {
  // PyTorch's computation-type letter for each of our kinds.
  const char *type = kind == Kind::F   ? "F"
                     : kind == Kind::B ? "I"
                     : kind == Kind::W ? "W"
                     : kind == Kind::R ? "R" // zbc's: PyTorch has none
                     : kind == Kind::O ? "O" // likewise
                     : kind == Kind::L ? "L"
                     : kind == Kind::S ? "S" // zbc's vocabulary passes
                     : kind == Kind::T ? "T"
                                       : "B";
  return std::to_string(stage) + type + std::to_string(microbatch);
}

std::vector<int> ScheduleTable::stagesOf(int rank) const {
  std::vector<int> held;
  for (int s = 0; s < numStages(); ++s)
    if (rankOfStage[s] == rank)
      held.push_back(s);
  return held;
}

bool ScheduleTable::has(Kind kind) const {
  for (const std::vector<Action> &rank : ranks)
    for (const Action &a : rank)
      if (a.kind == kind)
        return true;
  return false;
}

size_t ScheduleTable::count(Kind kind) const {
  size_t n = 0;
  for (const std::vector<Action> &rank : ranks)
    n += llvm::count_if(rank, [&](const Action &a) { return a.kind == kind; });
  return n;
}

std::vector<bool> ScheduleTable::maskOf(Kind kind) const {
  if (!has(kind))
    return {};
  std::vector<bool> mask(size_t(numStages()) * size_t(microbatches), false);
  for (const std::vector<Action> &rank : ranks)
    for (const Action &a : rank)
      if (a.kind == kind && a.stage >= 0 && a.stage < numStages() &&
          a.microbatch >= 0 && a.microbatch < microbatches)
        mask[size_t(a.stage) * size_t(microbatches) + size_t(a.microbatch)] =
            true;
  return mask;
}

std::vector<bool> ScheduleTable::restoredMask() const {
  std::vector<bool> restored = recomputedMask();
  std::vector<bool> offloaded = offloadedMask();
  if (restored.empty())
    return offloaded;
  for (size_t k = 0; k < offloaded.size(); ++k)
    restored[k] = restored[k] || offloaded[k];
  return restored;
}

std::string ScheduleTable::name(const Action &action) const {
  return notation == Notation::CSV ? action.csvStr() : action.str();
}

namespace {

/// Where each (stage, microbatch, kind) sits in its rank's order. Dense
/// (one slot per triple, O(1) each: the check is linear in the actions)
/// when the table has actions enough to fill its triples, as every valid
/// table has; a map otherwise, so that a sparse table claiming huge stage
/// or microbatch counts costs what its actions cost.
class ActionPositions {
public:
  ActionPositions(int stages, int microbatches, size_t actions)
      : microbatches(microbatches) {
    size_t triples = size_t(stages) * size_t(microbatches);
    if (triples <= 2 * actions + 1)
      dense.assign(triples * kNumKinds, kAbsent);
  }
  /// False if the triple already has a position.
  bool add(int stage, int mb, Kind kind, size_t at) {
    if (dense.empty())
      return sparse.emplace(std::make_tuple(stage, mb, kind), at).second;
    size_t &slot = dense[index(stage, mb, kind)];
    if (slot != kAbsent)
      return false;
    slot = at;
    return true;
  }
  const size_t *find(int stage, int mb, Kind kind) const {
    if (dense.empty()) {
      auto it = sparse.find({stage, mb, kind});
      return it == sparse.end() ? nullptr : &it->second;
    }
    const size_t &slot = dense[index(stage, mb, kind)];
    return slot == kAbsent ? nullptr : &slot;
  }

private:
  static constexpr size_t kAbsent = ~size_t(0);
  size_t index(int stage, int mb, Kind kind) const {
    return (size_t(stage) * size_t(microbatches) + size_t(mb)) * kNumKinds +
           static_cast<size_t>(kind);
  }
  int microbatches;
  std::vector<size_t> dense;
  std::map<std::tuple<int, int, Kind>, size_t> sparse;
};

} // namespace

std::optional<ScheduleTable::Fault> ScheduleTable::firstFault() const {
  int numStages = this->numStages();
  for (int s = 0; s < numStages; ++s)
    if (rankOfStage[s] < 0 || rankOfStage[s] >= numRanks())
      return Fault{-1, -1,
                          "stage " + std::to_string(s) + " is placed on rank " +
                              std::to_string(rankOfStage[s]) + ", outside [0, " +
                              std::to_string(numRanks()) + ")"};
  // Position of each action on its rank, to check the order within a rank.
  size_t actions = 0;
  for (const auto &rank : ranks)
    actions += rank.size();
  ActionPositions position(numStages, microbatches, actions);
  for (int r = 0; r < numRanks(); ++r) {
    for (auto [i, a] : llvm::enumerate(ranks[r])) {
      // A function, not a Twine variable: a Twine kept past its full
      // expression points at destroyed temporaries; and the text is built
      // only on error, not for every action.
      auto where = [&, i = i, &a = a] {
        return "rank " + std::to_string(r) + ", action " + std::to_string(i) +
               " " + name(a) + ": ";
      };
      int at = static_cast<int>(i);
      if (a.stage < 0 || a.stage >= numStages)
        return Fault{r, at, where() + "stage out of range [0, " +
                                       std::to_string(numStages) + ")"};
      if (a.microbatch < 0 || a.microbatch >= microbatches)
        return Fault{r, at, where() + "microbatch out of range [0, " +
                                       std::to_string(microbatches) + ")"};
      if (isVocabPass(a.kind)) {
        // Note [Vocabulary passes]: a rank's passes are over its own shard.
        if (a.stage != r)
          return Fault{r, at, where() + "is over shard " +
                                  std::to_string(a.stage) +
                                  ", which rank " + std::to_string(a.stage) +
                                  " holds"};
      } else if (rankOfStage[a.stage] != r)
        return Fault{r, at,
                            where() + "stage " + std::to_string(a.stage) +
                                " is placed on rank " +
                                std::to_string(rankOfStage[a.stage])};
      if (!position.add(a.stage, a.microbatch, a.kind, i))
        return Fault{r, at, where() + "appears twice"};
    }
  }
  auto find = [&](int s, int j, Kind k) { return position.find(s, j, k); };
  for (int s = 0; s < numStages; ++s) {
    for (int j = 0; j < microbatches; ++j) {
      auto where = [&] { // see above
        return "rank " + std::to_string(rankOfStage[s]) + ", stage " +
               std::to_string(s) + ", microbatch " + std::to_string(j) + ": ";
      };
      const size_t *f = find(s, j, Kind::F), *b = find(s, j, Kind::B),
                   *w = find(s, j, Kind::W), *bw = find(s, j, Kind::BW),
                   *re = find(s, j, Kind::R);
      int r = rankOfStage[s];
      // Where a missing action is felt: its F, or the rank's first action.
      int near = f ? static_cast<int>(*f) : -1;
      if (!f)
        return Fault{r, -1, where() + "no F"};
      if (bw && (b || w))
        return Fault{r, static_cast<int>(*bw),
                            where() + "has BW and also B or W"};
      if (!bw && !(b && w))
        return Fault{r, b ? static_cast<int>(*b) : w ? static_cast<int>(*w) : near,
                            where() + (b   ? "has B but no W"
                                       : w ? "has W but no B"
                                           : "no backward (B+W or BW)")};
      // Name both actions and their places in the rank's order.
      auto ordered = [&](Kind first, size_t i, Kind second, size_t k) {
        return name(Action{first, s, j}) + " (action " + std::to_string(i) +
               ") runs before " + name(Action{second, s, j}) + " (action " +
               std::to_string(k) + ")";
      };
      if (bw ? *bw < *f : *b < *f) {
        size_t back = bw ? *bw : *b;
        return Fault{r, static_cast<int>(back),
                            where() + ordered(bw ? Kind::BW : Kind::B, back,
                                              Kind::F, *f)};
      }
      if (!bw && *w < *b)
        return Fault{r, static_cast<int>(*w),
                            where() + ordered(Kind::W, *w, Kind::B, *b)};
      // A recomputation rebuilds what its F dropped, for its backward.
      if (re && *re < *f)
        return Fault{r, static_cast<int>(*re),
                     where() + ordered(Kind::R, *re, Kind::F, *f)};
      size_t back = bw ? *bw : *b;
      Kind backKind = bw ? Kind::BW : Kind::B;
      if (re && back < *re)
        return Fault{r, static_cast<int>(back),
                     where() + ordered(backKind, back, Kind::R, *re)};
      // An offload: F < O < L < backward (Note [Offload as actions]).
      const size_t *off = find(s, j, Kind::O), *load = find(s, j, Kind::L);
      if (!off && !load)
        continue;
      if (!off || !load)
        return Fault{r, static_cast<int>(off ? *off : *load),
                     where() + (off ? "has O but no L: the backward would "
                                      "find its stash on the host"
                                    : "has L but no O: nothing was offloaded")};
      if (re)
        return Fault{r, static_cast<int>(*re),
                     where() + "is both recomputed and offloaded (R and O)"};
      if (*off < *f)
        return Fault{r, static_cast<int>(*off),
                     where() + ordered(Kind::O, *off, Kind::F, *f)};
      if (*load < *off)
        return Fault{r, static_cast<int>(*load),
                     where() + ordered(Kind::L, *load, Kind::O, *off)};
      if (back < *load)
        return Fault{r, static_cast<int>(back),
                     where() + ordered(backKind, back, Kind::L, *load)};
    }
  }
  // Note [Vocabulary passes]: none, or on every rank an S then a T of
  // every microbatch.
  if (!has(Kind::S) && !has(Kind::T))
    return std::nullopt;
  for (int r = 0; r < numRanks(); ++r)
    for (int j = 0; j < microbatches; ++j) {
      const size_t *pass = find(r, j, Kind::S), *grad = find(r, j, Kind::T);
      auto where = [&] {
        return "rank " + std::to_string(r) + ", microbatch " +
               std::to_string(j) + ": ";
      };
      if (!pass || !grad)
        return Fault{r, pass ? static_cast<int>(*pass)
                        : grad ? static_cast<int>(*grad)
                               : -1,
                     where() + (pass ? "has S but no T"
                                : grad ? "has T but no S"
                                       : "no vocabulary passes (S and T), "
                                         "which every rank runs for every "
                                         "microbatch")};
      if (*grad < *pass)
        return Fault{r, static_cast<int>(*grad),
                     where() + name(Action{Kind::T, r, j}) + " (action " +
                         std::to_string(*grad) + ") runs before " +
                         name(Action{Kind::S, r, j}) + " (action " +
                         std::to_string(*pass) + ")"};
    }
  return std::nullopt;
}

llvm::Error ScheduleTable::verify() const {
  if (std::optional<Fault> fault = firstFault())
    return fail(fault->message);
  return llvm::Error::success();
}
