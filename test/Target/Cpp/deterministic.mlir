// Tests that the C++ of a rank is the same on every run: an R of a
// selective policy reads the F.I its F kept from their buffers, which get
// their slots in the keys' order, not in the order of a map keyed by the
// values' addresses (which differ from run to run). Three runs of the GPT's
// rank 0 under ZB-H1 with --recompute selective print the same file.
//
// RUN: zbc-opt %examples/gpt.mlir --zb-lower-to-cpp="stages=4 schedule=zb-h1 microbatches=8 recompute=selective" | mlir-translate --mlir-to-cpp --file-id=rank0 > %t.1.cpp
// RUN: zbc-opt %examples/gpt.mlir --zb-lower-to-cpp="stages=4 schedule=zb-h1 microbatches=8 recompute=selective" | mlir-translate --mlir-to-cpp --file-id=rank0 > %t.2.cpp
// RUN: zbc-opt %examples/gpt.mlir --zb-lower-to-cpp="stages=4 schedule=zb-h1 microbatches=8 recompute=selective" | mlir-translate --mlir-to-cpp --file-id=rank0 > %t.3.cpp
// RUN: diff %t.1.cpp %t.2.cpp
// RUN: diff %t.1.cpp %t.3.cpp
// RUN: FileCheck %s < %t.1.cpp

// CHECK: // R of stage 0
