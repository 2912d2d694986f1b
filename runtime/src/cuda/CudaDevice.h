//===- CudaDevice.h - the CUDA backend's Device: one GPU per rank -*- C++ -*-===//
//
// What the CUDA backend's transport (NcclTransport.cpp) needs of its device
// beside Device.h: the compute stream its transfers are ordered against.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CUDA_CUDADEVICE_H
#define ZBC_RUNTIME_CUDA_CUDADEVICE_H

#include "../Device.h"

#include <cuda_runtime.h>

#include <string>

namespace zbc::rt::cuda {

/// Picks the GPU of this process (its local rank modulo the GPUs it sees)
/// and makes the device; nullptr and `error` ("no CUDA device ...") if
/// there is none. `localRank` from the launcher's environment.
Device *createCudaDevice(int localRank, std::string &error);

/// The stream every kernel of `device` (a CUDA device) runs on, in call
/// order.
cudaStream_t computeStreamOf(Device *device);

} // namespace zbc::rt::cuda

#endif // ZBC_RUNTIME_CUDA_CUDADEVICE_H
