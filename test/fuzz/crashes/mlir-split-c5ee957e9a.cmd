# zbc mlir-split: signal SIGSEGV: mlir::FloatType::getWidth < zbc::zb::verifyTensorSize
# rc -11; seed input: test/Dialect/ZB/invalid.mlir#179
# | PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace and instructions to reproduce the bug.
# |  #0 0x00007f3c9ecb8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb8786)
# |  #1 0x00007f3c9ecb5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb5fd3)
# |  #2 0x00007f3c9ecb94f4 (/usr/lib/llvm-22/lib/libLLVM.so.22.1+0x4eb94f4)
# |  #3 0x00007f3c99c5a050 (/lib/x86_64-linux-gnu/libc.so.6+0x3c050)
# |  #4 0x00005624f3c060d8 mlir::FloatType::getWidth() (/work/wt-fuzz/build/bin/zbc+0x1b10d8)
# |  #5 0x00005624f3c281b0 mlir::Type::getIntOrFloatBitWidth() const (/work/wt-fuzz/build/bin/zbc+0x1d31b0)
# |  #6 0x00005624f3ab18ee zbc::zb::verifyTensorSize(mlir::Operation*, mlir::RankedTensorType, llvm::StringRef) (/work/wt-fuzz/build/bin/zbc+0x5c8ee)
# |  #7 0x00005624f3ad3da5 zbc::zb::PhaseOp::verify() (/work/wt-fuzz/build/bin/zbc+0x7eda5)
# |  #8 0x00005624f3aa1807 mlir::Op<zbc::zb::PhaseOp, mlir::OpTrait::OneRegion, mlir::OpTrait::ZeroResults, mlir::OpTrait::ZeroSuccessors, mlir::OpTrait::ZeroOperands, mlir::OpTrait::HasParent<zbc::zb::St
# |  #9 0x00005624f3a906cc mlir::RegisteredOperationName::Model<zbc::zb::PhaseOp>::verifyInvariants(mlir::Operation*) (/work/wt-fuzz/build/bin/zbc+0x3b6cc)
# | #10 0x00005624f3c29101 (anonymous namespace)::OperationVerifier::verifyOpAndDominance(mlir::Operation&) Verifier.cpp.o:0:0
zbc split @INPUT@
