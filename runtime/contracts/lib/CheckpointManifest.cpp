//===- CheckpointManifest.cpp - a checkpoint's manifest, both ways --------===//
//
// The text is written by hand (one field per line, the files as a list) and
// read back with the JSON subset reader. The checksum line is the last
// field: `,\n  "manifest_fnv1a64": "<16 hex digits>"\n}\n`, over every byte
// before its comma; the reader finds it at the end, recomputes it, and only
// then reads the fields.
//
//===----------------------------------------------------------------------===//

#include "zbc/contracts/CheckpointManifest.h"

#include "zbc/contracts/CheckpointLayout.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/Fnv1a.h"
#include "zbc/contracts/JsonSubset.h"
#include "zbc/contracts/SafeTensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace zbc::rt {
namespace {

constexpr const char *kChecksumKey = "manifest_fnv1a64";
constexpr int64_t kLargestManifest = int64_t(1) << 20;

std::string hex(uint64_t value) { return fmt::format("{:016x}", value); }

/// The closing line of a manifest whose body hashes to `hash`.
std::string checksumTail(uint64_t hash) {
  return fmt::format(",\n  \"{}\": \"{}\"\n}}\n", kChecksumKey, hex(hash));
}

} // namespace

std::string checkpointManifestText(const CheckpointManifest &m) {
  std::string files;
  for (const CheckpointFile &f : m.files)
    files += fmt::format("{}\n    {{\"rank\": {}, {}\"file\": {}, "
                         "\"bytes\": {}, \"fnv1a64\": \"{}\"}}",
                         files.empty() ? "" : ",", f.rank,
                         m.shards ? fmt::format("\"replica\": {}, ", f.replica)
                                  : std::string(),
                         jsonQuoted(f.file), f.bytes, f.fnv1a64);
  std::string body = fmt::format(
      "{{\n  \"format\": \"{}\",\n  \"step\": {},\n  \"data_position\": {},\n"
      "  \"seed\": {},\n  \"model\": {},\n  \"model_hash\": {},\n"
      "  \"schedule\": {},\n  \"optimizer\": {},\n  \"ranks\": {},\n"
      "  \"stages\": {},\n  \"microbatches\": {},\n{}  \"files\": [{}\n  ]",
      kCheckpointFormat, m.step, m.dataPosition, m.seed, jsonQuoted(m.model),
      jsonQuoted(m.modelHash), jsonQuoted(m.schedule), jsonQuoted(m.optimizer),
      m.ranks, m.stages, m.microbatches,
      m.shards ? fmt::format("  \"shards\": {},\n", m.shards) : std::string(),
      files);
  return body + checksumTail(fnv1a64(body));
}

std::string parseCheckpointManifest(const std::string &path,
                                    const std::string &text,
                                    CheckpointManifest &m) {
  // The checksum first: nothing of a damaged manifest is believed.
  std::string marker = fmt::format(",\n  \"{}\": \"", kChecksumKey);
  size_t at = text.rfind(marker);
  if (at == std::string::npos) {
    if (text.find("\"zbc-checkpoint-1\"") != std::string::npos)
      return fmt::format("'{}' is a checkpoint of an older zbc (format "
                         "zbc-checkpoint-1, whose manifest has no checksum of "
                         "its own); this zbc reads {}",
                         path, kCheckpointFormat);
    return fmt::format("'{}' is not a {} manifest: it has no checksum line "
                       "(\"{}\") at its end",
                       path, kCheckpointFormat, kChecksumKey);
  }
  uint64_t hash = fnv1a64(std::string_view(text).substr(0, at));
  if (text.compare(at, std::string::npos, checksumTail(hash)) != 0)
    return fmt::format("'{}' fails its own checksum (FNV-1a {} of its text): "
                       "the manifest was edited or is corrupted",
                       path, hex(hash));
  JsonValue root;
  std::string error;
  if (!parseJson(text, root, error) || root.kind != JsonValue::Object)
    return fmt::format("'{}' is not a checkpoint manifest: {}", path,
                       error.empty() ? "not a JSON object" : error);
  std::string missing;
  auto number = [&](const char *key, int64_t &out, int64_t min) {
    const JsonValue *v = root.find(key);
    if (v && v->kind == JsonValue::Number && v->number >= min)
      out = v->number;
    else if (missing.empty())
      missing = key;
  };
  auto string = [&](const char *key, std::string &out) {
    const JsonValue *v = root.find(key);
    if (v && v->kind == JsonValue::String)
      out = v->string;
    else if (missing.empty())
      missing = key;
  };
  std::string format;
  int64_t seed = 0;
  string("format", format);
  if (missing.empty() && format != kCheckpointFormat)
    return fmt::format("'{}' has format '{}'; this zbc reads {}", path, format,
                       kCheckpointFormat);
  number("step", m.step, 0);
  number("data_position", m.dataPosition, 0);
  number("seed", seed, 0); // the seeds --seed takes: [0, 2^63)
  string("model", m.model);
  string("model_hash", m.modelHash);
  string("schedule", m.schedule);
  string("optimizer", m.optimizer);
  number("ranks", m.ranks, 1);
  number("stages", m.stages, 1);
  number("microbatches", m.microbatches, 1);
  const JsonValue *files = root.find("files");
  if (missing.empty() && (!files || files->kind != JsonValue::Array))
    missing = "files";
  if (!missing.empty())
    return fmt::format("'{}' is not a {} manifest: field \"{}\" is missing or "
                       "malformed",
                       path, kCheckpointFormat, missing);
  m.seed = static_cast<uint64_t>(seed);
  m.shards = 0;
  if (const JsonValue *shards = root.find("shards")) {
    if (shards->kind != JsonValue::Number || shards->number < 2)
      return fmt::format("'{}': \"shards\" must be the replicas the "
                         "optimizer is sharded over, 2 or more",
                         path);
    m.shards = shards->number;
  }
  int64_t perRank = std::max<int64_t>(m.shards, 1);
  m.files.clear();
  for (const JsonValue &f : files->elements) {
    const JsonValue *rank = f.find("rank"), *file = f.find("file"),
                    *bytes = f.find("bytes"), *sum = f.find("fnv1a64");
    if (f.kind != JsonValue::Object || !rank ||
        rank->kind != JsonValue::Number || !file ||
        file->kind != JsonValue::String || !bytes ||
        bytes->kind != JsonValue::Number || bytes->number < 0 || !sum ||
        sum->kind != JsonValue::String)
      return fmt::format("'{}': entry {} of \"files\" lacks a rank, file, "
                         "bytes or fnv1a64",
                         path, m.files.size());
    int64_t index = static_cast<int64_t>(m.files.size());
    const JsonValue *replica = f.find("replica");
    int64_t replicaOf = replica && replica->kind == JsonValue::Number
                            ? replica->number
                            : (m.shards ? -1 : 0);
    if (rank->number != index % m.ranks || replicaOf != index / m.ranks)
      return fmt::format("'{}': entry {} of \"files\" is of rank {}; the "
                         "files are listed by rank{}",
                         path, index, rank->number,
                         m.shards ? " (and \"replica\"), replica after replica"
                                  : "");
    if (file->string.empty() || file->string.find('/') != std::string::npos)
      return fmt::format("'{}': rank {}'s file '{}' is not a file name in "
                         "the checkpoint's directory",
                         path, rank->number, file->string);
    m.files.push_back({rank->number, file->string, bytes->number, sum->string,
                       replicaOf});
  }
  if (static_cast<int64_t>(m.files.size()) != m.ranks * perRank)
    return fmt::format("'{}' lists {} files for {} ranks{}", path,
                       m.files.size(), m.ranks,
                       m.shards ? fmt::format(" of {} shards", m.shards)
                                : std::string());
  return {};
}

std::string readCheckpointManifest(const std::string &dir,
                                   CheckpointManifest &manifest) {
  std::string path = checkpointManifest(dir);
  int64_t size = 0;
  if (std::string error = regularFileError(path, "the manifest", size);
      !error.empty())
    return error;
  if (size > kLargestManifest)
    return fmt::format("'{}' has {} bytes: not a checkpoint manifest (at most "
                       "{})",
                       path, size, kLargestManifest);
  std::string text;
  if (std::string error = readFileBytes(path, text); !error.empty())
    return error;
  return parseCheckpointManifest(path, text, manifest);
}

std::string readCheckpointFile(const std::string &dir,
                               const CheckpointManifest &manifest,
                               int64_t rank, std::string &bytes,
                               int64_t replica) {
  int64_t index = replica * manifest.ranks + rank;
  if (rank < 0 || rank >= manifest.ranks || replica < 0 ||
      index >= static_cast<int64_t>(manifest.files.size()))
    return fmt::format("'{}' lists no file of rank {}{}",
                       checkpointManifest(dir), rank,
                       replica ? fmt::format(" of replica {}", replica)
                               : std::string());
  const CheckpointFile &entry = manifest.files[static_cast<size_t>(index)];
  std::string path = dir + "/" + entry.file;
  int64_t size = 0;
  if (std::string error = regularFileError(path, "the checkpoint file", size);
      !error.empty())
    return error;
  // The size before the bytes: a file that cannot be this one is not read.
  if (size != entry.bytes)
    return fmt::format("'{}' has {} bytes, its manifest says {}: the file is "
                       "truncated or was replaced",
                       path, size, entry.bytes);
  if (std::string error = readFileBytes(path, bytes); !error.empty())
    return error;
  if (static_cast<int64_t>(bytes.size()) != entry.bytes)
    return fmt::format("'{}' has {} bytes, its manifest says {}: the file is "
                       "truncated or was replaced",
                       path, bytes.size(), entry.bytes);
  if (hex(fnv1a64(bytes)) != entry.fnv1a64)
    return fmt::format("'{}' fails its checksum (FNV-1a {}, the manifest "
                       "says {}): the file is corrupted",
                       path, hex(fnv1a64(bytes)), entry.fnv1a64);
  return {};
}

} // namespace zbc::rt
