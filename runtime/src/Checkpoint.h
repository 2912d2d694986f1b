//===- Checkpoint.h - atomic checkpoints and resuming from them --*- C++ -*-===//
//
// Note [Checkpoints]
// The checkpoint after N steps is the directory CHECKPOINT_DIR/step-N:
//  - rankR.safetensors per rank: its parameters under their names and its
//    optimizer state under PyTorch's (NAME.momentum_buffer; NAME.exp_avg,
//    NAME.exp_avg_sq), each written atomically (SafeTensors.h:
//    writeFileAtomically);
//  - manifest.json, which rank 0 writes last, once every rank has written
//    and synced its file: the step, the data position (batches consumed),
//    the seed, the model and the hash of its IR, the schedule, optimizer,
//    ranks, stages and microbatches, and per rank its file's size and
//    FNV-1a-64 checksum.
// A step-N without a manifest is not a checkpoint (its writing was cut
// short). Resuming reads DIR/manifest.json, or, if DIR has none, that of the
// latest step-N under DIR that has one. Every rank checks the manifest
// against its program, reads its own file whole, checks its size and
// checksum, and decodes it and checks each tensor's presence and size; the
// ranks then agree (a collective) before any of them copies a byte: a
// checkpoint loads on every rank or on none. The data order and synthetic
// data are functions of (seed, step), so the seed and step are all of the
// "RNG state" there is: a resumed run continues bit for bit.
// The checkpoint directory must be one that every rank sees (one host, or
// a shared file system): the manifest is rank 0's.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CHECKPOINT_H
#define ZBC_RUNTIME_CHECKPOINT_H

#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <string>

namespace zbc::rt {

/// Writes the checkpoint after `stepsDone` steps (collective). Returns what
/// failed, on any rank, or "".
std::string writeCheckpoint(zbc_rt_rank *rank, int64_t stepsDone);

/// Loads the checkpoint --resume names into the arena (collective) and sets
/// `stepsDone` and the rank's seed. Returns what is wrong with it (the
/// file and why; on the other ranks, that one refused it) or "".
std::string resumeFromCheckpoint(zbc_rt_rank *rank, int64_t &stepsDone);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_CHECKPOINT_H
