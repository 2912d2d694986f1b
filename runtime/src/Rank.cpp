//===- Rank.cpp - zbc_rt_main and the calls of the rank's order -----------===//
//
// Start-up (options, MPI, the checks every rank agrees on before any step,
// the arena, the parameters), the step loop (the generated `step`, the end
// of step: outstanding transfers, the ledger's sweep, the loss line), and
// the end (the memory report, --save, --report). Failures: at start-up every
// rank learns that one failed (a collective) and exits 1 with a message; in
// a step the failing rank prints where and why and aborts the job, so no
// rank waits forever for a peer that stopped.
//
//===----------------------------------------------------------------------===//

#include "Rank.h"

#include "cpu/kernels/Kernels.h"
#include "zbc/runtime/SafeTensors.h"
#include "zbc/runtime/SyntheticData.h"

#include <cblas.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace zbc::rt {

double Profile::now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

zbc_rt_status fail(zbc_rt_rank *rank, const std::string &message) {
  if (!rank->error.empty())
    return ZBC_RT_ERROR; // the first failure is the one to report
  const zbc_rt_program &p = *rank->program;
  std::string where = fmt::format("rank {}", p.rank);
  if (rank->op >= 0)
    where += fmt::format(", {} (op {} of its order)", p.ops[rank->op].name,
                         rank->op);
  where += fmt::format(", step {}", rank->step + 1);
  rank->error = where + ": " + message;
  return ZBC_RT_ERROR;
}

int32_t resolve(zbc_rt_rank *rank, int32_t id) {
  const zbc_rt_program &p = *rank->program;
  if (id < 0) {
    int32_t slot = -1 - id;
    if (!rank->frame || rank->op < 0 || slot >= rank->frameSize) {
      fail(rank, fmt::format("frame slot {} outside the running compute's "
                             "frame",
                             slot));
      return -1;
    }
    id = rank->frame[slot];
  }
  if (id < 0 || id >= p.buffer_count) {
    fail(rank, fmt::format("buffer {} outside the program's {} buffers", id,
                           p.buffer_count));
    return -1;
  }
  return id;
}

namespace {

/// Set on the step's outstanding transfers at its end.
void transferDone(void *context, int32_t op) {
  auto *rank = static_cast<zbc_rt_rank *>(context);
  const zbc_rt_op &o = rank->program->ops[op];
  if (o.what == ZBC_RT_OP_SEND)
    rank->ledger.sendCompleted(o.buffer);
  else if (o.what == ZBC_RT_OP_RECV)
    rank->ledger.recvCompleted(o.buffer);
}

/// A stable fingerprint of what the program was compiled as, so that ranks
/// of different compiles refuse to train together.
uint64_t fingerprint(const zbc_rt_program &p) {
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&](const char *text) {
    for (; text && *text; ++text)
      hash = (hash ^ static_cast<unsigned char>(*text)) * 0x100000001b3ull;
    hash = (hash ^ 0xff) * 0x100000001b3ull;
  };
  mix(p.model);
  mix(p.schedule);
  mix(p.optimizer);
  mix(std::to_string(p.ranks).c_str());
  mix(std::to_string(p.stages).c_str());
  mix(std::to_string(p.microbatches).c_str());
  return hash;
}

const char *dtypeOf(int32_t element) {
  return element == ZBC_RT_F32 ? "F32" : element == ZBC_RT_I32 ? "I32" : "I64";
}

int64_t elementsOf(const int64_t *shape, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i)
    n *= shape[i];
  return n;
}

std::string readDataFile(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  TensorFile file;
  std::string error = readSafeTensors(rank->options.dataFile, file);
  if (!error.empty())
    return error;
  rank->data.samples.resize(p.data_count);
  rank->data.count.assign(p.data_count, 0);
  for (int32_t d = 0; d < p.data_count; ++d) {
    const zbc_rt_data &data = p.data[d];
    auto it = file.find(data.key);
    if (it == file.end())
      return fmt::format("'{}' has no tensor '{}' (this rank reads it)",
                         rank->options.dataFile, data.key);
    const StoredTensor &t = it->second;
    bool shapeMatches = t.shape.size() == static_cast<size_t>(data.rank_of_shape) + 1;
    for (int32_t i = 0; shapeMatches && i < data.rank_of_shape; ++i)
      shapeMatches = t.shape[i + 1] == data.shape[i];
    if (t.dtype != dtypeOf(data.element) || !shapeMatches || t.shape[0] < 1)
      return fmt::format("'{}': tensor '{}' must be {} of shape [N, {}] "
                         "(N >= 1 samples of one microbatch each)",
                         rank->options.dataFile, data.key,
                         dtypeOf(data.element),
                         fmt::join(data.shape, data.shape + data.rank_of_shape,
                                   ", "));
    if (data.element != ZBC_RT_F32) {
      // Integer data must be in range for the ops that read it.
      int64_t n = static_cast<int64_t>(t.data.size()) /
                  (data.element == ZBC_RT_I32 ? 4 : 8);
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = data.element == ZBC_RT_I32
                        ? reinterpret_cast<const int32_t *>(t.data.data())[i]
                        : reinterpret_cast<const int64_t *>(t.data.data())[i];
        if (v < 0 || v >= data.bound)
          return fmt::format("'{}': tensor '{}' holds {} at element {}, "
                             "outside [0, {})",
                             rank->options.dataFile, data.key, v, i,
                             data.bound);
      }
    }
    rank->data.count[d] = t.shape[0];
    rank->data.samples[d] = t.data;
  }
  return {};
}

void initParams(zbc_rt_rank *rank) {
  const zbc_rt_program &p = *rank->program;
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    const zbc_rt_buffer &buffer = p.buffers[param.param];
    auto *values = reinterpret_cast<float *>(rank->arena + buffer.offset);
    Generator gen(rank->options.seed, std::string("param.") + param.name);
    auto kind = static_cast<InitKind>(param.init);
    int64_t n = elementsOf(param.shape, param.rank_of_shape);
    for (int64_t e = 0; e < n; ++e)
      values[e] = static_cast<float>(gen.initValue(kind, param.scale));
  }
}

std::string saveParams(zbc_rt_rank *rank, const std::string &dir) {
  const zbc_rt_program &p = *rank->program;
  ::mkdir(dir.c_str(), 0777);
  TensorFile file;
  for (int32_t i = 0; i < p.param_count; ++i) {
    const zbc_rt_param &param = p.params[i];
    const zbc_rt_buffer &buffer = p.buffers[param.param];
    StoredTensor t;
    t.dtype = "F32";
    t.shape.assign(param.shape, param.shape + param.rank_of_shape);
    t.data.assign(rank->arena + buffer.offset,
                  rank->arena + buffer.offset + buffer.bytes);
    file[param.name] = std::move(t);
  }
  return writeSafeTensors(
      fmt::format("{}/rank{}.safetensors", dir, p.rank), file,
      {{"model", p.model ? p.model : ""},
       {"schedule", p.schedule ? p.schedule : ""},
       {"rank", std::to_string(p.rank)},
       {"step", std::to_string(rank->step)}});
}

} // namespace
} // namespace zbc::rt

using namespace zbc::rt;

/// The number of heap allocations made so far, when a test preloads a
/// counter that defines it (test/e2e/AllocationCounter.c); otherwise null.
/// zbc_rt_main reports the allocations made during steps, which must be 0.
extern "C" __attribute__((weak)) uint64_t zbc_rt_test_allocations(void);
/// Brackets the calls into MPI, whose internal allocations are not the
/// runtime's (the counter leaves them out).
extern "C" __attribute__((weak)) void zbc_rt_test_pause_allocations(int paused);

namespace {
/// While alive, the thread is inside MPI.
struct InsideMPI {
  InsideMPI() {
    if (zbc_rt_test_pause_allocations)
      zbc_rt_test_pause_allocations(1);
  }
  ~InsideMPI() {
    if (zbc_rt_test_pause_allocations)
      zbc_rt_test_pause_allocations(0);
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// The order
//===----------------------------------------------------------------------===//

extern "C" zbc_rt_status zbc_rt_compute(zbc_rt_rank *rank, int32_t op,
                                        zbc_rt_phase_fn phase) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || p.ops[op].what > ZBC_RT_OP_BW)
    return fail(rank, fmt::format("zbc_rt_compute of op {}, which is not a "
                                  "compute",
                                  op));
  const zbc_rt_op &o = p.ops[op];
  // The W of a fused BW of a split stage: the same op again, W's frame.
  bool again = rank->op == op && o.second_frame >= 0;
  rank->op = op;
  rank->frame = p.frames + (again ? o.second_frame : o.frame);
  rank->frameSize = again ? o.second_frame_size : o.frame_size;
  if (!again)
    rank->ledger.beginOp(p.ops[op].position);
  double begin = Profile::now();
  zbc_rt_status status = phase(rank);
  size_t slot = static_cast<size_t>(o.stage) * 4 + static_cast<size_t>(o.what);
  if (slot < rank->profile.computeSeconds.size()) {
    rank->profile.computeSeconds[slot] += Profile::now() - begin;
    rank->profile.computeCount[slot] += again ? 0 : 1;
  }
  rank->ledger.endOp(); // again for a second phase: the sweep takes the max
  return status;
}

namespace {

zbc_rt_status issue(zbc_rt_rank *rank, int32_t op, int32_t what) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || p.ops[op].what != what)
    return fail(rank, fmt::format("op {} is not the transfer issued", op));
  rank->op = op;
  rank->frame = nullptr;
  rank->frameSize = 0;
  const zbc_rt_op &o = p.ops[op];
  rank->ledger.beginOp(o.position);
  int32_t first = op, count = 1;
  if (what == ZBC_RT_OP_GROUP) {
    first = o.first_member;
    count = o.member_count;
  }
  for (int32_t i = first; i < first + count; ++i) {
    const zbc_rt_op &t = p.ops[i];
    std::string error = t.what == ZBC_RT_OP_SEND
                            ? rank->ledger.sendStarted(t.buffer)
                            : rank->ledger.recvStarted(t.buffer);
    if (!error.empty())
      return fail(rank, error);
  }
  double begin = Profile::now();
  std::string error;
  {
    InsideMPI mpi;
    error = rank->transport->start(first, count);
  }
  rank->profile.commSeconds += Profile::now() - begin;
  if (!error.empty())
    return fail(rank, error);
  return ZBC_RT_OK;
}

} // namespace

extern "C" zbc_rt_status zbc_rt_send(zbc_rt_rank *rank, int32_t op) {
  return issue(rank, op, ZBC_RT_OP_SEND);
}
extern "C" zbc_rt_status zbc_rt_recv(zbc_rt_rank *rank, int32_t op) {
  return issue(rank, op, ZBC_RT_OP_RECV);
}
extern "C" zbc_rt_status zbc_rt_group(zbc_rt_rank *rank, int32_t op) {
  return issue(rank, op, ZBC_RT_OP_GROUP);
}

extern "C" zbc_rt_status zbc_rt_wait(zbc_rt_rank *rank, int32_t op) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || p.ops[op].what < ZBC_RT_OP_SEND)
    return fail(rank, fmt::format("zbc_rt_wait of op {}, not a transfer", op));
  const zbc_rt_op &o = p.ops[op];
  int32_t first = op, count = 1;
  if (o.what == ZBC_RT_OP_GROUP) {
    first = o.first_member;
    count = o.member_count;
  }
  if (!rank->transport->pending(first))
    return fail(rank, fmt::format("waits for {}, which was not issued or was "
                                  "waited for already",
                                  o.name));
  rank->op = op;
  rank->frame = nullptr;
  rank->frameSize = 0;
  double begin = Profile::now();
  std::string error;
  {
    InsideMPI mpi;
    error = rank->transport->wait(first, count);
  }
  rank->profile.commSeconds += Profile::now() - begin;
  if (!error.empty())
    return fail(rank, error);
  for (int32_t i = first; i < first + count; ++i)
    transferDone(rank, i);
  return ZBC_RT_OK;
}

extern "C" zbc_rt_status zbc_rt_update(zbc_rt_rank *rank, int32_t index) {
  const zbc_rt_program &p = *rank->program;
  if (index < 0 || index >= p.param_count)
    return fail(rank, fmt::format("no parameter {}", index));
  const zbc_rt_param &param = p.params[index];
  const zbc_rt_buffer &buffer = p.buffers[param.param];
  auto at = [&](int32_t id) {
    return reinterpret_cast<float *>(rank->arena + p.buffers[id].offset);
  };
  int64_t n = buffer.bytes / 4;
  // The step's loss is the mean over its microbatches: each microbatch's
  // gradient counts 1/m (Note [Mean over microbatches] in ZB.md).
  float scale = static_cast<float>(1.0 / p.microbatches);
  const Options &o = rank->options;
  auto pick = [](double given, double fallback) {
    return std::isnan(given) ? fallback : given;
  };
  if (!std::strcmp(p.optimizer, "adamw")) {
    cpu::AdamWConfig config;
    config.lr = pick(o.lr, config.lr);
    config.beta1 = pick(o.beta1, config.beta1);
    config.beta2 = pick(o.beta2, config.beta2);
    config.epsilon = pick(o.epsilon, config.epsilon);
    config.weightDecay = pick(o.weightDecay, config.weightDecay);
    cpu::adamw(at(param.param), at(param.grad), at(param.state0),
               at(param.state1), n, config, rank->step + 1, scale);
  } else {
    cpu::SgdConfig config;
    config.lr = pick(o.lr, config.lr);
    config.momentum = pick(o.momentum, config.momentum);
    config.weightDecay = pick(o.weightDecay, config.weightDecay);
    cpu::sgdMomentum(at(param.param), at(param.grad), at(param.state0), n,
                     config, scale);
  }
  std::memset(at(param.grad), 0, static_cast<size_t>(buffer.bytes));
  return ZBC_RT_OK;
}

//===----------------------------------------------------------------------===//
// zbc_rt_main
//===----------------------------------------------------------------------===//

namespace {

int startUp(zbc_rt_rank *rank, int &argc, char **&argv) {
  const zbc_rt_program &p = *rank->program;
  std::string error;
  Transport *transport = createMPITransport(&argc, &argv, error);
  if (!transport) {
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, error);
    return 1;
  }
  rank->transport.reset(transport);
  // Every rank reaches each collective below, whatever failed before it,
  // so that all of them learn of a failure and none waits alone.
  if (transport->size() != p.ranks)
    error = fmt::format("this job has {} ranks, but the program was compiled "
                        "for {} (launch.sh starts one executable per rank)",
                        transport->size(), p.ranks);
  else if (transport->rank() != p.rank)
    error = fmt::format("MPI started rank {}'s executable as rank {} (launch "
                        "the executables in rank order)",
                        p.rank, transport->rank());
  if (!transport->allEqual(fingerprint(p)) && error.empty())
    error = "the ranks of this job run programs of different compiles "
            "(model, schedule, ranks, microbatches or optimizer differ)";
  if (error.empty()) {
    void *memory = std::aligned_alloc(
        64, static_cast<size_t>((p.arena_bytes + 63) / 64 * 64));
    if (!memory)
      error = fmt::format("cannot allocate the arena of {} bytes",
                          p.arena_bytes);
    else {
      std::memset(memory, 0, static_cast<size_t>(p.arena_bytes));
      rank->arena = static_cast<char *>(memory);
    }
  }
  if (error.empty() && !rank->options.dataFile.empty())
    error = readDataFile(rank);
  if (error.empty())
    error = transport->prepare(p, rank->arena);
  if (transport->anyFailed(!error.empty())) {
    if (!error.empty())
      fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, error);
    else
      fmt::print(stderr, "zbc rank {}: error: stopping before the first "
                         "step: another rank failed at start-up (its "
                         "message above)\n",
                 p.rank);
    transport->finish();
    return 1;
  }
  rank->ledger.init(p);
  rank->profile.computeSeconds.assign(static_cast<size_t>(p.stages) * 4, 0.0);
  rank->profile.computeCount.assign(static_cast<size_t>(p.stages) * 4, 0);
  openblas_set_num_threads(1); // one rank per core
  initParams(rank);
  return 0;
}

[[noreturn]] void failInStep(zbc_rt_rank *rank) {
  fmt::print(stderr, "zbc rank {}: error: {}\n", rank->program->rank,
             rank->error.empty() ? "failed" : rank->error);
  std::fflush(stderr);
  rank->transport->abort(1);
  std::_Exit(1); // abort does not return; this says so to the compiler
}

std::string writeReport(zbc_rt_rank *rank, const std::vector<double> &losses,
                        double seconds, int64_t allocations) {
  const zbc_rt_program &p = *rank->program;
  ::mkdir(rank->options.reportDir.c_str(), 0777);
  std::string path =
      fmt::format("{}/rank{}.json", rank->options.reportDir, p.rank);
  std::ofstream out(path);
  if (!out)
    return fmt::format("cannot write '{}'", path);
  const Profile &profile = rank->profile;
  std::string computes;
  const char *kinds[] = {"F", "B", "W", "BW"};
  for (size_t i = 0; i < profile.computeCount.size(); ++i)
    if (profile.computeCount[i])
      computes += fmt::format(
          "{}{{\"stage\": {}, \"kind\": \"{}\", \"count\": {}, "
          "\"seconds\": {:.6f}}}",
          computes.empty() ? "" : ", ", i / 4, kinds[i % 4],
          profile.computeCount[i], profile.computeSeconds[i]);
  out << fmt::format(
      "{{\"rank\": {}, \"steps\": {}, \"measured_peak_bytes\": {}, "
      "\"predicted_peak_bytes\": {}, \"arena_bytes\": {}, "
      "\"seconds\": {:.6f}, \"losses\": [{}], "
      "\"allocations_in_steps\": {}, \"profile\": {{\"step_seconds\": "
      "{:.6f}, \"kernel_seconds\": {:.6f}, \"comm_seconds\": {:.6f}, "
      "\"computes\": [{}]}}}}\n",
      p.rank, rank->options.steps, rank->ledger.peak(), p.peak_bytes,
      p.arena_bytes, seconds, fmt::join(losses, ", "), allocations,
      profile.stepSeconds, profile.kernelSeconds, profile.commSeconds,
      computes);
  return out ? "" : fmt::format("cannot write '{}'", path);
}

} // namespace

extern "C" int zbc_rt_main(int argc, char **argv,
                           const zbc_rt_program *program,
                           zbc_rt_step_fn step) {
  auto *rank = new zbc_rt_rank();
  rank->program = program;
  std::string error = parseOptions(argc, argv, rank->options);
  if (rank->options.help) {
    fmt::print("{}", optionsHelp(argv[0]));
    return 0;
  }
  if (!error.empty()) {
    fmt::print(stderr, "zbc rank {}: error: {}\n", program->rank, error);
    return 1;
  }
  if (int code = startUp(rank, argc, argv))
    return code;
  const zbc_rt_program &p = *program;
  const Options &o = rank->options;
  if (!o.saveInitDir.empty())
    if (std::string e = saveParams(rank, o.saveInitDir); !e.empty()) {
      rank->error = e;
      failInStep(rank);
    }

  std::vector<double> losses;
  losses.reserve(static_cast<size_t>(o.steps));
  int64_t allocations = zbc_rt_test_allocations ? 0 : -1;
  bool reports = p.loss >= 0 && !o.quiet;
  auto begin = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < o.steps; ++s) {
    rank->step = s;
    rank->lossSum = 0;
    rank->ledger.beginStep();
    uint64_t allocationsBefore =
        zbc_rt_test_allocations ? zbc_rt_test_allocations() : 0;
    auto stepBegin = std::chrono::steady_clock::now();
    if (step(rank) != ZBC_RT_OK)
      failInStep(rank);
    rank->op = -1;
    double waitBegin = Profile::now();
    std::string waitError;
    {
      InsideMPI mpi;
      waitError = rank->transport->waitAll(transferDone, rank);
    }
    if (const std::string &e = waitError; !e.empty()) {
      fail(rank, e);
      failInStep(rank);
    }
    rank->profile.commSeconds += Profile::now() - waitBegin;
    rank->ledger.endStep();
    if (zbc_rt_test_allocations)
      allocations += zbc_rt_test_allocations() - allocationsBefore;
    auto now = std::chrono::steady_clock::now();
    double stepSeconds = std::chrono::duration<double>(now - stepBegin).count();
    rank->profile.stepSeconds += stepSeconds;
    double elapsed = std::chrono::duration<double>(now - begin).count();
    if (p.loss >= 0) {
      double loss = rank->lossSum / p.microbatches;
      losses.push_back(loss);
      if (reports) {
        double eta = elapsed / double(s + 1) * double(o.steps - s - 1);
        fmt::print("step {:>{}}/{}  loss {:.6f}  {:.0f} tokens/s  step {:.3f} "
                   "s  eta {:.1f} s\n",
                   s + 1, std::to_string(o.steps).size(), o.steps, loss,
                   double(p.tokens_per_microbatch * p.microbatches) /
                       stepSeconds,
                   stepSeconds, eta);
        std::fflush(stdout);
      }
    }
  }
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - begin)
                       .count();
  if (!o.quiet)
    fmt::print("rank {}: peak live bytes {} measured, {} predicted; arena "
               "{}\n",
               p.rank, rank->ledger.peak(), p.peak_bytes, p.arena_bytes);
  std::string e;
  if (!o.saveDir.empty())
    e = saveParams(rank, o.saveDir);
  if (e.empty() && !o.reportDir.empty())
    e = writeReport(rank, losses, seconds, allocations);
  if (!e.empty()) {
    fmt::print(stderr, "zbc rank {}: error: {}\n", p.rank, e);
    rank->transport->abort(1);
  }
  std::fflush(stdout);
  rank->transport->finish();
  std::free(rank->arena);
  delete rank;
  return 0;
}
