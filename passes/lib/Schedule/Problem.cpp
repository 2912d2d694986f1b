//===- Problem.cpp - scheduling problems: validation and placement --------===//

#include "zbc/Schedule/Problem.h"
#include "Support.h"

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
  }
  return 0;
}

double StageCost::memoryDelta(Kind kind) const {
  switch (kind) {
  case Kind::F:
    return memB;
  case Kind::B:
    return memW - memB;
  case Kind::W:
    return -memW;
  case Kind::BW:
    return -memB;
  }
  return 0;
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

llvm::Error Problem::validate() const {
  if (ranks < 1)
    return fail("ranks must be at least 1, got " + llvm::Twine(ranks));
  if (microbatches < 1)
    return fail("microbatches must be at least 1, got " +
                llvm::Twine(microbatches));
  if (virtualStages < 1)
    return fail("virtual stages per rank must be at least 1, got " +
                llvm::Twine(virtualStages));
  if (numStages() != ranks * virtualStages)
    return fail("expected " + llvm::Twine(ranks * virtualStages) +
                " stages (ranks x virtual stages), got " +
                llvm::Twine(numStages()));
  auto positive = [](double x) { return std::isfinite(x) && x > 0; };
  for (auto [i, s] : llvm::enumerate(stages)) {
    // A std::string: a Twine variable would outlive its temporaries.
    std::string where = "stage " + std::to_string(i) + ": ";
    if (!positive(s.F) || !positive(s.B) || !positive(s.W))
      return fail(where + "F, B and W times must be positive and finite, got F=" +
                  formatNumber(s.F) + " B=" + formatNumber(s.B) +
                  " W=" + formatNumber(s.W));
    if (!std::isfinite(s.memB) || !std::isfinite(s.memW) || s.memB < 0 ||
        s.memW < 0)
      return fail(where + "M_B and M_W must be finite and non-negative, got M_B=" +
                  formatNumber(s.memB) + " M_W=" + formatNumber(s.memW));
  }
  if (!std::isfinite(comm) || comm < 0)
    return fail("comm must be finite and non-negative, got " +
                formatNumber(comm));
  if (!std::isfinite(memLimit) || memLimit < 0)
    return fail("the memory limit must be finite and non-negative (0: none), "
                "got " + formatNumber(memLimit));
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
