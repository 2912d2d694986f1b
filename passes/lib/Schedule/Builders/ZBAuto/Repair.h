//===- Repair.h - zb-auto's repair of an order -----------------*- C++ -*-===//
//
// Critical-path local search over per-rank orders: run an op that waited
// for its rank earlier, move a W into a gap; a move is kept only if the
// spans, sorted longest first, get lexicographically shorter (keyLess).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_ZBAUTO_REPAIR_H
#define ZBC_SCHEDULE_ZBAUTO_REPAIR_H

#include "ZBAuto.h"

#include <vector>

namespace zbc::sched::zbauto {

class Repair {
public:
  Repair(const Instance &in, Evaluator &eval) : in(in), eval(eval) {}

  /// Improves `order` until no move on its critical path helps or `budget`
  /// evaluations are spent; returns the evaluations used.
  long run(Order &order, long budget);

  /// A restart's perturbation: moves one op of a rank the random `pick`
  /// chooses (the longest-span ranks most often) by up to `reach` places,
  /// within what its rank's order allows (microbatch order per kind, its
  /// own F before its B before its W, the memory limit). False if the op
  /// drawn cannot move.
  bool kick(Order &order, const std::vector<double> &span, uint64_t pick,
            int reach);

private:
  struct Move {
    int r, from, to;
  };
  double startOf(Op op, int r) {
    return eval.startOf(r, index(op.kind, r, op.mb));
  }
  double endOf(Op op, int r) {
    return startOf(op, r) + in.cost[r].time(op.kind);
  }
  /// Index in order[r] of op (kind, mb).
  int &index(Kind kind, int r, int j) {
    return idx[slot(kind)][size_t(r) * in.m + j];
  }
  /// Lowest index op (kind, mb) on rank r may move to: after the previous
  /// op of its kind (zb-auto keeps microbatch order) and after the ops of
  /// this rank it depends on (Dependences.h: its own F, or its own B).
  int lowestIndex(Op op, int r) {
    int lo = 0;
    if (op.mb > 0)
      lo = index(op.kind, r, op.mb - 1) + 1;
    forEachProducer(in, op.kind, r, [&](int q, Kind made) {
      if (q == r)
        lo = std::max(lo, index(made, r, op.mb) + 1);
    });
    return lo;
  }
  /// Highest index it may move to: before the next op of its kind and
  /// before the ops of this rank that depend on it.
  int highestIndex(Op op, int r, int size) {
    int hi = size - 1;
    if (op.mb + 1 < in.m)
      hi = std::min(hi, index(op.kind, r, op.mb + 1) - 1);
    if (op.kind != Kind::W)
      hi = std::min(hi, index(op.kind == Kind::F ? Kind::B : Kind::W, r,
                              op.mb) - 1);
    return hi;
  }
  void indexOrders(const Order &order);
  void candidates(const Order &order, std::vector<Move> &moves);

  const Instance &in;
  Evaluator &eval;
  Timing timing;
  std::vector<int> idx[3];
};


} // namespace zbc::sched::zbauto

#endif // ZBC_SCHEDULE_ZBAUTO_REPAIR_H
