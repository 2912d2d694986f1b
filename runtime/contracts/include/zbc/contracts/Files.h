//===- Files.h - what zbc reads and writes is checked before it is used -*- C++ -*-===//
//
// Note [Files checked first]
// Every file a run reads (data, checkpoints) must be a regular file: a
// directory, a FIFO or a device (/dev/zero) would abort the reader, block
// it forever or feed it without end, so each is refused by name before it
// is opened. Every directory a run writes into (--save, --save-init,
// --report, --trace, the checkpoints, a profile's output) is created and
// written once, a probe file made and removed, before the first step: a
// result that cannot be written is found before the work that makes it,
// not after. A directory that one run owns while it writes (zbc's -o, a
// checkpoint directory) is locked for the run's lifetime (flock: the lock
// ends with the process, so a crash leaves none behind), and a second run
// is refused, naming the first's process.
//
// Header only, plain C++17 and POSIX: `zbc` checks before it compiles or
// launches, the ranks check again at start-up (launch.sh users), both with
// the same rules and words.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_FILES_H
#define ZBC_RUNTIME_FILES_H

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zbc::rt {

/// What a non-regular file is, for messages.
inline const char *fileKindName(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO (a pipe: its reader would wait for a writer)";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Why `path` cannot be read as `what` ("the data file"), or "" if it is a
/// regular file this process may read. Sets `size` to its size.
inline std::string regularFileError(const std::string &path,
                                    const std::string &what, int64_t &size) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return "cannot read " + what + " '" + path + "': " + std::strerror(errno);
  if (!S_ISREG(info.st_mode))
    return what + " '" + path + "' is " + fileKindName(info.st_mode) +
           ", not a file";
  if (::access(path.c_str(), R_OK) != 0)
    return "cannot read " + what + " '" + path + "': " + std::strerror(errno);
  size = static_cast<int64_t>(info.st_size);
  return {};
}

/// Creates `dir` and its parents as needed (mkdir -p); an error or "".
inline std::string makeDirectories(const std::string &dir) {
  if (dir.empty())
    return "an empty directory name";
  std::string prefix;
  size_t at = 0;
  while (at != std::string::npos) {
    size_t next = dir.find('/', at + 1);
    prefix = dir.substr(0, next);
    at = next;
    if (prefix.empty() || prefix == "/")
      continue;
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return "cannot make '" + prefix + "': " + std::strerror(errno);
  }
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return "'" + dir + "' is not a directory";
  return {};
}

/// Makes `dir` (with parents) and writes and removes a probe file in it, so
/// that what goes there later can be written; `what` ("--save") names the
/// option in the message. An error or "".
inline std::string checkWritableDirectory(const std::string &dir,
                                          const std::string &what) {
  if (std::string error = makeDirectories(dir); !error.empty())
    return what + ": " + error;
  std::string probe = dir + "/.zbc-probe-" + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return what + ": cannot write into '" + dir + "': " + std::strerror(errno);
  bool wrote = ::write(fd, "z", 1) == 1;
  int writeErrno = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote)
    return what + ": cannot write into '" + dir +
           "': " + std::strerror(writeErrno);
  return {};
}

/// Checks that `path` can be written as a file (`what` names the option):
/// not empty, not a directory, its directory exists and takes a file. An
/// existing file is left as it is.
inline std::string checkWritableFile(const std::string &path,
                                     const std::string &what) {
  if (path.empty())
    return what + " needs a file name";
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return what + ": '" + path + "' is a directory; name a file";
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? std::string(".")
                                               : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return what + ": cannot write '" + path + "': its directory '" + dir +
           "' does not exist";
  return checkWritableDirectory(dir, what);
}

/// An exclusive lock on `dir` for this process's lifetime: the file
/// dir/`lockName` (".zbc.lock" for zbc's -o, ".zbc-checkpoints.lock" for a
/// job's checkpoint directory, so that the two may be one directory) holds
/// `holder` and the owner's pid, for the message another run gets. An error
/// naming the other process, or "".
inline std::string lockDirectory(const std::string &dir,
                                 const std::string &lockName,
                                 const std::string &holder) {
  std::string path = dir + "/" + lockName;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return "cannot lock '" + dir + "': " + std::strerror(errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int lockErrno = errno;
    char owner[256] = {};
    ssize_t n = ::pread(fd, owner, sizeof owner - 1, 0);
    ::close(fd);
    if (lockErrno != EWOULDBLOCK)
      return "cannot lock '" + dir + "': " + std::strerror(lockErrno);
    std::string who(owner, n > 0 ? static_cast<size_t>(n) : 0);
    while (!who.empty() && (who.back() == '\n' || who.back() == ' '))
      who.pop_back();
    return "'" + dir + "' is in use by another run (" +
           (who.empty() ? std::string("a process that holds its lock")
                        : who) +
           "); wait for it to end, or choose another directory";
  }
  std::string text = holder + ", pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, text.data(), text.size(), 0) !=
          static_cast<ssize_t>(text.size()))
    return "cannot lock '" + dir + "': " + std::strerror(errno);
  // The descriptor stays open: the lock lasts until the process ends.
  return {};
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_FILES_H
