//===- VCompaction.cpp - squeezing a V pattern's warm-up and cool-down ----===//
//
// V-Half and V-Min repeat one interval of 6 slots per microbatch
// (VShapes.cpp). That interval is what makes their memory small, but at the
// ends of the step it wastes time: in the warm-up a rank waits for its
// chunk-1 forwards with memory to spare, and in the cool-down each rank's
// last backwards trickle in one interval apart. The Controllable Memory
// paper (Qi et al. 2024, its appendix) and its reference implementation
// therefore "repeat, squeeze and reorder" the pattern; this file is zbc's
// version of that idea. It works in unit slots (every pass one slot long,
// no comm), as the pattern does, and changes only which pass a rank runs
// when; the caller then times each result with the real costs (timingOf)
// and keeps the best.
//
// The steps, each for a reason:
//  1. warm-up: before its first chunk-0 backward b, rank i runs the same
//     passes in a front-loaded order: chunk-0 forwards back to back for the
//     2(p-1-i) slots in which microbatch 0 travels on down to rank p-1 and
//     back up to it, then (F, f) pairs for the i+1 chunk-1 forwards
//     that arrive before its first B, then (B, W, f or F) rounds: each B's W
//     at once frees what the next forward needs. Front-loading is capped by
//     memory: at most min(i+1, half the limit) chunk-1 and the rest of the
//     limit chunk-0 activations, so the forwards run ahead stay within the
//     limit and leave room for the chunk-1 forwards still to come.
//  2. squeeze: every pass as early as its rank and inputs allow, in that
//     order (unit-cost timing by the simulator's rule).
//  3. holes (with keepSteady only before each rank's second b): each idle
//     slot takes the first later pass of its rank (nearest first, one
//     candidate per kind, so microbatches stay in order) whose inputs are
//     done by then and which does not raise the rank's peak anywhere
//     between the two slots. Nothing else moves, so nothing gets later.
//  4. cool-down: after rank 0's last chunk-1 forward (slot S), the last
//     backwards run on a tight diagonal, as they would with no other work
//     in the way: rank i's last b's at S + 2p - i, two slots apart going
//     back, its last B's at S + 1 + i likewise, at most half the limit b's
//     and min(i+1, the rest) B's. The rank's last weight gradients (one per
//     backward moved, and as many as the limit holds activations) leave
//     the diagonal's way and go back into the first free slots after its
//     last remaining W (chunk 1 first), then everything is squeezed again.
//  5. holes again: after each rank's last F with keepSteady, else anywhere.
//  6. weight gradients in backward order: a rank's W slots take the chunk
//     of the oldest backward whose W is still due, so the W's of a rank run
//     first in, first out.
// keepSteady exists because neither variant always wins: with the holes
// after the second b filled, passes move ahead of others for good and the
// steady phase settles into another order (V-Half, p = 8, rank 0:
// b w F f B W instead of b B w f W F, the plan's with its W's in backward
// order), and which order runs faster with the real costs depends on the
// shape, p and the costs (on the reference's grid each variant wins
// somewhere). The caller tries both.
//
// Memory is the problem's (per-rank chunk M_B and M_W), so a limit met in
// unit slots is met by the real order: memory depends on the order only.
// Every step keeps the grid valid (VCompaction.h); steps 1 and 4 assume the
// plan's shape (m >= 2p, the diagonal's slots free) and give up where it
// does not hold, and the caller checks each result's peaks and keeps the
// plan where none is better. Cost: linear in the slots, except the holes'
// look-ahead for a pass that adds memory (the slots up to it).
//
//===----------------------------------------------------------------------===//

#include "Builders/VCompaction.h"

#include "zbc/Schedule/Dependences.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace zbc::sched;
using namespace zbc::sched::vpass;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Per rank, its passes in execution order (a grid without its slots).
using PassOrder = std::vector<std::vector<uint8_t>>;

Kind kindOf(uint8_t pass) {
  return pass <= f ? Kind::F : pass <= b ? Kind::B : Kind::W;
}
int chunkOf(uint8_t pass) { return pass == f || pass == B || pass == W; }
uint8_t passOf(Kind kind, int chunk) {
  switch (kind) {
  case Kind::F:
    return chunk ? f : F;
  case Kind::B:
  case Kind::BW:
    return chunk ? B : b;
  case Kind::W:
    return chunk ? W : w;
  case Kind::R: // placed after compaction (Recompute.h, Offload.h,
  case Kind::O: // VocabPasses.h), never compacted
  case Kind::L:
  case Kind::S:
  case Kind::T:
    break;
  }
  return F;
}
int stageOf(int p, int rank, int chunk) {
  return chunk == 0 ? rank : 2 * p - 1 - rank;
}

/// What the k-th pass of a kind on a rank waits for: the k-th pass of
/// `pass` on `rank` (the V's neighbour or the rank itself).
struct Input {
  int rank;
  uint8_t pass;
  bool cross; // pays comm
};
struct Inputs {
  int n = 0;
  std::array<Input, 2> at;
};

/// Dependences.h's rule in (rank, pass) terms, per rank and pass.
std::vector<std::array<Inputs, kPasses>> inputTable(int p) {
  std::vector<std::array<Inputs, kPasses>> table(p);
  for (int r = 0; r < p; ++r)
    for (uint8_t t = 0; t < kPasses; ++t) {
      Action a{kindOf(t), stageOf(p, r, chunkOf(t)), 0};
      Inputs &in = table[r][t];
      forEachDependence(a, 2 * p, [&](const ProductRef &d) {
        int rank = d.stage < p ? d.stage : 2 * p - 1 - d.stage;
        Kind maker = d.product == Product::Activation ? Kind::F : Kind::B;
        in.at[in.n++] = {rank, passOf(maker, d.stage < p ? 0 : 1), rank != r};
      });
    }
  return table;
}

/// What timing a run needs besides the order: per rank and kind the end of
/// each microbatch's pass (-1: not run yet), and per rank its clock.
/// Microbatch-major, as ZBV/VShape.h's State: the ranks work on nearby
/// microbatches at any one time (measured on this file's steps at p = 256:
/// 25% faster than one run of microbatches per rank and kind).
struct Clock {
  int p, m;
  std::vector<double> ends;
  std::vector<std::array<int, kPasses>> count;
  std::vector<double> freeAt, first;
  Clock(int p, int m)
      : p(p), m(m), ends(size_t(m) * p * kPasses, -1.0), count(p), freeAt(p, 0),
        first(p, -1) {
    for (auto &c : count)
      c.fill(0);
  }
  double &end(int r, int t, int k) {
    return ends[(size_t(k) * p + r) * kPasses + t];
  }
  /// When the next pass of kind t on rank r may start, or -1 if an input
  /// is not done (`missing`: which one).
  double readyAt(const Inputs &in, int r, int k, double comm,
                 const Input **missing = nullptr) {
    double start = freeAt[r];
    for (int i = 0; i < in.n; ++i) {
      double e = end(in.at[i].rank, in.at[i].pass, k);
      if (e < 0) {
        if (missing)
          *missing = &in.at[i];
        return -1;
      }
      start = std::max(start, e + (in.at[i].cross ? comm : 0));
    }
    return start;
  }
  void run(int r, int t, int k, double start, double duration) {
    if (first[r] < 0)
      first[r] = start;
    freeAt[r] = start + duration;
    end(r, t, k) = freeAt[r];
    ++count[r][t];
  }
  double span() const {
    double span = 0;
    for (int r = 0; r < p; ++r)
      if (first[r] >= 0)
        span = std::max(span, freeAt[r] - first[r]);
    return span;
  }
};

/// Times a valid grid by the simulator's rule, slot by slot (its slot
/// order is one the dependences allow), each pass of rank r and kind t
/// taking duration(r, t) and each cross-rank input `comm` more; calls
/// visit(r, slot, start) per pass. The span, or kInf if the grid is not
/// valid (an input not done when its consumer's slot comes).
template <typename Duration, typename Visit>
double sweep(const VRanks &v, const Grid &grid, double comm, Duration duration,
             Visit visit) {
  std::vector<std::array<Inputs, kPasses>> inputs = inputTable(v.p);
  Clock clock(v.p, v.m);
  for (size_t s = 0; s < grid.width(); ++s)
    for (int r = 0; r < v.p; ++r) {
      uint8_t t = grid.rows[r][s];
      if (t == kIdle)
        continue;
      int k = clock.count[r][t];
      if (k >= v.m)
        return kInf;
      double start = clock.readyAt(inputs[r][t], r, k, comm);
      if (start < 0)
        return kInf;
      visit(r, s, start);
      clock.run(r, t, k, start, duration(r, t));
    }
  return clock.span();
}

/// Times an order by the simulator's rule with unit passes and no comm:
/// every rank runs until its next pass needs something not done yet and
/// then parks on that one input, which is its neighbour's or its own (a
/// pass its rank runs later: a deadlock); finishing a pass wakes a
/// neighbour parked on it. Every pass runs once and every park ends in one
/// wake-up, so this is linear in the passes, as the simulator. Calls
/// visit(r, index, start) per pass; false on a deadlock.
template <typename Visit>
bool runInUnitSlots(const VRanks &v, const PassOrder &order, Visit visit) {
  int p = v.p, m = v.m;
  std::vector<std::array<Inputs, kPasses>> inputs = inputTable(p);
  Clock clock(p, m);
  std::vector<size_t> next(p, 0);
  size_t left = 0;
  for (const auto &o : order)
    left += o.size();
  struct Park {
    int rank = -1, pass = 0, k = 0;
  };
  std::vector<Park> parked(p);
  std::vector<int> work;
  for (int r = p - 1; r >= 0; --r)
    work.push_back(r);
  while (!work.empty()) {
    int r = work.back();
    work.pop_back();
    while (next[r] < order[r].size()) {
      uint8_t t = order[r][next[r]];
      int k = clock.count[r][t];
      if (k >= m)
        return false; // more passes of a kind than microbatches
      const Input *missing = nullptr;
      double start = clock.readyAt(inputs[r][t], r, k, 0, &missing);
      if (start < 0) {
        parked[r] = {missing->rank, missing->pass, k};
        break;
      }
      visit(r, next[r], start);
      clock.run(r, t, k, start, 1);
      ++next[r];
      --left;
      for (int q : {r - 1, r + 1})
        if (q >= 0 && q < p && parked[q].rank == r && parked[q].pass == t &&
            parked[q].k == k) {
          parked[q].rank = -1;
          work.push_back(q);
        }
    }
  }
  return left == 0;
}

//===----------------------------------------------------------------------===//
// Squeezing
//===----------------------------------------------------------------------===//

PassOrder orderOf(const Grid &grid) {
  PassOrder order(grid.rows.size());
  for (size_t r = 0; r < grid.rows.size(); ++r)
    for (uint8_t t : grid.rows[r])
      if (t != kIdle)
        order[r].push_back(t);
  return order;
}

/// Rows built from each rank's passes and their new slots (increasing per
/// rank), padded to one length.
struct RowBuilder {
  std::vector<std::vector<uint8_t>> rows;
  explicit RowBuilder(size_t ranks) : rows(ranks) {}
  void put(int r, double slot, uint8_t t) {
    rows[r].resize(size_t(slot), kIdle);
    rows[r].push_back(t);
  }
  Grid grid() && {
    size_t width = 0;
    for (const auto &row : rows)
      width = std::max(width, row.size());
    for (auto &row : rows)
      row.resize(width, kIdle);
    return Grid{std::move(rows)};
  }
};

/// Step 2: `order` in unit slots, every pass as early as its rank and
/// inputs allow; none on a deadlock.
std::optional<Grid> squeeze(const VRanks &v, const PassOrder &order) {
  RowBuilder rows(order.size());
  bool ok = runInUnitSlots(v, order, [&](int r, size_t i, double start) {
    rows.put(r, start, order[r][i]);
  });
  if (!ok)
    return std::nullopt;
  return std::move(rows).grid();
}

/// The same for a grid's order: slot by slot where the grid is valid (no
/// work list), else by its order.
std::optional<Grid> squeeze(const VRanks &v, const Grid &grid) {
  RowBuilder rows(grid.rows.size());
  double span = sweep(
      v, grid, /*comm=*/0, [](int, int) { return 1.0; },
      [&](int r, size_t s, double start) {
        rows.put(r, start, grid.rows[r][s]);
      });
  if (span == kInf)
    return squeeze(v, orderOf(grid));
  return std::move(rows).grid();
}

/// How many activations of `each` fit in `room` (clamped to [0, cap]).
int fitting(double room, double each, int cap) {
  if (each <= 0)
    return cap;
  return std::clamp(int(std::floor(room / each + 1e-9)), 0, cap);
}

//===----------------------------------------------------------------------===//
// The steps (file comment)
//===----------------------------------------------------------------------===//

/// Step 1: rank i's passes before its first b, front-loaded; the rest of
/// its order as it was.
std::optional<PassOrder> frontLoadWarmup(const VRanks &v, const Grid &plan) {
  int p = v.p, m = v.m;
  PassOrder order = orderOf(plan);
  for (int i = 0; i < p; ++i) {
    std::vector<uint8_t> &row = order[i];
    size_t firstB0 = std::find(row.begin(), row.end(), b) - row.begin();
    std::array<int, kPasses> have{};
    for (size_t s = 0; s < firstB0; ++s)
      ++have[row[s]];
    // Before its first b a rank has run no b, so no w either.
    double limit = v.limit[i];
    int chunk1 = fitting(limit / 2, v.memory[i][f], std::min(i + 1, m));
    int chunk0 = fitting(limit - chunk1 * v.memory[i][f], v.memory[i][F], m);
    std::array<int, kPasses> used{};
    std::vector<uint8_t> out;
    out.reserve(row.size());
    auto put = [&](uint8_t t, int cap) {
      if (used[t] < std::min(cap, have[t])) {
        out.push_back(t);
        ++used[t];
      }
    };
    for (int s = 0; s < 2 * (p - 1 - i); ++s)
      put(F, chunk0);
    for (int s = 0; s <= i; ++s) {
      put(F, chunk0);
      put(f, chunk1);
    }
    while (used[F] < have[F] || used[f] < have[f] || used[B] < have[B] ||
           used[W] < have[W]) {
      size_t before = out.size();
      put(B, have[B]);
      put(W, have[W]);
      if (used[f] < have[f])
        put(f, have[f]);
      else
        put(F, have[F]);
      if (out.size() == before)
        return std::nullopt; // a guard: every round places one of the rest
    }
    out.insert(out.end(), row.begin() + firstB0, row.end());
    row = std::move(out);
  }
  return order;
}

/// Steps 3 and 5: fills the idle slots of rank r in [from[r], to[r]).
void fillHoles(const VRanks &v, Grid &grid, const std::vector<size_t> &from,
               const std::vector<size_t> &to) {
  int p = v.p;
  std::vector<std::array<Inputs, kPasses>> inputs = inputTable(p);
  size_t width = grid.width();
  // Per rank and kind: the slot of each pass (the k-th is microbatch k;
  // moving one keeps the list sorted, since it moves the next one to come,
  // to the slot being filled), how many lie behind the slot being filled,
  // and the memory of those.
  std::vector<std::array<std::vector<int>, kPasses>> slotOf(p);
  std::vector<std::array<int, kPasses>> behind(p);
  std::vector<double> memory(p, 0);
  for (int r = 0; r < p; ++r) {
    behind[r].fill(0);
    for (auto &slots : slotOf[r])
      slots.reserve(v.m);
    for (size_t s = 0; s < width; ++s)
      if (grid.rows[r][s] != kIdle)
        slotOf[r][grid.rows[r][s]].push_back(int(s));
  }
  auto pass = [&](int r, uint8_t t) {
    ++behind[r][t];
    memory[r] += v.memory[r][t];
  };
  // Per rank, the next busy slot at or after a slot, skipping idle runs
  // (a warm-up or a cool-down is mostly idle slots): a union-find over the
  // slots, since within this step a slot after the one being filled only
  // ever turns idle.
  std::vector<std::vector<int>> nextBusy(p, std::vector<int>(width + 1));
  for (int r = 0; r < p; ++r)
    for (size_t s = 0; s <= width; ++s)
      nextBusy[r][s] =
          s < width && grid.rows[r][s] == kIdle ? int(s) + 1 : int(s);
  auto busyFrom = [&](int r, size_t s) {
    std::vector<int> &next = nextBusy[r];
    int x = int(s);
    while (next[x] != x) {
      next[x] = next[next[x]];
      x = next[x];
    }
    return size_t(x);
  };
  // Whether the next pass of kind t on rank r has its inputs done before s
  // (every pass of a slot before s, or of slot s on a lower rank, is final).
  auto inputsBefore = [&](int r, uint8_t t, size_t s) {
    size_t k = behind[r][t];
    const Inputs &in = inputs[r][t];
    for (int i = 0; i < in.n; ++i) {
      const std::vector<int> &done = slotOf[in.at[i].rank][in.at[i].pass];
      if (k >= done.size() || size_t(done[k]) >= s)
        return false;
    }
    return true;
  };
  // Before the first slot any rank fills nothing moves: rank by rank. From
  // there slot by slot over all ranks; after the last slot any rank fills,
  // nothing.
  size_t begin = std::min(*std::min_element(from.begin(), from.end()), width);
  size_t end = std::min(*std::max_element(to.begin(), to.end()), width);
  for (int r = 0; r < p; ++r)
    for (size_t s = 0; s < begin; ++s)
      if (grid.rows[r][s] != kIdle)
        pass(r, grid.rows[r][s]);
  for (size_t s = begin; s < end; ++s) {
    for (int r = 0; r < p; ++r) {
      std::vector<uint8_t> &row = grid.rows[r];
      if (row[s] != kIdle) {
        pass(r, row[s]);
        continue;
      }
      // Nothing can run before a rank's first pass: the squeeze put it as
      // early as its input allows, and every other pass of the rank waits
      // for it or for a later input of the same chain.
      if (s < from[r] || s >= to[r] || (behind[r][F] == 0 && behind[r][f] == 0))
        continue;
      // The next pass of each kind whose inputs are done, nearest first.
      double limit = v.limit[r] * (1 + 1e-9);
      std::array<std::pair<int, uint8_t>, kPasses> next;
      int candidates = 0;
      for (uint8_t t = 0; t < kPasses; ++t) {
        size_t k = behind[r][t];
        if (k < slotOf[r][t].size() && size_t(slotOf[r][t][k]) < to[r] &&
            inputsBefore(r, t, s))
          next[candidates++] = {slotOf[r][t][k], t};
      }
      std::sort(next.begin(), next.begin() + candidates);
      // A pass that adds memory, moved from slot k to s, adds it over
      // (s, k): it must fit on top of the peak there. The peak is scanned
      // only as far as such a candidate needs.
      double run = 0, peak = 0;
      size_t scanned = s + 1; // the peak covers the busy slots of (s, scanned)
      for (int c = 0; c < candidates; ++c) {
        auto [k, t] = next[c];
        double delta = v.memory[r][t];
        if (delta > 0) {
          for (scanned = busyFrom(r, scanned);
               scanned < size_t(k) && memory[r] + peak + delta <= limit;
               scanned = busyFrom(r, scanned + 1)) {
            run += v.memory[r][row[scanned]];
            peak = std::max(peak, run);
          }
          if (memory[r] + peak + delta > limit)
            continue;
        }
        row[s] = t;
        row[k] = kIdle;
        nextBusy[r][k] = k + 1;
        slotOf[r][t][behind[r][t]] = int(s);
        pass(r, t);
        break;
      }
    }
  }
}

/// Step 4; none if a slot of the diagonal is taken.
std::optional<Grid> rebuildCooldown(const VRanks &v, Grid grid) {
  int p = v.p, m = v.m;
  for (auto &row : grid.rows)
    row.resize(row.size() + 4 * size_t(p) + 8, kIdle);
  const std::vector<uint8_t> &row0 = grid.rows[0];
  auto lastF1 = std::find(row0.rbegin(), row0.rend(), f);
  if (lastF1 == row0.rend())
    return std::nullopt;
  long last = long(row0.rend() - lastF1) - 1; // S
  for (int i = 0; i < p; ++i) {
    std::vector<uint8_t> &row = grid.rows[i];
    // The limit in activations of this rank's mean chunk.
    int room =
        fitting(v.limit[i], (v.memory[i][F] + v.memory[i][f]) / 2, 2 * m);
    int maxB0 = std::min((room + 1) / 2, m);
    int maxB1 = std::min({room - maxB0, m, i + 1});
    int took0 = 0, took1 = 0;
    for (long s = long(row.size()) - 1;
         s >= 0 && (took0 < maxB0 || took1 < maxB1); --s) {
      if (row[s] == B && took1 < maxB1) {
        row[s] = kIdle;
        ++took1;
      } else if (row[s] == b && took0 < maxB0) {
        row[s] = kIdle;
        ++took0;
      }
    }
    int tookW1 = 0, tookW0 = 0;
    for (long s = long(row.size()) - 1; s >= 0; --s) {
      if (tookW1 >= took1 && tookW0 >= took0 && tookW1 + tookW0 >= room)
        break;
      if (row[s] == W) {
        row[s] = kIdle;
        ++tookW1;
      } else if (row[s] == w) {
        row[s] = kIdle;
        ++tookW0;
      }
    }
    auto putAt = [&](long s, uint8_t t) {
      if (s < 0 || size_t(s) >= row.size() || row[s] != kIdle)
        return false;
      row[s] = t;
      return true;
    };
    for (int k = 0; k < took0; ++k)
      if (!putAt(last - i + 2 * p - 2 * k, b))
        return std::nullopt;
    for (int k = 0; k < took1; ++k)
      if (!putAt(last + 1 + i - 2 * k, B))
        return std::nullopt;
  }
  // The weight gradients back, into the free slots after the last W that
  // stayed, chunk 1 first; what does not fit goes at the end.
  size_t width = 0;
  for (std::vector<uint8_t> &row : grid.rows) {
    long lastW = -1;
    for (long s = long(row.size()) - 1; s >= 0 && lastW < 0; --s)
      if (row[s] == W || row[s] == w)
        lastW = s;
    int dueW1 = 0, dueW0 = 0;
    for (long s = 0; s < long(row.size()); ++s) {
      uint8_t t = row[s];
      if (t == B)
        ++dueW1;
      else if (t == b)
        ++dueW0;
      else if (t == W)
        --dueW1;
      else if (t == w)
        --dueW0;
      else if (t == kIdle && s > lastW) {
        if (dueW1 > 0) {
          row[s] = W;
          --dueW1;
        } else if (dueW0 > 0) {
          row[s] = w;
          --dueW0;
        }
      }
    }
    row.insert(row.end(), std::max(dueW1, 0), uint8_t(W));
    row.insert(row.end(), std::max(dueW0, 0), uint8_t(w));
    width = std::max(width, row.size());
  }
  for (std::vector<uint8_t> &row : grid.rows)
    row.resize(width, kIdle);
  return squeeze(v, grid);
}

/// Step 6: each W slot takes the chunk of the oldest backward still owed
/// its W.
void weightGradientsInBackwardOrder(Grid &grid) {
  for (std::vector<uint8_t> &row : grid.rows) {
    std::vector<uint8_t> due;
    size_t head = 0;
    for (uint8_t &t : row) {
      if (t == B || t == b)
        due.push_back(t == B ? W : w);
      else if ((t == W || t == w) && head < due.size())
        t = due[head++];
    }
  }
}

/// Per rank, the slot of the n-th (from 1) pass `t` from the front, or of
/// the last one (n = 0); the width where there is none.
std::vector<size_t> slotsOf(const Grid &grid, uint8_t t, int n) {
  std::vector<size_t> slots;
  for (const std::vector<uint8_t> &row : grid.rows) {
    size_t found = row.size();
    int seen = 0;
    for (size_t s = 0; s < row.size(); ++s)
      if (row[s] == t && (n == 0 || ++seen == n)) {
        found = s;
        if (n)
          break;
      }
    slots.push_back(found);
  }
  return slots;
}

} // namespace

VRanks zbc::sched::vpass::vRanksOf(const Problem &problem) {
  VRanks v;
  v.p = problem.ranks;
  v.m = problem.microbatches;
  v.comm = problem.comm;
  v.time.resize(v.p);
  v.memory.resize(v.p);
  v.limit.assign(v.p, 0);
  for (int r = 0; r < v.p; ++r)
    for (uint8_t t = 0; t < kPasses; ++t) {
      const StageCost &c = problem.stages[stageOf(v.p, r, chunkOf(t))];
      v.time[r][t] = c.time(kindOf(t));
      v.memory[r][t] = c.memoryDelta(kindOf(t));
    }
  return v;
}

Timing zbc::sched::vpass::timingOf(const VRanks &v, const Grid &grid) {
  // Rank 0's chunk-0 forwards in slot order: the k-th is microbatch k.
  int from = v.m / 2, to = from + 6, seen = 0;
  double startFrom = 0, startTo = 0;
  double span = sweep(
      v, grid, v.comm, [&](int r, int t) { return v.time[r][t]; },
      [&](int r, size_t s, double start) {
        if (r != 0 || grid.rows[0][s] != F)
          return;
        if (seen == from)
          startFrom = start;
        else if (seen == to)
          startTo = start;
        ++seen;
      });
  double perInterval = seen > to ? (startTo - startFrom) / (to - from) : 0;
  return {span, perInterval};
}

std::vector<double> zbc::sched::vpass::peaksOf(const VRanks &v,
                                               const Grid &grid) {
  std::vector<double> peaks(grid.rows.size(), 0);
  for (size_t r = 0; r < grid.rows.size(); ++r) {
    double live = 0;
    for (uint8_t t : grid.rows[r])
      if (t != kIdle) {
        live += v.memory[r][t];
        peaks[r] = std::max(peaks[r], live);
      }
  }
  return peaks;
}

std::vector<Compaction> zbc::sched::vpass::compactions(const VRanks &v,
                                                       const Grid &plan) {
  // Steps 1-2 are common to both variants: the warm-up is rearranged in
  // order (what comes before a rank's first b does not depend on slots),
  // then squeezed once.
  std::optional<PassOrder> warm = frontLoadWarmup(v, plan);
  std::optional<Grid> warmGrid = warm ? squeeze(v, *warm) : std::nullopt;
  std::vector<Compaction> result;
  if (!warmGrid)
    return result;
  std::vector<size_t> zero(v.p, 0);
  for (bool keepSteady : {true, false}) {
    std::optional<Grid> grid = *warmGrid;
    if (keepSteady)
      fillHoles(v, *grid, zero, slotsOf(*grid, b, 2));
    grid = rebuildCooldown(v, std::move(*grid));
    if (!grid)
      continue;
    std::vector<size_t> all(v.p, grid->width());
    fillHoles(v, *grid, keepSteady ? slotsOf(*grid, F, 0) : zero, all);
    weightGradientsInBackwardOrder(*grid);
    result.push_back({keepSteady, std::move(*grid)});
  }
  return result;
}

std::optional<Grid> zbc::sched::vpass::repeatMiddle(const Grid &grid, int m,
                                                    int extra) {
  Grid longer;
  longer.rows.resize(grid.rows.size());
  for (size_t r = 0; r < grid.rows.size(); ++r) {
    const std::vector<uint8_t> &row = grid.rows[r];
    // The cut: the slot of the rank's chunk-0 forward of microbatch m/2.
    size_t cut = 0;
    for (int seen = 0; cut < row.size(); ++cut)
      if (row[cut] == F && seen++ == m / 2)
        break;
    if (cut < 12 || cut + 18 > row.size())
      return std::nullopt;
    for (size_t s = cut - 12; s < cut + 12; ++s)
      if (row[s] != row[s + 6])
        return std::nullopt;
    std::array<int, kPasses> once{};
    for (size_t s = cut; s < cut + 6; ++s)
      if (row[s] != kIdle)
        ++once[row[s]];
    if (std::count(once.begin(), once.end(), 1) != kPasses)
      return std::nullopt;
    std::vector<uint8_t> &out = longer.rows[r];
    out.reserve(row.size() + 6 * size_t(extra));
    out.insert(out.end(), row.begin(), row.begin() + cut);
    for (int k = 0; k < extra; ++k)
      out.insert(out.end(), row.begin() + cut, row.begin() + cut + 6);
    out.insert(out.end(), row.begin() + cut, row.end());
  }
  return longer;
}

std::vector<std::vector<Action>>
zbc::sched::vpass::actionsOf(const Grid &grid) {
  int p = static_cast<int>(grid.rows.size());
  std::vector<std::vector<Action>> actions(p);
  for (int r = 0; r < p; ++r) {
    std::array<int, kPasses> count{};
    actions[r].reserve(grid.width());
    for (uint8_t t : grid.rows[r])
      if (t != kIdle)
        actions[r].push_back(
            {kindOf(t), stageOf(p, r, chunkOf(t)), count[t]++});
  }
  return actions;
}
