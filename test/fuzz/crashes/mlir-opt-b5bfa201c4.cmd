# zbc-opt mlir-opt: sanitizer: AddressSanitizer: SEGV ../sysdeps/unix/sysv/linux/x86_64/syscall.S:38 in syscall | __interceptor_backtrace.part.0 < zbc::zb::StageOp::verifyRegions
# rc -6; seed input: test/Dialect/ZB/invalid.mlir#207
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.	Program arguments: /work/wt-fuzz/build-asan/bin/zbc-opt /tmp/zbc-fuzz-x70xr7gr/worker1/input.mlir
# |  #0 0x00007fa629051f31 __interceptor_backtrace.part.0 /build/reproducible-path/gcc-12-12.2.0/build/x86_64-linux-gnu/libsanitizer/asan/../../../../src/libsanitizer/sanitizer_common/sanitizer_common_int
# |  #1 0x00007fa6240b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #2 0x00007fa6240b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #3 0x00007fa6240b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #4 0x00007fa61e45a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #5 0x00007fa62409f7e0 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4e9f7e0)
# |  #6 0x000055ff8866bf07 std::pair<llvm::StringMapIterBase<llvm::EmptyStringSetTag, false>, bool> llvm::StringMap<llvm::EmptyStringSetTag, llvm::MallocAllocator>::try_emplace<>(llvm::StringRef) /usr/inc
# |  #7 0x000055ff8866bf07 llvm::StringSet<llvm::MallocAllocator>::insert(llvm::StringRef) /usr/include/llvm-22/llvm/ADT/StringSet.h:40:29
# |  #8 0x000055ff8866bf07 zbc::zb::StageOp::verifyRegions() /work/wt-fuzz/dialect/lib/ZBPipeline.cpp:279:32
zbc-opt @INPUT@
