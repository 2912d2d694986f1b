//===- CheckpointManifest.h - a checkpoint's manifest, both ways -*- C++ -*-===//
//
// The manifest.json of a checkpoint (Note [Checkpoints] in
// runtime/src/Checkpoint.h): what was trained (model and IR hash, schedule,
// optimizer, ranks, stages, microbatches), how far (the step, the data
// position, the seed) and each rank's file with its size and FNV-1a-64
// checksum; for an optimizer sharded over D replicas (`shards`: Note
// [Sharded optimizer] in Shards.h) each replica's file of each rank,
// replica after replica. The manifest carries a checksum of its own as its last field,
// over every byte before it, so that a flipped digit in "step" or "seed"
// is refused like a flipped bit in a tensor.
//
// Plain C++17: the ranks write and read it, `zbc run` and `zbc inspect`
// read it; the fuzzer feeds it mutated manifests.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CHECKPOINTMANIFEST_H
#define ZBC_RUNTIME_CHECKPOINTMANIFEST_H

#include <cstdint>
#include <string>
#include <vector>

namespace zbc::rt {

/// The format this zbc writes and reads.
inline constexpr const char *kCheckpointFormat = "zbc-checkpoint-2";

struct CheckpointFile {
  int64_t rank = 0;
  std::string file; // relative to the checkpoint's directory
  int64_t bytes = 0;
  std::string fnv1a64; // 16 hex digits
  int64_t replica = 0;  // of a sharded checkpoint's
};

struct CheckpointManifest {
  int64_t step = 0;         // steps done
  int64_t dataPosition = 0; // batches consumed
  uint64_t seed = 0;
  std::string model, modelHash, schedule, optimizer;
  int64_t ranks = 0, stages = 0, microbatches = 0;
  /// The replicas the optimizer state is sharded over (0: whole, one file
  /// per rank, which every replica loads).
  int64_t shards = 0;
  /// One per pipeline rank, by rank; sharded, one per rank and replica,
  /// replica after replica.
  std::vector<CheckpointFile> files;
};

/// The manifest's text, its checksum last.
std::string checkpointManifestText(const CheckpointManifest &manifest);

/// Parses `text` (read from `path`, which messages name): its checksum,
/// format and every field. An error or "".
std::string parseCheckpointManifest(const std::string &path,
                                    const std::string &text,
                                    CheckpointManifest &manifest);

/// Reads and parses DIR/manifest.json (a regular file of at most 1 MiB).
std::string readCheckpointManifest(const std::string &dir,
                                   CheckpointManifest &manifest);

/// Reads rank `rank`'s file of the checkpoint in `dir` (of a sharded one,
/// replica `replica`'s) whole and checks its size and checksum against the
/// manifest; `bytes` holds it. An error naming the file, or "".
std::string readCheckpointFile(const std::string &dir,
                               const CheckpointManifest &manifest,
                               int64_t rank, std::string &bytes,
                               int64_t replica = 0);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_CHECKPOINTMANIFEST_H
