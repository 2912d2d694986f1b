//===- CudaDeviceUnderTest.cpp - the conformance suite's CUDA device ------===//
//
// zbc-kernel-conformance-cuda checks the CUDA backend's Device
// (cuda/CudaDevice.cpp) on GPU 0, fp32, against the same oracle and bounds
// as the CPU's, but for attention: its bounds are the ones
// bench/gpu/kernel-check measured against the CPU kernels (2e-5 forward,
// 1e-4 backward: the backward's dS = P (dP - D) cancels, and D is computed
// as dO . O). Without a GPU (CI: cudaGetDeviceCount fails with error 35)
// there is no device and every test skips.
//
//===----------------------------------------------------------------------===//

#include "DeviceUnderTest.h"

#include "cuda/CudaDevice.h"

using namespace zbc::rt;
using namespace zbc::rt::conformance;

DeviceUnderTest &zbc::rt::conformance::deviceUnderTest() {
  static DeviceUnderTest *gpu = [] {
    auto *made = new DeviceUnderTest;
    made->device = cuda::createCudaDevice(/*localRank=*/0, made->whyNone);
    made->traits.attentionTol = 2e-5;
    made->traits.attentionGradTol = 1e-4;
    return made;
  }();
  return *gpu;
}
