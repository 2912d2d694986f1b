# zbc-opt mlir-opt: signal SIGSEGV: mlir::Type::getIntOrFloatBitWidth const < zbc::zb::verifyTensorSize
# rc -11; seed input: test/Dialect/ZB/invalid.mlir#98
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# | Stack dump:
# | 0.	Program arguments: /work/wt-fuzz/build/bin/zbc-opt /tmp/zbc-fuzz-s4g2s901/worker2/input.mlir
# |  #0 0x00007fdf3f2b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #1 0x00007fdf3f2b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #2 0x00007fdf3f2b94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #3 0x00007fdf3a25a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #4 0x00005606d9d43946 mlir::Type::getIntOrFloatBitWidth() const (/work/wt-fuzz/build/bin/zbc-opt+0x369946)
# |  #5 0x00005606d9a4672e zbc::zb::verifyTensorSize(mlir::Operation*, mlir::RankedTensorType, llvm::StringRef) (/work/wt-fuzz/build/bin/zbc-opt+0x6c72e)
# |  #6 0x00005606d9a68e75 zbc::zb::PhaseOp::verify() (/work/wt-fuzz/build/bin/zbc-opt+0x8ee75)
# |  #7 0x00005606d9a36107 mlir::Op<zbc::zb::PhaseOp, mlir::OpTrait::OneRegion, mlir::OpTrait::ZeroResults, mlir::OpTrait::ZeroSuccessors, mlir::OpTrait::ZeroOperands, mlir::OpTrait::HasParent<zbc::zb::St
# |  #8 0x00005606d9a24fcc mlir::RegisteredOperationName::Model<zbc::zb::PhaseOp>::verifyInvariants(mlir::Operation*) (/work/wt-fuzz/build/bin/zbc-opt+0x4afcc)
zbc-opt @INPUT@
