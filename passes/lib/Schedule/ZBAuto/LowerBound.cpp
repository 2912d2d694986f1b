//===- LowerBound.cpp - a lower bound on any zb-auto schedule ---------------===//
//
// The bound that stops zb-auto's search when it is met, gives the gap in
// its report, and is the exact mode's floor (ZBAuto.h, lowerBound). Each
// term is a fact every schedule obeys, whatever its order, so the bound is
// valid for schedules zb-auto does not build too.
//
//===----------------------------------------------------------------------===//

#include "ZBAuto.h"

#include <algorithm>
#include <cmath>

double zbc::sched::zbauto::lowerBound(const Instance &in) {
  const int p = in.p, m = in.m;
  const double c = in.comm, limit = in.limit + memSlack(in.limit);
  // first[r]: when rank r's first F starts (nothing delays the F chain).
  std::vector<double> first(p, 0);
  for (int r = 1; r < p; ++r)
    first[r] = first[r - 1] + in.cost[r - 1].F + c;
  double bound = 0;
  for (int r = 0; r < p; ++r) {
    double work = m * (in.cost[r].F + in.cost[r].B + in.cost[r].W);
    // Warm-up: B(r, 0) starts no earlier than the F chain down and the B
    // chain back; before it the rank runs at most `fit` F's.
    double firstB = first[p - 1] + in.cost[p - 1].F;
    for (int k = r + 1; k < p; ++k)
      firstB += in.cost[k].B + c;
    double fit = in.cost[r].memB > 0 ? std::min<double>(m, std::floor(limit / in.cost[r].memB))
                              : m;
    double idle = std::max(0.0, firstB - first[r] - fit * in.cost[r].F);
    // Cool-down: from the end of F(r, m-1) to the start of B(r, m-1) the
    // microbatch goes down and back up; the rank can only run the B's and
    // W's of what it holds then (limit - M_B of it).
    if (fit < m) {
      double roundTrip = 0;
      for (int k = r + 1; k < p; ++k)
        roundTrip += in.cost[k].F + in.cost[k].B + 2 * c;
      double perMem = 0;
      if (in.cost[r].memB > 0 && in.cost[r].memW > 0)
        perMem = std::max((in.cost[r].B + in.cost[r].W) / in.cost[r].memB,
                          in.cost[r].W / in.cost[r].memW);
      double held = perMem > 0 ? std::min((limit - in.cost[r].memB) * perMem,
                                          (m - 1) * (in.cost[r].B + in.cost[r].W))
                               : (m - 1) * (in.cost[r].B + in.cost[r].W);
      idle += std::max(0.0, roundTrip - held);
    }
    bound = std::max(bound, work + idle);
    // Slots: at most `fit` microbatches are between their F and their B on
    // rank r at once, and each stays there for its round trip, so the last B
    // ends ceil(m / fit) round trips after the first F; one W follows.
    if (fit >= 1) {
      double stay = in.cost[r].F + in.cost[r].B;
      for (int k = r + 1; k < p; ++k)
        stay += in.cost[k].F + in.cost[k].B + 2 * c;
      bound = std::max(bound, std::ceil(m / fit) * stay + in.cost[r].W);
    }
    // The last B of rank r ends after all of its F's and B's; then it
    // travels up, and each rank s above still runs a W after it.
    double t = first[r] + m * (in.cost[r].F + in.cost[r].B);
    for (int s = r; s >= 0; --s) {
      if (s < r)
        t += c + in.cost[s].B;
      bound = std::max(bound, t + in.cost[s].W - first[s]);
    }
  }
  return bound;
}
