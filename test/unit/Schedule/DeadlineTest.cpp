//===- DeadlineTest.cpp - a computation under a hard wall-clock deadline --===//
//
// runWithDeadline (passes/lib/Schedule/Builders/ZBAuto/Deadline.h), which holds zb-auto's
// exact mode to the user's --exact seconds: a child that finishes hands its
// bytes back whole (larger than a pipe's buffer too); one that does not is
// killed at the deadline, not when it would have finished; one that dies
// is reported, not mistaken for a result.
//
//===----------------------------------------------------------------------===//

#include "Builders/ZBAuto/Deadline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

using namespace zbc::sched;
using Clock = std::chrono::steady_clock;

namespace {

TEST(Deadline, AChildThatFinishesHandsBackItsBytes) {
  std::string result;
  std::string big(1 << 20, 'x'); // 16 times a pipe's buffer
  big[12345] = '\0';
  DeadlineOutcome outcome = runWithDeadline(
      Clock::now() + std::chrono::seconds(30), [&] { return big; }, result);
  EXPECT_EQ(outcome, DeadlineOutcome::Done);
  EXPECT_EQ(result, big);
}

TEST(Deadline, AChildPastTheDeadlineIsKilledThere) {
  std::string result;
  auto begin = Clock::now();
  DeadlineOutcome outcome = runWithDeadline(
      begin + std::chrono::milliseconds(200),
      [] {
        std::this_thread::sleep_for(std::chrono::seconds(60));
        return std::string("too late");
      },
      result);
  double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  EXPECT_EQ(outcome, DeadlineOutcome::Killed);
  EXPECT_TRUE(result.empty());
  EXPECT_LT(seconds, 30.0) << "waited for the child, not for the deadline";
}

TEST(Deadline, AChildThatDiesIsReported) {
  std::string result;
  DeadlineOutcome outcome = runWithDeadline(
      Clock::now() + std::chrono::seconds(30),
      []() -> std::string { std::abort(); }, result);
  EXPECT_EQ(outcome, DeadlineOutcome::Failed);
  EXPECT_NE(result.find("signal"), std::string::npos) << result;
}

} // namespace
