//===- DeviceUnderTest.h - the Device a conformance run checks --*- C++ -*-===//
//
// The kernel conformance suite (KernelConformanceTest.cpp) is one source,
// built once per backend and linked with that backend's runtime library and
// its definition of deviceUnderTest(), as IREE runs its hal/cts suite once
// per driver: CpuDeviceUnderTest.cpp (zbc-kernel-conformance, in ctest) and
// CudaDeviceUnderTest.cpp (zbc-kernel-conformance-cuda: built with the CUDA
// backend, skipped without a GPU, run by bench/gpu/run.sh). The suite calls
// the kernels through the runtime's Device seam (Device.h), on buffers of
// the device's own arena, as a rank's kernel calls do.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TEST_RUNTIME_DEVICEUNDERTEST_H
#define ZBC_TEST_RUNTIME_DEVICEUNDERTEST_H

#include "Device.h"

#include <string>

namespace zbc::rt::conformance {

/// What the suite may expect of a backend beyond the Device contract.
struct DeviceTraits {
  /// Its elementwise kernels, copies and ordered sums perform the reference
  /// interpreter's float operations in its order, so they give the F32
  /// oracle's bits (the CPU's do; a GPU's may round a transcendental
  /// differently).
  bool sameBitsAsInterpreter = false;
  /// After a call that met an out-of-range index, the device keeps running
  /// and writes nothing of that call (the CPU checks every index first). A
  /// GPU records its first bad index and reports it from every synchronize
  /// after (a rank stops at it), so the suite leaves its index errors to
  /// bench/gpu/kernel-check.
  bool indexErrorsRecoverable = false;
  /// The attention kernels' bound against the F64 oracle, per element
  /// relative to 1 + |ref| (the suite's own tolerance elsewhere): forward
  /// and backward.
  double attentionTol = 1e-5;
  double attentionGradTol = 1e-5;
};

struct DeviceUnderTest {
  /// Null where this machine has none (no GPU): every test skips.
  Device *device = nullptr;
  std::string whyNone;
  DeviceTraits traits;
};

/// The backend's device, made on first use and kept to the end of the
/// process (a CUDA device must not be torn down after the CUDA runtime).
DeviceUnderTest &deviceUnderTest();

} // namespace zbc::rt::conformance

#endif // ZBC_TEST_RUNTIME_DEVICEUNDERTEST_H
