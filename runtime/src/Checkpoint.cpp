//===- Checkpoint.cpp - atomic checkpoints and resuming from them ---------===//
//
// Note [Checkpoints] (Checkpoint.h).
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"

#include "Rank.h"

#include "zbc/contracts/CheckpointLayout.h"
#include "zbc/contracts/CheckpointManifest.h"
#include "zbc/contracts/DataFile.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/Fnv1a.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zbc::rt {
namespace {

/// The tensor names of parameter `param`'s optimizer state (PyTorch's).
std::string stateName(const zbc_rt_program &p, const zbc_rt_param &param,
                      int which) {
  return fmt::format("{}.{}", param.name,
                     optimizerStateSuffixes(p.optimizer).at(which));
}

/// Each tensor of this rank's checkpoint file and its buffer.
template <typename Fn> void forEachTensor(const zbc_rt_program &p, Fn fn) {
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    fn(std::string(param.name), weightsOf(param), param);
    if (param.state0 >= 0)
      fn(stateName(p, param, 0), param.state0, param);
    if (param.state1 >= 0)
      fn(stateName(p, param, 1), param.state1, param);
  }
}

/// A checkpoint's file of rank `rank` (of a sharded optimizer, of replica
/// `replica`: Note [Sharded optimizer]).
std::string checkpointFileName(int32_t rank, int32_t replica) {
  return replica < 0 ? fmt::format("rank{}.safetensors", rank)
                     : fmt::format("rank{}.shard{}.safetensors", rank, replica);
}
std::string checkpointFileName(const zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  return checkpointFileName(p.rank, p.zero > 0 && p.replicas > 1
                                        ? rank->transport->replica()
                                        : -1);
}

/// Removes `dir` and everything in it (a staging directory: files, no
/// links followed); a missing `dir` is not an error.
std::string removeTree(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return errno == ENOENT ? std::string()
                           : fmt::format("cannot remove '{}': {}", dir,
                                         std::strerror(errno));
  std::string error;
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..")
      continue;
    std::string path = dir + "/" + name;
    struct stat info;
    if (::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
      error = removeTree(path);
    else if (::unlink(path.c_str()) != 0)
      error = fmt::format("cannot remove '{}': {}", path, std::strerror(errno));
    if (!error.empty())
      break;
  }
  ::closedir(d);
  if (error.empty() && ::rmdir(dir.c_str()) != 0)
    error = fmt::format("cannot remove '{}': {}", dir, std::strerror(errno));
  return error;
}

/// Makes a rename in `dir` last across a crash.
void syncDirectory(const std::string &dir) {
  if (int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY); d >= 0) {
    ::fsync(d);
    ::close(d);
  }
}

/// Everything this rank checks of the checkpoint in `dir` before loading
/// it; on success `point` holds its step, seed and this rank's tensors.
std::string checkCheckpoint(zbc_rt_rank *rank, const std::string &dir,
                            int64_t expectedStep, ResumePoint &point) {
  const zbc_rt_program &p = *rank->program;
  CheckpointManifest m;
  if (std::string error = readCheckpointManifest(dir, m); !error.empty())
    return error;
  if (expectedStep >= 0 && m.step != expectedStep)
    return fmt::format("'{}' holds the checkpoint after step {}, not {} (a "
                       "renamed directory?)",
                       dir, m.step, expectedStep);
  if (m.model != p.model || m.modelHash != p.model_hash)
    return fmt::format("'{}' is a checkpoint of model '{}' (IR hash {}); "
                       "this program is of model '{}' (IR hash {})",
                       dir, m.model, m.modelHash, p.model, p.model_hash);
  if (m.schedule != p.schedule || m.ranks != p.ranks || m.stages != p.stages ||
      m.microbatches != p.microbatches || m.optimizer != p.optimizer)
    return fmt::format("'{}' was trained under {} on {} ranks ({} stages, {} "
                       "microbatches, {}); this program runs {} on {} ranks "
                       "({} stages, {} microbatches, {})",
                       dir, m.schedule, m.ranks, m.stages, m.microbatches,
                       m.optimizer, p.schedule, p.ranks, p.stages,
                       p.microbatches, p.optimizer);
  // Note [Sharded optimizer]: each replica holds its shards, so only the
  // same sharding loads (re-sharding is not done). --zero 1 and 2 shard
  // alike (a checkpoint holds no gradient): either resumes the other.
  int64_t shards = p.zero > 0 && p.replicas > 1 ? p.replicas : 0;
  if (m.shards != shards)
    return fmt::format("'{}' holds an optimizer {}; this program's is {}: "
                       "resume with the same --data-parallel, and --zero 0 "
                       "or a --zero of 1 or 2 as saved",
                       dir,
                       m.shards ? fmt::format("sharded over {} replicas",
                                              m.shards)
                                : std::string("whole on every replica"),
                       shards ? fmt::format("sharded over {} replicas", shards)
                              : std::string("whole (--zero 0)"));
  if (rank->options.seedGiven && m.seed != rank->options.seed)
    return fmt::format("'{}' was trained with --seed {}, not {} (leave "
                       "--seed out to continue with the checkpoint's)",
                       dir, m.seed, rank->options.seed);
  std::string bytes;
  int64_t replica = shards ? rank->transport->replica() : 0;
  if (std::string e = readCheckpointFile(dir, m, p.rank, bytes, replica);
      !e.empty())
    return e;
  std::string path =
      dir + "/" + m.files[static_cast<size_t>(replica * p.ranks + p.rank)].file;
  TensorFile file;
  if (std::string e = decodeSafeTensors(path, bytes, file); !e.empty())
    return e;
  std::string problem;
  forEachTensor(p, [&](const std::string &name, int32_t buffer,
                       const zbc_rt_param &) {
    auto it = file.find(name);
    int64_t size = p.buffers[buffer].bytes;
    if (!problem.empty())
      return;
    if (it == file.end() || it->second.dtype != "F32" ||
        static_cast<int64_t>(it->second.data.size()) != size)
      problem = fmt::format("'{}' has no F32 tensor '{}' of {} bytes", path,
                            name, size);
    else if (int64_t bad = firstNonFinite(it->second); bad >= 0)
      problem = fmt::format("'{}': tensor '{}' holds a NaN or infinity at "
                            "element {}",
                            path, name, bad);
  });
  if (!problem.empty())
    return problem;
  point.stepsDone = m.step;
  point.seed = m.seed;
  point.tensors = std::move(file);
  return {};
}

} // namespace

std::string chooseCheckpoint(zbc_rt_rank *rank, ResumePoint &point) {
  const zbc_rt_program &p = *rank->program;
  Transport &transport = *rank->transport;
  const std::string &given = rank->options.resumeDir;
  std::vector<CheckpointEntry> candidates = checkpointsIn(given);
  // Every rank takes part in as many rounds as the rank that sees the most.
  int64_t rounds = transport.maximum(static_cast<int64_t>(candidates.size()));
  if (rounds == 0)
    return fmt::format("'{}' holds no checkpoint (no manifest.json in it or "
                       "in a step-N under it; a checkpoint whose writing was "
                       "cut short has none)",
                       given);
  std::string error;
  for (int64_t i = 0; i < rounds; ++i) {
    bool seen = i < static_cast<int64_t>(candidates.size());
    std::string dir = seen ? candidates[i].dir : std::string();
    error = seen ? checkCheckpoint(rank, dir, candidates[i].step, point)
                 : fmt::format("rank {} sees fewer checkpoints under '{}' "
                               "than another rank (is the directory on a "
                               "file system every rank shares?)",
                               p.rank, given);
    if (!transport.anyFailed(!error.empty())) {
      point.dir = dir;
      rank->options.seed = point.seed;
      if (transport.rank() == 0 && !rank->options.quiet)
        fmt::print("resuming from '{}' after step {}{}\n", dir,
                   point.stepsDone,
                   point.refused.empty()
                       ? ""
                       : fmt::format(" (the later {} could not be loaded: "
                                     "see above)",
                                     fmt::join(point.refused, ", ")));
      return {};
    }
    point.tensors.clear();
    if (i + 1 < rounds) { // there is an earlier one to fall back to
      if (!error.empty())
        fmt::print(stderr, "zbc rank {}: warning: not resuming from '{}': "
                           "{}\n",
                   p.rank, dir, error);
      point.refused.push_back(dir);
    }
  }
  if (!error.empty())
    return error;
  return rounds == 1
             ? fmt::format("not resuming from '{}': another rank refused it "
                           "(that rank's own message says why)",
                           candidates.empty() ? given : candidates[0].dir)
             : fmt::format("no checkpoint under '{}' loads on every rank "
                           "(the ranks' own messages say why)",
                           given);
}

std::string loadCheckpoint(zbc_rt_rank *rank, ResumePoint &point) {
  const zbc_rt_program &p = *rank->program;
  std::string error;
  forEachTensor(p, [&](const std::string &name, int32_t buffer,
                       const zbc_rt_param &) {
    const StoredTensor &t = point.tensors.at(name);
    if (std::string e = rank->device->write(p.buffers[buffer].offset,
                                            t.data.data(),
                                            static_cast<int64_t>(t.data.size()));
        !e.empty() && error.empty())
      error = e;
  });
  point.tensors.clear();
  if (error.empty())
    error = refreshWorkingCopies(rank);
  return error;
}

SafeTensorsMetadata savedMetadata(const zbc_rt_program &p, int64_t stepsDone) {
  SafeTensorsMetadata metadata = {{"model", p.model ? p.model : ""},
                                  {"schedule", p.schedule ? p.schedule : ""},
                                  {"rank", std::to_string(p.rank)},
                                  {"ranks", std::to_string(p.ranks)},
                                  {"step", std::to_string(stepsDone)}};
  if (p.hf_config && *p.hf_config)
    metadata["hf_config"] = p.hf_config;
  return metadata;
}

std::string writeCheckpoint(zbc_rt_rank *rank, int64_t stepsDone) {
  const zbc_rt_program &p = *rank->program;
  Transport &transport = *rank->transport;
  std::string root = rank->options.checkpointDir;
  std::string staging = checkpointStagingDirectory(root, stepsDone);
  std::string final = checkpointDirectory(root, stepsDone);
  // The replicas hold the same state: the first writes it for all, unless
  // each holds its shards (Note [Sharded optimizer]); job rank 0 prepares
  // the staging directory and renames it into place.
  bool sharded = p.zero > 0 && p.replicas > 1;
  bool writes = sharded || transport.replica() == 0;
  bool leads = transport.rank() == 0;
  std::string error;
  if (leads) {
    error = makeDirectories(root);
    if (error.empty())
      error = removeTree(staging); // an earlier attempt's, cut short
    if (error.empty() && ::mkdir(staging.c_str(), 0777) != 0)
      error = fmt::format("cannot make '{}': {}", staging, std::strerror(errno));
  }
  bool failed;
  {
    InsideMPI mpi(rank, "the checkpoint's collectives");
    failed = transport.anyFailed(!error.empty());
  }
  if (failed)
    return error.empty() ? "rank 0 could not prepare the checkpoint's "
                           "directory (its own message says why)"
                         : error;
  std::string bytes;
  if (writes) {
    TensorFile file;
    forEachTensor(p, [&](const std::string &name, int32_t buffer,
                         const zbc_rt_param &param) {
      StoredTensor t;
      t.dtype = "F32";
      // A shard (or a padded whole) is stored flat.
      if (sharded)
        t.shape = {p.buffers[buffer].bytes / 4};
      else
        t.shape.assign(param.shape, param.shape + param.rank_of_shape);
      t.data.resize(static_cast<size_t>(p.buffers[buffer].bytes));
      if (std::string e = rank->device->read(p.buffers[buffer].offset,
                                             t.data.data(),
                                             p.buffers[buffer].bytes);
          !e.empty() && error.empty())
        error = e;
      file[name] = std::move(t);
    });
    bytes = encodeSafeTensors(file, savedMetadata(p, stepsDone));
    if (error.empty())
      error = writeFileAtomically(fmt::format("{}/{}", staging,
                                              checkpointFileName(rank)),
                                  bytes);
  }
  std::vector<uint64_t> sizes, checksums;
  {
    InsideMPI mpi(rank, "the checkpoint's collectives");
    sizes = transport.allGather(bytes.size());
    checksums = transport.allGather(fnv1a64(bytes));
    failed = transport.anyFailed(!error.empty());
  }
  if (failed)
    return error.empty() ? "another rank could not write its part of the "
                           "checkpoint (that rank's own message says "
                           "why)"
                         : error;
  // Every part is on disk: the manifest completes the staging directory,
  // which then takes the step's name as a whole. (Sizes and checksums are
  // by job rank: replica 0's pipeline ranks come first.)
  if (leads) {
    CheckpointManifest m;
    m.step = m.dataPosition = stepsDone;
    m.seed = rank->options.seed;
    m.model = p.model;
    m.modelHash = p.model_hash;
    m.schedule = p.schedule;
    m.optimizer = p.optimizer;
    m.ranks = p.ranks;
    m.stages = p.stages;
    m.microbatches = p.microbatches;
    m.shards = sharded ? p.replicas : 0;
    for (int32_t k = 0; k < (sharded ? p.replicas : 1); ++k)
      for (int32_t r = 0; r < p.ranks; ++r) {
        size_t process = static_cast<size_t>(k) * p.ranks + r; // job rank
        m.files.push_back({r, checkpointFileName(r, sharded ? k : -1),
                           static_cast<int64_t>(sizes[process]),
                           fmt::format("{:016x}", checksums[process]), k});
      }
    error = writeFileAtomically(checkpointManifest(staging),
                                checkpointManifestText(m));
    std::string replaced = checkpointReplacedDirectory(root, stepsDone);
    struct stat info;
    bool exists = ::stat(final.c_str(), &info) == 0;
    if (error.empty() && exists)
      error = removeTree(replaced);
    if (error.empty() && exists && std::rename(final.c_str(), replaced.c_str()))
      error = fmt::format("cannot move the older '{}' aside: {}", final,
                          std::strerror(errno));
    if (error.empty() && std::rename(staging.c_str(), final.c_str()))
      error = fmt::format("cannot rename '{}' to '{}': {}", staging, final,
                          std::strerror(errno));
    if (error.empty()) {
      syncDirectory(root);
      if (exists)
        error = removeTree(replaced);
    }
  }
  {
    InsideMPI mpi(rank, "the checkpoint's collectives");
    failed = transport.anyFailed(!error.empty());
  }
  if (failed)
    return error.empty() ? "rank 0 could not complete the checkpoint (its "
                           "own message says why)"
                         : error;
  return {};
}

} // namespace zbc::rt
