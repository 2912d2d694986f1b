//===- Rank.h - one rank's state behind the zbc_rt_rank handle ---*- C++ -*-===//
//
// The runtime's C++ inside (namespace zbc::rt): the rank a generated program
// runs as, its options, arena, ledger, transport, data, watchdog and
// timeline, and the error it failed with. Main.cpp drives it (zbc_rt_main),
// Rank.cpp runs the order's calls, Optimizer.cpp the optimizer steps and
// KernelCalls.cpp the kernels.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_RANK_H
#define ZBC_RUNTIME_RANK_H

#include "DataSource.h"
#include "Device.h"
#include "Ledger.h"
#include "Timeline.h"
#include "Transport.h"
#include "Watchdog.h"

#include "zbc/contracts/OptimizerSchedule.h"

#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zbc::rt {

/// The command line of a rank executable (Options.cpp).
struct Options {
  int64_t steps = 1;
  uint64_t seed = 0;
  bool seedGiven = false; // --seed given (a resumed run must agree)
  std::string saveDir, saveInitDir, dataFile, reportDir;
  std::string evalDataFile; // held-out samples (--eval-data), or ""
  std::string checkpointDir = "checkpoints", resumeDir, statusDir, traceDir;
  std::string initPath; // --init: parameters from a checkpoint
  TokenType binTokens = TokenType::U16; // --data-dtype: a .bin file's ids
  bool binTokensGiven = false;
  int64_t traceSteps = 8; // with --trace: the last steps recorded
  // Optimizer hyperparameters; NaN: the optimizer's default.
  double lr, momentum, weightDecay, beta1, beta2, epsilon;
  // Clipping (0: none) and the learning-rate schedule (OptimizerSchedule.h;
  // minLr NaN: lr / 10).
  double clipNorm = 0, minLr;
  int64_t warmupSteps = 0, decaySteps = 0;
  int64_t evalEvery = 0, checkpointEvery = 0; // 0: never (but at the end)
  double timeoutSeconds = 30; // the longest one wait for a peer may take
  bool quiet = false;
  bool progressBar = false; // one line redrawn in place (a terminal)
  // Wait for each collective as it is issued, so that a trace times each
  // alone (zbc profile's collective_bandwidth); slows the step.
  bool waitCollectives = false;
  bool help = false;
  bool checkOnly = false; // --check-options: parse, say what is wrong, exit
};

/// Parses argv; on failure returns the message.
std::string parseOptions(int argc, char **argv, Options &options);
std::string optionsHelp(const char *program);

/// Note [Loss over real tokens]: the weights of one batch's microbatches in
/// its loss (StepLoss.cpp), every replica's, for the batch they were read for;
/// with the buffers that read them, sized at start-up (no step allocates).
struct LossWeights {
  std::vector<double> weights;
  int64_t batch = -1;
  bool heldOut = false;
  std::vector<char> labels;     // one microbatch's counted labels
  std::vector<int64_t> counted; // per microbatch of the batch
};

/// Where a rank's step time goes (--report writes it): kernels, waits for
/// transfers, and per stage and compute kind the computes' wall time. The
/// rest of a step is the runtime's own work (checks, bookkeeping, calls).
struct Profile {
  double kernelSeconds = 0, commSeconds = 0, stepSeconds = 0;
  double optimizerSeconds = 0; // a GPU's optimizer kernels (its events)
  // Copies of stashes (offloads and reloads) run, and the time the order
  // waited for them (a CPU waits here; a GPU's compute stream does).
  int64_t copyCount = 0;
  double copyWaitSeconds = 0;
  // The time the step's end waited for the program's gradient sums: what
  // of them the order did not hide (Note [Collectives in the simulator]).
  double collectiveWaitSeconds = 0;
  std::vector<double> computeSeconds; // [stage * ZBC_RT_COMPUTE_KIND_COUNT + what]
  std::vector<int64_t> computeCount;
  static double now(); // a monotonic clock, seconds
};

} // namespace zbc::rt

struct zbc_rt_rank {
  const zbc_rt_program *program = nullptr;
  zbc::rt::Options options;
  std::unique_ptr<zbc::rt::Device> device; // holds the arena, runs kernels
  zbc::rt::Ledger ledger;
  std::unique_ptr<zbc::rt::Transport> transport;
  zbc::rt::DataSource data;
  int64_t step = 0;          // 0-based, of the training (a resumed run
                             // starts at its checkpoint's step)
  bool startingUp = true;    // before the first step (zbc_rt_main)
  // Evaluating: `step` runs forward only, on held-out batch evalBatch
  // (computes other than F, gradient transfers and updates are skipped).
  bool evaluating = false;
  int64_t evalBatch = 0;
  // The held-out microbatches the evaluation counts (the job's, the same on
  // every rank); those of the last batch past them run but add no loss.
  int64_t evalMicrobatches = 0;
  int32_t op = -1;           // the op running (compute, transfer), or -1
  const int32_t *frame = nullptr; // the running compute's frame
  int32_t frameSize = 0;
  std::string error;         // the first failure's message
  double lossSum = 0;        // this step's, when the rank holds the loss
  zbc::rt::LossWeights lossWeights; // the batch's, when it holds the loss
  double learningRate = 0;   // this step's (OptimizerSchedule.h)
  double gradNorm = -1;      // this step's global norm, when clipping
  bool updatesAtStepEnd = false;  // initOptimizer decides (Optimizer.cpp)
  std::vector<uint8_t> updateDue; // per parameter: its update is due at the
                                  // end of the step
  std::vector<uint8_t> reduced;   // per parameter: an all-reduce of the
                                  // program summed it this step
  std::vector<uint8_t> collectiveInFlight; // per op: a collective issued
                                           // and not yet completed
  // Per frame slot: the pieces of the copy whose frame starts there (sized
  // at start-up; Note [Offload in the IR]), and per op when its copy was
  // issued, while it is not yet waited for (-1 otherwise).
  std::vector<zbc::rt::Device::CopyPiece> copyPieces;
  std::vector<double> copyIssuedAt;
  zbc::rt::Profile profile;
  zbc::rt::Watchdog watchdog;
  zbc::rt::Timeline timeline;
};

namespace zbc::rt {

/// The optimizer's learning rate before its schedule, and the schedule
/// (Optimizer.cpp).
double baseLearningRate(const zbc_rt_rank *rank);
LearningRateSchedule learningRateSchedule(const zbc_rt_rank *rank);

/// Marks transfer op `op` completed in the rank's ledger.
void transferDone(void *rank, int32_t op);

/// Completes, in the ledger, every copy issued and not waited for (at the
/// end of a step: the device drained them).
void finishCopies(zbc_rt_rank *rank);

/// Where the running compute's microbatch comes from.
BatchPosition batchPosition(const zbc_rt_rank *rank, int32_t microbatch);

/// The weight of the rank's microbatch `microbatch` of the running batch in
/// its loss (Note [Loss over real tokens], StepLoss.cpp): 1 unless the
/// program counts labels. An error naming the step when it counts none.
std::string lossWeightOf(zbc_rt_rank *rank, int32_t microbatch,
                         double &weight);
/// Sizes what lossWeightOf reads into, once (steps allocate nothing).
void initLossWeights(zbc_rt_rank *rank);

/// Decides, once, whether updates wait for the end of the step (clipping,
/// replicas, or a tied parameter on this rank) and sizes updateDue.
void initOptimizer(zbc_rt_rank *rank);

/// The optimizer step of every parameter whose update is due at the end of
/// the step (all of them when gradients are clipped: the global norm needs
/// every gradient first), after every collective of the step completes (of
/// an evaluation pass: its gathers). Collective when clipping.
/// Optimizer.cpp.
zbc_rt_status finishOptimizerStep(zbc_rt_rank *rank);

/// The buffer holding a parameter's fp32 weights: its master copy if it
/// has one (a bf16 parameter), else the parameter itself. What the
/// optimizer steps, checkpoints and --save store, and initialisation sets.
inline int32_t weightsOf(const zbc_rt_param &param) {
  return param.master >= 0 ? param.master : param.param;
}

/// Note [Sharded optimizer] (zbc/contracts/Shards.h): the elements of
/// parameter `param` this process updates, [begin, begin + length) of its
/// `elements`: all of them, or with a sharded optimizer its replica's
/// shard, which its master and state hold from their start. Optimizer.cpp.
struct ParamShard {
  int64_t elements = 0, begin = 0, length = 0;
  bool sharded = false;
};
ParamShard shardOf(const zbc_rt_rank *rank, const zbc_rt_param &param);

/// Collective op `op` is complete (its wait, or the step's end): its trace
/// event ends, and under zero 2 its whole gradients are free, a tied one's
/// shard copied out first (Note [Sharded gradients]). Optimizer.cpp.
std::string collectiveCompleted(zbc_rt_rank *rank, int32_t op);

/// With a sharded optimizer, the program's all-gathers run once more, in
/// its order, outside a step (every replica: they are collectives), so
/// that every replica holds whole working copies, as before --save.
/// Optimizer.cpp.
zbc_rt_status gatherParameters(zbc_rt_rank *rank);

/// The whole fp32 weights of `param` into `out`: its weights buffer, or
/// with a sharded optimizer the gathered working copy (a bf16 master is a
/// shard: its rounded working copy stands for it). Optimizer.cpp.
std::string readWholeWeights(zbc_rt_rank *rank, const zbc_rt_param &param,
                             std::vector<float> &out);
/// Sets `param`'s weights from its `whole` fp32 values (initialisation,
/// --init): the part this process holds (its master's shard, with a sharded
/// optimizer); refreshWorkingCopies then rounds it. May pad `whole`.
std::string writeWholeWeights(zbc_rt_rank *rank, const zbc_rt_param &param,
                              std::vector<float> &whole);

/// Note [Non-finite stops the run] (Main.cpp): sets `name` to the first of
/// the rank's parameters whose fp32 weights hold a NaN or an infinity, or
/// to "" if none does. Returns a device error or "". Optimizer.cpp.
std::string findNonFiniteParameter(zbc_rt_rank *rank, std::string &name);

/// Rounds every bf16 parameter's master weights into its working copy
/// (after initialisation or a resume wrote the masters). Optimizer.cpp.
std::string refreshWorkingCopies(zbc_rt_rank *rank);

/// Records `message` as the rank's failure, with where it happened (rank,
/// op of the order, step), and returns ZBC_RT_ERROR.
zbc_rt_status fail(zbc_rt_rank *rank, const std::string &message);

/// The buffer an id names: a table index, or a slot of the running frame.
/// -1 (with the rank's error set) if neither.
int32_t resolve(zbc_rt_rank *rank, int32_t id);

} // namespace zbc::rt

/// The number of heap allocations made so far, when a test preloads a
/// counter that defines it (test/e2e/AllocationCounter.c); otherwise null.
/// zbc_rt_main reports the allocations made during steps, which must be 0.
extern "C" __attribute__((weak)) uint64_t zbc_rt_test_allocations(void);
/// The number of device allocations (cudaMalloc and its kin) made so far,
/// when the GPU check preloads a counter (test/e2e/CudaAllocationCounter.c);
/// otherwise null. zbc_rt_main reports those made during steps: 0.
extern "C" __attribute__((weak)) uint64_t zbc_rt_test_device_allocations(void);
/// Brackets the calls into MPI, whose internal allocations are not the
/// runtime's (the counter leaves them out).
extern "C" __attribute__((weak)) void zbc_rt_test_pause_allocations(int paused);

namespace zbc::rt {
/// While alive, the thread is inside MPI: a call that may block on a peer,
/// which the watchdog times (`what` names a collective; a transfer is the
/// running op). Nests: the outer wait is restored at the end.
struct InsideMPI {
  explicit InsideMPI(zbc_rt_rank *rank, const char *what = nullptr)
      : rank(rank) {
    if (zbc_rt_test_pause_allocations)
      zbc_rt_test_pause_allocations(1);
    outer = rank->watchdog.enter(what);
  }
  ~InsideMPI() {
    rank->watchdog.leave(outer);
    if (zbc_rt_test_pause_allocations)
      zbc_rt_test_pause_allocations(0);
  }
  InsideMPI(const InsideMPI &) = delete;
  InsideMPI &operator=(const InsideMPI &) = delete;
  zbc_rt_rank *rank;
  Watchdog::Snapshot outer;
};

/// While alive, the rank is in a step of its start-up that may block (a
/// collective, a file): the watchdog times it like a wait for a peer and
/// names `what` (a static string) if it takes longer than --timeout.
struct StartUpStep {
  StartUpStep(zbc_rt_rank *rank, const char *what)
      : rank(rank), outer(rank->watchdog.enter(what)) {}
  ~StartUpStep() { rank->watchdog.leave(outer); }
  StartUpStep(const StartUpStep &) = delete;
  StartUpStep &operator=(const StartUpStep &) = delete;
  zbc_rt_rank *rank;
  Watchdog::Snapshot outer;
};
} // namespace zbc::rt

#endif // ZBC_RUNTIME_RANK_H
