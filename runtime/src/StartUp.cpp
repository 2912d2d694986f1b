//===- StartUp.cpp - a rank's start-up, checked and agreed before any step -===//
//
// Everything between the options and the first step: MPI and the checks
// every rank agrees on (the job's size, the executables' order, one compile,
// one command line), the arena, where the results go (Note [Files checked
// first]), the checkpoint to resume from (before the data: its seed orders
// it; Note [Checkpoints]) and the checkpoint directory's history (Note [One
// history per checkpoint directory]), the data (and the sample counts the
// data ranks must share), the communicators, the parameters. Every rank
// reaches every collective and every gate (an agreement that all went
// well), whatever failed before it, so that all of them learn of a failure
// and exit 1 with a message and none waits alone; each step that may block
// is timed by the watchdog (Note [Lost ranks]).
//
//===----------------------------------------------------------------------===//

#include "StartUp.h"

#include "Checkpoint.h"
#include "InitWeights.h"
#include "Rank.h"

#include "zbc/contracts/CheckpointLayout.h"
#include "zbc/contracts/Files.h"
#include "zbc/contracts/Fnv1a.h"
#include "zbc/contracts/SyntheticData.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace zbc::rt {
namespace {

/// `hash` extended by one part of a fingerprint and a separator (0xff, in
/// no text), so that parts cannot run into each other.
uint64_t withPart(uint64_t hash, const char *part) {
  return fnv1a64("\xff", fnv1a64(part ? part : "", hash));
}

/// A stable fingerprint of what the program was compiled as, so that ranks
/// of different compiles refuse to train together.
uint64_t fingerprint(const zbc_rt_program &p) {
  uint64_t hash = kFnv1aBasis;
  for (const char *part : {p.model, p.model_hash, p.schedule, p.optimizer})
    hash = withPart(hash, part);
  for (int32_t n : {p.ranks, p.stages, p.microbatches})
    hash = withPart(hash, std::to_string(n).c_str());
  return hash;
}

/// What is wrong with --eval-data beside the other options, or "": it holds
/// held-out samples of a .safetensors --data, evaluated every --eval-every.
std::string checkEvalData(const zbc_rt_rank *rank) {
  const Options &o = rank->options;
  if (!o.evalEvery)
    return "--eval-data needs --eval-every K: when to evaluate on it";
  if (o.dataFile.empty() || !isSafeTensorsPath(o.dataFile))
    return "--eval-data holds the held-out samples of a .safetensors --data; "
           "a token stream holds out its own last tenth";
  return {};
}

/// The ranks' options must agree (the optimizer and the evaluation are
/// collective): a fingerprint of the command line.
uint64_t argumentsFingerprint(int argc, char **argv) {
  uint64_t hash = kFnv1aBasis;
  for (int i = 1; i < argc; ++i)
    hash = withPart(hash, argv[i]);
  return hash;
}

std::string initParams(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  std::vector<float> values;
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    Generator gen(rank->options.seed, std::string("param.") + param.name);
    auto kind = static_cast<InitKind>(param.init);
    values.resize(static_cast<size_t>(shardOf(rank, param).elements));
    for (float &value : values)
      value = static_cast<float>(gen.initValue(kind, param.scale));
    if (std::string error = writeWholeWeights(rank, param, values);
        !error.empty())
      return error;
  }
  return refreshWorkingCopies(rank);
}

/// The ranks' lines reach the terminal through mpirun in no set order: a
/// rank that stops because another failed cannot say that rank's message
/// is "above" (it may come later), only that the other rank says why.
void printStartUpError(const zbc_rt_rank *rank, const std::string &error) {
  if (!error.empty())
    fmt::print(stderr, "zbc rank {}: error: {}\n", rank->program->rank, error);
  else
    fmt::print(stderr, "zbc rank {}: error: stopping before the first step: "
                       "another rank failed at start-up (that rank's own "
                       "message says why)\n",
               rank->program->rank);
}

/// Note [Files checked first] (Files.h): every directory the run writes
/// into is made and written once before the first step, and the checkpoint
/// directory is locked for the job (rank 0 holds the lock).
std::string checkOutputs(zbc_rt_rank *rank) {
  const Options &o = rank->options;
  if (rank->transport->replica() != 0)
    return {}; // the first replica writes for all
  struct Output {
    const std::string &dir;
    const char *option;
  };
  std::string checkpoints = o.checkpointEvery ? o.checkpointDir : "";
  for (Output out : {Output{o.saveDir, "--save"},
                     Output{o.saveInitDir, "--save-init"},
                     Output{o.reportDir, "--report"},
                     Output{o.traceDir, "--trace"},
                     Output{checkpoints, "--checkpoint-dir"}})
    if (!out.dir.empty())
      if (std::string e = checkWritableDirectory(out.dir, out.option);
          !e.empty())
        return e;
  if (!checkpoints.empty() && rank->transport->rank() == 0)
    return lockDirectory(checkpoints, ".zbc-checkpoints.lock",
                         fmt::format("the job of model '{}' writing "
                                     "checkpoints",
                                     rank->program->model));
  return {};
}

} // namespace

int startUp(zbc_rt_rank *rank, int &argc, char **&argv, StartedRun &log) {
  ResumePoint resume;
  const zbc_rt_program &p = *rank->program;
  Options &o = rank->options;
  std::string error;
  // The command line, before MPI_Init may edit it.
  uint64_t arguments = argumentsFingerprint(argc, argv);
  Backend backend = createBackend(&argc, &argv, error);
  if (!backend.transport) {
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, error);
    return 1;
  }
  Transport *transport = backend.transport;
  rank->transport.reset(transport);
  rank->device.reset(backend.device);
  rank->watchdog.start(rank, transport->rank());
  // Every rank reaches each collective below and each gate (an agreement
  // that all went well), whatever failed before it, so that all of them
  // learn of a failure and none waits alone. The watchdog times each step
  // that may block (Note [Lost ranks]).
  auto gate = [&]() {
    bool failed;
    {
      StartUpStep step(rank, "the agreement that every rank started well");
      failed = transport->anyFailed(!error.empty());
    }
    if (!failed)
      return false;
    printStartUpError(rank, error);
    rank->watchdog.status(error.empty()
                              ? "stopped: another rank failed at start-up\n"
                              : "failed: " + error + "\n");
    rank->watchdog.stop();
    transport->finish();
    return true;
  };
  {
    StartUpStep step(rank, "the start-up checks every rank takes part in");
    if (!transport->configure(p.ranks).empty())
      error = fmt::format("this job has {} ranks, but the program was "
                          "compiled for {} (or a multiple: one per rank of "
                          "each data-parallel replica; launch.sh starts "
                          "them)",
                          transport->size(), p.ranks);
    else if (transport->replicas() != p.replicas)
      error = fmt::format("this job has {} processes, {} replicas of the "
                          "{}-rank pipeline, but the program was compiled "
                          "for {} (its all-reduces sum that many: compile "
                          "with --data-parallel {})",
                          transport->size(), transport->replicas(), p.ranks,
                          p.replicas, transport->replicas());
    else if (transport->rank() % p.ranks != p.rank)
      error = fmt::format("MPI started rank {}'s executable as rank {} "
                          "(launch the executables in rank order, replica "
                          "after replica)",
                          p.rank, transport->rank() % p.ranks);
    if (!transport->allEqual(fingerprint(p)) && error.empty())
      error = "the ranks of this job run programs of different compiles "
              "(model, schedule, ranks, microbatches or optimizer differ)";
    if (!transport->allEqual(arguments) && error.empty())
      error = "the ranks of this job were started with different options "
              "(launch.sh gives every rank the same)";
  }
  if (error.empty() && !rank->device)
    error = "no device for this rank (the backend found none)";
  if (error.empty()) {
    StartUpStep step(rank, "allocating the arena");
    error = rank->device->allocate(p);
  }
  if (error.empty()) {
    StartUpStep step(rank, "checking where the results go");
    error = checkOutputs(rank);
  }
  if (gate())
    return 1;
  // The checkpoint first: its seed orders the data (Note [Checkpoints]).
  if (!o.resumeDir.empty()) {
    StartUpStep step(rank, "choosing the checkpoint to resume from");
    error = chooseCheckpoint(rank, resume);
    log.firstStep = resume.stepsDone;
  }
  if (error.empty() && o.checkpointEvery && transport->rank() == 0)
    error = checkpointRootConflict(o.checkpointDir, resume.dir,
                                   resume.stepsDone, resume.refused);
  if (error.empty()) {
    StartUpStep step(rank, "opening the data file");
    error = rank->data.open(p, o.dataFile, o.binTokens, o.seed);
  }
  if (error.empty() && !o.evalDataFile.empty()) {
    StartUpStep step(rank, "opening the held-out samples");
    error = checkEvalData(rank);
    if (error.empty())
      error = rank->data.openHeldOut(o.evalDataFile);
  }
  {
    // Each rank checked its own keys; the ranks that read samples from one
    // file (the first stage's inputs, the last's labels) must have the same
    // number of them, or microbatch j pairs one key's sample with another's
    // (collective: every rank takes part).
    StartUpStep step(rank, "the agreement on the data's samples");
    int64_t samples = rank->data.samples();
    int64_t most = transport->maximum(samples);
    int64_t fewest = samples > 0 ? -transport->maximum(-samples)
                                 : -transport->maximum(-most);
    if (error.empty() && samples > 0 && most != fewest)
      error = fmt::format("'{}': the keys this rank reads ({}) have {} "
                          "samples, another rank's {}: every data key needs "
                          "one sample per microbatch read, so that sample i "
                          "of each is read together",
                          o.dataFile, rank->data.keyNames(), samples,
                          samples == most ? fewest : most);
  }
  bool tokens = rank->data.kind() == DataSource::Kind::Tokens;
  if (error.empty() && o.evalEvery && p.data_count && !tokens &&
      o.evalDataFile.empty())
    error = "--eval-every needs held-out data: a token stream (--data FILE: "
            "text, .npy or .bin, whose last tenth is held out) or "
            "--eval-data FILE.safetensors beside a .safetensors --data";
  if (error.empty() && o.evalEvery && tokens)
    error = checkEvaluation(rank->data.tokens(), rank->data.rows(), o.dataFile);
  {
    StartUpStep step(rank, "setting up the communicators");
    // Collective: every rank takes part, whatever failed before.
    if (std::string e = transport->prepareCommunicators(p); error.empty())
      error = e;
  }
  if (error.empty())
    error = transport->prepare(p, rank->device->arena());
  if (error.empty() && !o.initPath.empty()) {
    StartUpStep step(rank, "checking --init's checkpoint");
    error = checkInitialWeights(rank, o.initPath);
  }
  if (gate())
    return 1;
  rank->ledger.init(p);
  rank->copyPieces.assign(static_cast<size_t>(p.frame_slots), {});
  rank->copyIssuedAt.assign(static_cast<size_t>(p.op_count), -1.0);
  // The barrier above ended on every rank at about this moment.
  rank->timeline.init(p, o.traceDir.empty() ? 0 : o.traceSteps, Profile::now());
  rank->profile.computeSeconds.assign(
      static_cast<size_t>(p.stages) * ZBC_RT_COMPUTE_KIND_COUNT, 0.0);
  rank->profile.computeCount.assign(
      static_cast<size_t>(p.stages) * ZBC_RT_COMPUTE_KIND_COUNT, 0);
  initOptimizer(rank);
  error = initParams(rank);
  if (error.empty() && !resume.dir.empty())
    error = loadCheckpoint(rank, resume);
  else if (error.empty() && !o.initPath.empty()) {
    double start = Profile::now();
    InitialWeightsRead read;
    error = loadInitialWeights(rank, o.initPath, read);
    read.seconds = Profile::now() - start;
    log.init = read;
  }
  if (!error.empty()) {
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, error);
    rank->watchdog.status("failed: " + error + "\n");
    rank->watchdog.stop();
    transport->abort(1);
  }
  // Every rank runs the same evaluation batches (each replica its share of
  // each); only the data ranks know the held-out split.
  if (o.evalEvery) {
    StartUpStep step(rank, "agreeing on the evaluation batches");
    int64_t perBatch = int64_t(p.microbatches) * transport->replicas();
    // --eval-data: every held-out sample once, a microbatch each.
    int64_t heldOut = rank->data.heldOutSamples();
    log.evalBatches = transport->maximum(
        tokens ? evalBatches(rank->data.tokens(), perBatch, rank->data.rows())
               : (heldOut + perBatch - 1) / perBatch);
    rank->evalMicrobatches = transport->maximum(
        tokens ? evalMicrobatches(rank->data.tokens(), rank->data.rows())
               : heldOut);
  }
  initLossWeights(rank);
  if (tokens) {
    const TokenCorpus &corpus = rank->data.tokens();
    log.entropy = corpus.entropy;
    if (p.loss >= 0 && !o.quiet && transport->replica() == 0)
    {
      // The evaluation's share of the held-out windows, where it is not all.
      int64_t evaluated = rank->evalMicrobatches * rank->data.rows();
      fmt::print("data: '{}' {}: {} training windows of {} tokens, {} held "
                 "out{}; unigram entropy {:.4f} nats/token\n",
                 o.dataFile,
                 corpus.type == TokenType::Byte
                     ? fmt::format("as text, {} bytes", corpus.tokens)
                     : fmt::format("of {} {} token ids", corpus.tokens,
                                   tokenTypeName(corpus.type)),
                 corpus.trainWindows(), corpus.sequence,
                 corpus.heldOutWindows(),
                 o.evalEvery && evaluated < corpus.heldOutWindows()
                     ? fmt::format(" ({} evaluated: whole microbatches of {})",
                                   evaluated, rank->data.rows())
                     : std::string(),
                 log.entropy);
    }
  }
  rank->startingUp = false;
  return 0;
}

namespace {

/// This process's rank in the job before MPI is up: what the launchers
/// put in the environment (Open MPI, MPICH/PMI, PMIx, Slurm), else
/// `fallback`.
int jobRankFromEnvironment(int fallback) {
  for (const char *name :
       {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return fallback;
}

} // namespace

void writeEarlyStatus(int argc, char **argv, int rank,
                      const std::string &text) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--status-dir")) {
      std::ofstream out(fmt::format("{}/rank{}.status", argv[i + 1],
                                    jobRankFromEnvironment(rank)));
      out << text;
      return;
    }
}

} // namespace zbc::rt
