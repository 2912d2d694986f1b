//===- HostCompiler.h - building the generated rank programs -----*- C++ -*-===//
//
// `zbc compile`'s last step: each DIR/src/rankN.cpp built with the host
// compiler (MPI's C++ wrapper) against the runtime zbc was built with, two
// at a time (these machines have two cores), every command and its output
// in DIR/build.log (the launch scripts: LaunchFiles.h).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_HOSTCOMPILER_H
#define ZBC_TOOL_HOSTCOMPILER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace zbc {

/// Builds DIR/rank0 ... DIR/rank{ranks-1} from DIR/src/rankN.cpp against
/// `backend`'s runtime ("cpu" or "cuda"). A failure names the generated
/// file and line the compiler stopped at.
llvm::Error buildRankExecutables(llvm::StringRef dir, int ranks,
                                 llvm::StringRef backend);

/// Whether this zbc was built with the CUDA backend's runtime.
bool cudaBackendBuilt();

/// The mpirun the launch script uses.
llvm::StringRef mpirunPath();

} // namespace zbc

#endif // ZBC_TOOL_HOSTCOMPILER_H
