# zbc-opt mlir-opt: sanitizer: AddressSanitizer: SEGV ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38 in syscall | __interceptor_backtrace.part.0 < zbc::zb::verifyTensorSize
# rc -6; seed input: test/Dialect/ZB/invalid.mlir#162
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.	Program arguments: /work/wt-fuzz/build-asan/bin/zbc-opt /tmp/zbc-fuzz-x70xr7gr/worker2/input.mlir
# |  #0 0x00007f52e3e51f31 __interceptor_backtrace.part.0 /build/reproducible-path/gcc-12-12.2.0/build/x86_64-linux-gnu/libsanitizer/asan/../../../../src/libsanitizer/sanitizer_common/sanitizer_common_int
# |  #1 0x00007f52deeb8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #2 0x00007f52deeb5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #3 0x00007f52deeb94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #4 0x00007f52d9e5a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #5 0x0000561930c661e8 mlir::FloatType::getWidth() (/work/wt-fuzz/build-asan/bin/zbc-opt+0xeab1e8)
# |  #6 0x0000561930ca0280 mlir::Type::getIntOrFloatBitWidth() const (/work/wt-fuzz/build-asan/bin/zbc-opt+0xee5280)
# |  #7 0x000056193059bfe4 mlir::detail::ShapedTypeTrait<mlir::RankedTensorType>::getElementTypeBitWidth() const /usr/lib/llvm-22/include/mlir/IR/BuiltinTypeInterfaces.h.inc:598:71
# |  #8 0x000056193059bfe4 zbc::zb::verifyTensorSize(mlir::Operation*, mlir::RankedTensorType, llvm::StringRef) /work/wt-fuzz/dialect/lib/ZBOps.cpp:79:77
zbc-opt @INPUT@
