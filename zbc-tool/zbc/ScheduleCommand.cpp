//===- ScheduleCommand.cpp - `zbc schedule`: build, simulate, draw --------===//
//
// Builds a named schedule (or imports one from a CSV) for a problem given on
// the command line or in a JSON cost file, simulates it and writes it as a
// table, JSON, SVG, a Chrome trace or CSV. No model is needed:
//
//   zbc schedule --schedule zb-h1 --ranks 4 --microbatches 8 --format svg -o h1.svg
//   zbc schedule --schedule zb-auto --cost-file costs.json --activation-budget 8
//   zbc schedule --import order.csv --ranks 4 --microbatches 8
//   zbc schedule --schedule zb-auto --recompute full --activation-budget 2
//   zbc schedule --schedule 1f1b --copy-bandwidth 1 --activation-budget 2 --offload auto
//
// Command-line values override the cost file. Every failure (bad option,
// bad file, a schedule that breaks a dependency or the memory limit) prints
// one error line and exits 1.
//
//===----------------------------------------------------------------------===//

#include "zbc/Options/OptionValues.h"
#include "Options.h"
#include "CompileFlags.h"
#include "ProblemOptions.h"

#include "zbc/Schedule/CostFile.h"
#include "zbc/Schedule/Export.h"
#include "zbc/Schedule/Registry.h"
#include "zbc/Support/Limits.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace llvm;
using zbc::fail;
using namespace zbc::sched;

namespace {
using zbc::zbcCategory;

cl::opt<bool> listSchedules("list", cl::desc("List the registered schedules"),
                            cl::sub(zbc::scheduleCommand()), cl::cat(zbcCategory));
/// The order's flags, as `zbc compile` has them (CompileOptions.h): the
/// schedule, --exact, --recompute and --offload.
zbc::CompileFlags &orderFlags() {
  static zbc::CompileFlags flags(
      cl::SubCommandGroup({&zbc::scheduleCommand()}), zbc::OrderGroup);
  return flags;
}
[[maybe_unused]] zbc::CompileFlags &registered = orderFlags();
cl::opt<std::string> importFile(
    "import",
    cl::desc("Simulate and check this schedule CSV (PyTorch pipelining "
             "format) instead of building one"),
    cl::value_desc("file.csv"), cl::sub(zbc::scheduleCommand()), cl::cat(zbcCategory));
enum class Format { Table, JSON, SVG, Chrome, CSV, CSVComms };
cl::opt<Format> formatOpt(
    "format", cl::desc("Output format"), cl::init(Format::Table),
    cl::values(clEnumValN(Format::Table, "table", "summary and per-rank order"),
               clEnumValN(Format::JSON, "json", "makespan, bubble rate, memory, timeline"),
               clEnumValN(Format::SVG, "svg", "timeline picture"),
               clEnumValN(Format::Chrome, "chrome", "Chrome/Perfetto trace"),
               clEnumValN(Format::CSV, "csv", "PyTorch pipelining schedule CSV"),
               clEnumValN(Format::CSVComms, "csv-comms",
                          "the same with the sends and receives zbc inserts "
                          "(PyTorch's compute+comms format)")),
    cl::sub(zbc::scheduleCommand()), cl::cat(zbcCategory));
cl::opt<std::string> outputFile("o", cl::desc("Write here instead of stdout"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::sub(zbc::scheduleCommand()), cl::cat(zbcCategory));


void printList(raw_ostream &os) {
  for (const ScheduleInfo &info : registeredSchedules()) {
    os << info.name << "\n  " << info.summary << "\n  source: " << info.source
       << "\n  bubble: " << info.bubble << "; peak activations: " << info.memory
       << "; placement: " << placementName(info.placement) << "\n";
  }
}

Error run() {
  // An imported CSV is read first: its rows and cells size the problem where
  // the command line and the cost file do not.
  std::unique_ptr<MemoryBuffer> csv;
  zbc::ImportShape inferred;
  if (!importFile.empty()) {
    std::string error;
    csv = mlir::openInputFile(importFile, &error);
    if (!csv)
      return fail(error);
    inferred = zbc::inferImportShape(csv->getBuffer());
    for (StringRef ignored : {"schedule", "exact", "recompute", "offload"})
      if (orderFlags().given(ignored))
        errs() << "zbc: warning: " << orderFlags().flagOf(ignored)
               << " is ignored with --import (the CSV is the schedule)\n";
  }
  Expected<Problem> problem = zbc::readProblem(inferred);
  if (!problem)
    return problem.takeError();

  BuiltSchedule built;
  if (csv) {
    Expected<Placement> placement = zbc::importPlacement(*problem);
    if (!placement)
      return placement.takeError();
    Expected<ScheduleTable> parsed =
        parseCSV(csv->getBuffer(), problem->ranks, problem->numStages(),
                 problem->microbatches, *placement);
    if (!parsed)
      return fail(importFile + ": " + toString(parsed.takeError()));
    built.problem = *problem;
    built.budgetOrigin = problem->budget() > 0 ? "given" : "none";
    built.table = std::move(*parsed);
    Expected<SimResult> simulated = simulate(built.problem, built.table);
    if (!simulated)
      return fail(importFile + ": " + toString(simulated.takeError()));
    built.sim = std::move(*simulated);
  } else {
    Expected<zbc::CompileOptions> order = orderFlags().read();
    if (!order)
      return order.takeError();
    // Checkpoints rewrite a model's stages, which zbc schedule has not.
    if (order->recompute == zbc::RecomputeLever::Checkpoint)
      return fail("--recompute checkpoint rewrites a model's backward: "
                  "zbc compile MODEL --recompute checkpoint");
    BuildOptions options;
    options.exactSeconds = order->exactSeconds;
    options.recompute = zbc::scheduleModeOf(order->recompute);
    options.offload = order->offload;
    Expected<BuiltSchedule> result =
        buildSchedule(order->schedule, *problem, options);
    if (!result)
      return result.takeError();
    built = std::move(*result);
  }
  const Problem &solved = built.problem;
  const ScheduleTable &table = built.table;
  const SimResult &sim = built.sim;
  const std::vector<std::string> &notes = built.report.notes;

  std::string error;
  std::unique_ptr<ToolOutputFile> out = mlir::openOutputFile(outputFile, &error);
  if (!out)
    return fail(error);
  switch (formatOpt) {
  case Format::Table:
    writeTable(solved, table, sim, out->os(), built.budgetOrigin);
    for (const std::string &note : notes)
      out->os() << "note: " << note << "\n";
    break;
  case Format::JSON:
    writeJSON(solved, table, sim, out->os(), built.budgetOrigin);
    break;
  case Format::SVG:
    writeSVG(solved, table, sim, out->os(), {}, zbc::problemTimeUnit());
    break;
  case Format::Chrome:
    writeChromeTrace(solved, table, sim, out->os());
    break;
  case Format::CSV:
    if (Error error = writeCSV(table, out->os()))
      return error;
    break;
  case Format::CSVComms: {
    // The transfers zb-insert-p2p would place, one message per boundary.
    if (Error error = checkCSVExpressible(table))
      return error;
    Program program = programOfTable(table);
    if (Error e = insertTransfers(program))
      return e;
    writeCSVComms(program, out->os());
    break;
  }
  }
  // Notes go to stderr when stdout carries a machine format.
  if (formatOpt != Format::Table)
    for (const std::string &note : notes)
      errs() << "note: " << note << "\n";
  out->keep();
  return Error::success();
}
} // namespace

int zbc::runScheduleCommand() {
  if (listSchedules) {
    printList(outs());
    return 0;
  }
  if (Error error = run()) {
    errs() << "zbc: error: " << toString(std::move(error)) << "\n";
    return 1;
  }
  return 0;
}
