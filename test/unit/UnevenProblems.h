//===- UnevenProblems.h - random uneven pipelines for zb-auto's tests ---===//
//
// The problems zb-auto's unit tests draw: bench/uneven_stages.py's spread
// of per-stage costs, so that what the tests check is what the benchmark
// measures.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TEST_UNIT_UNEVENPROBLEMS_H
#define ZBC_TEST_UNIT_UNEVENPROBLEMS_H

#include "zbc/Schedule/Problem.h"

#include <random>

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

} // namespace zbc::sched

#endif // ZBC_TEST_UNIT_UNEVENPROBLEMS_H
