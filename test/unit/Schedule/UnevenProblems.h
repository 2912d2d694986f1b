//===- UnevenProblems.h - uneven pipelines for zb-auto's tests ---------===//
//
// The problems zb-auto's unit tests draw (bench/uneven_stages.py's spread
// of per-stage costs) or pin (one of its inputs), so that what the tests
// check is what the benchmark measures.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TEST_UNIT_UNEVENPROBLEMS_H
#define ZBC_TEST_UNIT_UNEVENPROBLEMS_H

#include "zbc/Schedule/Problem.h"

#include <random>
#include <vector>

namespace zbc::sched {

/// p stages with F, B in [1, 2], W in [0.5, 1], M_B in [1, 2], M_W =
/// M_B / 2 or, with `heavyW`, 1.5 M_B; comm `comm`; no limit.
inline Problem randomProblem(int p, int m, std::mt19937 &rng,
                             bool heavyW = false, double comm = 0.05) {
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.comm = comm;
  for (int s = 0; s < p; ++s) {
    StageCost c;
    c.F = unit(rng);
    c.B = unit(rng);
    c.W = unit(rng) / 2;
    c.memB = unit(rng);
    c.memW = heavyW ? 1.5 * c.memB : c.memB / 2;
    problem.stages.push_back(c);
  }
  return problem;
}

/// An input of bench/uneven_stages.py pinned in a test: its per-stage F,
/// B, W and M_B (M_W = M_B / 2), comm 0.05, and its limit.
inline Problem pinnedProblem(int m, const std::vector<double> &F,
                             const std::vector<double> &B,
                             const std::vector<double> &W,
                             const std::vector<double> &MB, double limit) {
  Problem problem;
  problem.ranks = static_cast<int>(F.size());
  problem.microbatches = m;
  problem.comm = 0.05;
  for (size_t s = 0; s < F.size(); ++s)
    problem.stages.push_back({F[s], B[s], W[s], MB[s], MB[s] / 2});
  problem.activationBudget = limit;
  return problem;
}

} // namespace zbc::sched

#endif // ZBC_TEST_UNIT_UNEVENPROBLEMS_H
