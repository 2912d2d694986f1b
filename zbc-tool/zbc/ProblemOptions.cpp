//===- ProblemOptions.cpp - the scheduling problem from the command line ---===//
//
// The options that describe a scheduling problem (sizes, costs, memory, the
// cost file, the placement of an imported CSV), shared by `zbc schedule` and
// `zbc verify`, and the one reader that turns them into a sched::Problem.
// Command-line values override the cost file; every number is parsed
// strictly (Numbers.h) and sizes are checked before anything is allocated.
//
//===----------------------------------------------------------------------===//

#include "ProblemOptions.h"

#include "zbc/Options/OptionValues.h"
#include "Options.h"

#include "zbc/Schedule/CostFile.h"
#include "zbc/Schedule/TorchCSV.h"
#include "zbc/Support/Limits.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <optional>
#include <tuple>

using namespace llvm;
using zbc::fail;
using namespace zbc::sched;
using zbc::ImportShape;

namespace {
using zbc::zbcCategory;

// Numbers are read as text and parsed strictly (Numbers.h), so that a bad
// value is an error naming the option and the range accepted.
cl::opt<std::string> ranksOpt("ranks", cl::desc("Pipeline ranks p (1 to 4096)"),
                              cl::value_desc("P"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()),
                              cl::cat(zbcCategory));
cl::opt<std::string> microbatchesOpt(
    "microbatches", cl::desc("Microbatches per step m (1 to 2^20)"),
    cl::value_desc("M"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));
cl::opt<std::string> virtualOpt(
    "virtual",
    cl::desc("Stages per rank v (interleaved: any; V schedules: 2); costs "
             "are then per stage"),
    cl::value_desc("V"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));
cl::opt<std::string> costOpt(
    "cost", cl::desc("Times of every stage: F=..,B=..,W=..,R=..(recompute; "
                     "default F),comm=.."),
    cl::value_desc("list"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));
cl::opt<std::string> memOpt(
    "mem", cl::desc("Activation memory of every stage: B=..(M_B),W=..(M_W),"
                    "keep=..(M_keep: what a recomputed F keeps; default 0),"
                    "offload=..(M_offload: what O moves to the host; "
                    "default all of M_B)"),
    cl::value_desc("list"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));
cl::opt<std::string> copyBandwidthOpt(
    "copy-bandwidth",
    cl::desc("What a rank copies between device and host memory per time "
             "unit, each way, in the units of M_B over those of the times "
             "(offload's copies take M_offload / X; default 0: no link)"),
    cl::value_desc("X"), cl::sub(zbc::scheduleCommand()), cl::cat(zbcCategory));
cl::opt<std::string> vocabOpt(
    "vocab",
    cl::desc("Vocabulary parallelism (Note [Vocabulary passes]): "
             "barriers=1|2,S=..,T=..(each rank's passes over its shard, per "
             "microbatch),mem=..(held from S to T),collective=..(one "
             "barrier's collectives); placed into any schedule"),
    cl::value_desc("list"), cl::sub(zbc::scheduleCommand()), cl::cat(zbcCategory));
cl::opt<std::string> costFile(
    "cost-file",
    cl::desc("JSON with ranks, microbatches, per-stage "
             "F/B/W/R/M_B/M_W/M_keep/M_offload lists, comm and "
             "copy_bandwidth (command-line values override it)"),
    cl::value_desc("file"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));
cl::opt<std::string> activationBudgetOpt(
    "activation-budget",
    cl::desc("What each rank keeps in flight, in the units of M_B and M_W "
             "(Note [Two memory limits]): 'default' (the schedule's own: "
             "zb-auto 2p max(M_B, M_W), zb-v 2p chunk M_B, the others none), "
             "'none' (0 too) or X"),
    cl::value_desc("X"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));
// The flag's name before the two limits were told apart: refused with its
// new name rather than read as a rank's whole memory, which zbc schedule
// does not know.
cl::opt<std::string> oldMemLimitOpt(
    "mem-limit", cl::Hidden, cl::sub(zbc::scheduleCommand()),
    cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));
cl::opt<std::string> placementOpt(
    "placement",
    cl::desc("With --import: linear, interleaved or v (default: linear, or "
             "interleaved when --virtual > 1)"),
    cl::value_desc("kind"), cl::sub(zbc::scheduleCommand()), cl::sub(zbc::verifyCommand()), cl::cat(zbcCategory));


/// Parses "K=v,K=v" into numbers in [0, kMaxAmount]; keys outside
/// `allowed` are errors.
Expected<StringMap<double>> parseAssignments(StringRef option, StringRef text,
                                             ArrayRef<StringRef> allowed) {
  StringMap<double> values;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  if (items.empty())
    return fail("--" + option + ": expected K=v pairs (keys " +
                join(allowed, ", ") + "), got '" + text + "'");
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    if (!is_contained(allowed, key))
      return fail("--" + option + ": unknown key '" + key + "' (expected " +
                  join(allowed, ", ") + ")");
    Expected<double> number = zbc::parseNumber(
        ("--" + option + " " + key).str(), value, 0, zbc::limits::kMaxAmount);
    if (!number)
      return number.takeError();
    values[key] = *number;
  }
  return values;
}

/// Reads an integer option into `field` if it was given.
Error readCount(const cl::opt<std::string> &option, int64_t max,
                std::optional<int64_t> &field) {
  if (!option.getNumOccurrences())
    return Error::success();
  Expected<int64_t> n =
      zbc::parseInteger(("--" + option.ArgStr).str(), option, 1, max);
  if (!n)
    return n.takeError();
  field = *n;
  return Error::success();
}

} // namespace

/// Builds the problem from the cost file, then the command line; with
/// --import, sizes the command line and the file leave out come from the
/// CSV (`inferred`).
Expected<Problem> zbc::readProblem(const ImportShape &inferred) {
  Problem problem;
  std::optional<int64_t> ranks, microbatches, virtualStages;
  std::vector<double> f, b, w, r, mb, mw, keep, offload;
  if (!costFile.empty()) {
    std::string error;
    std::unique_ptr<MemoryBuffer> file = mlir::openInputFile(costFile, &error);
    if (!file)
      return fail(error);
    Expected<CostFile> parsed = parseCostFile(file->getBuffer(), costFile);
    if (!parsed)
      return parsed.takeError();
    ranks = parsed->ranks;
    microbatches = parsed->microbatches;
    virtualStages = parsed->virtualStages;
    if (parsed->comm)
      problem.comm = *parsed->comm;
    if (parsed->copyBandwidth)
      problem.copyBandwidth = *parsed->copyBandwidth;
    problem.activationBudget = parsed->activationBudget;
    f = parsed->F, b = parsed->B, w = parsed->W, r = parsed->R;
    mb = parsed->memB, mw = parsed->memW, keep = parsed->memKeep;
    offload = parsed->memOffload;
  }
  if (Error e = readCount(ranksOpt, zbc::limits::kMaxRanks, ranks))
    return std::move(e);
  if (Error e = readCount(microbatchesOpt, zbc::limits::kMaxMicrobatches,
                          microbatches))
    return std::move(e);
  if (Error e = readCount(virtualOpt, zbc::limits::kMaxStages, virtualStages))
    return std::move(e);
  if (!ranks)
    ranks = inferred.ranks;
  if (!microbatches)
    microbatches = inferred.microbatches;
  if (!virtualStages)
    virtualStages = inferred.virtualStages;
  // A cost file without sizes (zbc profile's: one value per stage, the
  // stages it measured on as many ranks): its lists give the stages, and
  // so the ranks, unless --ranks says otherwise.
  if (!ranks)
    for (const std::vector<double> *list : {&f, &b, &w, &r, &mb, &mw})
      if (list->size() > 1 &&
          list->size() % static_cast<size_t>(virtualStages.value_or(1)) == 0) {
        ranks = static_cast<int64_t>(list->size()) / virtualStages.value_or(1);
        break;
      }
  if (oldMemLimitOpt.getNumOccurrences())
    return fail("--mem-limit is zbc compile's, a rank's whole memory in "
                "bytes; a schedule's limit is --activation-budget (what a "
                "rank keeps in flight, in the units of M_B and M_W)");
  if (activationBudgetOpt.getNumOccurrences()) {
    Expected<std::optional<double>> budget =
        parseActivationBudget(activationBudgetOpt);
    if (!budget)
      return fail("--activation-budget: " + toString(budget.takeError()));
    problem.activationBudget = *budget;
  }
  if (!costOpt.empty()) {
    Expected<StringMap<double>> costs =
        parseAssignments("cost", costOpt, {"F", "B", "W", "R", "comm"});
    if (!costs)
      return costs.takeError();
    for (auto &[key, list] : {std::pair<StringRef, std::vector<double> *>{"F", &f},
                              {"B", &b}, {"W", &w}, {"R", &r}})
      if (costs->count(key))
        *list = {costs->lookup(key)};
    if (costs->count("comm"))
      problem.comm = costs->lookup("comm");
  }
  if (!memOpt.empty()) {
    Expected<StringMap<double>> mem =
        parseAssignments("mem", memOpt, {"B", "W", "keep", "offload"});
    if (!mem)
      return mem.takeError();
    if (mem->count("B"))
      mb = {mem->lookup("B")};
    if (mem->count("W"))
      mw = {mem->lookup("W")};
    if (mem->count("keep"))
      keep = {mem->lookup("keep")};
    if (mem->count("offload"))
      offload = {mem->lookup("offload")};
  }
  if (vocabOpt.getNumOccurrences()) {
    Expected<StringMap<double>> vocab = parseAssignments(
        "vocab", vocabOpt, {"barriers", "S", "T", "mem", "collective"});
    if (!vocab)
      return vocab.takeError();
    double barriers = vocab->lookup("barriers");
    if (barriers != 1 && barriers != 2)
      return fail("--vocab: barriers must be 1 or 2 (per microbatch), got '" +
                  vocabOpt + "'");
    problem.vocab = {static_cast<int>(barriers), vocab->lookup("S"),
                     vocab->lookup("T"), vocab->lookup("mem"),
                     vocab->lookup("collective")};
  }
  if (copyBandwidthOpt.getNumOccurrences()) {
    Expected<double> rate = zbc::parseNumber(
        "--copy-bandwidth", copyBandwidthOpt, 0, zbc::limits::kMaxAmount);
    if (!rate)
      return rate.takeError();
    problem.copyBandwidth = *rate;
  }

  // Sizes are checked before the stages are allocated. Defaults: one rank,
  // one microbatch, unit times, M_B = M_W = 1 (memory in units of M_B).
  if (Error error = checkProblemSize(ranks.value_or(1), virtualStages.value_or(1),
                                     microbatches.value_or(1)))
    return std::move(error);
  problem.ranks = ranks.value_or(1);
  problem.microbatches = microbatches.value_or(1);
  problem.virtualStages = virtualStages.value_or(1);
  int stages = problem.ranks * problem.virtualStages;
  problem.stages.assign(stages, StageCost{});
  for (auto [key, list, field] :
       {std::tuple<StringRef, std::vector<double> *, double StageCost::*>{
            "F", &f, &StageCost::F},
        {"B", &b, &StageCost::B}, {"W", &w, &StageCost::W},
        {"R", &r, &StageCost::recompute},
        {"M_B", &mb, &StageCost::memB}, {"M_W", &mw, &StageCost::memW},
        {"M_keep", &keep, &StageCost::memKeep},
        {"M_offload", &offload, &StageCost::memOffload}}) {
    if (list->empty())
      continue;
    if (list->size() != 1 && static_cast<int64_t>(list->size()) != stages) {
      // A cost file of S stages (zbc profile writes one value per stage
      // and no sizes) under the defaults of one rank: say which option.
      std::string hint;
      if (!ranks)
        hint = (" (--ranks is not given, so 1; give --ranks " +
                Twine(static_cast<int64_t>(list->size()) /
                      problem.virtualStages) +
                " for " + Twine(list->size()) + " stages)")
                   .str();
      else
        hint = (" (" + Twine(problem.ranks) + " ranks x " +
                Twine(problem.virtualStages) +
                (problem.virtualStages == 1 ? " stage" : " stages") +
                " each; give one value, or one per stage)")
                   .str();
      return fail(key + " has " + Twine(list->size()) + " values for " +
                  Twine(stages) + " stage" + (stages == 1 ? "" : "s") + hint);
    }
    for (int s = 0; s < stages; ++s)
      problem.stages[s].*field = (*list)[list->size() == 1 ? 0 : s];
  }
  if (Error error = problem.validate())
    return std::move(error);
  return problem;
}

StringRef zbc::problemTimeUnit() {
  return !costFile.empty() && costOpt.empty() ? "ms" : "";
}

Expected<Placement> zbc::importPlacement(const Problem &problem) {
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

ImportShape zbc::inferImportShape(StringRef csv) {
  ImportShape inferred;
  CSVShape shape = scanCSV(csv);
  if (shape.rows > 0)
    inferred.ranks = shape.rows;
  if (shape.microbatches > 0)
    inferred.microbatches = shape.microbatches;
  // Stages per rank: two in a V; else as many as the cells name per row.
  if (placementOpt == "v")
    inferred.virtualStages = 2;
  else if (shape.rows > 0 && shape.stages > shape.rows &&
           shape.stages % shape.rows == 0)
    inferred.virtualStages = shape.stages / shape.rows;
  return inferred;
}
