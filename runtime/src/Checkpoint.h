//===- Checkpoint.h - atomic checkpoints and resuming from them --*- C++ -*-===//
//
// Note [Checkpoints]
// The checkpoint after N steps is the directory CHECKPOINT_DIR/step-N:
//  - rankR.safetensors per rank: its parameters under their names and its
//    optimizer state under PyTorch's (NAME.momentum_buffer; NAME.exp_avg,
//    NAME.exp_avg_sq), each written atomically (SafeTensors.h:
//    writeFileAtomically); with a sharded optimizer (Note [Sharded
//    optimizer]), rankR.shardK.safetensors per rank and replica K: the
//    replica's buffers as they are (its shards of masters and state, its
//    padded working copies), flat, loaded by the same replica only (a
//    resume with other replicas or sharding is refused);
//  - manifest.json (CheckpointManifest.h), which rank 0 writes last, once
//    every rank has written and synced its file: the step, the data
//    position (batches consumed), the seed, the model and the hash of its
//    IR, the schedule, optimizer, ranks, stages and microbatches, per rank
//    its file's size and FNV-1a-64 checksum, and a checksum of its own.
// A checkpoint is written as a whole: into CHECKPOINT_DIR/.step-N.writing,
// renamed to step-N once its manifest is in it (an older step-N, say one
// whose writing was cut short, is first moved aside and removed after), so
// a step-N is either complete or absent, whenever the job is killed. A
// step-N without a manifest is not a checkpoint.
// Resuming from DIR reads DIR/manifest.json if DIR has one (that checkpoint
// or none); otherwise it tries the step-N under DIR from the latest down
// and takes the first that loads on every rank, saying which later ones it
// skipped and why. Every rank checks the manifest against its program,
// checks its own file's size before reading it and its checksum after,
// decodes it and checks each tensor's presence, size and finiteness; the
// ranks then agree (a collective) before any of them copies a byte: a
// checkpoint loads on every rank or on none. The seed is restored before
// the data is opened: the data order and synthetic data are functions of
// (seed, step), so the seed and step are all of the "RNG state" there is,
// and a resumed run continues bit for bit, with or without --seed.
// Which checkpoints a run may write beside: Note [One history per
// checkpoint directory] (CheckpointLayout.h); the directory is locked while
// a job writes into it (Files.h).
// The checkpoint directory must be one that every rank sees (one host, or
// a shared file system): the manifest is rank 0's.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CHECKPOINT_H
#define ZBC_RUNTIME_CHECKPOINT_H

#include "zbc/contracts/SafeTensors.h"
#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbc::rt {

/// The checkpoint a resumed run starts from, chosen and checked on every
/// rank by chooseCheckpoint, loaded into the arena by loadCheckpoint.
struct ResumePoint {
  std::string dir;
  int64_t stepsDone = 0;
  uint64_t seed = 0;
  /// Later checkpoints under the same directory that did not load.
  std::vector<std::string> refused;
  TensorFile tensors; // this rank's
};

/// Chooses the checkpoint --resume names (Note [Checkpoints]; collective)
/// and checks it; sets the rank's seed to the checkpoint's. Returns what is
/// wrong with it (the file and why; on the other ranks, that one refused
/// it) or "".
std::string chooseCheckpoint(zbc_rt_rank *rank, ResumePoint &point);

/// Copies the chosen checkpoint's tensors into the arena (after the
/// parameters' initialisation); releases them.
std::string loadCheckpoint(zbc_rt_rank *rank, ResumePoint &point);

/// The metadata of every safetensors file a rank writes (--save,
/// --save-init, a checkpoint): "model", "schedule", "rank", "ranks",
/// "step", and "hf_config" (the Hugging Face config.json the model was
/// imported from, for `zbc export-hf`) when the model has one.
SafeTensorsMetadata savedMetadata(const zbc_rt_program &p, int64_t stepsDone);

/// Writes the checkpoint after `stepsDone` steps (collective). Returns what
/// failed, on any rank, or "".
std::string writeCheckpoint(zbc_rt_rank *rank, int64_t stepsDone);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_CHECKPOINT_H
