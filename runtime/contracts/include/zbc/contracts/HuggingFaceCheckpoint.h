//===- HuggingFaceCheckpoint.h - which file holds each checkpoint tensor -*- C++ -*-===//
//
// A checkpoint in Hugging Face's form is a directory holding
// model.safetensors, or model.safetensors.index.json whose "weight_map"
// names each tensor's shard (a file of that directory), or one .safetensors
// file. The one home of that rule: the ranks' --init (InitWeights.cpp) and
// `zbc run --init`'s check of the whole checkpoint read it here.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_HUGGINGFACECHECKPOINT_H
#define ZBC_RUNTIME_HUGGINGFACECHECKPOINT_H

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

} // namespace zbc::rt

#endif // ZBC_RUNTIME_HUGGINGFACECHECKPOINT_H
