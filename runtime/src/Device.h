//===- Device.h - where a rank's arena lives and its kernels run -*- C++ -*-===//
//
// The runtime's second seam beside Transport.h: one implementation per
// backend, the CPU's (cpu/CpuDevice.cpp: host memory, the kernels of
// cpu/kernels/Kernels.h, bf16 widened to fp32 around each call) and the
// GPU's (cuda/CudaDevice.cpp: device memory, cuBLASLt and own kernels, a
// compute stream). Everything above it (Main, Rank, Optimizer, Checkpoint,
// the ledger and the checks of KernelCalls.cpp) is the same code for both.
//
// Contract:
//  - Pointers into the arena (`arena() + offset`) are the device's: host
//    code never dereferences them; it reads and writes through read/write.
//  - Kernel calls and optimizer steps may return before they finish (the
//    GPU queues them on its compute stream in call order); `synchronize`
//    waits for all of them and returns the first failure any of them met.
//    A CPU call finishes before it returns, and its failure is its result.
//  - `element` is the element type of a call's float tensors (ZBC_RT_F32 or
//    ZBC_RT_BF16, Note [bf16]); accumulators, master weights and optimizer
//    state are fp32 (named `float *`).
//  - No call allocates after `allocate`.
//  - Copies of offloaded stashes (Note [Offload in the IR]) run on a copy
//    queue of their own, one at a time in issue order, beside the computes:
//    a copy starts after every call made before it and is ordered before a
//    call only by waitCopy. The CPU's queue is a thread, a GPU's a copy
//    stream with an event per copy.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_DEVICE_H
#define ZBC_RUNTIME_DEVICE_H

#include "zbc/contracts/OptimizerConfig.h"

#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <string>

namespace zbc::rt {

class Transport;

/// An index tensor's element type and data.
struct Indices {
  const void *data;
  int32_t element; // ZBC_RT_I32 or ZBC_RT_I64
};

class Device {
public:
  virtual ~Device() = default;
  /// "cpu" or "cuda".
  virtual const char *name() const = 0;

  /// Allocates the zeroed arena of `program` and what its kernels need
  /// beside it (staging, workspaces, streams).
  virtual std::string allocate(const zbc_rt_program &program) = 0;
  virtual char *arena() = 0;
  /// Copies between host memory and the arena (synchronous).
  virtual std::string write(int64_t offset, const void *host,
                            int64_t bytes) = 0;
  virtual std::string read(int64_t offset, void *host, int64_t bytes) = 0;
  /// Where the data source writes data buffer `buffer` (a ZBC_RT_DATA
  /// buffer of the program), and the call that then moves it into the
  /// arena. The CPU's staging is the arena itself; a GPU's is pinned host
  /// memory copied on the compute stream in order. A data buffer is
  /// written once per step and every step ends with synchronize, so the
  /// staging is free again by the next step's write.
  virtual char *dataStaging(int32_t buffer) = 0;
  virtual std::string dataStaged(int32_t buffer) = 0;
  /// Waits for every call and copy made so far; their first failure, if
  /// any.
  virtual std::string synchronize() = 0;

  //===--- the copy queue (Note [Offload in the IR]) --------------------===//
  /// The host arena where offloaded stashes wait for their reload: the
  /// program's host_arena_bytes, allocated by `allocate` (pinned on a GPU);
  /// null if the program offloads nothing.
  virtual char *hostArena() = 0;
  /// One piece of a copy: `bytes` from `from` to `to`, one end in the arena
  /// and the other in the host arena.
  struct CopyPiece {
    char *to = nullptr;
    const char *from = nullptr;
    int64_t bytes = 0;
  };
  /// Issues copy op `op` (an offload or a reload) on the copy queue;
  /// `pieces` stay valid until waitCopy(op) returns.
  virtual std::string startCopy(int32_t op, const CopyPiece *pieces,
                                int32_t count) = 0;
  /// Orders every call made after it behind copy `op`: returns when the
  /// copy is done (the CPU), or makes the compute stream wait for it (a
  /// GPU). Fails for a copy not issued, or waited for already.
  virtual std::string waitCopy(int32_t op) = 0;
  /// After waitCopy(op): sets when copy `op` ran (Profile::now()'s clock)
  /// where the device knows it; else leaves the arguments as they are.
  virtual void copyInterval(int32_t op, double &begin, double &end) {
    (void)op;
    (void)begin;
    (void)end;
  }

  /// Whether the device times the compute ops itself (a GPU, with events;
  /// the host's clock around a call measures only the launches), and the
  /// marks around each: computeEnds after each call of its phase (twice
  /// for a fused BW's B then W).
  virtual bool timesComputes() const { return false; }
  virtual void computeBegins(int32_t op) { (void)op; }
  virtual void computeEnds(int32_t op) { (void)op; }
  /// Hands each compute op's time since the last call to `add` (after
  /// synchronize), and the optimizer steps' as op -1; nothing unless
  /// timesComputes.
  virtual void takeComputeSeconds(void (*add)(void *, int32_t op, double),
                                  void *context) {
    (void)add;
    (void)context;
  }

  //===--- the zb ops (Kernels.h's math) -------------------------------===//
  // One virtual per row of the kernel table (Note [Kernel table] in
  // zbc/runtime/KernelTable.h): METHOD(element, the buffers' pointers (an
  // index tensor as Indices, an absent optional one with a null `data`; a workspace as its pointer and its size in
  // bytes, the memory plan's figure), the dims, the reals as float).
#define ZBC_RT_DEVICE_BUF(role, id, elements) ZBC_RT_DEVICE_##role(id)
#define ZBC_RT_DEVICE_In(id) , const void *id
#define ZBC_RT_DEVICE_Out(id) , void *id
#define ZBC_RT_DEVICE_Indices(id) , Indices id
#define ZBC_RT_DEVICE_OptIndices(id) , Indices id
#define ZBC_RT_DEVICE_Workspace(id) , void *id, int64_t id##Bytes
#define ZBC_RT_DEVICE_DIM(name) , int64_t name
#define ZBC_RT_DEVICE_REAL(name) , float name
#define ZBC_RT_DEVICE_VIRTUAL(name, method, op, signature)                     \
  virtual std::string method(int32_t element signature(                        \
      ZBC_RT_DEVICE_BUF, ZBC_RT_DEVICE_DIM, ZBC_RT_DEVICE_REAL)) = 0;
  ZBC_RT_KERNELS(ZBC_RT_DEVICE_VIRTUAL)
#undef ZBC_RT_DEVICE_VIRTUAL

  //===--- accumulation and the loss -----------------------------------===//
  /// acc += x (x of `element`).
  virtual std::string accumulate(float *acc, int32_t element, const void *x,
                                 int64_t n) = 0;
  /// *accumulator += weight * *value, and the step's loss (takeStepLoss)
  /// too; `weight` is the microbatch's in its step's loss (Note [Loss over
  /// real tokens]).
  virtual std::string addLoss(int32_t element, const void *value, float weight,
                              float *accumulator) = 0;
  /// The sum of addLoss's values since the last call (after synchronize).
  virtual double takeStepLoss() = 0;

  //===--- optimizer steps (fp32 weights: a parameter or its master) ----===//
  /// One step on `weights`; then, if `copy` is non-null, the weights
  /// rounded to `copyElement` into it (a bf16 parameter's working copy).
  virtual std::string sgdMomentum(float *weights, const float *grad,
                                  float *momentum, int64_t n,
                                  const SgdConfig &config,
                                  float gradScale, void *copy,
                                  int32_t copyElement) = 0;
  virtual std::string adamw(float *weights, const float *grad, float *m,
                            float *v, int64_t n, const AdamWConfig &config,
                            int64_t step, float gradScale, void *copy,
                            int32_t copyElement) = 0;
  /// y (of `element`) = x rounded (a working copy from its master).
  virtual std::string convertFromF32(const float *x, void *y, int32_t element,
                                     int64_t n) = 0;
  virtual std::string zero(void *data, int64_t bytes) = 0;
  /// `bytes` from `from` to `to`, both in the arena (not overlapping).
  virtual std::string copy(void *to, const void *from, int64_t bytes) = 0;
  /// Adds the squares of grad's elements to a sum that takeSumOfSquares
  /// returns and resets (after synchronize).
  virtual std::string addSumOfSquares(const float *grad, int64_t n) = 0;
  virtual double takeSumOfSquares() = 0;
};

/// The backend this runtime library was built for (one definition per
/// backend: cpu/CpuBackend.cpp or cuda/CudaBackend.cpp): its transport,
/// started as `mpirun` started this process, and its device. On failure
/// both are null and `error` says why ("no CUDA device", ...).
struct Backend {
  Transport *transport = nullptr;
  Device *device = nullptr;
};
Backend createBackend(int *argc, char ***argv, std::string &error);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_DEVICE_H
