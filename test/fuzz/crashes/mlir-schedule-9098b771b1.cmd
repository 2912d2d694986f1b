# zbc-opt mlir-schedule: signal SIGSEGV: mlir::FloatType::getWidth < zbc::zb::verifyTensorSize
# rc -11; seed input: test/Dialect/ZB/invalid.mlir#95
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.	Program arguments: /work/wt-fuzz/build/bin/zbc-opt /tmp/zbc-fuzz-s4g2s901/worker1/input.mlir --zb-backward "--zb-schedule=kind=zb-h1 microbatches=4"
# |  #0 0x00007fc2452b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #1 0x00007fc2452b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #2 0x00007fc2452b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #3 0x00007fc23fe5a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #4 0x0000561813caeaf8 mlir::FloatType::getWidth() (/work/wt-fuzz/build/bin/zbc-opt+0x32faf8)
# |  #5 0x0000561813ce8980 mlir::Type::getIntOrFloatBitWidth() const (/work/wt-fuzz/build/bin/zbc-opt+0x369980)
# |  #6 0x00005618139eb72e zbc::zb::verifyTensorSize(mlir::Operation*, mlir::RankedTensorType, llvm::StringRef) (/work/wt-fuzz/build/bin/zbc-opt+0x6c72e)
# |  #7 0x0000561813a0de75 zbc::zb::PhaseOp::verify() (/work/wt-fuzz/build/bin/zbc-opt+0x8ee75)
# |  #8 0x00005618139db107 mlir::Op<zbc::zb::PhaseOp, mlir::OpTrait::OneRegion, mlir::OpTrait::ZeroResults, mlir::OpTrait::ZeroSuccessors, mlir::OpTrait::ZeroOperands, mlir::OpTrait::HasParent<zbc::zb::St
zbc-opt @INPUT@ --zb-backward '--zb-schedule=schedule=zb-h1 microbatches=4'
