//===- Options.cpp - the command line of a rank executable ----------------===//
//
// Every rank of a job gets the same arguments (launch.sh passes them to
// each executable). Numbers are parsed strictly: a value that is not a
// whole number (or a finite positive real, for hyperparameters) is an error
// that names the option.
//
//===----------------------------------------------------------------------===//

#include "Rank.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace zbc::rt {

namespace {

bool parseInt(const char *text, int64_t min, int64_t max, int64_t &out) {
  if (!*text)
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (errno || *end || value < min || value > max)
    return false;
  out = value;
  return true;
}

bool parseReal(const char *text, double &out) {
  if (!*text)
    return false;
  errno = 0;
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (errno || *end || !std::isfinite(value) || value < 0)
    return false;
  out = value;
  return true;
}

/// The option's path field, if `arg` takes a path.
std::string *pathOption(const char *arg, Options &o) {
  struct Entry {
    const char *flag;
    std::string Options::*field;
  };
  static const Entry entries[] = {
      {"--data", &Options::dataFile},       {"--save", &Options::saveDir},
      {"--eval-data", &Options::evalDataFile},
      {"--save-init", &Options::saveInitDir}, {"--report", &Options::reportDir},
      {"--checkpoint-dir", &Options::checkpointDir},
      {"--resume", &Options::resumeDir},
      {"--init", &Options::initPath},
      {"--status-dir", &Options::statusDir},
      {"--trace", &Options::traceDir}};
  for (const Entry &e : entries)
    if (!std::strcmp(arg, e.flag))
      return &(o.*e.field);
  return nullptr;
}

/// The option's count field, if `arg` takes a whole number of steps.
int64_t *countOption(const char *arg, Options &o) {
  struct Entry {
    const char *flag;
    int64_t Options::*field;
  };
  static const Entry entries[] = {{"--eval-every", &Options::evalEvery},
                                  {"--warmup", &Options::warmupSteps},
                                  {"--decay-steps", &Options::decaySteps},
                                  {"--checkpoint-every",
                                   &Options::checkpointEvery},
                                  {"--trace-steps", &Options::traceSteps}};
  for (const Entry &e : entries)
    if (!std::strcmp(arg, e.flag))
      return &(o.*e.field);
  return nullptr;
}

} // namespace

std::string optionsHelp(const char *program) {
  return fmt::format(
      "usage: {} [options]   (one rank of a zbc pipeline; run launch.sh)\n"
      "  --steps N          training steps (default 1)\n"
      "  --seed S           seed of the parameters and the synthetic data "
      "(default 0)\n"
      "  --data FILE        read the microbatches from FILE: a .safetensors "
      "file (a tensor per\n"
      "                     data key, e.g. \"input.x\", samples stacked on "
      "a first dimension),\n"
      "                     a token stream (.npy: 1-D uint16, uint32, "
      "int32 or int64; .bin: raw\n"
      "                     uint16), or any other file as text (bytes are "
      "tokens); a stream's\n"
      "                     last tenth is held out\n"
      "  --data-dtype T     the ids of a .bin file: uint16 (default, "
      "nanoGPT's) or uint32\n"
      "  --save DIR         write this rank's parameters after the run "
      "(DIR/rankN.safetensors)\n"
      "  --save-init DIR    write them before the first step\n"
      "  --report DIR       write DIR/rankN.json: losses, measured and "
      "predicted peak bytes\n"
      "  --lr X, --momentum X, --weight-decay X, --beta1 X, --beta2 X, "
      "--eps X\n"
      "                     optimizer hyperparameters (defaults: SGD lr "
      "0.01 momentum 0;\n"
      "                     AdamW lr 0.001 betas 0.9 0.999 eps 1e-8 weight "
      "decay 0.01)\n"
      "  --clip-norm X      clip the gradient's global norm (over all "
      "ranks) to X (default: no clipping)\n"
      "  --warmup N         warm the learning rate up linearly over the "
      "first N steps\n"
      "  --decay-steps N    then decay it along a cosine to --min-lr by step "
      "N (default: constant)\n"
      "  --min-lr X         the learning rate at the end of the decay "
      "(default: lr / 10)\n"
      "  --eval-every K     every K steps and at the end, print the loss on "
      "the held-out split\n"
      "                     (a token stream's last tenth, or --eval-data's "
      "samples)\n"
      "  --eval-data FILE   the held-out samples of a .safetensors --data: "
      "a file of its keys\n"
      "                     (zbc pack --held-out writes one); the loss is the "
      "mean over its\n"
      "                     counted labels\n"
      "  --checkpoint-every N  write a checkpoint every N steps and at the "
      "end\n"
      "  --checkpoint-dir DIR  where checkpoints go (DIR/step-N; default "
      "checkpoints)\n"
      "  --resume DIR       continue from a checkpoint (DIR/step-N, or the "
      "latest under DIR\n"
      "                     that loads)\n"      "  --init PATH        the parameters from a Hugging Face checkpoint "
      "instead of the seed:\n"
      "                     a directory (model.safetensors, or "
      "model.safetensors.index.json\n"
      "                     and its shards) or one .safetensors file\n"
      "  --timeout S        give up on a peer (or a step of start-up) after "
      "S seconds in one\n"
      "                     wait (default 30; 1e9 or more: never)\n"
      "  --trace DIR        write DIR/rankN.json: when each op of the last "
      "steps ran\n"
      "  --trace-steps N    how many last steps --trace keeps (default 8)\n"
      "  --wait-collectives wait for each collective as it is issued, so "
      "that --trace times\n"
      "                     each alone (zbc profile measures them so; "
      "slower steps)\n"
      "  --status-dir DIR   keep DIR/rankN.status: running, done, failed or "
      "stopped (zbc run reads it)\n"
      "  --progress-bar     redraw one progress line (zbc run: when its "
      "output is a terminal)\n"
      "  --quiet            no progress lines\n"
      "  --check-options    check these options and exit (0: the ranks "
      "would take them; zbc run\n"
      "                     asks before it launches)\n",
      program);
}

std::string parseOptions(int argc, char **argv, Options &options) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  options.lr = options.momentum = options.weightDecay = nan;
  options.beta1 = options.beta2 = options.epsilon = nan;
  options.minLr = nan;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    auto value = [&](const char *&out) -> bool {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    const char *text = nullptr;
    auto real = [&](double &into) -> std::string {
      if (!value(text))
        return fmt::format("{} needs a value", arg);
      if (!parseReal(text, into))
        return fmt::format("{} needs a finite non-negative number, got '{}'",
                           arg, text);
      return {};
    };
    std::string error;
    if (!std::strcmp(arg, "--help") || !std::strcmp(arg, "-h")) {
      options.help = true;
    } else if (!std::strcmp(arg, "--check-options")) {
      options.checkOnly = true;
    } else if (!std::strcmp(arg, "--quiet")) {
      options.quiet = true;
    } else if (!std::strcmp(arg, "--progress-bar")) {
      options.progressBar = true;
    } else if (!std::strcmp(arg, "--wait-collectives")) {
      options.waitCollectives = true;
    } else if (!std::strcmp(arg, "--steps")) {
      int64_t steps = 0;
      if (!value(text) || !parseInt(text, 1, int64_t(1) << 40, steps))
        return fmt::format("--steps needs a whole number of steps >= 1, got "
                           "'{}'",
                           text ? text : "");
      options.steps = steps;
    } else if (!std::strcmp(arg, "--seed")) {
      int64_t seed = 0;
      if (!value(text) ||
          !parseInt(text, 0, std::numeric_limits<int64_t>::max(), seed))
        return fmt::format("--seed needs a whole number >= 0, got '{}'",
                           text ? text : "");
      options.seed = static_cast<uint64_t>(seed);
      options.seedGiven = true;
    } else if (std::string *path = pathOption(arg, options)) {
      if (!value(text) || !*text)
        return fmt::format("{} needs a path", arg);
      *path = text;
    } else if (int64_t *count = countOption(arg, options)) {
      if (!value(text) || !parseInt(text, 0, int64_t(1) << 40, *count))
        return fmt::format("{} needs a whole number >= 0, got '{}'", arg,
                           text ? text : "");
    } else if (!std::strcmp(arg, "--data-dtype")) {
      if (!value(text) || !parseBinTokenType(text, options.binTokens))
        return fmt::format("--data-dtype needs uint16 or uint32 (the ids of "
                           "a .bin file), got '{}'",
                           text ? text : "");
      options.binTokensGiven = true;
    } else if (!std::strcmp(arg, "--lr")) {
      error = real(options.lr);
    } else if (!std::strcmp(arg, "--momentum")) {
      error = real(options.momentum);
    } else if (!std::strcmp(arg, "--weight-decay")) {
      error = real(options.weightDecay);
    } else if (!std::strcmp(arg, "--beta1")) {
      error = real(options.beta1);
    } else if (!std::strcmp(arg, "--beta2")) {
      error = real(options.beta2);
    } else if (!std::strcmp(arg, "--eps")) {
      error = real(options.epsilon);
    } else if (!std::strcmp(arg, "--clip-norm")) {
      error = real(options.clipNorm);
    } else if (!std::strcmp(arg, "--min-lr")) {
      error = real(options.minLr);
    } else if (!std::strcmp(arg, "--timeout")) {
      error = real(options.timeoutSeconds);
      if (error.empty() && !(options.timeoutSeconds > 0))
        error = "--timeout needs a number of seconds > 0";
    } else {
      return fmt::format("unknown option '{}' (--help lists them)", arg);
    }
    if (!error.empty())
      return error;
  }
  if (options.decaySteps && options.decaySteps <= options.warmupSteps)
    return fmt::format("--decay-steps {} must come after the {} warm-up steps",
                       options.decaySteps, options.warmupSteps);
  if (options.binTokensGiven &&
      dataFormatOf(options.dataFile) != DataFormat::Bin)
    return fmt::format("--data-dtype names the ids of a .bin file; --data "
                       "'{}' is {}",
                       options.dataFile,
                       options.dataFile.empty()      ? "not given"
                       : isSafeTensorsPath(options.dataFile) ? "safetensors"
                       : dataFormatOf(options.dataFile) == DataFormat::Npy
                           ? "a .npy array, whose header names its dtype"
                           : "text (bytes are tokens)");
  if (!options.initPath.empty() && !options.resumeDir.empty())
    return "--init and --resume both set the parameters: a resumed run "
           "continues its checkpoint; give one of them";
  return {};
}

} // namespace zbc::rt
