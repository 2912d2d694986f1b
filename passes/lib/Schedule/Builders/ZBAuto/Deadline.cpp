//===- Deadline.cpp - a computation under a hard wall-clock deadline ------===//
//
// Deadline.h: fork, a pipe, poll until the deadline, SIGKILL after it.
//
//===----------------------------------------------------------------------===//

#include "Builders/ZBAuto/Deadline.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace zbc::sched;

namespace {

/// Writes all of `bytes`; false if the pipe broke.
bool writeAll(int fd, const std::string &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

} // namespace

DeadlineOutcome
zbc::sched::runWithDeadline(std::chrono::steady_clock::time_point deadline,
                            const std::function<std::string()> &compute,
                            std::string &result) {
  result.clear();
  int fds[2];
  if (::pipe(fds) != 0) {
    result = std::string("pipe: ") + std::strerror(errno);
    return DeadlineOutcome::Failed;
  }
  pid_t child = ::fork();
  if (child < 0) {
    result = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return DeadlineOutcome::Failed;
  }
  if (child == 0) {
    ::close(fds[0]);
    bool written = writeAll(fds[1], compute());
    ::close(fds[1]);
    ::_exit(written ? 0 : 1); // no atexit handlers, no return into the caller
  }
  ::close(fds[1]);
  bool killed = false;
  char buffer[1 << 16];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      ::kill(child, SIGKILL);
      killed = true;
      break;
    }
    pollfd waiting{fds[0], POLLIN, 0};
    int ready = ::poll(&waiting, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0)
      continue; // the deadline, checked above
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // end of the child's output
    result.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) {
    result.clear();
    return DeadlineOutcome::Killed;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    result = WIFSIGNALED(status)
                 ? "the solver's process died (signal " +
                       std::to_string(WTERMSIG(status)) + ")"
                 : "the solver's process failed";
    return DeadlineOutcome::Failed;
  }
  return DeadlineOutcome::Done;
}
