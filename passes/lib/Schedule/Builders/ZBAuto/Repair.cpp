//===- Repair.cpp - zb-auto's repair of an order --------------------------===//
//
// See Repair.h.
//
//===----------------------------------------------------------------------===//

#include "Repair.h"

#include <algorithm>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

void Repair::indexOrders(const Order &order) {
  for (auto &v : idx)
    v.assign(size_t(in.p) * in.m, -1);
  for (int r = 0; r < in.p; ++r)
    for (int i = 0, e = static_cast<int>(order[r].size()); i < e; ++i)
      index(order[r][i].kind, r, order[r][i].mb) = i;
}

void Repair::candidates(const Order &order, std::vector<Move> &moves) {
  const int p = in.p;
  const double c = in.comm, eps = 1e-9 * std::max(1.0, timing.makespan);
  indexOrders(order);
  int crit = 0;
  for (int r = 1; r < p; ++r)
    if (timing.span[r] > timing.span[crit])
      crit = r;
  moves.clear();
  int r = crit, i = static_cast<int>(order[crit].size()) - 1;
  while (i >= 0) {
    Op op = order[r][i];
    int j = op.mb;
    double s = startOf(op, r);
    // The dependence that bounds this op, if any (the latest; of equals,
    // the last the rule names, which is the one on another rank).
    double ready = 0;
    int dr = -1, di = -1;
    forEachProducer(in, op.kind, r, [&](int q, Kind made) {
      double at = endOf({made, j}, q) + (q == r ? 0 : c);
      if (dr < 0 || at >= ready) {
        ready = at;
        dr = q;
        di = index(made, q, j);
      }
    });
    double prevEnd = i > 0 ? endOf(order[r][i - 1], r) : -kInf;
    if (dr >= 0 && ready >= s - eps) {
      // Waits for its dependency. A gap before it can take the next W.
      if (i > 0 && prevEnd < s - eps) {
        for (int k = i + 1, e = static_cast<int>(order[r].size()); k < e; ++k)
          if (order[r][k].kind == Kind::W) {
            if (index(Kind::B, r, order[r][k].mb) < i)
              moves.push_back({r, k, i});
            break;
          }
      }
      r = dr;
      i = di;
      continue;
    }
    if (i > 0 && prevEnd >= s - eps) {
      // Waits for its rank: try running it earlier.
      int lo = lowestIndex(op, r);
      if (lo <= i - 1) {
        moves.push_back({r, i, i - 1});
        // The earliest position where it would not wait idle.
        int k = i - 1;
        while (k > lo && endOf(order[r][k - 1], r) > ready + eps)
          --k;
        if (k < i - 1)
          moves.push_back({r, i, k});
      }
      --i;
      continue;
    }
    break;
  }
}

long Repair::run(Order &order, long budget) {
  long used = 0;
  std::vector<Move> moves;
  timing = eval.run(order);
  ++used;
  if (!timing.ok)
    return used;
  Key best = keyOf(timing);
  while (used < budget) {
    candidates(order, moves);
    bool improved = false;
    for (const Move &mv : moves) {
      if (used >= budget)
        break;
      std::vector<Op> &ord = order[mv.r];
      int lo = std::min(mv.from, mv.to), hi = std::max(mv.from, mv.to);
      moveOp(ord, mv.from, mv.to);
      if (withinLimit(in, ord, mv.r)) {
        ++used;
        const Timing &t = eval.retime(order, mv.r, lo, hi);
        if (t.ok) {
          Key k = keyOf(t);
          if (keyLess(k, best)) {
            best = std::move(k);
            timing = t;
            improved = true;
            break;
          }
        }
        moveOp(ord, mv.to, mv.from);
        eval.undo(order, mv.r, lo, hi);
        continue;
      }
      moveOp(ord, mv.to, mv.from);
    }
    if (!improved)
      break;
  }
  return used;
}

bool Repair::kick(Order &order, const std::vector<double> &span,
                  uint64_t pick, int reach) {
  // The rank: half the time the longest span, else any, so the restarts
  // work where the makespan is made and still leave it.
  int r = 0;
  if (pick & 1) {
    r = static_cast<int>(std::max_element(span.begin(), span.end()) -
                         span.begin());
  } else {
    r = static_cast<int>((pick >> 1) % in.p);
  }
  pick >>= 8;
  std::vector<Op> &ord = order[r];
  int size = static_cast<int>(ord.size());
  if (size < 2)
    return false;
  indexOrders(order);
  int from = static_cast<int>(pick % size);
  pick /= size;
  int lo = std::max(lowestIndex(ord[from], r), from - reach);
  int hi = std::min(highestIndex(ord[from], r, size), from + reach);
  if (hi <= lo)
    return false;
  int to = lo + static_cast<int>(pick % (hi - lo));
  if (to >= from)
    ++to; // never the place it is in
  if (to > hi)
    return false;
  moveOp(ord, from, to);
  if (withinLimit(in, ord, r))
    return true;
  moveOp(ord, to, from); // undo
  return false;
}
