//===- InitWeights.h - --init: parameters from a Hugging Face checkpoint -*- C++ -*-===//
//
// Note [Initial weights]
// `--init PATH` starts training from a checkpoint in Hugging Face's form
// instead of the seed: PATH is a directory holding model.safetensors, or
// model.safetensors.index.json (its "weight_map" names each tensor's
// shard), or one .safetensors file. The model's parameters carry the
// checkpoint's names and layouts (`zbc import-hf`), so loading is by name:
//  - each rank reads only its own parameters: the headers of the files that
//    hold them, then each tensor's bytes through a read-only mapping of its
//    file (no file is read whole);
//  - every header is checked before any byte is used (SafeTensors.h:
//    offsets inside the file and matching dtype and shape), and each tensor
//    against the parameter: present, the same shape, F32, BF16 or F16;
//  - values are widened to f32 into the parameter's master weights (exact
//    for BF16 and F16), and the working copies of bf16 parameters are then
//    rounded from them as after any initialisation (refreshWorkingCopies).
// An error names the tensor and the file: every rank checks its tensors
// (checkInitialWeights) before the ranks agree that they started well, so
// a bad checkpoint stops the job on every rank before the first step. Tensors no parameter of
// this rank reads are not looked at here: `zbc run --init` checks the whole
// model against the checkpoint before it starts the ranks.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_INITWEIGHTS_H
#define ZBC_RUNTIME_INITWEIGHTS_H

#include "Rank.h"

#include <string>

namespace zbc::rt {

/// Checks that `path` holds every parameter of this rank as it must (Note
/// [Initial weights]) without copying any; start-up runs it before the
/// ranks agree that they started well, so a bad checkpoint stops every
/// rank before the first step. Returns what is wrong (naming the tensor and
/// the file) or "".
std::string checkInitialWeights(zbc_rt_rank *rank, const std::string &path);

/// What one rank's load read, for --report: the tensors and their bytes
/// in the checkpoint, the files it mapped, and the bytes of file pages the
/// rank touched while loading (the growth of its file-backed resident set,
/// /proc/self/status RssFile: an outside measure of what the mapping read;
/// -1 where the kernel does not say).
struct InitialWeightsRead {
  int64_t tensors = 0, bytes = 0, files = 0;
  int64_t filePagesTouched = -1;
  double seconds = 0; // the load, start to end (start-up measures it)
};

/// Loads this rank's parameters from `path`; returns what failed or "".
std::string loadInitialWeights(zbc_rt_rank *rank, const std::string &path,
                               InitialWeightsRead &read);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_INITWEIGHTS_H
