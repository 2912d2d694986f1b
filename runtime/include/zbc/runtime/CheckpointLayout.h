//===- CheckpointLayout.h - where checkpoints lie on disk --------*- C++ -*-===//
//
// The layout of Note [Checkpoints] (runtime/src/Checkpoint.h) that others
// read too: `zbc run` names the checkpoint to resume from after a failure.
// The checkpoint after N steps is ROOT/step-N; it is complete once its
// manifest.json exists (written last). Header only, plain C++17 and POSIX.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CHECKPOINTLAYOUT_H
#define ZBC_RUNTIME_CHECKPOINTLAYOUT_H

#include <cstdint>
#include <cstdio>
#include <string>

#include <dirent.h>
#include <sys/stat.h>

namespace zbc::rt {

inline std::string checkpointDirectory(const std::string &root,
                                       int64_t stepsDone) {
  return root + "/step-" + std::to_string(stepsDone);
}

inline std::string checkpointManifest(const std::string &dir) {
  return dir + "/manifest.json";
}

inline bool isRegularFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

/// The latest complete checkpoint under `dir` (`dir` itself if it has a
/// manifest), or "" if there is none.
inline std::string latestCheckpoint(const std::string &dir) {
  if (isRegularFile(checkpointManifest(dir)))
    return dir;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return {};
  long long best = -1;
  while (dirent *e = ::readdir(d)) {
    long long step = -1;
    char tail = 0;
    if (std::sscanf(e->d_name, "step-%lld%c", &step, &tail) == 1 &&
        step > best &&
        isRegularFile(checkpointManifest(dir + "/" + e->d_name)))
      best = step;
  }
  ::closedir(d);
  return best < 0 ? std::string() : checkpointDirectory(dir, best);
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_CHECKPOINTLAYOUT_H
