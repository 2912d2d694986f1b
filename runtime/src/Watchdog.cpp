//===- Watchdog.cpp - no rank waits forever, and every stop is told -------===//
//
// Note [Lost ranks] (Watchdog.h).
//
//===----------------------------------------------------------------------===//

#include "Watchdog.h"

#include "Rank.h"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace zbc::rt {
namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What the SIGTERM handler reads: set once at start-up.
zbc_rt_rank *gRank = nullptr;
Watchdog *gWatchdog = nullptr;
char gStatusPath[4096] = {};

/// Appends to a fixed buffer with no allocation (async-signal-safe).
struct Message {
  char text[1024] = {}; // stays terminated: add stops one short
  size_t size = 0;
  void add(const char *s) {
    while (s && *s && size + 1 < sizeof text)
      text[size++] = *s++;
  }
  void add(int64_t v) {
    char digits[24];
    int n = 0;
    bool negative = v < 0;
    uint64_t u = negative ? uint64_t(-(v + 1)) + 1 : uint64_t(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (negative)
      add("-");
    while (n)
      if (size + 1 < sizeof text)
        text[size++] = digits[--n];
      else
        --n;
  }
};

void writeAll(int fd, const char *text, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, text, size);
    if (n <= 0)
      return;
    text += n;
    size -= static_cast<size_t>(n);
  }
}

void writeStatus(const char *text, size_t size) {
  if (!gStatusPath[0])
    return;
  int fd = ::open(gStatusPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return;
  writeAll(fd, text, size);
  ::close(fd);
}

/// Where the rank is: " in step N while waiting for OP (with rank P)".
void describePlace(Message &m, const zbc_rt_rank *rank, int32_t waitingOp,
                   const char *waitingWhat, bool waiting) {
  const zbc_rt_program &p = *rank->program;
  m.add(rank->evaluating ? " in the evaluation after step " : " in step ");
  m.add(rank->step + 1);
  int32_t op = waiting ? waitingOp : rank->op;
  if (waiting && op < 0 && waitingWhat) {
    m.add(" while waiting in ");
    m.add(waitingWhat);
  } else if (op >= 0 && op < p.op_count) {
    m.add(waiting ? " while waiting for " : " while running ");
    m.add(p.ops[op].name);
    if (p.ops[op].peer >= 0) {
      m.add(" (with rank ");
      m.add(static_cast<int64_t>(p.ops[op].peer));
      m.add(")");
    }
  }
}

/// Says, async-signal-safely, that `by` stopped the rank where it was.
void tellStop(const char *by) {
  Watchdog::Snapshot s = gWatchdog->snapshot();
  Message place;
  describePlace(place, gRank, s.op, s.what, s.waiting);
  place.add(": another rank of the job failed or was lost\n");
  Message m;
  m.add("zbc rank ");
  m.add(static_cast<int64_t>(gRank->program->rank));
  m.add(": error: stopped by ");
  m.add(by);
  m.add(place.text);
  writeAll(2, m.text, m.size);
  Message status;
  status.add("stopped: by ");
  status.add(by);
  status.add(place.text);
  writeStatus(status.text, status.size);
}

void onTerminate(int) {
  tellStop("the launcher");
  ::_exit(1);
}

/// MPI may end a rank itself when a peer's connection breaks (exit() from
/// inside a call); unless the rank said how it ended, say where it was.
std::atomic<bool> gEndTold{false};
void onExit() {
  if (!gEndTold.exchange(true))
    tellStop("MPI");
}

} // namespace

Watchdog::Snapshot Watchdog::snapshot() const {
  Snapshot s;
  s.sinceNs = waitingSinceNs_.load();
  s.waiting = s.sinceNs != 0;
  s.op = waitingOp_.load();
  s.what = waitingWhat_.load();
  return s;
}

void Watchdog::start(zbc_rt_rank *rank, int jobRank) {
  rank_ = rank;
  gRank = rank;
  gWatchdog = this;
  const std::string &dir = rank->options.statusDir;
  if (!dir.empty()) {
    std::string path = fmt::format("{}/rank{}.status", dir, jobRank);
    if (path.size() < sizeof gStatusPath)
      std::memcpy(gStatusPath, path.c_str(), path.size() + 1);
  }
  writeStatus("running\n", 8);
  std::atexit(onExit);
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = onTerminate;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  thread_ = std::thread([this] { run(); });
}

void Watchdog::stop() {
  stopping_ = true;
  if (thread_.joinable())
    thread_.join();
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
}

void Watchdog::enter(const char *what) {
  waitingOp_ = rank_ ? rank_->op : -1;
  waitingWhat_ = what;
  waitingSinceNs_ = nowNs();
}

void Watchdog::leave() { waitingSinceNs_ = 0; }

void Watchdog::status(const std::string &text) {
  gEndTold = true; // the rank tells how it ends: onExit has nothing to add
  writeStatus(text.data(), text.size());
}

void Watchdog::run() {
  auto limitNs = static_cast<int64_t>(rank_->options.timeoutSeconds * 1e9);
  while (!stopping_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Snapshot s = snapshot();
    if (!s.waiting || nowNs() - s.sinceNs < limitNs)
      continue;
    const zbc_rt_program &p = *rank_->program;
    Message place;
    describePlace(place, rank_, s.op, s.what, true);
    std::string who =
        s.op >= 0 && p.ops[s.op].peer >= 0
            ? fmt::format("rank {} is lost or hung", p.ops[s.op].peer)
            : std::string("a peer is lost or hung");
    std::string message = fmt::format(
        "rank {}: waited {:.0f} s{}: {} (--timeout {:g})", p.rank,
        double(nowNs() - s.sinceNs) / 1e9, std::string(place.text, place.size),
        who, rank_->options.timeoutSeconds);
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, message);
    std::fflush(stderr);
    status("failed: " + message + "\n");
    ::_exit(1);
  }
}

} // namespace zbc::rt
