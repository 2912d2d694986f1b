//===- CudaCheck.h - every CUDA and NCCL call checked, with its place -*- C++ -*-===//
//
// The CUDA backend's one rule for errors: every call to the CUDA runtime or
// NCCL goes through ZBC_CUDA_TRY / ZBC_NCCL_TRY, which return from the
// calling function (whose result is a std::string, empty on success) the
// message "<call> failed at <file>:<line>: <the library's words>". The
// rank's error then says which rank, op and step met it (Rank.cpp's fail).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CUDA_CUDACHECK_H
#define ZBC_RUNTIME_CUDA_CUDACHECK_H

#include <cuda_runtime.h>
#include <nccl.h>

#include <fmt/format.h>

#include <cstring>
#include <string>

namespace zbc::rt::cuda {

/// The file's name without its directories.
inline const char *baseName(const char *path) {
  const char *slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

inline std::string cudaFailure(cudaError_t code, const char *call,
                               const char *file, int line) {
  return fmt::format("{} failed at {}:{}: {} ({})", call, baseName(file), line,
                     cudaGetErrorString(code), cudaGetErrorName(code));
}

inline std::string ncclFailure(ncclResult_t code, const char *call,
                               const char *file, int line) {
  const char *last = ncclGetLastError(nullptr);
  return fmt::format("{} failed at {}:{}: {}{}{}", call, baseName(file), line,
                     ncclGetErrorString(code), last && *last ? ": " : "",
                     last ? last : "");
}

} // namespace zbc::rt::cuda

#define ZBC_CUDA_TRY(call)                                                     \
  do {                                                                         \
    cudaError_t zbc_cuda_code_ = (call);                                       \
    if (zbc_cuda_code_ != cudaSuccess)                                         \
      return ::zbc::rt::cuda::cudaFailure(zbc_cuda_code_, #call, __FILE__,     \
                                          __LINE__);                           \
  } while (0)

#define ZBC_NCCL_TRY(call)                                                     \
  do {                                                                         \
    ncclResult_t zbc_nccl_code_ = (call);                                      \
    if (zbc_nccl_code_ != ncclSuccess && zbc_nccl_code_ != ncclInProgress)     \
      return ::zbc::rt::cuda::ncclFailure(zbc_nccl_code_, #call, __FILE__,     \
                                          __LINE__);                           \
  } while (0)

#endif // ZBC_RUNTIME_CUDA_CUDACHECK_H
