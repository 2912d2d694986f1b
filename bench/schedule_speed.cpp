//===- schedule_speed.cpp - how long zbc's schedulers take ----------------===//
//
// Times zbc::sched::buildSchedule (build + verify + simulate, everything a
// user waits for) on large problems, median of several runs, in one process
// so process start-up and output formatting are not counted. Costs are the
// Zero Bubble paper's 28.3B row (p = 32) scaled to the problem; for the V
// schedules, per-chunk costs are halved. Printed as a markdown table.
//
//   zbc-bench-schedules [RUNS] [--smoke]
//
// --smoke: one run of each case at p = 4, m = 8 (ctest's bench family: a
// check that every schedule still builds here, not a timing).
//
//===----------------------------------------------------------------------===//

#include "BenchArgs.h"
#include "zbc/Schedule/Registry.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace zbc::sched;

static Problem paperProblem(int p, int m, int v) {
  // 28.3B: T_F, T_B, T_W, T_comm in ms; M_B = 34h + 5a*1024, M_W = 32h.
  const double h = 6144, a = 48;
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.virtualStages = v;
  problem.comm = 0.408;
  StageCost cost;
  cost.F = 10.419 / v;
  cost.B = 10.207 / v;
  cost.W = 7.715 / v;
  cost.memB = (34 * h + 5 * a * 1024) / v;
  cost.memW = 32 * h / v;
  problem.stages.assign(p * v, cost);
  return problem;
}

int main(int argc, char **argv) {
  bool smoke = zbc::bench::takeFlag(argc, argv, "--smoke");
  std::vector<int64_t> args = zbc::bench::positionalCounts(
      argc, argv,
      "usage: zbc-bench-schedules [RUNS] [--smoke]\n"
      "  times buildSchedule on large problems (median of RUNS, default 5;\n"
      "  --smoke: one run of each at p = 4, m = 8, a check that it runs)\n",
      1);
  int runs = smoke ? 1 : args.empty() ? 5 : static_cast<int>(args[0]);
  struct Case {
    const char *schedule;
    int p, m, v;
  } cases[] = {{"zb-auto", 32, 256, 1}, {"zb-auto", 64, 1024, 1},
               {"zb-v", 32, 256, 2},    {"zb-v", 256, 2048, 2},
               {"v-half", 32, 256, 2},
               {"v-min", 32, 256, 2},   {"zb-h1", 64, 1024, 1},
               {"1f1b", 64, 1024, 1}};
  std::printf("| schedule | p | m | median seconds (of %d) | bubble rate |\n",
              runs);
  std::printf("|---|---|---|---|---|\n");
  for (Case c : cases) {
    if (smoke)
      c.p = 4, c.m = 8;
    Problem problem = paperProblem(c.p, c.m, c.v);
    std::vector<double> seconds;
    double bubble = 0;
    for (int i = 0; i < runs; ++i) {
      auto start = std::chrono::steady_clock::now();
      llvm::Expected<BuiltSchedule> built = buildSchedule(c.schedule, problem);
      auto end = std::chrono::steady_clock::now();
      if (!built) {
        std::fprintf(stderr, "error: %s\n",
                     llvm::toString(built.takeError()).c_str());
        return 1;
      }
      bubble = built->sim.bubbleRate;
      seconds.push_back(std::chrono::duration<double>(end - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    std::printf("| %s | %d | %d | %.3f | %.4f |\n", c.schedule, c.p, c.m,
                seconds[seconds.size() / 2], bubble);
  }
  return 0;
}
