//===- Checkpoint.cpp - atomic checkpoints and resuming from them ---------===//
//
// Note [Checkpoints] (Checkpoint.h).
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"

#include "Rank.h"

#include "zbc/runtime/CheckpointLayout.h"
#include "zbc/runtime/Fnv1a.h"
#include "zbc/runtime/JsonSubset.h"
#include "zbc/runtime/SafeTensors.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace zbc::rt {
namespace {

constexpr const char *kFormat = "zbc-checkpoint-1";

std::string hex(uint64_t value) { return fmt::format("{:016x}", value); }

std::string makeDirectory(const std::string &dir) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return fmt::format("cannot make '{}': {}", dir, std::strerror(errno));
  return {};
}

/// The tensor names of parameter `param`'s optimizer state (PyTorch's).
std::string stateName(const zbc_rt_program &p, const zbc_rt_param &param,
                      int which) {
  if (!std::strcmp(p.optimizer, "adamw"))
    return fmt::format("{}.{}", param.name, which == 0 ? "exp_avg" : "exp_avg_sq");
  return fmt::format("{}.momentum_buffer", param.name);
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

std::string manifestText(const zbc_rt_program &p, int64_t stepsDone,
                         uint64_t seed, const std::vector<uint64_t> &sizes,
                         const std::vector<uint64_t> &checksums) {
  std::string files;
  for (int32_t r = 0; r < p.ranks; ++r)
    files += fmt::format("{}\n    {{\"rank\": {}, \"file\": "
                         "\"rank{}.safetensors\", \"bytes\": {}, "
                         "\"fnv1a64\": \"{}\"}}",
                         r ? "," : "", r, r, sizes[r], hex(checksums[r]));
  return fmt::format(
      "{{\n  \"format\": \"{}\",\n  \"step\": {},\n  \"data_position\": {},\n"
      "  \"seed\": {},\n  \"model\": {},\n  \"model_hash\": \"{}\",\n"
      "  \"schedule\": {},\n  \"optimizer\": {},\n  \"ranks\": {},\n"
      "  \"stages\": {},\n  \"microbatches\": {},\n  \"files\": [{}\n  ]\n}}\n",
      kFormat, stepsDone, stepsDone, seed, jsonQuoted(p.model), p.model_hash,
      jsonQuoted(p.schedule), jsonQuoted(p.optimizer), p.ranks, p.stages,
      p.microbatches, files);
}

/// Everything this rank checks before loading; on success `file` holds its
/// decoded tensors.
std::string checkCheckpoint(zbc_rt_rank *rank, const std::string &dir,
                            int64_t &stepsDone, uint64_t &seed,
                            TensorFile &file) {
  const zbc_rt_program &p = *rank->program;
  std::string manifestPath = checkpointManifest(dir);
  std::string text;
  if (std::string error = readFileBytes(manifestPath, text); !error.empty())
    return error;
  JsonValue manifest;
  std::string error;
  if (!parseJson(text, manifest, error) || manifest.kind != JsonValue::Object)
    return fmt::format("'{}' is not a checkpoint manifest: {}", manifestPath,
                       error.empty() ? "not a JSON object" : error);
  auto number = [&](const char *key, int64_t &out) {
    const JsonValue *v = manifest.find(key);
    if (!v || v->kind != JsonValue::Number)
      return false;
    out = v->number;
    return true;
  };
  auto string = [&](const char *key, std::string &out) {
    const JsonValue *v = manifest.find(key);
    if (!v || v->kind != JsonValue::String)
      return false;
    out = v->string;
    return true;
  };
  std::string format, model, modelHash, schedule, optimizer;
  int64_t step = 0, seedValue = 0, ranks = 0, stages = 0, microbatches = 0;
  const JsonValue *files = manifest.find("files");
  if (!string("format", format) || format != kFormat ||
      !number("step", step) || step < 0 || !number("seed", seedValue) ||
      !string("model", model) || !string("model_hash", modelHash) ||
      !string("schedule", schedule) || !string("optimizer", optimizer) ||
      !number("ranks", ranks) || !number("stages", stages) ||
      !number("microbatches", microbatches) || !files ||
      files->kind != JsonValue::Array)
    return fmt::format("'{}' is not a {} manifest (a field is missing or "
                       "malformed)",
                       manifestPath, kFormat);
  if (model != p.model || modelHash != p.model_hash)
    return fmt::format("'{}' is a checkpoint of model '{}' (IR hash {}); "
                       "this program is of model '{}' (IR hash {})",
                       dir, model, modelHash, p.model, p.model_hash);
  if (schedule != p.schedule || ranks != p.ranks || stages != p.stages ||
      microbatches != p.microbatches || optimizer != p.optimizer)
    return fmt::format("'{}' was trained under {} on {} ranks ({} stages, {} "
                       "microbatches, {}); this program runs {} on {} ranks "
                       "({} stages, {} microbatches, {})",
                       dir, schedule, ranks, stages, microbatches, optimizer,
                       p.schedule, p.ranks, p.stages, p.microbatches,
                       p.optimizer);
  if (rank->options.seedGiven &&
      static_cast<uint64_t>(seedValue) != rank->options.seed)
    return fmt::format("'{}' was trained with --seed {}, not {} (leave "
                       "--seed out to continue with the checkpoint's)",
                       dir, seedValue, rank->options.seed);
  // This rank's file.
  const JsonValue *entry = nullptr;
  for (const JsonValue &f : files->elements)
    if (const JsonValue *r = f.find("rank");
        r && r->kind == JsonValue::Number && r->number == p.rank)
      entry = &f;
  const JsonValue *bytesField = entry ? entry->find("bytes") : nullptr;
  const JsonValue *sumField = entry ? entry->find("fnv1a64") : nullptr;
  if (!bytesField || bytesField->kind != JsonValue::Number || !sumField ||
      sumField->kind != JsonValue::String)
    return fmt::format("'{}' lists no file of rank {}", manifestPath, p.rank);
  std::string path = fmt::format("{}/rank{}.safetensors", dir, p.rank);
  std::string bytes;
  if (std::string e = readFileBytes(path, bytes); !e.empty())
    return e;
  if (static_cast<int64_t>(bytes.size()) != bytesField->number)
    return fmt::format("'{}' has {} bytes, its manifest says {}: the file is "
                       "truncated or was replaced",
                       path, bytes.size(), bytesField->number);
  if (hex(fnv1a64(bytes)) != sumField->string)
    return fmt::format("'{}' fails its checksum (FNV-1a {}, the manifest "
                       "says {}): the file is corrupted",
                       path, hex(fnv1a64(bytes)), sumField->string);
  if (std::string e = decodeSafeTensors(path, bytes, file); !e.empty())
    return e;
  std::string missing;
  forEachTensor(p, [&](const std::string &name, int32_t buffer,
                       const zbc_rt_param &) {
    auto it = file.find(name);
    int64_t size = p.buffers[buffer].bytes;
    if (missing.empty() &&
        (it == file.end() || it->second.dtype != "F32" ||
         static_cast<int64_t>(it->second.data.size()) != size))
      missing = fmt::format("'{}' has no F32 tensor '{}' of {} bytes", path,
                            name, size);
  });
  if (!missing.empty())
    return missing;
  stepsDone = step;
  seed = static_cast<uint64_t>(seedValue);
  return {};
}

} // namespace

std::string writeCheckpoint(zbc_rt_rank *rank, int64_t stepsDone) {
  const zbc_rt_program &p = *rank->program;
  std::string root = rank->options.checkpointDir;
  std::string dir = checkpointDirectory(root, stepsDone);
  // The replicas hold the same state: the first writes it for all.
  bool writes = rank->transport->replica() == 0;
  std::string error = writes ? makeDirectory(root) : std::string();
  if (error.empty() && writes)
    error = makeDirectory(dir);
  std::string bytes;
  if (error.empty() && writes) {
    TensorFile file;
    forEachTensor(p, [&](const std::string &name, int32_t buffer,
                         const zbc_rt_param &param) {
      StoredTensor t;
      t.dtype = "F32";
      t.shape.assign(param.shape, param.shape + param.rank_of_shape);
      t.data.resize(static_cast<size_t>(p.buffers[buffer].bytes));
      if (std::string e = rank->device->read(p.buffers[buffer].offset,
                                             t.data.data(),
                                             p.buffers[buffer].bytes);
          !e.empty() && error.empty())
        error = e;
      file[name] = std::move(t);
    });
    bytes = encodeSafeTensors(file, {{"model", p.model},
                                     {"schedule", p.schedule},
                                     {"rank", std::to_string(p.rank)},
                                     {"step", std::to_string(stepsDone)}});
    if (error.empty())
      error = writeFileAtomically(
          fmt::format("{}/rank{}.safetensors", dir, p.rank), bytes);
  }
  std::vector<uint64_t> sizes, checksums;
  bool failed;
  {
    InsideMPI mpi(rank, "the checkpoint's collectives");
    sizes = rank->transport->allGather(bytes.size());
    checksums = rank->transport->allGather(fnv1a64(bytes));
    failed = rank->transport->anyFailed(!error.empty());
  }
  if (failed)
    return error.empty() ? "another rank could not write its part of the "
                           "checkpoint (its message above)"
                         : error;
  // Every part is on disk: the manifest makes the checkpoint. (Sizes and
  // checksums are by job rank: replica 0's pipeline ranks come first.)
  if (rank->transport->rank() == 0)
    error = writeFileAtomically(
        checkpointManifest(dir),
        manifestText(p, stepsDone, rank->options.seed, sizes, checksums));
  {
    InsideMPI mpi(rank, "the checkpoint's collectives");
    failed = rank->transport->anyFailed(!error.empty());
  }
  if (failed)
    return error.empty() ? "rank 0 could not write the checkpoint's manifest"
                         : error;
  return {};
}

std::string resumeFromCheckpoint(zbc_rt_rank *rank, int64_t &stepsDone) {
  const zbc_rt_program &p = *rank->program;
  const std::string &given = rank->options.resumeDir;
  std::string dir = latestCheckpoint(given);
  std::string error;
  TensorFile file;
  uint64_t seed = 0;
  if (dir.empty())
    error = fmt::format("'{}' holds no checkpoint (no manifest.json in it or "
                        "in a step-N under it; a checkpoint whose writing was "
                        "cut short has none)",
                        given);
  else
    error = checkCheckpoint(rank, dir, stepsDone, seed, file);
  if (rank->transport->anyFailed(!error.empty()))
    return error.empty() ? fmt::format("not resuming from '{}': another rank "
                                       "refused it (its message above)",
                                       dir)
                         : error;
  forEachTensor(p, [&](const std::string &name, int32_t buffer,
                       const zbc_rt_param &) {
    const StoredTensor &t = file.at(name);
    if (std::string e = rank->device->write(p.buffers[buffer].offset,
                                            t.data.data(),
                                            static_cast<int64_t>(t.data.size()));
        !e.empty() && error.empty())
      error = e;
  });
  if (error.empty())
    error = refreshWorkingCopies(rank);
  if (!error.empty())
    return error;
  rank->options.seed = seed;
  if (rank->transport->rank() == 0 && !rank->options.quiet)
    fmt::print("resuming from '{}' after step {}\n", dir, stepsDone);
  return {};
}

} // namespace zbc::rt
