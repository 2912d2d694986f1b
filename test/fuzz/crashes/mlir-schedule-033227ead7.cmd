# zbc-opt mlir-schedule: abort: LLVM ERROR: out of memory | llvm::report_bad_alloc_error < zbc::zb::StageOp::verifyRegions
# rc -6; seed input: test/Dialect/ZB/invalid.mlir#146
# | LLVM ERROR: out of memory
# | Allocation failed
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.	Program arguments: /work/wt-fuzz/build/bin/zbc-opt /tmp/zbc-fuzz-s4g2s901/worker1/input.mlir --zb-backward "--zb-schedule=kind=zb-h1 microbatches=4"
# |  #0 0x00007ff2b70b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #1 0x00007ff2b70b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #2 0x00007ff2b70b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #3 0x00007ff2b205a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #4 0x00007ff2b20a8eec __pthread_kill_implementation ./nptl/./nptl/pthread_kill.c:44:76
# |  #5 0x00007ff2b2059fb2 raise ./signal/../sysdeps/posix/raise.c:27:6
# |  #6 0x00007ff2b2044472 abort ./stdlib/./stdlib/abort.c:81:7
zbc-opt @INPUT@ --zb-backward '--zb-schedule=schedule=zb-h1 microbatches=4'
