//===- MappedFile.h - a file mapped read-only for as long as it is used -*- C++ -*-===//
//
// Large inputs (a checkpoint's shards for --init, a token stream for
// --data) are mapped, not read whole: a rank touches only the pages of what
// it uses, and the page cache is shared by the ranks of one host.
//
// Header only, plain C++17 and POSIX: the runtime, the reference trainer
// and `zbc run` share it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_MAPPEDFILE_H
#define ZBC_RUNTIME_MAPPEDFILE_H

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zbc::rt {

/// A file mapped read-only, unmapped when this is destroyed. Neither
/// copied nor moved: hold it where it is used, or behind a pointer.
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile() {
    if (data_)
      ::munmap(data_, static_cast<size_t>(size_));
  }

  /// Maps `path` (an empty file maps to no bytes); returns what failed or "".
  std::string map(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return "cannot read '" + path + "': " + std::strerror(errno);
    struct stat st {};
    std::string error;
    if (::fstat(fd, &st) != 0)
      error = "cannot read '" + path + "': " + std::strerror(errno);
    size_ = st.st_size;
    if (error.empty() && size_ > 0) {
      void *p = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ,
                       MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED)
        error = "cannot map '" + path + "': " + std::strerror(errno);
      else
        data_ = static_cast<char *>(p);
    }
    ::close(fd);
    return error;
  }

  const char *data() const { return data_; }
  int64_t size() const { return size_; }

private:
  char *data_ = nullptr;
  int64_t size_ = 0;
};

} // namespace zbc::rt

#endif // ZBC_RUNTIME_MAPPEDFILE_H
