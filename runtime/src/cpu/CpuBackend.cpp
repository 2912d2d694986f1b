//===- CpuBackend.cpp - the CPU backend: MPI transfers, host kernels ------===//
//
// createBackend for libzbc_runtime (the CPU backend): MPI, as mpirun
// started the process, and the host-memory device of CpuDevice.cpp.
//
//===----------------------------------------------------------------------===//

#include "../Device.h"
#include "../Transport.h"

namespace zbc::rt {

Device *createCpuDevice();

Backend createBackend(int *argc, char ***argv, std::string &error) {
  Backend backend;
  backend.transport = createMPITransport(argc, argv, error);
  if (backend.transport)
    backend.device = createCpuDevice();
  return backend;
}

} // namespace zbc::rt
