//===- Options.cpp - the subcommands shared by several files --------------===//

#include "Options.h"

using namespace llvm;

cl::SubCommand &zbc::scheduleCommand() {
  static cl::SubCommand command(
      "schedule", "Build a pipeline schedule (or import one), simulate it "
                  "with the given costs and write it as a table, JSON, SVG, a "
                  "Chrome trace or CSV");
  return command;
}

cl::SubCommand &zbc::verifyCommand() {
  static cl::SubCommand command(
      "verify", "Prove a zb.program or a PyTorch schedule CSV (either "
                "format): every rank terminates under rendezvous p2p, every "
                "message matches, every dependence is met; report peak "
                "memory");
  return command;
}
