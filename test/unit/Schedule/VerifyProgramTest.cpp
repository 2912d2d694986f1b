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

//===----------------------------------------------------------------------===//
// An independent executor of Note [p2p semantics], for the randomized test
//===----------------------------------------------------------------------===//

namespace {

/// Runs `program` the slow, obvious way: issue whatever is ready on every
/// rank, recompute every match and completion from scratch, repeat until
/// nothing changes. Quadratic, but written from the note, not from
/// VerifyProgram.cpp.
struct Brute {
  bool terminates = false, mismatch = false;
  std::vector<int> stuckAt; // per rank: the top-level op it waits at, -1 done
  std::vector<bool> finishedIssuing;
};

Brute bruteForce(const Program &program) {
  int n = static_cast<int>(program.ranks.size());
  std::vector<std::vector<int>> order(n);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < static_cast<int>(program.ranks[r].ops.size()); ++i)
      if (program.ranks[r].ops[i].group < 0)
        order[r].push_back(i);
  std::vector<size_t> pc(n, 0);
  std::vector<std::vector<int64_t>> issuedAt(n);
  for (int r = 0; r < n; ++r)
    issuedAt[r].assign(program.ranks[r].ops.size(), -1);
  int64_t clock = 0;
  Brute result;
  auto isTransfer = [](const ProgramOp &op) {
    return op.what == OpClass::Send || op.what == OpClass::Recv;
  };
  std::vector<std::vector<char>> complete(n);
  auto recompute = [&] {
    // Matches: per ordered pair, the k-th issued send with the k-th
    // issued recv.
    std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int>>> sends,
        recvs;
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < static_cast<int>(program.ranks[r].ops.size()); ++i) {
        const ProgramOp &op = program.ranks[r].ops[i];
        if (!isTransfer(op) || issuedAt[r][i] < 0)
          continue;
        if (op.what == OpClass::Send)
          sends[{r, op.peer}].push_back({issuedAt[r][i], i});
        else
          recvs[{op.peer, r}].push_back({issuedAt[r][i], i});
      }
    std::vector<std::vector<char>> matched(n);
    for (int r = 0; r < n; ++r)
      matched[r].assign(program.ranks[r].ops.size(), 0);
    for (auto &[pair, list] : sends) {
      std::sort(list.begin(), list.end());
      std::vector<std::pair<int64_t, int>> &other = recvs[pair];
      std::sort(other.begin(), other.end());
      for (size_t k = 0; k < list.size() && k < other.size(); ++k) {
        const ProgramOp &s = program.ranks[pair.first].ops[list[k].second];
        const ProgramOp &q = program.ranks[pair.second].ops[other[k].second];
        if (s.payload != q.payload || s.stage != q.stage ||
            s.microbatch != q.microbatch || s.key != q.key || s.type != q.type)
          result.mismatch = true;
        matched[pair.first][list[k].second] = 1;
        matched[pair.second][other[k].second] = 1;
      }
    }
    for (int r = 0; r < n; ++r) {
      const std::vector<ProgramOp> &ops = program.ranks[r].ops;
      complete[r].assign(ops.size(), 0);
      // Transfers in issue order, so a stream's predecessor is decided
      // first.
      std::vector<std::pair<int64_t, int>> transfers;
      for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
        if (issuedAt[r][i] < 0)
          continue;
        if (ops[i].what == OpClass::Compute)
          complete[r][i] = 1;
        if (isTransfer(ops[i]))
          transfers.push_back({issuedAt[r][i], i});
      }
      std::sort(transfers.begin(), transfers.end());
      std::map<int, bool> streamOk; // stream: all before complete so far
      for (auto [at, i] : transfers) {
        int stream = ops[i].stream;
        bool before = stream < 0 || streamOk.count(stream) == 0 || streamOk[stream];
        complete[r][i] = matched[r][i] && before;
        if (stream >= 0)
          streamOk[stream] = complete[r][i];
      }
      for (int i = 0; i < static_cast<int>(ops.size()); ++i)
        if (ops[i].what == OpClass::Group && issuedAt[r][i] >= 0)
          complete[r][i] = std::all_of(
              ops[i].members.begin(), ops[i].members.end(),
              [&](int m) { return complete[r][m] != 0; });
    }
  };
  for (bool progress = true; progress;) {
    progress = false;
    recompute();
    for (int r = 0; r < n; ++r) {
      if (pc[r] >= order[r].size())
        continue;
      int i = order[r][pc[r]];
      const ProgramOp &op = program.ranks[r].ops[i];
      if (!std::all_of(op.deps.begin(), op.deps.end(),
                       [&](int d) { return complete[r][d] != 0; }))
        continue;
      issuedAt[r][i] = ++clock;
      for (int m : op.members)
        issuedAt[r][m] = ++clock;
      ++pc[r];
      progress = true;
    }
  }
  result.terminates = true;
  result.stuckAt.assign(n, -1);
  result.finishedIssuing.assign(n, true);
  for (int r = 0; r < n; ++r) {
    bool allDone = pc[r] == order[r].size();
    for (int i = 0; i < static_cast<int>(program.ranks[r].ops.size()); ++i)
      if (isTransfer(program.ranks[r].ops[i]) && !complete[r][i])
        allDone = false;
    if (!allDone)
      result.terminates = false;
    if (pc[r] < order[r].size()) {
      result.stuckAt[r] = order[r][pc[r]];
      result.finishedIssuing[r] = false;
    }
  }
  return result;
}

/// Removes op `k` of `rank` (a top-level op; a group goes with its
/// members), renumbering what refers past it and dropping waits for it.
void removeOp(RankProgram &rank, int k) {
  std::vector<int> gone = {k};
  for (int m : rank.ops[k].members)
    gone.push_back(m);
  std::sort(gone.begin(), gone.end());
  auto renumber = [&](int i) {
    return i - static_cast<int>(std::lower_bound(gone.begin(), gone.end(), i) -
                                gone.begin());
  };
  std::vector<ProgramOp> kept;
  for (int i = 0; i < static_cast<int>(rank.ops.size()); ++i) {
    if (std::binary_search(gone.begin(), gone.end(), i))
      continue;
    ProgramOp op = rank.ops[i];
    std::vector<int> deps;
    for (int d : op.deps)
      if (!std::binary_search(gone.begin(), gone.end(), d))
        deps.push_back(renumber(d));
    op.deps = deps;
    for (int &m : op.members)
      m = renumber(m);
    if (op.group >= 0)
      op.group = renumber(op.group);
    kept.push_back(op);
  }
  rank.ops = kept;
}

// Tests, on thousands of random small programs (every schedule's, with its
// transfers, then corrupted: two ops swapped, one dropped, a recv moved after
// its consumer, a shape changed), that the verifier never crashes and that
// its run agrees with the brute-force executor: the same verdict, and where
// it names a stuck rank, the brute force has that rank stuck there too.
TEST(VerifyProgram, AgreesWithBruteForce) {
  std::mt19937 rng(1201);
  const std::vector<ScheduleInfo> &schedules = registeredSchedules();
  int agreed = 0, deadlocks = 0, mismatches = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const ScheduleInfo &info = schedules[rng() % schedules.size()];
    Problem problem;
    problem.ranks = 1 + rng() % 3;
    problem.microbatches = 1 + rng() % 4;
    problem.virtualStages = info.placement == Placement::Linear ? 1 : 2;
    problem.stages.assign(problem.ranks * problem.virtualStages, StageCost{});
    for (StageCost &c : problem.stages) {
      c.F = 0.5 + (rng() % 8) / 4.0;
      c.B = 0.5 + (rng() % 8) / 4.0;
      c.W = 0.25 + (rng() % 8) / 4.0;
    }
    llvm::Expected<BuiltSchedule> built = buildSchedule(info.name, problem);
    ASSERT_TRUE(bool(built)) << llvm::toString(built.takeError());
    Program program = programOfTable(built->table);
    ASSERT_FALSE(bool(insertTransfers(program)));
    // Streams or none, groups as inserted.
    if (rng() % 3 == 0)
      for (RankProgram &rank : program.ranks)
        for (ProgramOp &op : rank.ops)
          op.stream = -1;

    RankProgram &rank = program.ranks[rng() % program.ranks.size()];
    int n = static_cast<int>(rank.ops.size());
    std::vector<int> top;
    for (int i = 0; i < n; ++i)
      if (rank.ops[i].group < 0)
        top.push_back(i);
    switch (trial % 5) {
    case 0: // as inserted: must verify
      break;
    case 1: { // swap two adjacent single ops if the later does not wait
      int t = rng() % top.size();
      if (t + 1 < static_cast<int>(top.size())) {
        int a = top[t], b = top[t + 1];
        if (b == a + 1 && rank.ops[a].members.empty() &&
            rank.ops[b].members.empty() &&
            !llvm::is_contained(rank.ops[b].deps, a)) {
          std::swap(rank.ops[a], rank.ops[b]);
          for (ProgramOp &op : rank.ops)
            for (int &d : op.deps)
              d = d == a ? b : d == b ? a : d;
        }
      }
      break;
    }
    case 2: // drop one op
      removeOp(rank, top[rng() % top.size()]);
      break;
    case 3: { // move a recv after its consumer: the consumer waits no more
      for (int i : top)
        if (rank.ops[i].what == OpClass::Recv) {
          for (ProgramOp &op : rank.ops)
            op.deps.erase(std::remove(op.deps.begin(), op.deps.end(), i),
                          op.deps.end());
          ProgramOp recv = rank.ops[i];
          removeOp(rank, i);
          rank.ops.push_back(recv);
          break;
        }
      break;
    }
    case 4: // change a shape
      for (ProgramOp &op : rank.ops)
        if (op.what == OpClass::Recv) {
          op.type = "tensor<3xf32>";
          break;
        }
      break;
    }

    std::optional<ProgramError> verdict = verifyProgram(program); // no crash
    if (trial % 5 == 0) {
      EXPECT_FALSE(verdict) << info.name << ": " << verdict->message;
    }
    ProgramRun run = runProgram(program);
    Brute brute = bruteForce(program);
    bool runOk = !run.error;
    ASSERT_EQ(runOk, brute.terminates && !brute.mismatch)
        << "trial " << trial << " " << info.name << ": "
        << (run.error ? run.error->message : "verified");
    if (!run.error) {
      // A run that ends is proven by the static checks too, or refused by
      // them (a corrupted order); never the other way round.
      ++agreed;
      continue;
    }
    EXPECT_TRUE(verdict) << "trial " << trial;
    if (brute.mismatch) {
      ++mismatches;
      EXPECT_NE(run.error->message.find("disagree"), std::string::npos);
      continue;
    }
    ++deadlocks;
    int r = run.error->rank;
    EXPECT_TRUE(!brute.finishedIssuing[r] || brute.stuckAt[r] < 0)
        << "trial " << trial;
    // A deadlock names, for each rank of its cycle, the op it waits at.
    for (const ProgramNote &note : run.error->notes) {
      if (!brute.finishedIssuing[note.rank]) {
        EXPECT_EQ(note.op, brute.stuckAt[note.rank]) << "trial " << trial;
      }
    }
  }
  EXPECT_GT(agreed, 600);
  EXPECT_GT(deadlocks, 100);
  EXPECT_GT(mismatches, 100);
}

} // namespace
