//===- HuggingFaceCheckpoint.cpp - which file holds each checkpoint tensor -===//
//
// readCheckpointLayout (HuggingFaceCheckpoint.h).
//
//===----------------------------------------------------------------------===//

#include "zbc/contracts/HuggingFaceCheckpoint.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/JsonSubset.h"
#include "zbc/contracts/SafeTensors.h"

#include <fmt/format.h>

#include <set>

#include <sys/stat.h>

namespace zbc::rt {
namespace {

bool isDirectory(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

std::vector<std::string> CheckpointLayout::files() const {
  if (!single.empty())
    return {single};
  std::set<std::string> shards;
  for (const auto &entry : shardOf)
    shards.insert(entry.second);
  return {shards.begin(), shards.end()};
}

std::string readCheckpointLayout(const std::string &path,
                                 CheckpointLayout &layout) {
  if (!isDirectory(path)) {
    layout.single = path;
    return {};
  }
  std::string index = path + "/model.safetensors.index.json";
  struct stat st {};
  if (::stat(index.c_str(), &st) != 0) {
    layout.single = path + "/model.safetensors";
    if (::stat(layout.single.c_str(), &st) != 0)
      return fmt::format("--init '{}': the directory holds neither "
                         "model.safetensors nor model.safetensors.index.json",
                         path);
    return {};
  }
  layout.index = index;
  int64_t size = 0;
  if (std::string e = regularFileError(index, "the checkpoint's index", size);
      !e.empty())
    return e;
  std::string text;
  if (std::string e = readFileBytes(index, text); !e.empty())
    return e;
  JsonValue root;
  std::string error;
  const JsonValue *map = nullptr;
  if (!parseJson(text, root, error) || root.kind != JsonValue::Object ||
      !(map = root.find("weight_map")) || map->kind != JsonValue::Object)
    return fmt::format("'{}' is not a safetensors index: it needs an object "
                       "\"weight_map\" naming each tensor's file{}",
                       index, error.empty() ? "" : " (" + error + ")");
  for (const auto &[name, file] : map->members) {
    if (file.kind != JsonValue::String || file.string.empty() ||
        file.string.find('/') != std::string::npos)
      return fmt::format("'{}': the file of tensor '{}' must be a file name "
                         "in that directory",
                         index, name);
    layout.shardOf[name] = path + "/" + file.string;
  }
  return {};
}


} // namespace zbc::rt
