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

cl::SubCommand &zbc::compileCommand() {
  static cl::SubCommand command(
      "compile", "Compile a model into one executable per rank: split, "
                 "schedule, insert p2p, prove, plan memory, generate C++ "
                 "(EmitC) and build it against the runtime; writes the "
                 "executables, launch.sh, report.json and schedule.svg");
  return command;
}

cl::SubCommand &zbc::inspectCommand() {
  static cl::SubCommand command(
      "inspect", "Say what a checkpoint, a safetensors file (a data file, a "
                 "--save output) or a text data file holds, and check it as "
                 "the ranks would before a run: checksums, headers, shapes, "
                 "finite values, and with --model the model's data keys");
  return command;
}

cl::SubCommand &zbc::importHFCommand() {
  static cl::SubCommand command(
      "import-hf", "Read a Hugging Face model's config.json (Llama, Mistral, "
                   "Qwen2 or GPT-2) and write the model as zb IR, its "
                   "parameters named and laid out as the checkpoint's");
  return command;
}

cl::SubCommand &zbc::exportHFCommand() {
  static cl::SubCommand command(
      "export-hf", "Write what a run of an imported model saved (--save "
                   "output or checkpoint) as a Hugging Face checkpoint: "
                   "config.json and model.safetensors");
  return command;
}

cl::SubCommand &zbc::packCommand() {
  static cl::SubCommand command(
      "pack", "Pack documents (a token stream cut at an EOS id, or tokens "
              "and offsets) into fixed rows, first-fit-decreasing: the "
              "samples zbc run --data reads, with per-document positions, "
              "document ids and -100 where no target is");
  return command;
}

cl::SubCommand &zbc::profileCommand() {
  static cl::SubCommand command(
      "profile", "Measure each stage's F, B and W on this machine's backend "
                 "(compiled ranks, warm-up, repetitions, the median) and its "
                 "bytes; write the cost file zbc schedule/compile/run "
                 "--cost-file read");
  return command;
}

cl::SubCommand &zbc::runCommand() {
  static cl::SubCommand command(
      "run", "Compile a model as `zbc compile` does, then train with it: "
             "launch the ranks and stream one line per step");
  return command;
}
