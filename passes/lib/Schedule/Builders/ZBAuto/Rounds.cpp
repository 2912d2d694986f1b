//===- Rounds.cpp - the reference implementation's round-by-round orders --===//
//
// The Zero Bubble reference implementation builds its automatic schedule
// (ZB-1p / ZB-2p) in rounds rather than by simulating time: a warm-up that
// gives each stage the F's that fit before its first B can return (fewer
// on each later stage), then one round per microbatch in which each stage
// runs at most one F (a stage only if every stage after it does) and then
// the round's B, from the last stage up, with W's put in front of either
// when memory needs room or when they fill a wait for the input; stage 0
// flushes its W's once its F's are done. Each op's end is the later of its
// stage's last end and its input's end plus comm, where an input not
// placed yet counts as ending at 0 (so on uneven stages a variant can time
// itself wrongly, and leave F's out that its runtime then runs first;
// zb-auto times what it returns with its own evaluator).
// Eight variants: whether the warm-up may leave a bubble before the first
// B, whether a stage well ahead of the next one lets its B go first, and
// whether W's fill a wait no longer than the largest idle so far.
//
// zb-auto tries these orders as candidates (Search.cpp), so that it is
// never longer than the reference's heuristic where one of its orders is
// valid within the limit. This is zbc's own code for that algorithm; every
// memory decision goes through Instance::fitsWithoutSlack, the reference's
// comparison (Note [zb-auto monotone]).
//
//===----------------------------------------------------------------------===//

#include "ZBAuto.h"

#include <algorithm>
#include <array>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

namespace {

class RoundBuilder {
public:
  explicit RoundBuilder(const Instance &in) : in(in), p(in.p), m(in.m) {}

  /// The order of one variant (valid until the next build), or null
  /// where memory left no way on.
  const Order *build(bool bubbleBeforeFirstB, bool bFirst,
                     bool fillUpToLargestIdle) {
    this->bubbleBeforeFirstB = bubbleBeforeFirstB;
    this->bFirst = bFirst;
    this->fillUpToLargestIdle = fillUpToLargestIdle;
    order.resize(p);
    for (std::vector<Op> &ops : order) {
      ops.clear();
      ops.reserve(3 * size_t(m));
    }
    done.assign(p, {0, 0, 0});
    end.assign(p, 0);
    mem.assign(p, 0);
    idle.assign(p, 0);
    mostIdle = 0;
    for (auto &v : endOf)
      v.assign(size_t(p) * m, 0);
    warmUp();
    for (int i = 1; i < m; ++i)
      if (!round(i))
        return nullptr;
    for (int j = 0; j < p; ++j)
      while (count(j, Kind::W) < m)
        put(j, Kind::W);
    // A stage whose next stage ran all its F's takes no F in a round, so
    // where a later stage ran ahead (its input taken as ready at 0) a
    // stage can end with F's never placed. The reference's runtime runs
    // each stage's ops by their planned ends, those at 0 first: so do we.
    for (int j = 0; j < p; ++j) {
      std::vector<Op> first;
      for (int mb = count(j, Kind::F); mb < m; ++mb)
        first.push_back({Kind::F, mb});
      order[j].insert(order[j].begin(), first.begin(), first.end());
    }
    return &order;
  }

private:
  int &count(int j, Kind kind) { return done[j][slot(kind)]; }
  double cost(int j, Kind kind) const { return in.cost[j].time(kind); }
  double delta(int j, Kind kind) const {
    return in.cost[j].memoryDelta(kind);
  }
  /// When the op of `kind` for microbatch `mb` on stage j ended (0 if it is
  /// not placed yet, as in the reference).
  double endAt(int j, Kind kind, int mb) const {
    return endOf[slot(kind)][size_t(j) * m + mb];
  }

  /// Places stage j's next op of `kind` as early as its stage and its input
  /// allow, adding any wait to the stage's idle (from its first F on).
  void put(int j, Kind kind) {
    int mb = count(j, kind);
    double finish = end[j] + cost(j, kind), busy = finish;
    if (kind == Kind::F && j > 0)
      finish = std::max(finish, endAt(j - 1, Kind::F, mb) + in.comm +
                                    cost(j, kind));
    if (kind == Kind::B && j + 1 < p)
      finish = std::max(finish, endAt(j + 1, Kind::B, mb) + in.comm +
                                    cost(j, kind));
    if (count(j, Kind::F) > 0) {
      idle[j] += finish - busy;
      mostIdle = std::max(mostIdle, idle[j]); // idle only grows
    }
    end[j] = finish;
    endOf[slot(kind)][size_t(j) * m + mb] = finish;
    mem[j] += delta(j, kind);
    order[j].push_back({kind, mb});
    ++count(j, kind);
  }

  double largestIdle() const { return mostIdle; }

  /// W's so that stage j's next `kind` fits the limit; false if none is
  /// left to run.
  bool makeRoom(int j, Kind kind) {
    while (!in.fitsWithoutSlack(mem[j] + delta(j, kind))) {
      if (count(j, Kind::W) >= count(j, Kind::B))
        return false;
      put(j, Kind::W);
    }
    return true;
  }

  /// W's into stage j's wait for an input that arrives at `arrives`: every
  /// one that ends by then, and one more that runs past it if the wait is
  /// no longer than the largest idle so far (with fillUpToLargestIdle) or
  /// if it is longer.
  void fillWait(int j, double arrives) {
    while (count(j, Kind::W) < count(j, Kind::B) &&
           end[j] + cost(j, Kind::W) <= arrives)
      put(j, Kind::W);
    if (count(j, Kind::W) < count(j, Kind::B) && end[j] < arrives) {
      if (arrives - end[j] <= largestIdle() - idle[j]) {
        if (fillUpToLargestIdle)
          put(j, Kind::W);
      } else {
        put(j, Kind::W);
      }
    }
  }

  /// Round 0: microbatch 0's F on every stage, then the F's each stage can
  /// run (within memory) while microbatch 0's gradient makes its way back
  /// to it, fewer on each later stage, then microbatch 0's B's.
  void warmUp() {
    for (int j = 0; j < p; ++j)
      put(j, Kind::F);
    std::vector<int> more(p, 0);
    double back = 0; // when microbatch 0's B ends on the stage after j
    for (int j = p - 1; j >= 0; --j) {
      if (j == p - 1) {
        back = endAt(j, Kind::F, 0) + cost(j, Kind::B);
        continue;
      }
      double held = mem[j], busy = end[j];
      while (count(j, Kind::F) + more[j] < m &&
             in.fitsWithoutSlack(held + delta(j, Kind::F))) {
        if (bubbleBeforeFirstB ? busy + cost(j, Kind::F) > back + in.comm
                               : busy >= back + in.comm)
          break;
        held += delta(j, Kind::F);
        busy += cost(j, Kind::F);
        ++more[j];
      }
      back = std::max(busy, back + in.comm) + cost(j, Kind::B);
    }
    for (int j = 1; j < p; ++j)
      while (more[j] > 0 && more[j] >= more[j - 1] &&
             count(j, Kind::F) + more[j] < m)
        --more[j];
    for (int j = 0; j < p; ++j)
      for (int k = 0; k < more[j]; ++k)
        put(j, Kind::F);
    for (int j = p - 1; j >= 0; --j)
      put(j, Kind::B);
  }

  /// Round i: at most one F per stage, then microbatch i's B's.
  bool round(int i) {
    std::vector<char> wantsF(p, 0);
    for (int j = 0; j < p; ++j) {
      if (count(j, Kind::F) >= m)
        continue;
      if (bFirst && j + 1 < p &&
          count(j, Kind::F) >= count(j + 1, Kind::F) + 2) {
        // Two or more F's ahead of the next stage: run the F only if it
        // (with the W's memory needs first) ends before the next stage's
        // next F and B could, or if waiting would idle longer than the
        // largest idle so far.
        double nextReady = end[j + 1] + cost(j + 1, Kind::F) +
                           cost(j + 1, Kind::B) + in.comm;
        if (end[j] >= nextReady)
          continue;
        double held = mem[j] + delta(j, Kind::F), wTime = 0;
        for (int k = count(j, Kind::W);
             !in.fitsWithoutSlack(held) && k < count(j, Kind::B); ++k) {
          wTime += cost(j, Kind::W);
          held += delta(j, Kind::W);
        }
        if (end[j] + cost(j, Kind::F) + wTime <= nextReady) {
          wantsF[j] = 1;
          continue;
        }
        if (nextReady - end[j] <= largestIdle() - idle[j])
          continue;
      }
      wantsF[j] = 1;
    }
    // A stage runs an F only if every stage after it does.
    for (int j = p - 2; j >= 0; --j)
      wantsF[j] = std::min(wantsF[j], wantsF[j + 1]);
    for (int j = 0; j < p; ++j) {
      if (!wantsF[j])
        continue;
      if (!makeRoom(j, Kind::F))
        return false;
      if (j > 0)
        fillWait(j, endAt(j - 1, Kind::F, count(j, Kind::F)) + in.comm);
      put(j, Kind::F);
    }
    for (int j = p - 1; j >= 0; --j) {
      if (!makeRoom(j, Kind::B))
        return false;
      if (j + 1 < p)
        fillWait(j, endAt(j + 1, Kind::B, i) + in.comm);
      if (j == 0 && count(j, Kind::F) == m)
        while (count(j, Kind::W) < count(j, Kind::B))
          put(j, Kind::W);
      put(j, Kind::B);
    }
    return true;
  }

  const Instance &in;
  const int p, m;
  bool bubbleBeforeFirstB = false, bFirst = false, fillUpToLargestIdle = false;
  Order order;
  std::vector<std::array<int, 3>> done; // per stage: F's, B's, W's placed
  std::vector<double> end, mem, idle;   // per stage
  double mostIdle = 0;                  // the largest idle[j]
  std::vector<double> endOf[3];         // per kind: [j * m + mb]
};

} // namespace

void zbc::sched::zbauto::forEachRoundOrder(
    const Instance &in, llvm::function_ref<void(const Order &)> fn) {
  RoundBuilder builder(in); // one set of buffers for the eight
  for (bool bubbleBeforeFirstB : {true, false})
    for (bool bFirst : {true, false})
      for (bool fillUpToLargestIdle : {true, false})
        if (const Order *order = builder.build(bubbleBeforeFirstB, bFirst,
                                               fillUpToLargestIdle))
          fn(*order);
}
