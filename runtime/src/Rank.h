//===- Rank.h - one rank's state behind the zbc_rt_rank handle ---*- C++ -*-===//
//
// The runtime's C++ inside (namespace zbc::rt): the rank a generated program
// runs as, its options, arena, ledger and transport, and the error it
// failed with. Rank.cpp drives it (zbc_rt_main and the order's calls),
// KernelCalls.cpp runs the kernels on it.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_RANK_H
#define ZBC_RUNTIME_RANK_H

#include "Ledger.h"
#include "Transport.h"

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
  std::string saveDir, saveInitDir, dataFile, reportDir;
  // Optimizer hyperparameters; NaN: the optimizer's default.
  double lr, momentum, weightDecay, beta1, beta2, epsilon;
  bool quiet = false;
  bool help = false;
};

/// Parses argv; on failure returns the message.
std::string parseOptions(int argc, char **argv, Options &options);
std::string optionsHelp(const char *program);

/// Where a rank's step time goes (--report writes it): kernels, waits for
/// transfers, and per stage and compute kind the computes' wall time. The
/// rest of a step is the runtime's own work (checks, bookkeeping, calls).
struct Profile {
  double kernelSeconds = 0, commSeconds = 0, stepSeconds = 0;
  std::vector<double> computeSeconds; // [stage * 4 + what]
  std::vector<int64_t> computeCount;
  static double now(); // a monotonic clock, seconds
};

/// Data read from --data: per data key, its samples back to back.
struct DataFile {
  std::vector<std::vector<char>> samples; // per zbc_rt_data entry
  std::vector<int64_t> count;             // samples per entry
};

} // namespace zbc::rt

struct zbc_rt_rank {
  const zbc_rt_program *program = nullptr;
  zbc::rt::Options options;
  char *arena = nullptr;
  zbc::rt::Ledger ledger;
  std::unique_ptr<zbc::rt::Transport> transport;
  zbc::rt::DataFile data;
  int64_t step = 0;          // 0-based, of the run
  int32_t op = -1;           // the op running (compute, transfer), or -1
  const int32_t *frame = nullptr; // the running compute's frame
  int32_t frameSize = 0;
  std::string error;         // the first failure's message
  double lossSum = 0;        // this step's, when the rank holds the loss
  zbc::rt::Profile profile;
};

namespace zbc::rt {

/// Records `message` as the rank's failure, with where it happened (rank,
/// op of the order, step), and returns ZBC_RT_ERROR.
zbc_rt_status fail(zbc_rt_rank *rank, const std::string &message);

/// The buffer an id names: a table index, or a slot of the running frame.
/// -1 (with the rank's error set) if neither.
int32_t resolve(zbc_rt_rank *rank, int32_t id);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_RANK_H
