# zbc args: abort: terminate called after throwing an instance of 'std::length_error' | zbc::runScheduleCommand
# rc -6; seed input: test/fuzz/corpus/args/v-min.args
# | terminate called after throwing an instance of 'std::length_error'
# |   what():  cannot create std::vector larger than max_size()
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.?Program arguments: /work/wt-fuzz/build/bin/zbc schedule --schedule v-min --ranks=2 --virtual=2147483647 --microbatches=4 --format=chrome --schedule interleaved-1f1b
# |  #0 0x00007f96bd4b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #1 0x00007f96bd4b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #2 0x00007f96bd4b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #3 0x00007f96b805a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #4 0x00007f96b80a8eec __pthread_kill_implementation ./nptl/./nptl/pthread_kill.c:44:76
# |  #5 0x00007f96b8059fb2 raise ./signal/../sysdeps/posix/raise.c:27:6
# |  #6 0x00007f96b8044472 abort ./stdlib/./stdlib/abort.c:81:7
zbc schedule --schedule v-min --ranks=2 --virtual=2147483647 --microbatches=4 --format=chrome --schedule interleaved-1f1b
