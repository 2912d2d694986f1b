//===- VerifyCommand.cpp - `zbc verify`: prove a program or a CSV ---------===//
//
//   zbc verify PROGRAM.mlir        every zb.program in the file
//   zbc verify ORDER.csv [--ranks P --microbatches M --placement v ...]
//
// A zb.program is proven as zb-verify-schedule proves it (order,
// dependences, deadlock-freedom under rendezvous p2p, matched messages,
// peak bytes per rank against its memory_limit); one without transfers
// gets them from zb-insert-p2p first. A PyTorch schedule CSV is read in
// either format: compute only (zbc inserts the transfers, then proves the
// result) or compute+comms (the file's own transfers, in its order, are what
// is proven or refuted); its memory is the cost file's units, from the
// simulator. Prints "verified: ..." or the diagnostics; exit 1 on failure.
//
//===----------------------------------------------------------------------===//

#include "Input.h"
#include "Options.h"
#include "ProblemOptions.h"

#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Schedule/Simulator.h"
#include "zbc/Schedule/TorchCSV.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace mlir;

namespace {
cl::opt<std::string> verifyInput(cl::Positional, cl::Required,
                                 cl::desc("<program.mlir | schedule.csv>"),
                                 cl::sub(zbc::verifyCommand()),
                                 cl::cat(zbc::zbcCategory));

std::string join(const std::vector<int64_t> &values) {
  std::string text;
  for (int64_t v : values)
    text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

bool hasTransfers(zbc::zb::ProgramOp program) {
  bool any = false;
  program.walk([&](Operation *op) {
    any |= isa<zbc::zb::SendOp, zbc::zb::RecvOp, zbc::zb::GroupOp>(op);
  });
  return any;
}

int verifyIR() {
  MLIRContext context;
  zbc::setUpContext(context);
  llvm::SourceMgr sourceMgr;
  zbc::DiagnosticPrinter diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      zbc::parseInputFile(verifyInput, context, sourceMgr);
  if (!module)
    return 1;
  SmallVector<zbc::zb::ProgramOp> programs(module->getOps<zbc::zb::ProgramOp>());
  if (programs.empty()) {
    errs() << "zbc: error: " << verifyInput
           << " holds no 'zb.program' (zb-schedule makes one from a split "
              "pipeline)\n";
    return 1;
  }
  // Transfers first where a program has none: zb-insert-p2p adds them to
  // every compute-only program of the module.
  bool inserted = llvm::any_of(
      programs, [](zbc::zb::ProgramOp p) { return !hasTransfers(p); });
  if (inserted) {
    PassManager pm(&context);
    pm.addPass(zbc::createZBInsertP2PPass());
    if (failed(pm.run(*module)))
      return 1;
  }
  for (zbc::zb::ProgramOp program : module->getOps<zbc::zb::ProgramOp>()) {
    zbc::ScheduleProof proof;
    if (failed(zbc::verifyScheduleProgram(program, &proof)))
      return 1;
    outs() << "verified: @" << program.getSymName() << ": " << proof.ranks
           << " ranks, " << proof.ops << " ops"
           << (inserted ? " (transfers inserted by zb-insert-p2p)" : "");
    if (proof.peakBytes.empty())
      outs() << "; memory not counted: the program names no pipeline\n";
    else
      outs() << ", peak bytes per rank [" << join(proof.peakBytes) << "]\n";
  }
  return 0;
}

int verifyCSV() {
  std::string error;
  std::unique_ptr<MemoryBuffer> csv = openInputFile(verifyInput, &error);
  if (!csv) {
    errs() << "zbc: error: " << error << "\n";
    return 1;
  }
  auto failWith = [](Error e) {
    errs() << "zbc: error: " << toString(std::move(e)) << "\n";
    return 1;
  };
  Expected<zbc::sched::Problem> problem =
      zbc::readProblem(zbc::inferImportShape(csv->getBuffer()));
  if (!problem)
    return failWith(problem.takeError());
  Expected<zbc::sched::Placement> placement = zbc::importPlacement(*problem);
  if (!placement)
    return failWith(placement.takeError());
  // The compute order first, as `zbc schedule --import` checks it: every
  // action once and in order, the dependences satisfiable, the memory
  // limit; its errors name the rank, the cell and the microbatch.
  auto inFile = [&](Error e) {
    return failWith(createStringError(inconvertibleErrorCode(),
                                      verifyInput + ": " + toString(std::move(e))));
  };
  Expected<zbc::sched::ScheduleTable> table =
      zbc::sched::parseCSV(csv->getBuffer(), problem->ranks,
                           problem->numStages(), problem->microbatches,
                           *placement);
  if (!table)
    return inFile(table.takeError());
  Expected<zbc::sched::SimResult> sim = zbc::sched::simulate(*problem, *table);
  if (!sim)
    return inFile(sim.takeError());

  // Then the program: the file's own transfers, or the ones zbc inserts.
  Expected<zbc::sched::CSVProgram> read = zbc::sched::parseCSVProgram(
      csv->getBuffer(), problem->ranks, problem->numStages(),
      problem->microbatches, *placement);
  if (!read)
    return inFile(read.takeError());
  zbc::sched::Program &program = read->program;
  if (!read->hasComms)
    if (Error e = zbc::sched::insertTransfers(program))
      return inFile(std::move(e));
  // A place in the file: the cell of an op the file has; for an op zbc
  // inserted, its rank's line and the op.
  auto place = [&](int rank, int op) {
    if (read->hasComms && op >= 0 &&
        op < static_cast<int>(read->cells[rank].size()))
      return read->cells[rank][op];
    std::string where = "line " + std::to_string(rank + 1) + " (rank " +
                        std::to_string(rank) + ")";
    if (op >= 0)
      where += ", " + program.name(program.ranks[rank].ops[op]);
    return where;
  };
  if (std::optional<zbc::sched::ProgramError> e =
          zbc::sched::verifyProgram(program)) {
    errs() << verifyInput << ": " << place(e->rank, e->op) << ": error: "
           << e->message << "\n";
    for (const zbc::sched::ProgramNote &note : e->notes)
      errs() << verifyInput << ": " << place(note.rank, note.op)
             << ": note: " << note.message << "\n";
    return 1;
  }
  size_t ops = 0;
  for (const zbc::sched::RankProgram &rank : program.ranks)
    ops += rank.ops.size();
  outs() << "verified: " << program.ranks.size() << " ranks, " << ops
         << " ops ("
         << (read->hasComms ? "the file's transfers"
                            : "compute only; transfers inserted by zbc")
         << "), peak activation memory per rank [";
  for (size_t r = 0; r < sim->peakMemory.size(); ++r)
    outs() << (r ? ", " : "") << format("%.12g", sim->peakMemory[r]);
  outs() << "] (the cost file's M_B/M_W units), makespan "
         << format("%.12g", sim->makespan) << "\n";
  return 0;
}

} // namespace

int zbc::runVerifyCommand() {
  return StringRef(verifyInput).ends_with(".csv") ? verifyCSV() : verifyIR();
}
