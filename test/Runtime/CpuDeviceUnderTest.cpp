//===- CpuDeviceUnderTest.cpp - the conformance suite's CPU device --------===//
//
// zbc-kernel-conformance checks the CPU backend's Device (cpu/CpuDevice.cpp,
// the kernels of cpu/kernels/Kernels.h): the same float operations as the
// reference interpreter where the suite says so, index errors reported
// before anything is written.
//
//===----------------------------------------------------------------------===//

#include "DeviceUnderTest.h"

namespace zbc::rt {
Device *createCpuDevice(); // cpu/CpuDevice.cpp
} // namespace zbc::rt

using namespace zbc::rt;
using namespace zbc::rt::conformance;

DeviceUnderTest &zbc::rt::conformance::deviceUnderTest() {
  static DeviceUnderTest *cpu = [] {
    auto *made = new DeviceUnderTest;
    made->device = createCpuDevice();
    made->traits.sameBitsAsInterpreter = true;
    made->traits.indexErrorsRecoverable = true;
    return made;
  }();
  return *cpu;
}
