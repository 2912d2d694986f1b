//===- CheckpointLayout.h - where checkpoints lie on disk --------*- C++ -*-===//
//
// The layout of Note [Checkpoints] (runtime/src/Checkpoint.h) that others
// read too: `zbc run` names the checkpoint to resume from after a failure.
// The checkpoint after N steps is ROOT/step-N; it is complete once its
// manifest.json exists (written last, in a staging directory renamed into
// place as a whole). Header only, plain C++17 and POSIX.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CHECKPOINTLAYOUT_H
#define ZBC_RUNTIME_CHECKPOINTLAYOUT_H

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>

namespace zbc::rt {

/// The names of a parameter's optimizer state in a checkpoint file,
/// PyTorch's: NAME.SUFFIX for each suffix of the optimizer ("sgd":
/// momentum_buffer; "adamw": exp_avg, exp_avg_sq), beside NAME itself.
inline std::vector<std::string>
optimizerStateSuffixes(const std::string &optimizer) {
  if (optimizer == "adamw")
    return {"exp_avg", "exp_avg_sq"};
  return {"momentum_buffer"};
}

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

/// Where the checkpoint after N steps is written before it is renamed into
/// place as a whole (Note [Checkpoints]): hidden, never read by a resume.
inline std::string checkpointStagingDirectory(const std::string &root,
                                              int64_t stepsDone) {
  return root + "/.step-" + std::to_string(stepsDone) + ".writing";
}
/// Where an older step-N is moved while the new one takes its name.
inline std::string checkpointReplacedDirectory(const std::string &root,
                                               int64_t stepsDone) {
  return root + "/.step-" + std::to_string(stepsDone) + ".replaced";
}

/// A complete checkpoint under a root: its step and directory.
struct CheckpointEntry {
  int64_t step = 0;
  std::string dir;
};

/// The complete checkpoints (those with a manifest) `dir` names: `dir`
/// itself if it has a manifest, else every step-N under it, the latest
/// first. Empty if there is none.
inline std::vector<CheckpointEntry> checkpointsIn(const std::string &dir) {
  if (isRegularFile(checkpointManifest(dir)))
    return {{-1, dir}};
  std::vector<CheckpointEntry> found;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return found;
  while (dirent *e = ::readdir(d)) {
    long long step = -1;
    char tail = 0;
    std::string name = e->d_name;
    if (std::sscanf(name.c_str(), "step-%lld%c", &step, &tail) == 1 &&
        step >= 0 && name == "step-" + std::to_string(step) &&
        isRegularFile(checkpointManifest(dir + "/" + name)))
      found.push_back({step, checkpointDirectory(dir, step)});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(),
            [](const CheckpointEntry &a, const CheckpointEntry &b) {
              return a.step > b.step;
            });
  return found;
}

/// The latest complete checkpoint under `dir` (`dir` itself if it has a
/// manifest), or "" if there is none.
inline std::string latestCheckpoint(const std::string &dir) {
  std::vector<CheckpointEntry> found = checkpointsIn(dir);
  return found.empty() ? std::string() : found.front().dir;
}

/// The same directory, however named (realpath; `path` as given if it
/// cannot be resolved).
inline std::string canonicalPath(const std::string &path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) ? std::string(resolved) : path;
}

/// Note [One history per checkpoint directory]
/// A checkpoint directory holds one training history: a run writes its
/// checkpoints into `root` only if every complete checkpoint already there
/// is the one it resumes from or one before it. A fresh run into a
/// directory of another run's checkpoints, or a run resuming from an
/// earlier step (or from elsewhere) that would write over later ones, is
/// refused before its first step: nothing is lost, and "the latest
/// checkpoint under root" (what a failed run names, what --resume root
/// picks) is always this history's. Checkpoints that a resume refused as
/// damaged (`refused`) do not count: they are rewritten. `resumedFrom` is
/// the checkpoint the run starts from ("" for a fresh run), after
/// `startStep` steps. `zbc run` checks this before it launches (without
/// `refused`), the ranks again once they chose what to resume from.
inline std::string checkpointRootConflict(
    const std::string &root, const std::string &resumedFrom, int64_t startStep,
    const std::vector<std::string> &refused = {}) {
  bool ownHistory = false;
  if (!resumedFrom.empty()) {
    std::string parent = resumedFrom.substr(0, resumedFrom.rfind('/'));
    ownHistory = resumedFrom.find('/') != std::string::npos &&
                 canonicalPath(parent) == canonicalPath(root);
  }
  std::string later;
  std::string latest;
  for (const CheckpointEntry &c : checkpointsIn(root)) {
    if (c.step < 0)
      return "the checkpoint directory '" + root +
             "' is itself a checkpoint (it has a manifest.json): name the "
             "directory above it";
    bool skipped = false;
    for (const std::string &r : refused)
      skipped |= canonicalPath(r) == canonicalPath(c.dir);
    if (skipped || (ownHistory && c.step <= startStep))
      continue;
    if (latest.empty())
      latest = c.dir;
    later = "step-" + std::to_string(c.step) + (later.empty() ? "" : ", ") +
            later;
  }
  if (latest.empty())
    return {};
  if (ownHistory)
    return "resuming from '" + resumedFrom + "' would write over the later "
           "checkpoints of '" + root + "' (" + later + ") as this run "
           "reaches their steps: move them away first, or write this run's "
           "checkpoints to another --checkpoint-dir";
  return "'" + root + "' already holds the checkpoints of another run (the "
         "latest: '" + latest + "')" +
         (resumedFrom.empty()
              ? "; --resume " + root + " continues it"
              : "; this run resumes from '" + resumedFrom + "'") +
         ". Write this run's checkpoints to another --checkpoint-dir (or "
         "-o), or remove them";
}

} // namespace zbc::rt

#endif // ZBC_RUNTIME_CHECKPOINTLAYOUT_H
