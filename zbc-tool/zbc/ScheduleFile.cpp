//===- ScheduleFile.cpp - a schedule of one's own, compiled ---------------===//
//
// ScheduleFile.h: a PyTorch CSV (either format) or a zb.program as the
// compiled program's order.
//
//===----------------------------------------------------------------------===//

#include "ScheduleFile.h"
#include "Options.h"

#include "Input.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Schedule/TorchCSV.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <vector>

using namespace llvm;
using namespace mlir;
using namespace zbc;

namespace {


bool isProgramFile(StringRef path) { return path.ends_with(".mlir"); }

/// The one zb.program of `module` (parsed from `path`).
Expected<zb::ProgramOp> theProgram(ModuleOp module, StringRef path) {
  SmallVector<zb::ProgramOp> programs(module.getOps<zb::ProgramOp>());
  if (programs.size() != 1)
    return fail(formatv("'{0}' must hold one 'zb.program'; it holds {1}",
                        path, programs.size()));
  return programs.front();
}

/// The placements a CSV of `stages` stages over `ranks` rows may have, the
/// likelier first.
std::vector<sched::Placement> candidatePlacements(int64_t stages,
                                                  int64_t ranks) {
  if (stages == ranks)
    return {sched::Placement::Linear};
  if (stages == 2 * ranks)
    return {sched::Placement::Interleaved, sched::Placement::V};
  return {sched::Placement::Interleaved};
}

/// The character column (1-based) where cell `cell` (1-based) of line
/// `line` of a CSV starts: commas separate cells outside double quotes.
int columnOf(StringRef text, int line, int cell) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  if (line < 1 || line > static_cast<int>(lines.size()))
    return 1;
  StringRef row = lines[line - 1];
  int seen = 1;
  bool quoted = false;
  for (size_t i = 0; i < row.size() && seen < cell; ++i) {
    if (row[i] == '"')
      quoted = !quoted;
    else if (row[i] == ',' && !quoted && ++seen == cell)
      return static_cast<int>(i) + 2;
  }
  return 1;
}

/// The location of the CSV cell at `at` (line, cell).
Location cellLocation(MLIRContext *context, const ScheduleFile &file,
                      std::pair<int, int> at) {
  return FileLineColLoc::get(context, file.path, at.first,
                             columnOf(file.text, at.first, at.second));
}

/// Gives each compute of `program` the location of its CSV cell.
void locateComputes(zb::ProgramOp program, const sched::CSVProgram &csv,
                    const ScheduleFile &file) {
  MLIRContext *context = program.getContext();
  for (auto [r, rankOp] :
       llvm::enumerate(program.getBody().front().getOps<zb::RankOp>())) {
    std::vector<std::pair<int, int>> cells;
    for (auto [op, at] :
         llvm::zip(csv.program.ranks[r].ops, csv.positions[r]))
      if (op.what == sched::OpClass::Compute)
        cells.push_back(at);
    size_t c = 0;
    for (zb::ComputeOp compute :
         rankOp.getBody().front().getOps<zb::ComputeOp>())
      if (c < cells.size())
        compute->setLoc(cellLocation(context, file, cells[c++]));
  }
}

/// Gives each transfer of `program` (written from a CSV's program by
/// writeRankBodies) the location of the cell it came from: `origins[r][i]`
/// is the CSV op behind the rank's op i.
void locateTransfers(zb::ProgramOp program, const sched::CSVProgram &csv,
                     const sched::Program &written,
                     const std::vector<std::vector<int>> &origins,
                     const ScheduleFile &file) {
  MLIRContext *context = program.getContext();
  for (auto [r, rankOp] :
       llvm::enumerate(program.getBody().front().getOps<zb::RankOp>())) {
    // The rank's top-level ops are the program's ops outside groups, in
    // order; a group's members are inside it.
    std::vector<int> topLevel;
    for (auto [i, op] : llvm::enumerate(written.ranks[r].ops))
      if (op.group < 0)
        topLevel.push_back(static_cast<int>(i));
    size_t t = 0;
    for (Operation &op : rankOp.getBody().front()) {
      if (t >= topLevel.size())
        break;
      Location loc = cellLocation(context, file,
                                  csv.positions[r][origins[r][topLevel[t++]]]);
      if (isa<zb::ComputeOp>(op))
        continue;
      op.setLoc(loc);
      op.walk([&](Operation *inner) { inner->setLoc(loc); });
    }
  }
}

/// The program's symbol: @<pipeline>_<file stem>, made an identifier.
std::string programName(zb::PipelineOp pipeline, StringRef path) {
  std::string name =
      (pipeline.getSymName() + "_" + sys::path::stem(path)).str();
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_')
      c = '_';
  return name;
}

Error addCSVProgram(zb::PipelineOp pipeline, ScheduleFile &file,
                    StringRef optimizer) {
  // The placement under which every cell's stage sits on its row's rank.
  std::vector<sched::Placement> candidates =
      candidatePlacements(file.stages, file.ranks);
  std::optional<sched::CSVProgram> csv;
  std::optional<sched::Placement> placement;
  std::string errors; // one per placement tried, when none fits
  for (sched::Placement p : candidates) {
    Expected<sched::CSVProgram> read = sched::parseCSVProgram(
        file.text, static_cast<int>(file.ranks), static_cast<int>(file.stages),
        static_cast<int>(file.microbatches), p);
    if (read) {
      csv = std::move(*read);
      placement = p;
      break;
    }
    std::string error = toString(read.takeError());
    errors += candidates.size() == 1
                  ? error
                  : formatv("\n  read with the {0} placement: {1}",
                            sched::placementName(p), error)
                        .str();
  }
  if (!csv)
    return fail(file.path + ": " +
                (candidates.size() == 1
                     ? errors
                     : "no placement puts every cell's stage on its row's "
                       "rank:" + errors));
  file.hasComms = csv->hasComms;
  // The compute order, checked as a table (every action once, each after
  // what it needs on its rank).
  Expected<sched::ScheduleTable> table = sched::parseCSV(
      file.text, static_cast<int>(file.ranks), static_cast<int>(file.stages),
      static_cast<int>(file.microbatches), *placement);
  if (!table)
    return fail(file.path + ": " + toString(table.takeError()));
  zb::ProgramOp program =
      buildComputeProgram(pipeline, *table, programName(pipeline, file.path),
                          sys::path::filename(file.path), optimizer);
  locateComputes(program, *csv, file);
  if (!csv->hasComms)
    return Error::success(); // zb-insert-p2p adds the transfers
  // The file's own transfers, each carrying its boundary's messages.
  ProgramModel model;
  model.program = csv->program;
  setMessagesFromPipeline(model, pipeline);
  std::vector<std::vector<int>> origins =
      sched::expandBoundaryTransfers(model.program);
  writeRankBodies(program, model);
  locateTransfers(program, *csv, model.program, origins, file);
  return Error::success();
}

Error addMlirProgram(ModuleOp module, zb::PipelineOp pipeline,
                     ScheduleFile &file, StringRef optimizer) {
  MLIRContext *context = module.getContext();
  SourceMgr sourceMgr;
  zbc::DiagnosticPrinter diagnostics(sourceMgr, context);
  OwningOpRef<ModuleOp> parsed = parseInputFile(file.path, *context, sourceMgr);
  if (!parsed)
    return fail("cannot read the schedule file '" + file.path +
                "' (the error is above)");
  Expected<zb::ProgramOp> found = theProgram(*parsed, file.path);
  if (!found)
    return found.takeError();
  if (auto named = (*found)->getAttrOfType<FlatSymbolRefAttr>("pipeline");
      named && named.getValue() != pipeline.getSymName())
    return fail(formatv("'{0}': its zb.program is for pipeline @{1}; the "
                        "model is @{2}",
                        file.path, named.getValue(), pipeline.getSymName()));
  OpBuilder b(context);
  b.setInsertionPointAfter(pipeline);
  auto program = cast<zb::ProgramOp>(b.clone(*found->getOperation()));
  program->setAttr("pipeline",
                   FlatSymbolRefAttr::get(pipeline.getSymNameAttr()));
  program->setAttr("schedule",
                   b.getStringAttr(sys::path::filename(file.path)));
  program.setOptimizerAttr(b.getStringAttr(optimizer));
  // A symbol the model's module may hold already (the model's own name).
  if (SymbolTable::lookupSymbolIn(module, program.getSymName()) != program)
    program.setSymName(programName(pipeline, file.path));
  return Error::success();
}

} // namespace

std::string ScheduleFile::formatName() const {
  if (format == Format::Program)
    return "zb.program";
  return hasComms ? "PyTorch CSV, compute+comms" : "PyTorch CSV, compute only";
}

Expected<ScheduleFile> zbc::readScheduleFile(const std::string &path) {
  ScheduleFile file;
  file.path = path;
  if (isProgramFile(path)) {
    file.format = ScheduleFile::Format::Program;
    MLIRContext context;
    setUpContext(context);
    SourceMgr sourceMgr;
    zbc::DiagnosticPrinter diagnostics(sourceMgr, &context);
    OwningOpRef<ModuleOp> module = parseInputFile(path, context, sourceMgr);
    if (!module)
      return fail("cannot read the schedule file '" + path +
                  "' (the error is above)");
    Expected<zb::ProgramOp> program = theProgram(*module, path);
    if (!program)
      return program.takeError();
    file.ranks = program->getNumRanks();
    file.stages = program->getNumStages();
    file.microbatches = program->getMicrobatches();
    if (std::optional<StringRef> optimizer = program->getOptimizer())
      file.optimizer = optimizer->str();
    return file;
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return fail("cannot read the schedule file '" + path +
                "': " + buffer.getError().message());
  file.text = (*buffer)->getBuffer().str();
  sched::CSVShape shape = sched::scanCSV(file.text);
  if (shape.rows == 0 || shape.stages == 0 || shape.microbatches == 0)
    return fail("'" + path + "' holds no schedule: a PyTorch schedule CSV "
                "has one row of actions per rank (\"0F0,0F1,...\"); a "
                "zb.program is a .mlir file");
  file.ranks = shape.rows;
  file.stages = shape.stages;
  file.microbatches = shape.microbatches;
  file.hasComms = file.text.find("SEND_") != std::string::npos ||
                  file.text.find("RECV_") != std::string::npos;
  return file;
}

Error zbc::addScheduleProgram(ModuleOp module, zb::PipelineOp pipeline,
                              ScheduleFile &file, StringRef optimizer) {
  return file.format == ScheduleFile::Format::Program
             ? addMlirProgram(module, pipeline, file, optimizer)
             : addCSVProgram(pipeline, file, optimizer);
}
