# zbc data: sanitizer: SafeTensors.cpp:283: runtime error: signed integer overflow: N + N cannot be represented in type '…'
# rc -6; seed input: test/fuzz/corpus/data/saved-mixed.safetensors
# | /tmp/ci-clone2/runtime/src/SafeTensors.cpp:283:17: runtime error: signed integer overflow: 9223372036854775807 + 8 cannot be represented in type 'long int'
# |     #0 0x563c8cd52eba in zbc::rt::readSafeTensorsHeader(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::map<std::__cxx11::basic_string<char, std::char_trai
# |     #1 0x563c8cd55d4a in zbc::rt::readSafeTensors(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::map<std::__cxx11::basic_string<char, std::char_traits<cha
# |     #2 0x563c8bf5bfbe in inspectSafeTensors /tmp/ci-clone2/zbc-tool/zbc/InspectCommand.cpp:122
# |     #3 0x563c8bf5bfbe in inspect /tmp/ci-clone2/zbc-tool/zbc/InspectCommand.cpp:193
# |     #4 0x563c8bf698d4 in zbc::runInspectCommand() /tmp/ci-clone2/zbc-tool/zbc/InspectCommand.cpp:200
# |     #5 0x563c8bd163a4 in main /tmp/ci-clone2/zbc-tool/zbc/zbc.cpp:253
# |     #6 0x7f6b37045249 in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58
# |     #7 0x7f6b37045304 in __libc_start_main_impl ../csu/libc-start.c:360
# |     #8 0x563c8bcefb50 in _start (/tmp/ci-clone2/build-asan/bin/zbc+0xfc1b50)
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
zbc inspect @INPUT@ --model @EXAMPLES@/mlp.mlir
