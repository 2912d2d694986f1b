//===- CopyTest.cpp - the copies of offloaded stashes on the CPU backend --===//
//
// Note [Offload in the IR] on the ranks: the CPU's copy queue runs copies on
// its own thread in issue order and returns from a wait only when the copy
// is done; the ledger refuses what the proof rules out (a stash read before
// its reload's wait, bytes an offload still reads written over) and counts
// the host arena's bytes apart from the device's.
//
//===----------------------------------------------------------------------===//

#include "Ledger.h"
#include "cpu/CopyQueue.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

using namespace zbc::rt;

namespace {

TEST(CopyQueue, RunsCopiesInIssueOrderAndWaitsForEach) {
  cpu::CopyQueue queue;
  queue.start(3);
  std::vector<char> a(1 << 20), b(1 << 20), c(1 << 20);
  std::iota(a.begin(), a.end(), 0);
  // The second copy reads what the first writes: only issue order makes c
  // equal to a.
  Device::CopyPiece first{b.data(), a.data(), static_cast<int64_t>(a.size())};
  Device::CopyPiece second{c.data(), b.data(), static_cast<int64_t>(b.size())};
  EXPECT_EQ(queue.issue(0, &first, 1), "");
  EXPECT_EQ(queue.issue(1, &second, 1), "");
  EXPECT_EQ(queue.wait(1), "");
  EXPECT_EQ(c, a);
  EXPECT_EQ(queue.wait(0), "");
  queue.drain();
  // When each ran, for the timeline: the second after the first.
  double began[2] = {-1, -1}, ended[2] = {-1, -1};
  queue.interval(0, began[0], ended[0]);
  queue.interval(1, began[1], ended[1]);
  EXPECT_GT(began[0], 0);
  EXPECT_LE(began[0], ended[0]);
  EXPECT_LE(ended[0], began[1]);
  EXPECT_LE(began[1], ended[1]);
}

TEST(CopyQueue, RefusesAWaitForACopyNotIssuedAndACopyIssuedTwice) {
  cpu::CopyQueue queue;
  queue.start(2);
  char from[8] = "abcdefg", to[8] = {};
  Device::CopyPiece piece{to, from, 8};
  EXPECT_NE(queue.wait(0).find("not issued or was waited for already"),
            std::string::npos);
  EXPECT_EQ(queue.issue(0, &piece, 1), "");
  EXPECT_NE(queue.issue(0, &piece, 1).find("issued again before its wait"),
            std::string::npos);
  EXPECT_EQ(queue.wait(0), "");
  EXPECT_STREQ(to, "abcdefg");
  EXPECT_NE(queue.wait(0).find("waited for already"), std::string::npos);
}

/// A rank's stash F.0 of 256 bytes, its host copy and its reloaded buffer,
/// and a fourth buffer the plan puts over F.0 once the offload is done.
struct OffloadProgram {
  zbc_rt_buffer buffers[4] = {
      {"F.0 of stage 0 mb 0", 0, 256, ZBC_RT_YIELDED, ZBC_RT_F32},
      {"host F.0 of stage 0 mb 0", 0, 256, ZBC_RT_HOST, ZBC_RT_F32},
      {"reloaded.F.0 of stage 0 mb 0", 256, 256, ZBC_RT_RELOADED, ZBC_RT_F32},
      {"F.0 of stage 0 mb 1", 0, 256, ZBC_RT_YIELDED, ZBC_RT_F32},
  };
  zbc_rt_program program{};
  OffloadProgram() {
    program.arena_bytes = 512;
    program.host_arena_bytes = 256;
    program.buffers = buffers;
    program.buffer_count = 4;
    program.position_count = 6;
    program.max_kernel_calls = 4;
  }
  enum { kStash, kHost, kReloaded, kNext };
};

TEST(Ledger, CountsAStashOnTheHostFromItsOffloadUntilItsReloadIsWaitedFor) {
  OffloadProgram p;
  Ledger ledger;
  ledger.init(p.program);
  ledger.beginStep();
  ledger.beginOp(0); // F
  EXPECT_EQ(ledger.write(OffloadProgram::kStash, Ledger::Writer::Kernel), "");
  ledger.tick();
  ledger.endOp();
  ledger.beginOp(1); // the offload
  EXPECT_EQ(ledger.copyStarted(OffloadProgram::kStash, OffloadProgram::kHost),
            "");
  // Bytes the offload still reads are not the plan's to give away.
  ledger.beginOp(2);
  EXPECT_NE(ledger.write(OffloadProgram::kNext, Ledger::Writer::Kernel)
                .find("that the copy of F.0 of stage 0 mb 0 still reads"),
            std::string::npos);
  ledger.copyCompleted(OffloadProgram::kStash, OffloadProgram::kHost);
  ledger.beginOp(3); // the reload
  EXPECT_EQ(ledger.copyStarted(OffloadProgram::kHost, OffloadProgram::kReloaded),
            "");
  // A backward that did not wait for the reload reads garbage.
  ledger.beginOp(4);
  EXPECT_NE(ledger.read(OffloadProgram::kReloaded)
                .find("before its copy completed"),
            std::string::npos);
  ledger.copyCompleted(OffloadProgram::kHost, OffloadProgram::kReloaded);
  ledger.beginOp(5);
  EXPECT_EQ(ledger.read(OffloadProgram::kReloaded), "");
  ledger.tick();
  ledger.endOp();
  // Device: F.0 from after F to the offload's wait (op 3), the reloaded
  // stash from the reload to its reader; never both at once.
  EXPECT_EQ(ledger.endStep(), 256);
  // Host: from the offload (op 1) until the reload's wait (op 5).
  EXPECT_EQ(ledger.hostPeak(), 256);
}

} // namespace
