//===- ScheduleCommand.cpp - `zbc schedule`: build, simulate, draw --------===//
//
// Builds a named schedule (or imports one from a CSV) for a problem given on
// the command line or in a JSON cost file, simulates it and writes it as a
// table, JSON, SVG, a Chrome trace or CSV. No model is needed:
//
//   zbc schedule --schedule zb-h1 --ranks 4 --microbatches 8 --format svg -o h1.svg
//   zbc schedule --schedule zb-auto --cost-file costs.json --mem-limit 8
//   zbc schedule --import order.csv --ranks 4 --microbatches 8
//
// Command-line values override the cost file. Every failure (bad option,
// bad file, a schedule that breaks a dependency or the memory limit) prints
// one error line and exits 1.
//
//===----------------------------------------------------------------------===//

#include "Options.h"

#include "zbc/Schedule/Export.h"
#include "zbc/Schedule/Registry.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace llvm;
using namespace zbc::sched;

namespace zbc {
cl::SubCommand scheduleCommand(
    "schedule", "Build a pipeline schedule (or import one), simulate it with "
                "the given costs and write it as a table, JSON, SVG, a Chrome "
                "trace or CSV");
} // namespace zbc

namespace {
using zbc::scheduleCommand;
using zbc::zbcCategory;

cl::opt<std::string> scheduleName("schedule",
                                  cl::desc("Registered schedule to build"),
                                  cl::value_desc("name"), cl::init("1f1b"),
                                  cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<bool> listSchedules("list", cl::desc("List the registered schedules"),
                            cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<int> ranksOpt("ranks", cl::desc("Pipeline ranks p"),
                      cl::value_desc("P"), cl::sub(scheduleCommand),
                      cl::cat(zbcCategory));
cl::opt<int> microbatchesOpt("microbatches",
                             cl::desc("Microbatches per step m"),
                             cl::value_desc("M"), cl::sub(scheduleCommand),
                             cl::cat(zbcCategory));
cl::opt<int> virtualOpt("virtual",
                        cl::desc("Stages per rank v (interleaved: any; V "
                                 "schedules: 2); costs are then per stage"),
                        cl::value_desc("V"), cl::sub(scheduleCommand),
                        cl::cat(zbcCategory));
cl::opt<std::string> costOpt(
    "cost", cl::desc("Times of every stage: F=..,B=..,W=..,comm=.."),
    cl::value_desc("list"), cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<std::string> memOpt(
    "mem", cl::desc("Activation memory of every stage: B=..(M_B),W=..(M_W)"),
    cl::value_desc("list"), cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<std::string> costFile(
    "cost-file",
    cl::desc("JSON with ranks, microbatches, per-stage F/B/W/M_B/M_W lists and "
             "comm (command-line values override it)"),
    cl::value_desc("file"), cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<double> memLimitOpt("mem-limit",
                            cl::desc("Per-rank activation memory limit "
                                     "(0: none; zb-auto default: 2p M_B)"),
                            cl::value_desc("X"), cl::sub(scheduleCommand),
                            cl::cat(zbcCategory));
cl::opt<double> exactOpt("exact",
                         cl::desc("zb-auto: refine with the ILP (CBC) for at "
                                  "most this many seconds; report bound and gap"),
                         cl::value_desc("seconds"), cl::init(0),
                         cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<std::string> importFile(
    "import",
    cl::desc("Simulate and check this schedule CSV (PyTorch pipelining "
             "format) instead of building one"),
    cl::value_desc("file.csv"), cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<std::string> placementOpt(
    "placement",
    cl::desc("With --import: linear, interleaved or v (default: linear, or "
             "interleaved when --virtual > 1)"),
    cl::value_desc("kind"), cl::sub(scheduleCommand), cl::cat(zbcCategory));
enum class Format { Table, JSON, SVG, Chrome, CSV };
cl::opt<Format> formatOpt(
    "format", cl::desc("Output format"), cl::init(Format::Table),
    cl::values(clEnumValN(Format::Table, "table", "summary and per-rank order"),
               clEnumValN(Format::JSON, "json", "makespan, bubble rate, memory, timeline"),
               clEnumValN(Format::SVG, "svg", "timeline picture"),
               clEnumValN(Format::Chrome, "chrome", "Chrome/Perfetto trace"),
               clEnumValN(Format::CSV, "csv", "PyTorch pipelining schedule CSV")),
    cl::sub(scheduleCommand), cl::cat(zbcCategory));
cl::opt<std::string> outputFile("o", cl::desc("Write here instead of stdout"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::sub(scheduleCommand), cl::cat(zbcCategory));

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Parses "K=v,K=v" into numbers; keys outside `allowed` are errors.
Expected<StringMap<double>> parseAssignments(StringRef option, StringRef text,
                                             ArrayRef<StringRef> allowed) {
  StringMap<double> values;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    if (!is_contained(allowed, key))
      return fail("--" + option + ": unknown key '" + key + "' (expected " +
                  join(allowed, ", ") + ")");
    double number;
    if (value.trim().getAsDouble(number))
      return fail("--" + option + ": '" + item + "' needs a number after '='");
    values[key] = number;
  }
  return values;
}

/// Reads a list of numbers, or one number for every stage.
Expected<std::vector<double>> readList(const json::Object &object,
                                       StringRef key) {
  std::vector<double> out;
  const json::Value *value = object.get(key);
  if (!value)
    return out;
  if (std::optional<double> one = value->getAsNumber())
    return std::vector<double>{*one};
  const json::Array *array = value->getAsArray();
  if (!array)
    return fail("cost file: '" + key + "' must be a number or a list of numbers");
  for (const json::Value &item : *array) {
    std::optional<double> number = item.getAsNumber();
    if (!number)
      return fail("cost file: '" + key + "' must hold numbers only");
    out.push_back(*number);
  }
  return out;
}

/// Builds the problem from the cost file, then the command line.
Expected<Problem> readProblem() {
  Problem problem;
  std::vector<double> f, b, w, mb, mw;
  if (!costFile.empty()) {
    std::string error;
    std::unique_ptr<MemoryBuffer> file = mlir::openInputFile(costFile, &error);
    if (!file)
      return fail(error);
    Expected<json::Value> parsed = json::parse(file->getBuffer());
    if (!parsed)
      return fail(costFile + ": " + toString(parsed.takeError()));
    const json::Object *object = parsed->getAsObject();
    if (!object)
      return fail(costFile + ": expected a JSON object");
    static const SmallVector<StringRef> known = {
        "ranks", "microbatches", "virtual", "F",   "B",
        "W",     "comm",         "M_B",     "M_W", "mem_limit"};
    for (const auto &entry : *object)
      if (!is_contained(known, StringRef(entry.first)))
        return fail(costFile + ": unknown key '" + StringRef(entry.first) +
                    "' (expected " + join(known, ", ") + ")");
    if (std::optional<int64_t> v = object->getInteger("ranks"))
      problem.ranks = *v;
    if (std::optional<int64_t> v = object->getInteger("microbatches"))
      problem.microbatches = *v;
    if (std::optional<int64_t> v = object->getInteger("virtual"))
      problem.virtualStages = *v;
    if (std::optional<double> v = object->getNumber("comm"))
      problem.comm = *v;
    if (std::optional<double> v = object->getNumber("mem_limit"))
      problem.memLimit = *v;
    for (auto [key, list] : {std::pair<StringRef, std::vector<double> *>{"F", &f},
                             {"B", &b}, {"W", &w}, {"M_B", &mb}, {"M_W", &mw}}) {
      Expected<std::vector<double>> values = readList(*object, key);
      if (!values)
        return values.takeError();
      *list = std::move(*values);
    }
  }
  if (ranksOpt.getNumOccurrences())
    problem.ranks = ranksOpt;
  if (microbatchesOpt.getNumOccurrences())
    problem.microbatches = microbatchesOpt;
  if (virtualOpt.getNumOccurrences())
    problem.virtualStages = virtualOpt;
  if (memLimitOpt.getNumOccurrences())
    problem.memLimit = memLimitOpt;
  if (!costOpt.empty()) {
    Expected<StringMap<double>> costs =
        parseAssignments("cost", costOpt, {"F", "B", "W", "comm"});
    if (!costs)
      return costs.takeError();
    for (auto &[key, list] : {std::pair<StringRef, std::vector<double> *>{"F", &f},
                              {"B", &b}, {"W", &w}})
      if (costs->count(key))
        *list = {costs->lookup(key)};
    if (costs->count("comm"))
      problem.comm = costs->lookup("comm");
  }
  if (!memOpt.empty()) {
    Expected<StringMap<double>> mem = parseAssignments("mem", memOpt, {"B", "W"});
    if (!mem)
      return mem.takeError();
    if (mem->count("B"))
      mb = {mem->lookup("B")};
    if (mem->count("W"))
      mw = {mem->lookup("W")};
  }

  // Defaults: unit times, M_B = M_W = 1 (memory in units of M_B).
  int stages = problem.ranks * problem.virtualStages;
  if (problem.ranks < 1 || problem.virtualStages < 1 ||
      problem.microbatches < 1)
    return fail("--ranks, --microbatches and --virtual must be at least 1 "
                "(got " + Twine(problem.ranks) + ", " +
                Twine(problem.microbatches) + ", " +
                Twine(problem.virtualStages) + ")");
  problem.stages.assign(stages, StageCost{});
  for (auto [key, list, field] :
       {std::tuple<StringRef, std::vector<double> *, double StageCost::*>{
            "F", &f, &StageCost::F},
        {"B", &b, &StageCost::B}, {"W", &w, &StageCost::W},
        {"M_B", &mb, &StageCost::memB}, {"M_W", &mw, &StageCost::memW}}) {
    if (list->empty())
      continue;
    if (list->size() != 1 && static_cast<int>(list->size()) != stages)
      return fail(key + " has " + Twine(list->size()) + " values for " +
                  Twine(stages) + " stages (give one, or one per stage)");
    for (int s = 0; s < stages; ++s)
      problem.stages[s].*field = (*list)[list->size() == 1 ? 0 : s];
  }
  return problem;
}

Expected<Placement> importPlacement(const Problem &problem) {
  if (placementOpt.empty())
    return problem.virtualStages > 1 ? Placement::Interleaved
                                     : Placement::Linear;
  if (placementOpt == "linear")
    return Placement::Linear;
  if (placementOpt == "interleaved")
    return Placement::Interleaved;
  if (placementOpt == "v")
    return Placement::V;
  return fail("--placement must be linear, interleaved or v, got '" +
              placementOpt + "'");
}

void printList(raw_ostream &os) {
  for (const ScheduleInfo &info : registeredSchedules()) {
    os << info.name << "\n  " << info.summary << "\n  source: " << info.source
       << "\n  bubble: " << info.bubble << "; peak activations: " << info.memory
       << "; placement: " << placementName(info.placement) << "\n";
  }
}

Error run() {
  Expected<Problem> problem = readProblem();
  if (!problem)
    return problem.takeError();

  ScheduleTable table;
  SimResult sim;
  std::vector<std::string> notes;
  if (!importFile.empty()) {
    if (Error error = problem->validate())
      return error;
    Expected<Placement> placement = importPlacement(*problem);
    if (!placement)
      return placement.takeError();
    std::string error;
    std::unique_ptr<MemoryBuffer> file = mlir::openInputFile(importFile, &error);
    if (!file)
      return fail(error);
    Expected<ScheduleTable> parsed =
        parseCSV(file->getBuffer(), problem->ranks, problem->numStages(),
                 problem->microbatches, *placement);
    if (!parsed)
      return fail(importFile + ": " + toString(parsed.takeError()));
    table = std::move(*parsed);
    Expected<SimResult> simulated = simulate(*problem, table);
    if (!simulated)
      return fail(importFile + ": " + toString(simulated.takeError()));
    sim = std::move(*simulated);
  } else {
    BuildOptions options;
    options.exactSeconds = exactOpt;
    Expected<BuiltSchedule> built = buildSchedule(scheduleName, *problem, options);
    if (!built)
      return built.takeError();
    table = std::move(built->table);
    sim = std::move(built->sim);
    notes = std::move(built->report.notes);
  }

  std::string error;
  std::unique_ptr<ToolOutputFile> out = mlir::openOutputFile(outputFile, &error);
  if (!out)
    return fail(error);
  switch (formatOpt) {
  case Format::Table:
    writeTable(*problem, table, sim, out->os());
    for (const std::string &note : notes)
      out->os() << "note: " << note << "\n";
    break;
  case Format::JSON:
    writeJSON(*problem, table, sim, out->os());
    break;
  case Format::SVG:
    writeSVG(*problem, table, sim, out->os());
    break;
  case Format::Chrome:
    writeChromeTrace(*problem, table, sim, out->os());
    break;
  case Format::CSV:
    writeCSV(table, out->os());
    break;
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
