//===- StartUp.h - a rank's start-up, checked and agreed before any step -*- C++ -*-===//
//
// What zbc_rt_main (Main.cpp) calls before the training loop: StartUp.cpp's
// overview says what start-up checks, in which order, and how every rank
// learns that one failed.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_STARTUP_H
#define ZBC_RUNTIME_STARTUP_H

#include "InitWeights.h"

#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace zbc::rt {

/// What start-up learned that the loop needs.
struct StartedRun {
  int64_t firstStep = 0;   // a resumed run's: its checkpoint's step
  int64_t evalBatches = 0; // held-out batches, the same on every rank
  double entropy = std::numeric_limits<double>::quiet_NaN(); // of text data
  std::optional<InitialWeightsRead> init; // with --init: what the load read
};

/// MPI, the checks, the arena, the checkpoint, the data, the parameters
/// (collective). 0, or the exit code after every rank said why it stops.
int startUp(zbc_rt_rank *rank, int &argc, char **&argv, StartedRun &started);

/// For a rank that refuses its options (before MPI, before its watchdog):
/// writes `text` to its status file if --status-dir is among them.
void writeEarlyStatus(int argc, char **argv, int rank, const std::string &text);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_STARTUP_H
