# zbc args: sanitizer: AddressSanitizer: out-of-memory ../../../../src/libsanitizer/asan/asan_new_delete.cpp:95 in operator new(unsigned long)
# rc -6; seed input: test/fuzz/corpus/args/v-min.args
# | =================================================================
# | ==5202==ERROR: AddressSanitizer: allocator is out of memory trying to allocate 0x47ffffff70 bytes
# |     #0 0x7f223b2b94c8 in operator new(unsigned long) ../../../../src/libsanitizer/asan/asan_new_delete.cpp:95
# |     #1 0x55d2504b6abb in allocate /usr/include/c++/12/bits/new_allocator.h:137
# |     #2 0x55d2504b6abb in allocate /usr/include/c++/12/bits/alloc_traits.h:464
# |     #3 0x55d2504b6abb in _M_allocate /usr/include/c++/12/bits/stl_vector.h:378
# |     #4 0x55d2504b6abb in reserve /usr/include/c++/12/bits/vector.tcc:79
# |     #5 0x55d2504b6abb in buildFromSlots /work/wt-fuzz/passes/lib/Schedule/VShapes.cpp:98
# |     #6 0x55d2504b9ba0 in zbc::sched::buildVMin(zbc::sched::Problem const&, zbc::sched::BuildOptions const&, zbc::sched::BuildReport&) /work/wt-fuzz/passes/lib/Schedule/VShapes.cpp:138
# |     #7 0x55d2503b0c22 in llvm::Expected<zbc::sched::ScheduleTable> std::__invoke_impl<llvm::Expected<zbc::sched::ScheduleTable>, llvm::Expected<zbc::sched::ScheduleTable> (*&)(zbc::sched::Problem cons
# |     #8 0x55d2503b0c22 in std::enable_if<is_invocable_r_v<llvm::Expected<zbc::sched::ScheduleTable>, llvm::Expected<zbc::sched::ScheduleTable> (*&)(zbc::sched::Problem const&, zbc::sched::BuildOptions 
# |     #9 0x55d2503b0c22 in std::_Function_handler<llvm::Expected<zbc::sched::ScheduleTable> (zbc::sched::Problem const&, zbc::sched::BuildOptions const&, zbc::sched::BuildReport&), llvm::Expected<zbc::s
zbc schedule --schedule v-min --ranks=2 --microbatches=-1 --virtual=2 --microbatches 2147483647 --format=chrome
