//===- CudaBackend.cpp - the CUDA backend: NCCL transfers, GPU kernels ----===//
//
// createBackend for libzbc_runtime_cuda: first the GPU (so that a machine
// without one says so and exits before any launcher-wide step), then NCCL
// on it (NcclTransport.cpp).
//
//===----------------------------------------------------------------------===//

#include "../Device.h"
#include "../Transport.h"

#include "CudaDevice.h"

namespace zbc::rt {
namespace cuda {
int localRankFromEnvironment();
Transport *createNcclTransport(int *argc, char ***argv, Device *device,
                               std::string &error);
} // namespace cuda

Backend createBackend(int *argc, char ***argv, std::string &error) {
  Backend backend;
  Device *device = cuda::createCudaDevice(cuda::localRankFromEnvironment(), error);
  if (!device)
    return backend;
  backend.transport = cuda::createNcclTransport(argc, argv, device, error);
  if (!backend.transport) {
    delete device;
    return backend;
  }
  backend.device = device;
  return backend;
}

} // namespace zbc::rt
