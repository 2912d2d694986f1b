//===- Summary.cpp - human-readable summaries of zb IR --------------------===//
//
// Implements the `zbc check` report. Everything printed is computed from the
// verified IR: stage membership from ModelOp::getStageOfOps, bytes from the
// tensor types.
//
//===----------------------------------------------------------------------===//

#include "Summary.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Schedule/Simulator.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

/// "1536 B", "64.0 KiB", "3.25 MiB", ...
static std::string formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0)
    return std::to_string(bytes) + " B";
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%.1f ", value) << units[unit];
  return out;
}

static std::string typeToString(Type type) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << type;
  return out;
}

static std::string initToString(ParamOp param) {
  std::string out = stringifyInitKind(param.getInit()).str();
  if (FloatAttr scale = param.getScaleAttr())
    out += llvm::formatv("({0})", llvm::format("%g", scale.getValueAsDouble()))
               .str();
  return out;
}

namespace {
/// Per-stage figures of a model.
struct StageInfo {
  std::map<std::string, int64_t> opCounts; // by mnemonic, sorted
  int64_t numOps = 0;
  SmallVector<ParamOp> params;
  int64_t paramBytes = 0;
  SmallVector<Type> activationsOut; // what the closing cut sends on
};
} // namespace

void zbc::printModelSummary(ModelOp model, llvm::raw_ostream &os) {
  unsigned numStages = model.getNumStages();
  llvm::DenseMap<Operation *, unsigned> stageOf = model.getStageOfOps();
  SmallVector<StageInfo> stages(numStages);
  SmallVector<Operation *> inputs, labels;
  int64_t totalParamBytes = 0, totalParamElements = 0, numParams = 0;

  for (Operation &op : model.getBody().front()) {
    StageInfo &stage = stages[stageOf.lookup(&op)];
    if (isa<InputOp>(op)) {
      inputs.push_back(&op);
    } else if (isa<LabelOp>(op)) {
      labels.push_back(&op);
    } else if (auto param = dyn_cast<ParamOp>(op)) {
      // A parameter belongs to the stage that uses it (the verifier ensures
      // there is one); an unused one to the stage it is written in.
      unsigned owner = stageOf.lookup(&op);
      for (Operation *user : param->getUsers())
        owner = stageOf.lookup(user);
      stages[owner].params.push_back(param);
      stages[owner].paramBytes += param.getNumBytes();
      totalParamBytes += param.getNumBytes();
      totalParamElements += param.getResult().getType().getNumElements();
      ++numParams;
    } else if (auto cut = dyn_cast<CutOp>(op)) {
      llvm::append_range(stage.activationsOut, cut.getInputs().getTypes());
    } else if (!isa<LossOp>(op)) {
      ++stage.opCounts[op.getName().stripDialect().str()];
      ++stage.numOps;
    }
  }

  os << "model @" << model.getSymName() << ": " << numStages
     << (numStages == 1 ? " stage, " : " stages, ") << numParams
     << " parameters, " << totalParamElements << " elements, "
     << totalParamBytes << " bytes (" << formatBytes(totalParamBytes)
     << ")\n";
  auto printLeaves = [&](StringRef title, ArrayRef<Operation *> leaves) {
    os << "  " << title << ":";
    if (leaves.empty())
      os << " none";
    for (auto [i, leaf] : llvm::enumerate(leaves)) {
      os << (i ? "," : "");
      StringRef name = isa<InputOp>(leaf) ? cast<InputOp>(leaf).getName()
                                          : cast<LabelOp>(leaf).getName();
      os << " " << name << " " << leaf->getResult(0).getType() << " ("
         << formatBytes(getNumBytes(leaf->getResult(0).getType())) << ")";
    }
    os << "\n";
  };
  printLeaves("inputs", inputs);
  printLeaves("labels", labels);

  os << "\n  stage  ops  params  param bytes  sends on\n";
  for (auto [index, stage] : llvm::enumerate(stages)) {
    std::string out;
    for (Type type : stage.activationsOut) {
      if (!out.empty())
        out += ", ";
      out += typeToString(type) + " (" + formatBytes(getNumBytes(type)) + ")";
    }
    if (out.empty())
      out = "(last stage)";
    os << llvm::format("  %5u  %3lld  %6zu  %11s  ", static_cast<unsigned>(index),
                       static_cast<long long>(stage.numOps),
                       stage.params.size(),
                       formatBytes(stage.paramBytes).c_str())
       << out << "\n";
  }

  os << "\n  ops per stage:\n";
  for (auto [index, stage] : llvm::enumerate(stages)) {
    os << "    stage " << index << ":";
    bool first = true;
    for (auto &[name, count] : stage.opCounts) {
      os << (first ? " " : ", ") << name << " " << count;
      first = false;
    }
    os << "\n";
  }

  os << "\n  parameters:\n";
  for (auto [index, stage] : llvm::enumerate(stages)) {
    os << "    stage " << index << ":\n";
    size_t width = 0;
    for (ParamOp param : stage.params)
      width = std::max(width, param.getName().size());
    for (ParamOp param : stage.params)
      os << "      " << llvm::left_justify(param.getName(), width) << "  "
         << llvm::left_justify(typeToString(param.getResult().getType()), 22)
         << llvm::right_justify(formatBytes(param.getNumBytes()), 10) << "  "
         << initToString(param) << "\n";
  }
}

LogicalResult zbc::printProgramSummary(ProgramOp program,
                                       llvm::raw_ostream &os) {
  os << "program @" << program.getSymName() << ": " << program.getNumRanks()
     << " ranks, " << program.getNumStages() << " stages, "
     << program.getMicrobatches() << " microbatches, placement [";
  llvm::interleaveComma(program.getPlacement(), os);
  os << "]\n\n  rank  stages      F    B    W   BW    R    O    L  send  recv\n";
  for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
    std::string held;
    for (auto [stage, holder] : llvm::enumerate(program.getPlacement()))
      if (holder == static_cast<int64_t>(rank.getRank()))
        held += (held.empty() ? "" : ",") + std::to_string(stage);
    // Per schedule kind (F, B, W, BW, R, O, L: sched::Kind's order).
    int64_t counts[sched::kNumKinds] = {};
    int64_t sends = 0, recvs = 0;
    for (Operation &op : rank.getBody().front()) {
      if (std::optional<sched::Action> action = actionOf(&op))
        ++counts[static_cast<int>(action->kind)];
      else if (isa<SendOp>(op))
        ++sends;
      else if (isa<RecvOp>(op))
        ++recvs;
    }
    using sched::Kind;
    auto count = [&](Kind kind) {
      return static_cast<long long>(counts[static_cast<int>(kind)]);
    };
    os << llvm::format("  %4llu  %-8s %4lld %4lld %4lld %4lld %4lld %4lld "
                       "%4lld  %4lld  %4lld\n",
                       static_cast<unsigned long long>(rank.getRank()),
                       held.c_str(), count(Kind::F), count(Kind::B),
                       count(Kind::W), count(Kind::BW), count(Kind::R),
                       count(Kind::O), count(Kind::L),
                       static_cast<long long>(sends),
                       static_cast<long long>(recvs));
  }

  // The compute order, checked by the schedule library as a table: the
  // simulator needs equal costs only to find a wait that never ends.
  sched::ScheduleTable table = tableOfProgram(program);
  llvm::Error error = table.verify();
  int64_t ranks = program.getNumRanks(), stages = program.getNumStages();
  bool simulated = false;
  if (!error && stages % ranks == 0) {
    sched::Problem unit;
    unit.ranks = ranks;
    unit.virtualStages = stages / ranks;
    unit.microbatches = table.microbatches;
    unit.stages.assign(stages, sched::StageCost{});
    unit.copyBandwidth = 1; // stash copies, if any, as long as a unit
    llvm::Expected<sched::SimResult> sim = sched::simulate(unit, table);
    if (!sim)
      error = sim.takeError();
    simulated = true;
  }
  if (error)
    return program.emitError("compute order of program @")
           << program.getSymName() << ": " << llvm::toString(std::move(error));
  bool transfers = false;
  program.walk([&](Operation *op) {
    transfers |= isa<SendOp, RecvOp, GroupOp>(op);
  });
  if (!transfers) {
    os << "\n  checked: every F and B+W (or BW) present once, F before B "
          "before W on each rank"
       << (simulated ? ", cross-rank dependencies satisfiable (simulated "
                       "with unit costs)"
                     : "")
       << "\n  not checked: the program has no transfers yet; `zbc verify` "
          "inserts them (zb-insert-p2p) and proves the result\n";
    return success();
  }
  // With its transfers, the program gets the whole proof.
  ScheduleProof proof;
  if (failed(verifyScheduleProgram(program, &proof)))
    return failure();
  os << "\n  verified (zb-verify-schedule): order, dependences, every rank "
        "terminates under rendezvous p2p, every message matches";
  if (proof.peakBytes.empty()) {
    os << "; memory not counted (the program names no pipeline)\n";
  } else {
    os << "; peak bytes per rank [";
    llvm::interleaveComma(proof.peakBytes, os);
    os << "]";
    if (llvm::any_of(proof.hostPeakBytes, [](int64_t b) { return b > 0; })) {
      os << ", host peak bytes per rank [";
      llvm::interleaveComma(proof.hostPeakBytes, os);
      os << "]";
    }
    os << "\n";
  }
  return success();
}
