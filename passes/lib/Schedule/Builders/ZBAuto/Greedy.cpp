//===- Greedy.cpp - zb-auto's simulation-driven greedy --------------------===//
//
// See Greedy.h for what it does; memory: Note [zb-auto memory].
//
//===----------------------------------------------------------------------===//

#include "Greedy.h"

#include <algorithm>
#include <cmath>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

bool Greedy::run(const Params &params, Order &order) {
  const int p = in.p, m = in.m;
  endF.assign(size_t(p) * m, -1);
  endB.assign(size_t(p) * m, -1);
  freeAt.assign(p, 0);
  mem.assign(p, 0);
  nF.assign(p, 0);
  nB.assign(p, 0);
  nW.assign(p, 0);
  order.resize(p);
  for (auto &o : order) {
    o.clear();
    o.reserve(3 * size_t(m));
  }
  wake.assign(leaves, kInf);
  winner.assign(2 * leaves, 0);
  for (int i = 0; i < leaves; ++i)
    winner[leaves + i] = i;
  for (int node = leaves - 1; node >= 1; --node)
    winner[node] = winner[2 * node];
  setWake(0, 0);
  for (int r = winner[1]; wake[r] < kInf; r = winner[1])
    decide(r, wake[r], params, order);
  for (int r = 0; r < p; ++r)
    if (nW[r] != m)
      return false;
  return true;
}

void Greedy::decide(int r, double now, const Params &params, Order &order) {
  const int p = in.p, m = in.m;
  const double c = in.comm, limit = in.limit, slack = memSlack(limit);
  const double tF = in.cost[r].F, tB = in.cost[r].B, tW = in.cost[r].W;
  const double mB = in.cost[r].memB, mW = in.cost[r].memW;
  const double eps = 1e-9 * (tF + tB + tW);
  if (nW[r] == m) {
    setWake(r, kInf); // done
    return;
  }
  std::vector<Op> &ord = order[r];
  int f = nF[r], b = nB[r];

  auto placeW = [&](double &at) {
    ord.push_back({Kind::W, nW[r]});
    ++nW[r];
    mem[r] -= mW;
    at += tW;
  };

  if (f == m && b == m) { // only W's left: back to back
    double at = freeAt[r];
    while (nW[r] < m)
      placeW(at);
    freeAt[r] = at;
    setWake(r, kInf);
    return;
  }

  // When the next F and the next B may start: the latest of their
  // dependences (Dependences.h), kInf while one is not placed.
  auto readyAt = [&](Kind kind, int j) {
    double ready = 0;
    forEachProducer(in, kind, r, [&](int q, Kind made) {
      double end = (made == Kind::F ? endF : endB)[size_t(q) * m + j];
      ready = end < 0 ? kInf : std::max(ready, end + (q == r ? 0 : c));
    });
    return ready;
  };
  int cap = params.cap.empty() ? 0 : params.cap[r];
  double readyF = kInf, readyB = kInf;
  if (f < m && (cap <= 0 || f - b < cap))
    readyF = readyAt(Kind::F, f);
  if (b < f)
    readyB = readyAt(Kind::B, b);
  // Not ready is kInf, and stays not ready even when `now` overflows.
  bool fReady = readyF < kInf && readyF <= now + eps;
  bool bReady = readyB < kInf && readyB <= now + eps;
  // Not starting anything now: sleep until an input we know of arrives, or
  // until a neighbour's commit wakes us.
  auto wait = [&] {
    double next = kInf;
    if (readyF > now + eps)
      next = readyF;
    if (readyB > now + eps)
      next = std::min(next, readyB);
    setWake(r, next);
  };
  int pendingW = b - nW[r];
  // W's an op needs first so that memory stays within the limit; an F is
  // admitted only if its B can run later (Note [zb-auto memory]).
  auto wNeeded = [&](double rise) {
    double need = mem[r] + rise;
    if (in.fits(need))
      return 0;
    if (mW <= 0)
      return m + 1;
    int k = static_cast<int>(std::ceil((need - limit - slack) / mW));
    while (k > 0 && in.fits(need - (k - 1) * mW)) // round-off at the edge
      --k;
    while (!in.fits(need - k * mW))
      ++k;
    return k;
  };

  Kind kind = Kind::F;
  int needW = 0;
  if (bReady && !fReady && params.waitF > 0 && pendingW > 0 &&
      readyF < now + params.waitF * tF) {
    wait(); // for the F; the gap until it comes takes W's
    return;
  }
  if (bReady && (params.prefersB(r) || !fReady)) {
    kind = Kind::B;
  } else if (fReady) {
    if (!bReady && readyB < now + params.waitB * tF) {
      wait(); // the B is due soon: keep the rank free for it
      return;
    }
    int k = wNeeded(std::max(mB, mW));
    if (k == 0) {
      kind = Kind::F;
    } else if (bReady) {
      kind = Kind::B;
    } else if (k <= pendingW && !(params.waitWhenFull && b < f)) {
      kind = Kind::F;
      needW = k;
    } else {
      wait(); // for a B
      return;
    }
  } else {
    wait(); // nothing ready yet
    return;
  }
  if (kind == Kind::B)
    needW = params.flushW0 && r == 0 && f == m
                ? pendingW
                : std::min(pendingW, wNeeded(mW - mB));

  // W's into the gap [freeAt, now), then the forced ones.
  double at = freeAt[r];
  while (nW[r] < b) {
    if (needW <= 0) {
      double gap = now - at;
      if (gap <= eps || gap + eps < params.fillAt(r) * tW)
        break;
    }
    placeW(at);
    --needW;
  }
  double start = std::max(at, now);
  int j = kind == Kind::F ? f : b;
  ord.push_back({kind, j});
  if (kind == Kind::F) {
    double end = start + tF;
    endF[size_t(r) * m + j] = end;
    mem[r] += mB;
    ++nF[r];
    freeAt[r] = end;
    setWake(r, end);
    if (r + 1 < p)
      wakeBy(r + 1, end + c);
  } else {
    double end = start + tB;
    endB[size_t(r) * m + j] = end;
    mem[r] += mW - mB;
    ++nB[r];
    freeAt[r] = end;
    setWake(r, end);
    if (r > 0)
      wakeBy(r - 1, end + c);
  }
}
