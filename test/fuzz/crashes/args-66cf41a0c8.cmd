# zbc args: abort: LLVM ERROR: out of memory | llvm::report_bad_alloc_error < zbc::sched::buildZBH2
# rc -6; seed input: test/fuzz/corpus/args/zb-h2-costs.args
# | LLVM ERROR: out of memory
# | Allocation failed
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.?Program arguments: /work/wt-fuzz/build/bin/zbc schedule --schedule zb-h2 --ranks 1 --ranks 16 --microbatches 2147483647 --cost=F=2,B=1.5,W=0.5 --mem=B=1,W=0.5
# |  #0 0x00007f2ae98b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #1 0x00007f2ae98b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #2 0x00007f2ae98b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #3 0x00007f2ae485a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #4 0x00007f2ae48a8eec __pthread_kill_implementation ./nptl/./nptl/pthread_kill.c:44:76
# |  #5 0x00007f2ae4859fb2 raise ./signal/../sysdeps/posix/raise.c:27:6
# |  #6 0x00007f2ae4844472 abort ./stdlib/./stdlib/abort.c:81:7
zbc schedule --schedule zb-h2 --ranks 1 --ranks 16 --microbatches 2147483647 --cost=F=2,B=1.5,W=0.5 --mem=B=1,W=0.5
