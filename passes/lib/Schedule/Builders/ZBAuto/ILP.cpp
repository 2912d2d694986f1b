//===- ILP.cpp - zb-auto's exact mode: the paper's ILP with CBC ----------===//
//
// The Zero Bubble paper's ILP (its appendix), solved with CBC through the C
// API, warm-started with the heuristic's order and stopped after
// BuildOptions::exactSeconds. Per rank r (= stage r), with S_r the as-soon-
// as-possible start of its first F (the F chain: sum over k < r of T_F + comm):
//
//   variables   E(op) end time of every F/B/W; Z the objective;
//               binaries for the relative order of two ops of one rank.
//   minimize    Z  >=  E(W(r, m-1)) - S_r  for every r   (the longest span)
//   subject to  F(r,j) after F(r-1,j) + comm;  B(r,j) after B(r+1,j) + comm;
//               B(r,j) after F(r,j); W(r,j) after B(r,j);
//               big-M disjunctions: for a binary v "a before b",
//                 E(b) - T(b) >= E(a) - M (1 - v),  E(a) - T(a) >= E(b) - M v;
//               memory at every op that raises it (every F; every B when
//               M_W > M_B): its delta plus the deltas of the ops before it
//               (a linear expression in the binaries) <= the limit.
//
// Reductions (dialect/docs/ZB.md, "zb-auto: a heuristic, then optionally
// the ILP"):
//  * F's, B's and W's of a rank each run in microbatch order (every schedule
//    zbc builds does; any schedule can be relabelled to F order and the rest
//    follows in practice). So F(j) precedes B(k) and W(k) for j <= k, and
//    the open pairs are F(j)/B(k) and W(i)/F(j), W(i)/B(k) with j, k > i.
//  * A pair whose other order would break the limit on its own is fixed
//    (Note [zb-auto memory]): F(j) before B(k) holds j - k + 1
//    activations; W(i) after F(j) holds microbatches i..j. A fixed
//    prefix/suffix of a monotone family needs one precedence constraint,
//    not one per pair.
//  * F(r, 0) is pinned at S_r: it is the first op of the rank and nothing
//    else delays it in the simulator, so the ILP cannot shorten a span by
//    starting a rank late. With that, for any order the ILP's optimum is the
//    simulator's makespan, and the ILP's bound is a true lower bound for
//    microbatch-ordered schedules.
//  * Full mode leaves every open pair to CBC (p = 4, m = 8: ~300
//    binaries). Past kFullBinaries (p = 8, m = 24 needs 5.4k at p M_B, 6.3k
//    at 2p M_B, ~20k without the memory fixing) the model keeps the
//    heuristic's F/B order and decides only where each W goes, within a
//    window of K (6 down to 1) F's and B's around the heuristic's place;
//    CBC's bound is then a bound for that neighbourhood, and the note says
//    so. Past kWindowBinaries (p = 64, m = 1024) it only reports lowerBound.
// Valid inequalities that tighten the LP: Z >= each rank's work; every E
// has the lower bound of its dependency chains and of the rank's own ops
// before it; E <= S_r + heuristic makespan (no better schedule ends later).
// The reported bound is the larger of CBC's (full mode) and lowerBound.
//
// CBC 2.10 settings, each for a reason seen on these models: preprocessing
// off (it crashes in CglPreProcess::postProcess at p = 8, m = 24); wall-
// clock time (the limit is the user's seconds, CBC counts CPU by default);
// the model is loaded in one call (row by row took 13 s at 42k rows); the
// MIP start gives only the binaries set to 1 and only up to
// kWarmStartColumns columns, since CBC's matching of a start to the columns
// grows quadratically (+13 s at 37k columns); larger models get the
// heuristic's makespan as a cutoff. CBC checks its clock only between
// phases (a root-node phase ran 12 s past a 10 s limit), so it solves in a
// child process that is killed at the deadline (Deadline.h): --exact S is
// S seconds of wall-clock for the whole build, whatever CBC does.
//
// The best solution is turned back into per-rank orders by start time and
// timed with the fast model; it replaces the heuristic only if it is
// shorter. buildSchedule verifies and simulates it again.
//
//===----------------------------------------------------------------------===//

#include "Builders/ZBAuto/Deadline.h"
#include "ZBAuto.h"
#include "Core/Support.h"

#if ZBC_HAVE_CBC
#include <coin/Cbc_C_Interface.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

using namespace zbc::sched;
using namespace zbc::sched::zbauto;

#if ZBC_HAVE_CBC

/// Largest model (open pairs) solved without fixing the F/B order.
static constexpr long kFullBinaries = 3000;
/// Largest W-placement model; beyond it the exact mode only reports bounds.
static constexpr long kWindowBinaries = 30000;
/// Largest model (columns) that gets the heuristic as a MIP start.
static constexpr int kWarmStartColumns = 15000;
/// Seconds of the limit kept for after CBC: extracting the order, timing it
/// and the build's verify and simulation (0.1 s at p = 64, m = 1024).
static constexpr double kAfterSolve = 0.3;

namespace {

/// A Cbc_Model that is freed on every path. Columns and rows are collected
/// first and handed to CBC at once (Cbc_loadProblem): adding 40k rows one
/// by one with Cbc_addRow takes seconds, the bulk load milliseconds.
class CbcModel {
public:
  CbcModel() : model(Cbc_newModel()) {}
  ~CbcModel() { Cbc_deleteModel(model); }
  CbcModel(const CbcModel &) = delete;
  CbcModel &operator=(const CbcModel &) = delete;

  int addCol(double lb, double ub, double obj, bool integer) {
    colLb.push_back(lb);
    colUb.push_back(ub);
    colObj.push_back(obj);
    if (integer)
      integers.push_back(cols);
    return cols++;
  }
  /// sum coef * col (sense) rhs; sense is 'G', 'L' or 'E'.
  void addRow(const std::vector<std::pair<int, double>> &terms, char sense,
              double rhs) {
    constexpr double inf = std::numeric_limits<double>::max();
    for (auto [c, v] : terms)
      entries.push_back({c, rows, v});
    rowLb.push_back(sense == 'L' ? -inf : rhs);
    rowUb.push_back(sense == 'G' ? inf : rhs);
    ++rows;
  }
  /// Loads everything into CBC; call once, after the last addRow.
  void load() {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry &a, const Entry &b) { return a.col < b.col; });
    std::vector<CoinBigIndex> start(cols + 1, 0);
    std::vector<int> index;
    std::vector<double> value;
    index.reserve(entries.size());
    value.reserve(entries.size());
    for (const Entry &e : entries) {
      ++start[e.col + 1];
      index.push_back(e.row);
      value.push_back(e.value);
    }
    for (int c = 0; c < cols; ++c)
      start[c + 1] += start[c];
    Cbc_loadProblem(model, cols, rows, start.data(), index.data(),
                    value.data(), colLb.data(), colUb.data(), colObj.data(),
                    rowLb.data(), rowUb.data());
    for (int c : integers)
      Cbc_setInteger(model, c);
  }

  Cbc_Model *model;
  int cols = 0, rows = 0;
  std::vector<int> integers;

private:
  struct Entry {
    int col, row;
    double value;
  };
  std::vector<Entry> entries;
  std::vector<double> colLb, colUb, colObj, rowLb, rowUb;
};

/// What CBC's solve leaves, as the child process of runWithDeadline hands
/// it back: bytes of a small header and the solution's columns.
struct SolverResult {
  bool optimal = false;
  double objective = 0, bestPossible = 0;
  std::vector<double> solution; // empty: none

  static SolverResult of(const CbcModel &model) {
    SolverResult r;
    r.optimal = Cbc_isProvenOptimal(model.model);
    r.objective = Cbc_getObjValue(model.model);
    r.bestPossible = Cbc_getBestPossibleObjValue(model.model);
    if (const double *s = Cbc_bestSolution(model.model))
      r.solution.assign(s, s + model.cols);
    return r;
  }
  std::string encode() const {
    std::string bytes(1 + 2 * sizeof(double), '\0');
    bytes[0] = optimal ? 1 : 0;
    std::memcpy(&bytes[1], &objective, sizeof(double));
    std::memcpy(&bytes[1 + sizeof(double)], &bestPossible, sizeof(double));
    bytes.append(reinterpret_cast<const char *>(solution.data()),
                 solution.size() * sizeof(double));
    return bytes;
  }
  /// False if `bytes` is not a result of a model of `cols` columns.
  bool decode(const std::string &bytes, int cols) {
    size_t head = 1 + 2 * sizeof(double);
    size_t body = bytes.size() >= head ? bytes.size() - head : 1;
    if (bytes.size() < head ||
        (body != 0 && body != size_t(cols) * sizeof(double)))
      return false;
    optimal = bytes[0] != 0;
    std::memcpy(&objective, &bytes[1], sizeof(double));
    std::memcpy(&bestPossible, &bytes[1 + sizeof(double)], sizeof(double));
    solution.resize(body / sizeof(double));
    std::memcpy(solution.data(), bytes.data() + head, body);
    return true;
  }
};

/// The ILP for one instance.
class Formulation {
public:
  Formulation(const Instance &in, const Order &heuristic, double makespan)
      : in(in), heuristic(heuristic), makespan(makespan) {}

  /// Chooses the mode and the open pairs; returns the number of binaries.
  long plan(int window);
  void build(CbcModel &model);
  /// The heuristic's order and timing as a MIP start.
  void warmStart(CbcModel &model, const Timing &timing);
  /// The per-rank orders of a solution, by start time.
  Order extract(const double *solution) const;

  bool full = true;
  int window = 0;

private:
  /// Ops of rank r in the heuristic: position of each F/B/W by microbatch.
  struct RankPlan {
    // Open F(j)/B(k) pairs, j > k: j in [k + 1, xHi[k]). In the W-only mode
    // xHi[k] = k + 1 and fBefore[k] = #F's before B(k) in the heuristic.
    std::vector<int> xHi, fBefore;
    // W(i) against F(j): open for j in [yLo[i], yHi[i]); F(j) before W(i)
    // below, W(i) before F(j) from yHi[i]. Likewise B(k) in [zLo, zHi).
    std::vector<int> yLo, yHi, zLo, zHi;
    // Columns: end times; binaries by (i, j) offset.
    std::vector<int> eF, eB, eW;
    std::vector<std::vector<int>> x, y, z;
  };
  double limitSlack() const { return in.limit + memSlack(in.limit); }

  const Instance &in;
  const Order &heuristic;
  double makespan;
  std::vector<RankPlan> ranks;
  std::vector<double> first; // S_r
  int zCol = -1;
};

} // namespace

long Formulation::plan(int windowSize) {
  const int p = in.p, m = in.m;
  window = windowSize;
  full = windowSize <= 0;
  first.assign(p, 0);
  for (int r = 1; r < p; ++r)
    first[r] = first[r - 1] + in.cost[r - 1].F + in.comm;
  ranks.assign(p, {});
  long binaries = 0;
  for (int r = 0; r < p; ++r) {
    RankPlan &rp = ranks[r];
    double mB = in.cost[r].memB, mW = in.cost[r].memW, small = std::min(mB, mW);
    // The heuristic's order: F's before each B(k), F's and B's before each
    // W(i).
    rp.fBefore.assign(m, 0);
    std::vector<int> fBeforeW(m), bBeforeW(m);
    {
      int nF = 0, nB = 0;
      for (Op op : heuristic[r]) {
        if (op.kind == Kind::F) {
          ++nF;
        } else if (op.kind == Kind::B) {
          rp.fBefore[op.mb] = nF;
          ++nB;
        } else {
          fBeforeW[op.mb] = nF;
          bBeforeW[op.mb] = nB;
        }
      }
    }
    rp.xHi.assign(m, 0);
    for (int k = 0; k < m; ++k) {
      if (full) {
        // F(j) before B(k) holds F's k..j in flight.
        int hi = k + 1;
        while (hi < m && (hi - k + 1) * mB <= limitSlack())
          ++hi;
        rp.xHi[k] = hi;
        binaries += hi - (k + 1);
      } else {
        rp.xHi[k] = k + 1;
      }
    }
    rp.yLo.assign(m, 0);
    rp.yHi.assign(m, 0);
    rp.zLo.assign(m, 0);
    rp.zHi.assign(m, 0);
    for (int i = 0; i < m; ++i) {
      // W(i) after F(j) (j > i) keeps microbatches i..j-1 (each at least
      // min(M_B, M_W)) and j (M_B); W(i) after B(k) keeps i (M_W, its B is
      // done), i+1..k-1 and k (M_W). Past the limit, W(i) must go first.
      int yCap = i + 1, zCap = i + 1;
      while (yCap < m && (yCap - i) * small + mB <= limitSlack())
        ++yCap;
      while (zCap < m && 2 * mW + (zCap - i - 1) * small <= limitSlack())
        ++zCap;
      int lo = i + 1, hiF = yCap, loB = i + 1, hiB = zCap;
      if (!full) {
        int fb = fBeforeW[i], bb = bBeforeW[i];
        lo = std::max(lo, fb - window);
        hiF = std::min(hiF, std::max(lo, fb + window));
        loB = std::max(loB, bb - window);
        hiB = std::min(hiB, std::max(loB, bb + window));
      }
      rp.yLo[i] = std::min(lo, m);
      rp.yHi[i] = std::max(rp.yLo[i], std::min(hiF, m));
      rp.zLo[i] = std::min(loB, m);
      rp.zHi[i] = std::max(rp.zLo[i], std::min(hiB, m));
      binaries += (rp.yHi[i] - rp.yLo[i]) + (rp.zHi[i] - rp.zLo[i]);
    }
  }
  return binaries;
}

void Formulation::build(CbcModel &model) {
  const int p = in.p, m = in.m;
  const double c = in.comm;
  double maxT = 0;
  for (int r = 0; r < p; ++r)
    maxT = std::max({maxT, in.cost[r].F, in.cost[r].B, in.cost[r].W});
  const double bigM = makespan + maxT;

  // Lower bounds on end times from the dependences (Dependences.h) and each
  // rank's own earlier ops. The sweep visits every producer first: F down
  // the ranks, then B back up, then W.
  std::vector<std::vector<double>> lb[3];
  for (auto &byRank : lb)
    byRank.assign(p, std::vector<double>(m));
  auto bound = [&](Kind kind, int r, int j) {
    const StageCost &cost = in.cost[r];
    double t = cost.time(kind);
    // Microbatch order: the op of j-1 of this kind, and the first j+1 of
    // them (with the F's before each B) from the rank's first start.
    double v = j > 0 ? lb[slot(kind)][r][j - 1] + t : 0;
    if (kind == Kind::F)
      v = std::max(v, first[r] + (j + 1) * cost.F);
    else if (kind == Kind::B)
      v = std::max(v, first[r] + (j + 1) * (cost.F + cost.B));
    forEachProducer(in, kind, r, [&](int q, Kind made) {
      v = std::max(v, lb[slot(made)][q][j] + (q == r ? 0 : c) + t);
    });
    lb[slot(kind)][r][j] = v;
  };
  for (int r = 0; r < p; ++r)
    for (int j = 0; j < m; ++j)
      bound(Kind::F, r, j);
  for (int r = p - 1; r >= 0; --r)
    for (int j = 0; j < m; ++j)
      bound(Kind::B, r, j);
  for (int r = 0; r < p; ++r)
    for (int j = 0; j < m; ++j)
      bound(Kind::W, r, j);
  const auto &lbF = lb[slot(Kind::F)], &lbB = lb[slot(Kind::B)],
             &lbW = lb[slot(Kind::W)];

  // Objective column first.
  double work = 0;
  for (int r = 0; r < p; ++r)
    work = std::max(work, m * (in.cost[r].F + in.cost[r].B + in.cost[r].W));
  zCol = model.addCol(work, makespan * (1 + 1e-9), 1, false);

  // Bounds are widened by a hair so that the warm start, timed with sums in
  // another order, is not "outside bounds" by round-off.
  const double tol = 1e-9 * makespan;
  for (int r = 0; r < p; ++r) {
    RankPlan &rp = ranks[r];
    double ub = first[r] + makespan + tol;
    rp.eF.resize(m);
    rp.eB.resize(m);
    rp.eW.resize(m);
    auto col = [&](double lb, double hi) {
      return model.addCol(lb - tol, std::max(lb, hi) + tol, 0, false);
    };
    for (int j = 0; j < m; ++j) {
      rp.eF[j] = col(lbF[r][j], j == 0 ? lbF[r][j] : ub); // F(r,0) pinned
      rp.eB[j] = col(lbB[r][j], ub);
      rp.eW[j] = col(lbW[r][j], ub);
    }
    rp.x.assign(m, {});
    rp.y.assign(m, {});
    rp.z.assign(m, {});
    for (int k = 0; k < m; ++k)
      for (int j = k + 1; j < rp.xHi[k]; ++j)
        rp.x[k].push_back(model.addCol(0, 1, 0, true));
    for (int i = 0; i < m; ++i) {
      for (int j = rp.yLo[i]; j < rp.yHi[i]; ++j)
        rp.y[i].push_back(model.addCol(0, 1, 0, true));
      for (int k = rp.zLo[i]; k < rp.zHi[i]; ++k)
        rp.z[i].push_back(model.addCol(0, 1, 0, true));
    }
  }

  // "a ends before b starts": E(b) - E(a) >= T(b).
  auto before = [&](int a, int b, double tb) {
    model.addRow({{b, 1}, {a, -1}}, 'G', tb);
  };
  // Binary v = 1: a before b; v = 0: b before a.
  auto either = [&](int a, double ta, int b, double tb, int v) {
    model.addRow({{b, 1}, {a, -1}, {v, -bigM}}, 'G', tb - bigM);
    model.addRow({{a, 1}, {b, -1}, {v, bigM}}, 'G', ta);
  };

  for (int r = 0; r < p; ++r) {
    RankPlan &rp = ranks[r];
    double tF = in.cost[r].F, tB = in.cost[r].B, tW = in.cost[r].W;
    double mB = in.cost[r].memB, mW = in.cost[r].memW;
    model.addRow({{zCol, 1}, {rp.eW[m - 1], -1}}, 'G', -first[r]);
    auto endCol = [&](Kind kind, int q, int j) {
      const RankPlan &plan = ranks[q];
      return kind == Kind::F ? plan.eF[j] : kind == Kind::B ? plan.eB[j] : plan.eW[j];
    };
    for (int j = 0; j < m; ++j) {
      // The dependences (Dependences.h), with comm across ranks.
      for (Kind kind : {Kind::F, Kind::B, Kind::W})
        forEachProducer(in, kind, r, [&](int q, Kind made) {
          before(endCol(made, q, j), endCol(kind, r, j),
                 in.cost[r].time(kind) + (q == r ? 0 : c));
        });
      if (j + 1 < m) {
        before(rp.eF[j], rp.eF[j + 1], tF);
        before(rp.eB[j], rp.eB[j + 1], tB);
        before(rp.eW[j], rp.eW[j + 1], tW);
      }
    }
    // F(j) / B(k), j > k.
    for (int k = 0; k < m; ++k) {
      if (full) {
        for (int j = k + 1; j < rp.xHi[k]; ++j) {
          int v = rp.x[k][j - k - 1];
          either(rp.eF[j], tF, rp.eB[k], tB, v);
          if (j + 1 < rp.xHi[k]) // F(j+1) before B(k) => F(j) before B(k)
            model.addRow({{v, 1}, {rp.x[k][j - k], -1}}, 'G', 0);
          if (j > k + 1 && j < rp.xHi[k + 1]) // ... => F(j) before B(k+1)
            model.addRow({{rp.x[k + 1][j - k - 2], 1}, {v, -1}}, 'G', 0);
        }
        if (rp.xHi[k] < m) // the first F that cannot precede B(k)
          before(rp.eB[k], rp.eF[rp.xHi[k]], tF);
      } else {
        int n = rp.fBefore[k]; // F(0..n-1) before B(k), F(n..) after
        if (n - 1 > k)
          before(rp.eF[n - 1], rp.eB[k], tB);
        if (n < m)
          before(rp.eB[k], rp.eF[n], tF);
      }
    }
    // W(i) / F(j) and W(i) / B(k).
    for (int i = 0; i < m; ++i) {
      if (rp.yLo[i] - 1 > i)
        before(rp.eF[rp.yLo[i] - 1], rp.eW[i], tW);
      for (int j = rp.yLo[i]; j < rp.yHi[i]; ++j) {
        int v = rp.y[i][j - rp.yLo[i]];
        either(rp.eW[i], tW, rp.eF[j], tF, v);
        if (j + 1 < rp.yHi[i]) // W(i) before F(j) => before F(j+1)
          model.addRow({{rp.y[i][j + 1 - rp.yLo[i]], 1}, {v, -1}}, 'G', 0);
      }
      if (rp.yHi[i] < m && rp.yHi[i] > i)
        before(rp.eW[i], rp.eF[rp.yHi[i]], tF);
      if (rp.zLo[i] - 1 > i)
        before(rp.eB[rp.zLo[i] - 1], rp.eW[i], tW);
      for (int k = rp.zLo[i]; k < rp.zHi[i]; ++k) {
        int v = rp.z[i][k - rp.zLo[i]];
        either(rp.eW[i], tW, rp.eB[k], tB, v);
        if (k + 1 < rp.zHi[i])
          model.addRow({{rp.z[i][k + 1 - rp.zLo[i]], 1}, {v, -1}}, 'G', 0);
      }
      if (rp.zHi[i] < m && rp.zHi[i] > i)
        before(rp.eW[i], rp.eB[rp.zHi[i]], tB);
    }

    // Memory after F(j): (j+1) M_B + #B before * (M_W - M_B) - #W before *
    // M_W <= limit; #B before = sum over k < j of [B(k) before F(j)].
    for (int j = 0; j < m; ++j) {
      std::vector<std::pair<int, double>> terms;
      double constant = (j + 1) * mB;
      for (int k = 0; k < j; ++k) {
        bool open = full && j < rp.xHi[k];
        if (open) // B(k) before F(j) = 1 - x
          constant += mW - mB, terms.push_back({rp.x[k][j - k - 1], mB - mW});
        else if (full || rp.fBefore[k] <= j)
          constant += mW - mB;
      }
      for (int i = 0; i < j; ++i) {
        if (j >= rp.yLo[i] && j < rp.yHi[i])
          terms.push_back({rp.y[i][j - rp.yLo[i]], -mW});
        else if (j >= rp.yHi[i])
          constant -= mW;
      }
      if (terms.empty()) {
        continue; // fixed, and the heuristic meets it
      }
      model.addRow(terms, 'L', in.limit + memSlack(in.limit) - constant);
    }
    // Memory after B(k), only when B raises it.
    if (mW > mB)
      for (int k = 0; k < m; ++k) {
        std::vector<std::pair<int, double>> terms;
        double constant = (k + 1) * mB + (k + 1) * (mW - mB);
        if (full) {
          for (int j = k + 1; j < rp.xHi[k]; ++j)
            terms.push_back({rp.x[k][j - k - 1], mB});
        } else {
          constant += std::max(0, rp.fBefore[k] - (k + 1)) * mB;
        }
        for (int i = 0; i < k; ++i) {
          if (k >= rp.zLo[i] && k < rp.zHi[i])
            terms.push_back({rp.z[i][k - rp.zLo[i]], -mW});
          else if (k >= rp.zHi[i])
            constant -= mW;
        }
        if (!terms.empty())
          model.addRow(terms, 'L', in.limit + memSlack(in.limit) - constant);
      }
  }
}

void Formulation::warmStart(CbcModel &model, const Timing &timing) {
  const int m = in.m;
  std::vector<int> cols;
  std::vector<double> vals;
  // Only the binaries set to 1: CBC computes the rest (Cbc_C_Interface.h).
  auto set = [&](int col, double v) {
    if (v == 0)
      return;
    cols.push_back(col);
    vals.push_back(v);
  };
  for (int r = 0; r < in.p; ++r) {
    const RankPlan &rp = ranks[r];
    auto start = [&](Kind kind, int j) {
      return timing.start[slot(kind)][size_t(r) * m + j];
    };
    for (int k = 0; k < m; ++k)
      for (int j = k + 1; j < rp.xHi[k]; ++j)
        set(rp.x[k][j - k - 1], start(Kind::F, j) < start(Kind::B, k) ? 1 : 0);
    for (int i = 0; i < m; ++i) {
      for (int j = rp.yLo[i]; j < rp.yHi[i]; ++j)
        set(rp.y[i][j - rp.yLo[i]], start(Kind::W, i) < start(Kind::F, j) ? 1 : 0);
      for (int k = rp.zLo[i]; k < rp.zHi[i]; ++k)
        set(rp.z[i][k - rp.zLo[i]], start(Kind::W, i) < start(Kind::B, k) ? 1 : 0);
    }
  }
  Cbc_setMIPStartI(model.model, static_cast<int>(cols.size()), cols.data(),
                   vals.data());
}

Order Formulation::extract(const double *solution) const {
  Order order(in.p);
  for (int r = 0; r < in.p; ++r) {
    const RankPlan &rp = ranks[r];
    std::vector<std::pair<double, Op>> ops;
    for (int j = 0; j < in.m; ++j) {
      ops.push_back({solution[rp.eF[j]] - in.cost[r].F, {Kind::F, j}});
      ops.push_back({solution[rp.eB[j]] - in.cost[r].B, {Kind::B, j}});
      ops.push_back({solution[rp.eW[j]] - in.cost[r].W, {Kind::W, j}});
    }
    std::stable_sort(ops.begin(), ops.end(), [](const auto &a, const auto &b) {
      return a.first < b.first;
    });
    for (auto &[t, op] : ops)
      order[r].push_back(op);
  }
  return order;
}

llvm::Expected<Order> zbc::sched::zbauto::solveExact(
    const Instance &in, const Order &heuristic, double heuristicMakespan,
    std::chrono::steady_clock::time_point deadline, BuildReport &report) {
  using Clock = std::chrono::steady_clock;
  auto clock = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - clock).count();
  };
  auto left = [&] {
    return std::chrono::duration<double>(deadline - Clock::now()).count();
  };
  double analytic = lowerBound(in);
  std::string prefix = "zb-auto exact (CBC " + std::string(Cbc_getVersion()) +
                       "): heuristic makespan " + formatNumber(heuristicMakespan);
  if (heuristicMakespan <= analytic * (1 + 1e-9)) {
    report.notes.push_back(prefix + " meets the lower bound " + formatNumber(analytic) +
                           ": optimal, gap 0%; CBC not needed");
    return heuristic;
  }

  Formulation form(in, heuristic, heuristicMakespan);
  long binaries = form.plan(0);
  std::string mode = "full model (F's, B's and W's in microbatch order)";
  if (binaries > kFullBinaries) {
    int window = 6;
    for (; window > 1; --window)
      if ((binaries = form.plan(window)) <= kWindowBinaries)
        break;
    binaries = form.plan(window);
    mode = "W-placement model (the heuristic's F/B order; each W within " +
           std::to_string(window) + " F's and B's of its place), bound local "
                                    "to that neighbourhood";
    if (binaries > kWindowBinaries) {
      double gap = std::max(
          0.0, std::round(1e4 * (heuristicMakespan - analytic) /
                          heuristicMakespan) / 1e2);
      report.notes.push_back(
          prefix + "; the ILP would need " + std::to_string(binaries) +
          " binaries even for W placement alone, too large: kept the "
          "heuristic; lower bound " + formatNumber(analytic) + " (lowerBound in "
          "ZBAuto.cpp), gap " + formatNumber(gap) + "%");
      return heuristic;
    }
  }

  CbcModel model;
  form.build(model);
  model.load();
  Evaluator eval(in);
  Timing timing = eval.run(heuristic, true);
  if (!timing.ok)
    return heuristic;
  // Warm start: CBC 2.10 matches a MIP start to the columns in time that
  // grows quadratically with the model (+13 s at 37k columns with every
  // value given, +2 s with the nonzero binaries only), so large models get
  // the heuristic's makespan as a cutoff instead; the heuristic's schedule
  // is kept either way unless CBC finds a shorter one.
  bool warm = model.cols <= kWarmStartColumns;
  if (warm)
    form.warmStart(model, timing);
  else
    Cbc_setCutoff(model.model, heuristicMakespan * (1 + 1e-9));
  Cbc_setObjSense(model.model, 1);
  Cbc_setLogLevel(model.model, 0);
  // CBC 2.10's preprocessing can crash in CglPreProcess::postProcess on
  // these models (seen at p = 8, m = 24; coin-or/Cbc#167, #185).
  Cbc_setParameter(model.model, "preprocess", "off");
  // The limit is the user's wall-clock seconds; CBC counts CPU by default.
  // What is left of them, less a reserve for turning CBC's solution into an
  // order and verifying it (kAfterSolve), is CBC's; it runs in a child
  // process that is killed if it has not stopped by then (Deadline.h),
  // since CBC checks its clock only between phases.
  Cbc_setParameter(model.model, "timeMode", "elapsed");
  double solverSeconds = left() - kAfterSolve;
  Cbc_setMaximumSeconds(model.model, std::max(0.05, 0.9 * solverSeconds));
  SolverResult solved;
  std::string bytes;
  DeadlineOutcome outcome =
      solverSeconds <= 0
          ? DeadlineOutcome::Killed
          : runWithDeadline(
                deadline - std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(kAfterSolve)),
                [&] {
                  Cbc_solve(model.model);
                  return SolverResult::of(model).encode();
                },
                bytes);
  if (outcome == DeadlineOutcome::Done && !solved.decode(bytes, model.cols))
    outcome = DeadlineOutcome::Failed;
  if (outcome != DeadlineOutcome::Done) {
    std::string why =
        outcome == DeadlineOutcome::Killed
            ? "CBC had not stopped by the time limit (it checks its clock "
              "only between phases): stopped it after " +
                  formatNumber(elapsed()) + " s"
            : "CBC failed (" + bytes + ")";
    report.notes.push_back(prefix + "; " + why + "; kept the heuristic; lower "
                           "bound " + formatNumber(analytic));
    return heuristic;
  }

  // Proven optimal includes "nothing beats the warm start" (the tree is
  // exhausted below the cutoff); the best possible value CBC reports then is
  // only its root bound, so the bound is the optimum itself.
  bool optimal = solved.optimal;
  double cbcBound = optimal ? solved.objective : solved.bestPossible;
  double best = heuristicMakespan;
  Order result = heuristic;
  const double *solution =
      solved.solution.empty() ? nullptr : solved.solution.data();
  std::string found = "no better solution";
  if (solution && solved.objective < heuristicMakespan * (1 - 1e-9)) {
    Order order = form.extract(solution);
    const Timing &t = eval.run(order);
    bool fits = t.ok;
    for (double peak : Evaluator::peaks(in, order))
      fits = fits && peak <= in.limit + memSlack(in.limit);
    if (fits && t.makespan < heuristicMakespan * (1 - 1e-12)) {
      best = t.makespan;
      result = std::move(order);
      found = "better solution " + formatNumber(best) + " (ILP objective " +
              formatNumber(solved.objective) + ")";
    }
  }
  // CBC's bound is a bound for all microbatch-ordered schedules in the full
  // model, only for the neighbourhood in the W-placement model.
  double local = std::min(cbcBound, best);
  double bound = std::min(form.full ? std::max(analytic, cbcBound) : analytic,
                          best);
  double gap = std::max(0.0, std::round(1e4 * (best - bound) / best) / 1e2);
  std::string note = prefix + "; " + mode + ": " + std::to_string(binaries) +
                     " binaries, " + std::to_string(model.rows) + " rows, " +
                     formatNumber(elapsed()) + " s" +
                     (optimal ? (form.full ? ", proven optimal"
                            : ", optimal within the neighbourhood")
               : "") +
      (warm ? ", warm-started" : ", heuristic as cutoff") + "; " + found +
                     "; best " + formatNumber(best) + ", bound " + formatNumber(bound) +
                     ", gap " + formatNumber(gap) + "%";
  if (!form.full)
    note += " (the neighbourhood's own bound: " + formatNumber(local) + ")";
  report.notes.push_back(note);
  return result;
}

#else // !ZBC_HAVE_CBC

llvm::Expected<Order> zbc::sched::zbauto::solveExact(
    const Instance &, const Order &, double,
    std::chrono::steady_clock::time_point, BuildReport &) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "zb-auto: --exact needs the CBC solver, which this zbc was built "
      "without (install libcoinor-cbc-dev and configure again; "
      "ZBC_ENABLE_CBC)");
}

#endif // ZBC_HAVE_CBC
