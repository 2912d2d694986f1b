//===- CudaHostTest.cpp - the CUDA backend's host side, without a GPU -----===//
//
// What CI can check of the CUDA backend on a machine with nvcc and NCCL but
// no GPU (the behaviour on a GPU is bench/gpu/run.sh's): a machine without a
// device is told so; a failing CUDA or NCCL call names the call, the file
// and the line (CudaCheck.h); the allocation counter the GPU check preloads
// counts every kind of CUDA allocation. On a machine with a GPU, the
// no-device test is skipped.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaCheck.h"
#include "cuda/CudaDevice.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

extern "C" uint64_t zbc_rt_test_device_allocations(void);

namespace {

bool hasDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::string failingCudaCall() {
  ZBC_CUDA_TRY(cudaSetDevice(1 << 20)); // no machine has a millionth GPU
  return {};
}

std::string failingNcclCall() {
  ZBC_NCCL_TRY(ncclCommCount(nullptr, nullptr));
  return {};
}

TEST(CudaHost, AMachineWithoutAGpuIsToldSo) {
  if (hasDevice())
    GTEST_SKIP() << "this machine has a GPU";
  std::string error;
  std::unique_ptr<zbc::rt::Device> device(
      zbc::rt::cuda::createCudaDevice(0, error));
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(error.rfind("no CUDA device", 0), 0u) << error;
  EXPECT_NE(error.find("--backend cpu"), std::string::npos) << error;
}

TEST(CudaHost, AFailingCudaCallNamesTheCallFileAndLine) {
  std::string error = failingCudaCall();
  EXPECT_NE(error.find("cudaSetDevice(1 << 20) failed at CudaHostTest.cpp:"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("(cuda"), std::string::npos) << error; // its name
}

TEST(CudaHost, AFailingNcclCallNamesTheCall) {
  std::string error = failingNcclCall();
  EXPECT_NE(error.find("ncclCommCount(nullptr, nullptr) failed at "
                       "CudaHostTest.cpp:"),
            std::string::npos)
      << error;
}

TEST(CudaHost, TheAllocationCounterCountsEveryKind) {
  uint64_t before = zbc_rt_test_device_allocations();
  void *memory = nullptr;
  // Without a GPU each fails; counted all the same (the counter sees the
  // call, which is what "no allocation after start-up" forbids).
  cudaMalloc(&memory, 64);
  cudaFree(memory);
  cudaMallocHost(&memory, 64);
  cudaFreeHost(memory);
  cudaMallocManaged(&memory, 64, cudaMemAttachGlobal);
  cudaFree(memory);
  cudaHostAlloc(&memory, 64, cudaHostAllocDefault);
  cudaFreeHost(memory);
  cudaMallocAsync(&memory, 64, nullptr);
  EXPECT_EQ(zbc_rt_test_device_allocations() - before, 5u);
}

} // namespace
