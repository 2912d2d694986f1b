//===- Problem.cpp - scheduling problems: validation and placement --------===//

#include "zbc/Schedule/Problem.h"
#include "Core/Support.h"

#include "zbc/Support/Limits.h"

#include <cmath>
#include <cstdio>

using namespace zbc::sched;

const char *zbc::sched::kindName(Kind kind) {
  switch (kind) {
  case Kind::F:
    return "F";
  case Kind::B:
    return "B";
  case Kind::W:
    return "W";
  case Kind::BW:
    return "BW";
  case Kind::R:
    return "R";
  case Kind::O:
    return "O";
  case Kind::L:
    return "L";
  case Kind::S:
    return "S";
  case Kind::T:
    return "T";
  }
  return "?";
}

double StageCost::time(Kind kind) const {
  switch (kind) {
  case Kind::F:
    return F;
  case Kind::B:
    return B;
  case Kind::W:
    return W;
  case Kind::BW:
    return B + W;
  case Kind::R:
    return recompute < 0 ? F : recompute;
  case Kind::O:
  case Kind::L:
    break; // a copy: Problem::duration
  case Kind::S:
  case Kind::T:
    break; // the problem's vocabulary passes: Problem::duration
  }
  return 0;
}

double Problem::allReduceTime(double bytes, int members) const {
  if (members <= 1 || collectiveBandwidth <= 0)
    return 0;
  // A ring: each process sends and receives 2 (n - 1) / n of the bytes.
  return comm + 2.0 * (members - 1) / members * bytes / collectiveBandwidth;
}

double Problem::shardedCollectiveTime(double bytes, int members) const {
  if (members <= 1 || collectiveBandwidth <= 0)
    return 0;
  return comm + 1.0 * (members - 1) / members * bytes / collectiveBandwidth;
}

double Problem::duration(Kind kind, int stage) const {
  if (isVocabPass(kind))
    return kind == Kind::S ? vocab.S : vocab.T;
  const StageCost &cost = stages[stage];
  if (!isCopy(kind))
    return cost.time(kind);
  // simulate() refuses a copy without a link; a copy of nothing takes no
  // time.
  return cost.offloaded() > 0 ? cost.offloaded() / copyBandwidth : 0;
}

double Problem::memoryDelta(Kind kind, int stage, bool recomputed) const {
  if (isVocabPass(kind))
    return kind == Kind::S ? vocab.mem : -vocab.mem;
  return stages[stage].memoryDelta(kind, recomputed);
}

double StageCost::memoryDelta(Kind kind, bool recomputed) const {
  switch (kind) {
  case Kind::F:
    return recomputed ? memKeep : memB;
  case Kind::R:
    return memB - memKeep;
  case Kind::B:
    return memW - memB;
  case Kind::W:
    return -memW;
  case Kind::BW:
    return -memB;
  case Kind::O:
    return -offloaded();
  case Kind::L:
    return offloaded();
  case Kind::S:
  case Kind::T:
    break; // Problem::memoryDelta
  }
  return 0;
}

double StageCost::hostMemoryDelta(Kind kind, bool offloaded) const {
  if (!offloaded)
    return 0;
  switch (kind) {
  case Kind::F:
    return this->offloaded();
  case Kind::B:
  case Kind::BW:
    return -this->offloaded();
  default:
    return 0;
  }
}

const char *zbc::sched::placementName(Placement placement) {
  switch (placement) {
  case Placement::Linear:
    return "linear";
  case Placement::Interleaved:
    return "interleaved";
  case Placement::V:
    return "V";
  }
  return "?";
}

llvm::Error zbc::sched::checkProblemSize(int64_t ranks, int64_t virtualStages,
                                         int64_t microbatches) {
  using namespace zbc::limits;
  auto range = [](const char *what, int64_t value, int64_t max) -> llvm::Error {
    if (value >= 1 && value <= max)
      return llvm::Error::success();
    return fail(llvm::Twine(what) + " must be in [1, " + llvm::Twine(max) +
                "], got " + llvm::Twine(value));
  };
  if (llvm::Error e = range("ranks", ranks, kMaxRanks))
    return e;
  if (llvm::Error e = range("virtual stages per rank", virtualStages, kMaxStages))
    return e;
  if (llvm::Error e = range("microbatches", microbatches, kMaxMicrobatches))
    return e;
  // Every factor is within its ceiling here, so the products fit in int64.
  int64_t stages = ranks * virtualStages;
  if (stages > kMaxStages)
    return fail("ranks x virtual stages = " + llvm::Twine(stages) +
                " stages; at most " + llvm::Twine(kMaxStages) + " are accepted");
  if (stages * microbatches > kMaxStageMicrobatches)
    return fail("stages x microbatches = " + llvm::Twine(stages) + " x " +
                llvm::Twine(microbatches) + " = " +
                llvm::Twine(stages * microbatches) +
                " (stage, microbatch) pairs; at most " +
                llvm::Twine(kMaxStageMicrobatches) + " are accepted");
  return llvm::Error::success();
}

llvm::Expected<std::optional<double>>
zbc::sched::parseActivationBudget(llvm::StringRef text) {
  if (text == "default")
    return std::nullopt;
  if (text == "none")
    return 0.0;
  double amount = 0;
  if (text.trim().getAsDouble(amount) || !std::isfinite(amount) ||
      amount < 0 || amount > limits::kMaxAmount)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "activation budget must be 'default', 'none' or a number in [0, "
        "1e30], got '" +
            text + "'");
  return amount;
}

std::string zbc::sched::activationBudgetText(std::optional<double> budget) {
  if (!budget)
    return "default";
  if (*budget == 0)
    return "none";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", *budget);
  return buffer;
}

llvm::Error Problem::validate() const {
  if (llvm::Error error = checkProblemSize(ranks, virtualStages, microbatches))
    return error;
  if (numStages() != ranks * virtualStages)
    return fail("expected " + llvm::Twine(ranks * virtualStages) +
                " stages (ranks x virtual stages), got " +
                llvm::Twine(numStages()));
  auto amount = [](double x) {
    return std::isfinite(x) && x >= 0 && x <= limits::kMaxAmount;
  };
  const std::string range = "[0, " + formatNumber(limits::kMaxAmount) + "]";
  for (auto [i, s] : llvm::enumerate(stages)) {
    // A std::string: a Twine variable would outlive its temporaries.
    std::string where = "stage " + std::to_string(i) + ": ";
    if (!amount(s.F) || s.F == 0 || !amount(s.B) || !amount(s.W))
      return fail(where + "F must be in (0, " + formatNumber(limits::kMaxAmount) +
                  "] and B and W in " + range + ", got F=" + formatNumber(s.F) +
                  " B=" + formatNumber(s.B) + " W=" + formatNumber(s.W));
    if (!amount(s.memB) || !amount(s.memW))
      return fail(where + "M_B and M_W must be in " + range + ", got M_B=" +
                  formatNumber(s.memB) + " M_W=" + formatNumber(s.memW));
    if (!amount(s.memKeep) || s.memKeep > s.memB)
      return fail(where + "M_keep (what a recomputed F keeps) must be in [0, "
                  "M_B = " + formatNumber(s.memB) + "], got " +
                  formatNumber(s.memKeep));
    if (s.recompute >= 0 ? !amount(s.recompute) : s.recompute != -1)
      return fail(where + "R must be in " + range +
                  " (or -1: as long as F), got " + formatNumber(s.recompute));
    if (s.memOffload >= 0 ? s.memOffload > s.memB : s.memOffload != -1)
      return fail(where + "M_offload (what O moves to host memory) must be in "
                  "[0, M_B = " + formatNumber(s.memB) +
                  "] (or -1: all of M_B), got " + formatNumber(s.memOffload));
  }
  if (replicas < 1 || replicas > limits::kMaxRanks)
    return fail("replicas must be in [1, " + llvm::Twine(limits::kMaxRanks) +
                "] (got " + llvm::Twine(replicas) + ")");
  if (!amount(collectiveBandwidth))
    return fail("collective bandwidth must be a finite number in [0, " +
                formatNumber(limits::kMaxAmount) + "] (got " +
                formatNumber(collectiveBandwidth) + ")");
  for (const GradientSum &sum : gradientSums) {
    if (!amount(sum.bytes))
      return fail("a gradient sum's bytes must be in [0, " +
                  formatNumber(limits::kMaxAmount) + "] (got " +
                  formatNumber(sum.bytes) + ")");
    for (int s : sum.stages)
      if (s < 0 || s >= numStages())
        return fail("a gradient sum names stage " + llvm::Twine(s) +
                    "; the problem has " + llvm::Twine(numStages()));
  }
  if (!amount(copyBandwidth))
    return fail("copy bandwidth must be in " + range + ", got " +
                formatNumber(copyBandwidth));
  if (!amount(comm))
    return fail("comm must be in " + range + ", got " + formatNumber(comm));
  if (activationBudget && !amount(*activationBudget))
    return fail("the activation budget must be in " + range + " (0: none), got " +
                formatNumber(*activationBudget));
  if (vocab.barriers < 0 || vocab.barriers > 2)
    return fail("vocabulary passes have 1 or 2 barriers (0: none), got " +
                llvm::Twine(vocab.barriers));
  if (vocab.enabled() &&
      (!amount(vocab.S) || vocab.S == 0 || !amount(vocab.T) ||
       !amount(vocab.mem) || !amount(vocab.collective)))
    return fail("vocabulary passes: S must be in (0, " +
                formatNumber(limits::kMaxAmount) + "] and T, their memory and "
                "their collectives in " + range + ", got S=" +
                formatNumber(vocab.S) + " T=" + formatNumber(vocab.T) +
                " memory=" + formatNumber(vocab.mem) +
                " collective=" + formatNumber(vocab.collective));
  return llvm::Error::success();
}

std::vector<int> zbc::sched::placeStages(Placement placement, int ranks,
                                         int numStages) {
  std::vector<int> rankOf(numStages);
  for (int s = 0; s < numStages; ++s) {
    switch (placement) {
    case Placement::Linear:
    case Placement::Interleaved:
      rankOf[s] = s % ranks;
      break;
    case Placement::V:
      rankOf[s] = s < ranks ? s : 2 * ranks - 1 - s;
      break;
    }
  }
  return rankOf;
}
