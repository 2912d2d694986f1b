//===- zbc.cpp - the zbc command line -------------------------------------===//
//
// The user-facing driver. Each task is a subcommand:
//
//   zbc check MODEL.mlir    parse, verify and summarise a model or schedule
//   zbc split MODEL.mlir    cut into stages, differentiate, split B/W, report
//   zbc schedule ...        build/simulate/draw a schedule (ScheduleCommand.cpp)
//   zbc verify FILE         prove a program or a PyTorch CSV (VerifyCommand.cpp)
//   zbc compile MODEL -o D  per-rank executables (CompileCommand.cpp)
//   zbc run MODEL ...       compile, then train (RunCommand.cpp)
//   zbc profile MODEL       measure stage costs into a cost file
//                           (ProfileCommand.cpp)
//   zbc inspect PATH        what a checkpoint or data file holds, checked
//                           (InspectCommand.cpp)
//   zbc import-hf DIR       a Hugging Face config.json as zb IR
//                           (ImportHFCommand.cpp)
//   zbc export-hf DIR       saved weights as a Hugging Face checkpoint
//                           (ExportHFCommand.cpp)
//   zbc pack INPUT -o OUT   documents packed into training samples
//                           (PackCommand.cpp)
//
// Errors name the place (file:line:col for IR), and every failure exits 1.
//
//===----------------------------------------------------------------------===//

#include "Input.h"
#include "zbc/Options/OptionValues.h"
#include "Options.h"
#include "OutputFile.h"
#include "SchedulePlugins.h"
#include "SplitReport.h"
#include "Summary.h"
#include "UnknownFlags.h"

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Support/IRNesting.h"
#include "zbc/Support/Limits.h"
#include "zbc/Passes/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>

using namespace mlir;
namespace cl = llvm::cl;

cl::OptionCategory zbc::zbcCategory("zbc options");
using zbc::zbcCategory;

//===----------------------------------------------------------------------===//
// zbc check
//===----------------------------------------------------------------------===//

static cl::SubCommand checkCommand(
    "check", "Parse and verify a zb model, pipeline or schedule, then print "
             "a summary (stages, parameters and their bytes, ops per stage)");
static cl::list<std::string> checkInputs(cl::Positional, cl::OneOrMore,
                                         cl::desc("<file.mlir>..."),
                                         cl::sub(checkCommand),
                                         cl::cat(zbcCategory));

static int runCheck() {
  MLIRContext context;
  zbc::setUpContext(context);
  int status = 0;
  for (const std::string &path : checkInputs) {
    llvm::SourceMgr sourceMgr;
    zbc::DiagnosticPrinter diagnostics(sourceMgr, &context);
    OwningOpRef<ModuleOp> module = zbc::parseInputFile(path, context, sourceMgr);
    if (!module) {
      status = 1;
      continue;
    }
    llvm::outs() << "== " << path << "\n";
    bool any = false;
    for (Operation &op : module->getBody()->getOperations()) {
      if (auto model = dyn_cast<zbc::zb::ModelOp>(op)) {
        zbc::printModelSummary(model, llvm::outs());
        any = true;
      } else if (auto program = dyn_cast<zbc::zb::ProgramOp>(op)) {
        if (failed(zbc::printProgramSummary(program, llvm::outs())))
          status = 1;
        any = true;
      } else if (auto pipeline = dyn_cast<zbc::zb::PipelineOp>(op)) {
        if (failed(zbc::printSplitReport(pipeline, llvm::outs())))
          status = 1;
        any = true;
      }
    }
    if (!any) {
      llvm::errs() << "zbc: error: " << path
                   << " holds no 'zb.model', 'zb.pipeline' or 'zb.program'\n";
      status = 1;
    }
  }
  return status;
}

//===----------------------------------------------------------------------===//
// zbc split
//===----------------------------------------------------------------------===//

static cl::SubCommand splitCommand(
    "split", "Cut a model into stages, differentiate it and split every "
             "backward into B (input gradient) and W (weight gradient); print "
             "each stage's F/B/W FLOPs and activation memory");
static cl::opt<std::string> splitInput(cl::Positional, cl::Required,
                                       cl::desc("<model.mlir>"),
                                       cl::sub(splitCommand),
                                       cl::cat(zbcCategory));
static cl::opt<std::string> splitStages(
    "stages",
    cl::desc("Stages for a model without zb.cut ops (default: keep the "
             "model's cuts)"),
    cl::value_desc("N"), cl::sub(splitCommand), cl::cat(zbcCategory));
static cl::opt<std::string> splitOutput("o",
                                        cl::desc("Also write the split IR here"),
                                        cl::value_desc("file"),
                                        cl::sub(splitCommand),
                                        cl::cat(zbcCategory));

static int runSplit() {
  int64_t stages = 0;
  if (splitStages.getNumOccurrences()) {
    llvm::Expected<int64_t> n = zbc::parseInteger(
        "--stages", splitStages, 0, zbc::limits::kMaxStages);
    if (!n) {
      llvm::errs() << "zbc: error: " << llvm::toString(n.takeError()) << "\n";
      return 1;
    }
    stages = *n;
  }
  MLIRContext context;
  zbc::setUpContext(context);
  llvm::SourceMgr sourceMgr;
  zbc::DiagnosticPrinter diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = zbc::parseInputFile(splitInput, context, sourceMgr);
  if (!module)
    return 1;
  if (module->getOps<zbc::zb::ModelOp>().empty()) {
    llvm::errs() << "zbc: error: " << splitInput << " holds no 'zb.model'\n";
    return 1;
  }
  PassManager pm(&context);
  zbc::BackwardPipelineOptions options;
  options.stages = stages;
  zbc::buildBackwardPipeline(pm, options);
  if (failed(pm.run(*module)))
    return 1;
  llvm::outs() << "== " << splitInput << "\n";
  for (auto pipeline : module->getOps<zbc::zb::PipelineOp>())
    if (failed(zbc::printSplitReport(pipeline, llvm::outs())))
      return 1;
  if (!splitOutput.empty())
    if (llvm::Error e = zbc::writeFile(
            splitOutput, [&](llvm::raw_ostream &os) { module->print(os); })) {
      llvm::errs() << "zbc: error: " << llvm::toString(std::move(e)) << "\n";
      return 1;
    }
  return 0;
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // A file-size limit (ulimit -f) fails a write with EFBIG, which zbc
  // reports, instead of killing it without a word (SIGXFSZ).
  std::signal(SIGXFSZ, SIG_IGN);
  cl::HideUnrelatedOptions(zbcCategory);
  cl::HideUnrelatedOptions(zbcCategory, checkCommand);
  cl::HideUnrelatedOptions(zbcCategory, splitCommand);
  cl::HideUnrelatedOptions(zbcCategory, zbc::scheduleCommand());
  cl::HideUnrelatedOptions(zbcCategory, zbc::verifyCommand());
  cl::HideUnrelatedOptions(zbcCategory, zbc::compileCommand());
  cl::HideUnrelatedOptions(zbcCategory, zbc::runCommand());
  cl::HideUnrelatedOptions(zbcCategory, zbc::inspectCommand());
  cl::HideUnrelatedOptions(zbcCategory, zbc::importHFCommand());
  cl::HideUnrelatedOptions(zbcCategory, zbc::exportHFCommand());
  cl::HideUnrelatedOptions(zbcCategory, zbc::packCommand());
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "zbc, a compiler for pipeline-parallel training (MLIR "
       << LLVM_VERSION_STRING << ")\n";
  });
  // llvm::cl's messages name the option but not that they are errors; make
  // them read as every other zbc error ("zbc: error: ...", exit 1).
  // The program is "zbc" in every message ("See: zbc compile --help"),
  // wherever the build put it.
  SmallVector<const char *> args(argv, argv + argc);
  args[0] = "zbc";
  if (!zbc::checkFlagsKnown(ArrayRef(args).drop_front(), llvm::errs()))
    return 1;
  std::string clErrors;
  llvm::raw_string_ostream clStream(clErrors);
  if (!cl::ParseCommandLineOptions(
          argc, args.data(),
          "zbc: compile, check and simulate pipeline-parallel training "
          "schedules\n",
          &clStream)) {
    SmallVector<StringRef> lines;
    StringRef(clErrors).split(lines, '\n', -1, /*KeepEmpty=*/false);
    // LLVM's "See: zbc --help" of a subcommand's error: its own --help.
    std::string see = "See: zbc --help";
    if (argc > 1 && argv[1][0] != '-')
      see = "See: zbc " + std::string(argv[1]) + " --help";
    for (StringRef line : lines) {
      line = line.trim();
      line.consume_front("zbc: ");
      std::string text = line.str();
      if (size_t at = text.find("See: zbc --help"); at != std::string::npos)
        text.replace(at, 15, see);
      llvm::errs() << (line.starts_with("Did you mean") ? "zbc: note: "
                                                        : "zbc: error: ")
                   << text << "\n";
    }
    return 1;
  }

  if (llvm::Error e = zbc::loadSchedulePlugins()) {
    llvm::errs() << "zbc: error: " << llvm::toString(std::move(e)) << "\n";
    return 1;
  }
  if (checkCommand)
    return runCheck();
  if (splitCommand)
    return runSplit();
  if (zbc::scheduleCommand())
    return zbc::runScheduleCommand();
  if (zbc::verifyCommand())
    return zbc::runVerifyCommand();
  if (zbc::compileCommand())
    return zbc::runCompileCommand();
  if (zbc::runCommand())
    return zbc::runRunCommand();
  if (zbc::profileCommand())
    return zbc::runProfileCommand();
  if (zbc::inspectCommand())
    return zbc::runInspectCommand();
  if (zbc::importHFCommand())
    return zbc::runImportHFCommand();
  if (zbc::exportHFCommand())
    return zbc::runExportHFCommand();
  if (zbc::packCommand())
    return zbc::runPackCommand();

  llvm::errs() << "zbc: error: no subcommand given; run 'zbc --help' for the "
                  "list\n";
  return 1;
}
