# zbc-opt mlir-opt: abort: zbc-opt: /usr/include/llvm-N/llvm/Support/Casting.h:N: decltype(auto) llvm::cast(From&) [with To = mlir::RankedTensorType; From = mlir::Type]: Assertion `isa<To | __interceptor_backtrace.part.0 < zbc::zb::PhaseOp::verify
# rc -6; seed input: test/Dialect/ZB/invalid.mlir#95
# | zbc-opt: /usr/include/llvm-22/llvm/Support/Casting.h:566: decltype(auto) llvm::cast(From&) [with To = mlir::RankedTensorType; From = mlir::Type]: Assertion `isa<To>(Val) && "cast<Ty>() argument of inc
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.	Program arguments: /work/wt-fuzz/build-asan/bin/zbc-opt /tmp/zbc-fuzz-x70xr7gr/worker1/input.mlir
# |  #0 0x00007fc4ad251f31 __interceptor_backtrace.part.0 /build/reproducible-path/gcc-12-12.2.0/build/x86_64-linux-gnu/libsanitizer/asan/../../../../src/libsanitizer/sanitizer_common/sanitizer_common_int
# |  #1 0x00007fc4a82b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #2 0x00007fc4a82b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #3 0x00007fc4a82b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #4 0x00007fc4a265a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #5 0x00007fc4a26a8eec __pthread_kill_implementation ./nptl/./nptl/pthread_kill.c:44:76
# |  #6 0x00007fc4a2659fb2 raise ./signal/../sysdeps/posix/raise.c:27:6
# |  #7 0x00007fc4a2644472 abort ./stdlib/./stdlib/abort.c:81:7
zbc-opt @INPUT@
