//===- HuggingFaceCheckpoint.h - which file holds each checkpoint tensor -*- C++ -*-===//
//
// A checkpoint in Hugging Face's form is a directory holding
// model.safetensors, or model.safetensors.index.json whose "weight_map"
// names each tensor's shard (a file of that directory), or one .safetensors
// file. The one home of that rule, and of what --init asks of each
// parameter's tensor (there, the parameter's shape, a dtype it reads): the
// ranks' --init (InitWeights.cpp), `zbc run --init`'s check of the whole
// checkpoint before anything runs and `zbc inspect DIR --model M` read
// them here.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_HUGGINGFACECHECKPOINT_H
#define ZBC_RUNTIME_HUGGINGFACECHECKPOINT_H

#include "zbc/contracts/SafeTensors.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zbc::rt {

/// Where each tensor of a checkpoint lives.
struct CheckpointLayout {
  std::string single;                         // one file for every tensor
  std::string index;                          // else the index, for messages
  std::map<std::string, std::string> shardOf; // and its tensor -> file

  /// Every file of the checkpoint, once each.
  std::vector<std::string> files() const;
};

/// Reads the layout of the checkpoint at `path` (a directory or a file);
/// returns what is wrong (naming the file) or "".
std::string readCheckpointLayout(const std::string &path,
                                 CheckpointLayout &layout);

/// A parameter --init fills: its name and its shape.
struct InitParam {
  std::string name;
  std::vector<int64_t> shape;
};

/// The headers of a checkpoint's files, each read once (file -> tensors).
using CheckpointHeaders =
    std::map<std::string, std::map<std::string, TensorLocation>>;

/// Finds `param`'s tensor in the checkpoint `layout`: sets `file` and
/// `tensor` after checking that it is there, with the parameter's shape and
/// a dtype --init reads (F32, BF16, F16). Returns what is wrong, naming the
/// tensor and the file, or "".
std::string locateInitTensor(const CheckpointLayout &layout,
                             const InitParam &param, CheckpointHeaders &headers,
                             std::string &file, TensorLocation &tensor);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_HUGGINGFACECHECKPOINT_H
