# zbc tokens: abort: LLVM ERROR: out of memory | llvm::report_bad_alloc_error < zbc::rt::loadTokenCorpus
# rc -6; seed input: test/fuzz/corpus/tokens/gpt-i8.npy
# | LLVM ERROR: out of memory
# | Allocation failed
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.?Program arguments: zbc inspect @INPUT@
# |  #0 0x00007f95974b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #1 0x00007f95974b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #2 0x00007f95974b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #3 0x00007f959245a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #4 0x00007f95924a8eec __pthread_kill_implementation ./nptl/./nptl/pthread_kill.c:44:76
# |  #5 0x00007f9592459fb2 raise ./signal/../sysdeps/posix/raise.c:27:6
# |  #6 0x00007f9592444472 abort ./stdlib/./stdlib/abort.c:81:7
zbc inspect @INPUT@
