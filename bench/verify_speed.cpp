//===- verify_speed.cpp - how long p2p insertion and the proof take -------===//
//
// Times insertTransfers (zb-insert-p2p's decisions, including the run it
// places the send waits on) and verifyProgram (zb-verify-schedule's proof:
// order, dependences, the abstract execution) on large programs, median of
// several runs, in one process. The schedules are built as
// zbc-bench-schedules builds them (the Zero Bubble paper's 28.3B costs).
// Printed as a markdown table.
//
//   zbc-bench-verify [RUNS] [--smoke]
//
// --smoke: one run of each case at p = 4, m = 8 (ctest's bench family: a
// check that it runs, not a timing).
//
//===----------------------------------------------------------------------===//

#include "BenchArgs.h"
#include "zbc/Schedule/Program.h"
#include "zbc/Schedule/Registry.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace zbc::sched;

static Problem paperProblem(int p, int m, int v) {
  Problem problem;
  problem.ranks = p;
  problem.microbatches = m;
  problem.virtualStages = v;
  problem.comm = 0.408;
  StageCost cost;
  cost.F = 10.419 / v;
  cost.B = 10.207 / v;
  cost.W = 7.715 / v;
  problem.stages.assign(p * v, cost);
  return problem;
}

static double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

int main(int argc, char **argv) {
  bool smoke = zbc::bench::takeFlag(argc, argv, "--smoke");
  std::vector<int64_t> args = zbc::bench::positionalCounts(
      argc, argv,
      "usage: zbc-bench-verify [RUNS] [--smoke]\n"
      "  times transfer insertion and the proof on large programs (median "
      "of RUNS, default 5;\n"
      "  --smoke: one run of each at p = 4, m = 8, a check that it runs)\n",
      1);
  int runs = smoke ? 1 : args.empty() ? 5 : static_cast<int>(args[0]);
  struct Case {
    const char *schedule;
    int p, m, v;
  } cases[] = {{"zb-h1", 64, 1024, 1},
               {"1f1b", 64, 1024, 1},
               {"zb-auto", 64, 1024, 1},
               {"zb-v", 32, 512, 2},
               {"interleaved-1f1b", 32, 512, 2}};
  std::printf("| schedule | p | m | ops with transfers | insert seconds | "
              "verify seconds |\n|---|---|---|---|---|---|\n");
  for (Case c : cases) {
    if (smoke)
      c.p = 4, c.m = 8;
    llvm::Expected<BuiltSchedule> built =
        buildSchedule(c.schedule, paperProblem(c.p, c.m, c.v));
    if (!built) {
      std::fprintf(stderr, "error: %s\n",
                   llvm::toString(built.takeError()).c_str());
      return 1;
    }
    std::vector<double> insert, verify;
    size_t ops = 0;
    for (int i = 0; i < runs; ++i) {
      Program program = programOfTable(built->table);
      auto t0 = std::chrono::steady_clock::now();
      if (llvm::Error e = insertTransfers(program)) {
        std::fprintf(stderr, "error: %s\n", llvm::toString(std::move(e)).c_str());
        return 1;
      }
      auto t1 = std::chrono::steady_clock::now();
      std::optional<ProgramError> error = verifyProgram(program);
      auto t2 = std::chrono::steady_clock::now();
      if (error) {
        std::fprintf(stderr, "error: %s\n", error->message.c_str());
        return 1;
      }
      ops = 0;
      for (const RankProgram &rank : program.ranks)
        ops += rank.ops.size();
      insert.push_back(std::chrono::duration<double>(t1 - t0).count());
      verify.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    std::printf("| %s | %d | %d | %zu | %.3f | %.3f |\n", c.schedule, c.p, c.m,
                ops, median(insert), median(verify));
  }
  return 0;
}
