//===- allreduce_time.cpp - one gradient all-reduce on these machines -----===//
//
// What an in-place MPI_Allreduce of f32 gradients takes between the
// processes mpirun starts (as the CPU backend runs the program's
// zb.all_reduce: Note [Collectives in the program]): bench/
// collectives_step_time.py gives the simulator the bandwidth it implies
// (Note [Collectives in the simulator]). Prints one JSON line on rank 0:
// the bytes and the median milliseconds over the runs, after a warm-up.
//
// usage: mpirun -np N zbc-bench-allreduce [BYTES [RUNS]] [--smoke]
//
//===----------------------------------------------------------------------===//

#include "BenchArgs.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *usage =
      "usage: mpirun -np N zbc-bench-allreduce [BYTES [RUNS]] [--smoke]\n"
      "One in-place MPI_Allreduce of BYTES (default 1048576) of f32, RUNS\n"
      "times (default 20): the median milliseconds, as JSON on rank 0.\n";
  bool smoke = zbc::bench::takeFlag(argc, argv, "--smoke");
  std::vector<int64_t> counts =
      zbc::bench::positionalCounts(argc, argv, usage, 2);
  int64_t bytes = counts.size() > 0 ? counts[0] : (smoke ? 4096 : 1 << 20);
  int64_t runs = counts.size() > 1 ? counts[1] : (smoke ? 2 : 20);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<float> data(static_cast<size_t>(std::max<int64_t>(bytes / 4, 1)),
                          1.0f);
  std::vector<double> ms;
  for (int64_t run = -1; run < runs; ++run) { // run -1: the warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    double begin = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()),
                  MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double end = MPI_Wtime();
    if (run >= 0)
      ms.push_back(1000 * (end - begin));
  }
  std::sort(ms.begin(), ms.end());
  if (rank == 0)
    std::printf("{\"processes\": %d, \"bytes\": %lld, \"ms\": %.6f}\n", size,
                static_cast<long long>(bytes), ms[ms.size() / 2]);
  MPI_Finalize();
  return 0;
}
