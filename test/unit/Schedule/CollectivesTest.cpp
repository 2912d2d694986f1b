//===- CollectivesTest.cpp - the proof of a program's collectives ---------===//
//
// Note [Collectives in the program] (Program.h) on hand-made two-rank
// programs, one stage per rank, one microbatch, with a parameter tied
// across the ranks: the program as zb-insert-collectives places its
// all-reduces verifies; one whose members disagree on a collective (bytes,
// or the order of two), whose collective and transfer wait for each other,
// whose collective sums gradients still being written, or whose partner
// never comes is refused with the error that names the place; and a
// sharded optimizer's gather is waited for by the stage's first compute.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Program.h"

#include "gtest/gtest.h"

using namespace zbc::sched;

namespace {

ProgramOp compute(Kind kind, int stage, std::vector<int> deps = {}) {
  ProgramOp op;
  op.kind = kind;
  op.stage = stage;
  op.deps = std::move(deps);
  return op;
}

ProgramOp transfer(OpClass what, Product payload, int stage, int peer,
                   std::vector<int> deps = {}) {
  ProgramOp op;
  op.what = what;
  op.payload = payload;
  op.stage = stage;
  op.peer = peer;
  op.key = boundaryKey(payload);
  op.deps = std::move(deps);
  return op;
}

ProgramOp allReduce(int stage, int64_t bytes, std::vector<int> deps) {
  ProgramOp op;
  op.what = OpClass::Collective;
  op.stage = stage;
  op.over = "tied:wte";
  op.key = "wte";
  op.bytes = bytes;
  op.deps = std::move(deps);
  return op;
}

/// Rank 0 runs stage 0, rank 1 stage 1, one microbatch; each sums the tied
/// parameter's gradient after its backward, as zb-insert-collectives does.
Program tiedProgram() {
  Program program;
  program.microbatches = 1;
  program.rankOfStage = {0, 1};
  setOneMessagePerBoundary(program);
  program.tiedHolders["tied:wte"] = {0, 1};
  program.ranks.resize(2);
  program.ranks[0].ops = {
      compute(Kind::F, 0),
      transfer(OpClass::Send, Product::Activation, 0, 1, {0}),
      transfer(OpClass::Recv, Product::InputGrad, 1, 1),
      compute(Kind::BW, 0, {0, 2}),
      allReduce(0, 64, {3}),
  };
  program.ranks[1].ops = {
      transfer(OpClass::Recv, Product::Activation, 0, 0),
      compute(Kind::F, 1, {0}),
      compute(Kind::BW, 1, {1}),
      transfer(OpClass::Send, Product::InputGrad, 1, 0, {2}),
      allReduce(1, 64, {2}),
  };
  return program;
}

std::optional<ProgramError> proof(const Program &program) {
  return verifyProgram(program);
}

bool says(const std::optional<ProgramError> &error, const std::string &text) {
  return error && error->message.find(text) != std::string::npos;
}

// Tests that the all-reduces as placed verify, and complete in the run.
TEST(Collectives, PlacedAfterTheLastBackwardVerify) {
  Program program = tiedProgram();
  std::optional<ProgramError> error = proof(program);
  EXPECT_FALSE(error) << error->message;
  ProgramRun run = runProgram(program);
  EXPECT_GE(run.completedAt[0][4], 0);
  EXPECT_GE(run.completedAt[1][4], 0);
}

// Tests that members contributing different bytes are refused at the
// collective, naming the group and both ranks.
TEST(Collectives, DifferentBytesAreRefused) {
  Program program = tiedProgram();
  program.ranks[1].ops[4].bytes = 32;
  std::optional<ProgramError> error = proof(program);
  ASSERT_TRUE(says(error, "group \"tied:wte\": the 1st collective rank"))
      << (error ? error->message : "verified");
  EXPECT_TRUE(says(error, "(wte, 64 bytes)"));
  EXPECT_TRUE(says(error, "(wte, 32 bytes)"));
  EXPECT_EQ(error->op, 4);
}

// Tests that one replica's two collectives over a group issued in the
// other order than the other member's are refused at the first that
// differs.
TEST(Collectives, ReorderedCollectivesAreRefused) {
  Program program = tiedProgram();
  for (int r = 0; r < 2; ++r) {
    ProgramOp second = program.ranks[r].ops[4];
    second.bytes = 16;
    program.ranks[r].ops.push_back(second);
  }
  ASSERT_FALSE(proof(program));
  std::swap(program.ranks[1].ops[4].bytes, program.ranks[1].ops[5].bytes);
  std::optional<ProgramError> error = proof(program);
  EXPECT_TRUE(says(error, "the 1st collective rank"))
      << (error ? error->message : "verified");
}

// Tests that a collective and a transfer that wait for each other are a
// deadlock: rank 1 sends its input gradient only once its all-reduce is
// done, which needs rank 0's, which follows the backward that needs the
// gradient.
TEST(Collectives, WaitCycleThroughACollectiveIsADeadlock) {
  Program program = tiedProgram();
  std::vector<ProgramOp> &ops = program.ranks[1].ops;
  std::swap(ops[3], ops[4]); // the all-reduce first, then the send after it
  ops[3].deps = {2};
  ops[4].deps = {2, 3};
  std::optional<ProgramError> error = proof(program);
  ASSERT_TRUE(says(error, "deadlock: ranks")) << (error ? error->message
                                                        : "verified");
  EXPECT_TRUE(says(error, "which rank 0 has not issued"));
  EXPECT_TRUE(says(error, "whose send rank 1 has not posted"));
}

// Tests that an all-reduce issued before the backward that still writes
// its gradients is refused there, and one that does not wait for it too.
TEST(Collectives, SummingGradientsStillWrittenIsRefused) {
  Program program = tiedProgram();
  std::vector<ProgramOp> &ops = program.ranks[0].ops;
  ops[4].deps = {};
  std::optional<ProgramError> unwaited = proof(program);
  EXPECT_TRUE(says(unwaited, "does not wait for BW(0,0)"))
      << (unwaited ? unwaited->message : "verified");
  std::swap(ops[3], ops[4]);
  ops[4].deps = {0, 2};
  std::optional<ProgramError> early = proof(program);
  EXPECT_TRUE(says(early, "is issued before BW(0,0)"))
      << (early ? early->message : "verified");
}

// Tests that a collective whose other member never issues it is refused
// with the count the other member issues.
TEST(Collectives, AMissingMemberIsNamed) {
  Program program = tiedProgram();
  program.ranks[1].ops.pop_back();
  std::optional<ProgramError> error = proof(program);
  EXPECT_TRUE(says(error, "is never matched: rank 1 issues only 0 "
                          "collectives over group \"tied:wte\""))
      << (error ? error->message : "verified");
}

// Tests Note [Sharded optimizer]'s gather: an all-gather of a stage's
// parameters comes before the stage's first compute, which waits for it;
// a compute before it, or one that does not wait, is refused there.
TEST(Collectives, AGatherPrecedesTheStagesComputes) {
  Program program = tiedProgram();
  program.tiedHolders.clear();
  for (int r = 0; r < 2; ++r) {
    std::vector<ProgramOp> &ops = program.ranks[r].ops;
    ops.pop_back(); // no sums here
    ProgramOp gather = allReduce(r, 128, {});
    gather.collective = CollectiveKind::AllGather;
    gather.over = "replicas";
    // At the start of the order: every index moves up by one.
    for (ProgramOp &op : ops)
      for (int &d : op.deps)
        ++d;
    ops.insert(ops.begin(), gather);
  }
  // Rank 0's F (now op 1) and rank 1's F (op 2, after its recv) wait.
  program.ranks[0].ops[1].deps.push_back(0);
  program.ranks[1].ops[2].deps.push_back(0);
  std::optional<ProgramError> error = proof(program);
  EXPECT_FALSE(error) << error->message;
  program.ranks[1].ops[2].deps.pop_back();
  std::optional<ProgramError> unwaited = proof(program);
  EXPECT_TRUE(says(unwaited, "F(1,0) does not wait for all-gather of stage "
                             "1's parameters"))
      << (unwaited ? unwaited->message : "verified");
  EXPECT_EQ(unwaited->rank, 1);
}

} // namespace
