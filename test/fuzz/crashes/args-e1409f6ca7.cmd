# zbc args: sanitizer: GPipe.cpp:29: runtime error: signed integer overflow: N * N cannot be represented in type '…'
# rc -6; seed input: test/fuzz/corpus/args/gpipe-over-limit.args
# | /work/wt-fuzz/passes/lib/Schedule/GPipe.cpp:29:21: runtime error: signed integer overflow: 2147483647 * 2 cannot be represented in type 'int'
# |     #0 0x55f618ac7904 in zbc::sched::buildGPipe(zbc::sched::Problem const&, zbc::sched::BuildOptions const&, zbc::sched::BuildReport&) (/work/wt-fuzz/build-asan/bin/zbc+0xbe2904)
# |     #1 0x55f618abcc22 in llvm::Expected<zbc::sched::ScheduleTable> std::__invoke_impl<llvm::Expected<zbc::sched::ScheduleTable>, llvm::Expected<zbc::sched::ScheduleTable> (*&)(zbc::sched::Problem cons
# |     #2 0x55f618abcc22 in std::enable_if<is_invocable_r_v<llvm::Expected<zbc::sched::ScheduleTable>, llvm::Expected<zbc::sched::ScheduleTable> (*&)(zbc::sched::Problem const&, zbc::sched::BuildOptions 
# |     #3 0x55f618abcc22 in std::_Function_handler<llvm::Expected<zbc::sched::ScheduleTable> (zbc::sched::Problem const&, zbc::sched::BuildOptions const&, zbc::sched::BuildReport&), llvm::Expected<zbc::s
# |     #4 0x55f618ac19da in std::function<llvm::Expected<zbc::sched::ScheduleTable> (zbc::sched::Problem const&, zbc::sched::BuildOptions const&, zbc::sched::BuildReport&)>::operator()(zbc::sched::Proble
# |     #5 0x55f618ac19da in zbc::sched::buildSchedule(llvm::StringRef, zbc::sched::Problem const&, zbc::sched::BuildOptions const&) /work/wt-fuzz/passes/lib/Schedule/Registry.cpp:105
# |     #6 0x55f6185cbb31 in run /work/wt-fuzz/zbc-tool/zbc/ScheduleCommand.cpp:301
# |     #7 0x55f6185cf1ca in zbc::runScheduleCommand() /work/wt-fuzz/zbc-tool/zbc/ScheduleCommand.cpp:346
# |     #8 0x55f61854e0a2 in main /work/wt-fuzz/zbc-tool/zbc/zbc.cpp:192
# |     #9 0x7f1cdc045249 in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58
# |     #10 0x7f1cdc045304 in __libc_start_main_impl ../csu/libc-start.c:360
zbc schedule --schedule=gpipe --ranks=010 --microbatches=2147483647 --activation-budget 3
