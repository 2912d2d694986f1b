/*===- CudaAllocationCounter.c - counts CUDA allocations, for LD_PRELOAD -===//
 *
 * Preloaded into a CUDA-backend rank executable (bench/gpu/run.sh): every
 * cudaMalloc, cudaMallocAsync, cudaMallocManaged, cudaMallocHost and
 * cudaHostAlloc goes to the CUDA runtime's own (dlsym RTLD_NEXT) and is
 * counted, and zbc_rt_test_device_allocations() returns the count, which
 * the runtime reads before and after each step (Main.cpp) to report the
 * allocations made during steps: "no device allocation after start-up" as
 * a number the check holds to 0. (NCCL's own buffers come from the driver
 * API at communicator set-up, which is start-up.)
 *
 *===----------------------------------------------------------------------===*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

static uint64_t allocations;

static void *real(const char *name) { return dlsym(RTLD_NEXT, name); }

#define COUNTED(name, params, args)                                            \
  int name params {                                                            \
    static int(*fn) params;                                                    \
    if (!fn)                                                                   \
      fn = (int(*) params)real(#name);                                         \
    __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);                     \
    return fn ? fn args : 2 /* cudaErrorMemoryAllocation */;                   \
  }

COUNTED(cudaMalloc, (void **p, size_t n), (p, n))
COUNTED(cudaMallocAsync, (void **p, size_t n, void *stream), (p, n, stream))
COUNTED(cudaMallocManaged, (void **p, size_t n, unsigned flags), (p, n, flags))
COUNTED(cudaMallocHost, (void **p, size_t n), (p, n))
COUNTED(cudaHostAlloc, (void **p, size_t n, unsigned flags), (p, n, flags))

uint64_t zbc_rt_test_device_allocations(void) {
  return __atomic_load_n(&allocations, __ATOMIC_RELAXED);
}
