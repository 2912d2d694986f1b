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
#include <fmt/ranges.h>

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

std::string locateInitTensor(const CheckpointLayout &layout,
                             const InitParam &param, CheckpointHeaders &headers,
                             std::string &file, TensorLocation &tensor) {
  file = layout.single;
  if (file.empty()) {
    auto shard = layout.shardOf.find(param.name);
    if (shard == layout.shardOf.end())
      return fmt::format("--init: tensor '{}' is not in the weight_map of "
                         "'{}'",
                         param.name, layout.index);
    file = shard->second;
  }
  auto [it, fresh] = headers.try_emplace(file);
  if (fresh)
    if (std::string e = readSafeTensorsHeader(file, it->second); !e.empty()) {
      headers.erase(it);
      return e;
    }
  auto found = it->second.find(param.name);
  if (found == it->second.end())
    return fmt::format("--init: tensor '{}' is missing from '{}'", param.name,
                       file);
  tensor = found->second;
  if (tensor.shape != param.shape)
    return fmt::format("--init: tensor '{}' in '{}' is [{}], the model's "
                       "parameter is [{}]",
                       param.name, file, fmt::join(tensor.shape, ", "),
                       fmt::join(param.shape, ", "));
  if (tensor.dtype != "F32" && tensor.dtype != "BF16" && tensor.dtype != "F16")
    return fmt::format("--init: tensor '{}' in '{}' has dtype {}; --init "
                       "reads F32, BF16 and F16",
                       param.name, file, tensor.dtype);
  return {};
}

} // namespace zbc::rt
