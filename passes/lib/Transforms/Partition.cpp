//===- Partition.cpp - cut zb.models into balanced pipeline stages --------===//
//
// Implements `zb-partition`. A model that already has `zb.cut` ops keeps
// them. A model without cuts is cut into `stages` stages in three steps:
//
//  1. Candidates. A gap between two body ops is crossed by every non-leaf
//     value (not a zb.input, zb.label or zb.param result) defined before it
//     and used after it. The candidates are the gaps crossed by the fewest
//     values, at least one: in a transformer, the residual stream between
//     blocks and between the attention and MLP halves of a block (and gaps
//     crossed by one or two values more where those leave the stages
//     uneven: Note [Wider gaps]). Gaps after the first op that reads a
//     label may not be cut (labels, hence the loss, stay in the last stage),
//     nor may gaps with no tensor op before or after them (an empty stage);
//     the fewest is taken over the gaps that may be cut.
//  2. Balance. An exact dynamic program over the candidates picks the
//     `stages - 1` cuts that minimise the most expensive stage, then, among
//     the cut sets that reach that maximum, the one with the smallest sum of
//     squared stage costs (the most even spread of the rest).
//  3. Rewrite. A `zb.cut` is inserted at each chosen gap, in program order.
//     Its operands are the values crossing the gap (recomputed after each
//     insertion, so a later cut passes the earlier cut's results), and every
//     use after the gap is rewritten to the cut's results.
//
// With `report`, every model gets one remark per stage and one with the
// imbalance (the largest stage over the ideal, total / stages).
//
//===----------------------------------------------------------------------===//

#include "zbc/Analysis/CostModel.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Support/LLVM.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <string>

#define DEBUG_TYPE "zb-partition"

namespace zbc {
#define GEN_PASS_DEF_ZBPARTITIONPASS
#include "zbc/Passes/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

namespace {

//===----------------------------------------------------------------------===//
// Crossing values and candidate gaps
//===----------------------------------------------------------------------===//

/// Inputs, labels and parameters: the runtime provides them to the stage
/// that uses them, so they never cross a cut.
bool isLeaf(Operation *op) { return isa<InputOp, LabelOp, ParamOp>(op); }

/// An op that computes: anything but a leaf, a cut or the loss.
bool isTensorOp(Operation *op) {
  return !isLeaf(op) && !isa<CutOp, LossOp>(op);
}

/// The values that cross the gap right after `anchor`: results of non-leaf
/// ops at or before `anchor` with a use after it, in program order.
SmallVector<Value> getCrossingValues(Operation *anchor) {
  Block *body = anchor->getBlock();
  SmallVector<Value> crossing;
  for (Operation &op : *body) {
    if (!isLeaf(&op)) {
      for (Value result : op.getResults()) {
        bool usedAfter = llvm::any_of(result.getUsers(), [&](Operation *user) {
          Operation *inBody = body->findAncestorOpInBlock(*user);
          return inBody && anchor->isBeforeInBlock(inBody);
        });
        if (usedAfter)
          crossing.push_back(result);
      }
    }
    if (&op == anchor)
      break;
  }
  return crossing;
}

/// The body of a model as the partitioner sees it: its ops in order, their
/// costs, and prefix sums of those costs.
struct ModelBody {
  SmallVector<Operation *> ops;
  /// prefix[i] is the cost of ops[0..i).
  SmallVector<int64_t> prefix;

  explicit ModelBody(ModelOp model) {
    prefix.push_back(0);
    for (Operation &op : model.getBody().front()) {
      ops.push_back(&op);
      prefix.push_back(addFlops(prefix.back(), getOpCost(&op).total()));
    }
  }
  /// The cost of ops[begin..end).
  int64_t cost(size_t begin, size_t end) const {
    return prefix[end] - prefix[begin];
  }
};

/// The gaps of a model without cuts that may be cut, each named by the
/// index of the op it follows, with the number of values crossing it; and
/// the fewest.
struct Candidates {
  SmallVector<std::pair<size_t, int64_t>> eligible;
  int64_t numCrossing = 0;

  /// The gaps crossed by at most `extra` values more than the fewest.
  SmallVector<size_t> within(int64_t extra) const {
    SmallVector<size_t> gaps;
    for (auto [i, count] : eligible)
      if (count <= numCrossing + extra)
        gaps.push_back(i);
    return gaps;
  }
};

Candidates findCandidates(const ModelBody &body) {
  size_t n = body.ops.size();
  llvm::DenseMap<Operation *, size_t> indexOf;
  for (auto [i, op] : llvm::enumerate(body.ops))
    indexOf[op] = i;

  // A value defined by op d and last used by op u crosses the gaps after
  // ops d..u-1; `delta` accumulates that as +1 at d and -1 at u.
  SmallVector<int64_t> delta(n + 1, 0);
  size_t firstLabelReader = n;
  size_t firstTensorOp = n, lastTensorOp = 0;
  for (auto [i, op] : llvm::enumerate(body.ops)) {
    if (isTensorOp(op)) {
      firstTensorOp = std::min(firstTensorOp, i);
      lastTensorOp = i;
    }
    if (firstLabelReader == n &&
        llvm::any_of(op->getOperands(), [](Value v) {
          return isa_and_nonnull<LabelOp>(v.getDefiningOp());
        }))
      firstLabelReader = i;
    if (isLeaf(op))
      continue;
    for (Value result : op->getResults()) {
      size_t lastUse = i;
      for (Operation *user : result.getUsers())
        if (Operation *inBody = op->getBlock()->findAncestorOpInBlock(*user))
          lastUse = std::max(lastUse, indexOf.lookup(inBody));
      ++delta[i];
      --delta[lastUse];
    }
  }
  if (firstTensorOp == n)
    return {};

  // Eligible gaps, with their crossing counts. A run of leaves after an op
  // leaves the crossing values unchanged, so only gaps right after a
  // non-leaf op are considered: the cut then precedes the next layer's
  // parameter declarations, as a user would write it.
  SmallVector<std::pair<size_t, int64_t>> eligible;
  int64_t crossing = 0;
  for (size_t i = 0; i < n; ++i) {
    crossing += delta[i];
    if (isLeaf(body.ops[i]) || i < firstTensorOp || i >= lastTensorOp ||
        i >= firstLabelReader || crossing <= 0)
      continue;
    eligible.push_back({i, crossing});
  }
  if (eligible.empty())
    return {};

  Candidates result;
  result.numCrossing = llvm::min_element(eligible, llvm::less_second())->second;
  result.eligible = std::move(eligible);
  return result;
}

//===----------------------------------------------------------------------===//
// Balancing
//===----------------------------------------------------------------------===//

// Note [Wider gaps]
// The cheap gaps are between half-blocks of a transformer, and with few
// layers per stage that is too coarse: 2 Llama layers on 4 stages are five
// units (two attention halves of 2.2 MFLOPs, two MLP halves of 4.0, a head
// of 2.1), and the best cut of them leaves a stage of 6.2 MFLOPs against an
// ideal of 3.6, its neighbours idle a third to two thirds of the step. A
// gap crossed by one value more (after a norm: its output beside the
// residual; after the MLP's gated activation) splits the largest unit. So
// where the cheap gaps leave the largest stage above kEvenEnough times the
// ideal (total / stages), the gaps crossed by one, then two (kWidestExtra)
// values more than the fewest are tried, each taken only if it shrinks the
// largest stage by kWorthWidening or more: a wider gap sends more each
// microbatch, both ways, and its next stage holds it until the W.
constexpr double kEvenEnough = 1.25;
constexpr double kWorthWidening = 1.2;
constexpr int64_t kWidestExtra = 2;

/// Picks `numCuts` of the candidate gaps (indices into `afterOp`, which is
/// sorted) so that the most expensive stage is as cheap as possible and,
/// among those choices, the sum of squared stage costs is smallest.
///
/// Stage costs are forward FLOPs. That is enough to balance the whole
/// training step: each op's backward work (B and W) is a fixed multiple of
/// its forward work for the matmuls that dominate (1x each for linear,
/// 2x for attention's B), so a partition balanced in F is balanced in
/// F + B + W up to the attention share.
///
/// Two exact dynamic programs over (cuts placed, last cut), O(numCuts * m^2)
/// each for m candidates: the first finds the optimal maximum M*, the second
/// minimises the sum of squares over partitions whose stages all cost at
/// most M*. (A single program over the pair (max, sum of squares) would not
/// be exact: a prefix with a larger maximum can end in a better partition.)
/// Ties go to the earliest cuts.
SmallVector<size_t> balance(const ModelBody &body, ArrayRef<size_t> afterOp,
                            size_t numCuts) {
  size_t m = afterOp.size(), n = body.ops.size();
  assert(numCuts >= 1 && numCuts <= m && "caller checks the cut count");
  // Stage boundaries: candidate c ends a stage at op index afterOp[c] + 1.
  auto end = [&](size_t c) { return afterOp[c] + 1; };
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();

  // best[j][c]: the least maximum stage cost of ops[0..end(c)) split by j+1
  // cuts, the last at candidate c.
  SmallVector<SmallVector<int64_t>> best(numCuts, SmallVector<int64_t>(m, kInf));
  for (size_t c = 0; c < m; ++c)
    best[0][c] = body.cost(0, end(c));
  for (size_t j = 1; j < numCuts; ++j)
    for (size_t c = j; c < m; ++c)
      for (size_t p = j - 1; p < c; ++p)
        if (best[j - 1][p] != kInf)
          best[j][c] = std::min(
              best[j][c], std::max(best[j - 1][p], body.cost(end(p), end(c))));
  int64_t optimum = kInf;
  for (size_t c = numCuts - 1; c < m; ++c)
    if (best[numCuts - 1][c] != kInf)
      optimum = std::min(optimum,
                         std::max(best[numCuts - 1][c], body.cost(end(c), n)));

  // squares[j][c]: the least sum of squared stage costs with every stage at
  // most `optimum`; parent[j][c] the previous cut. Squares of FLOP counts
  // overflow int64, hence double: it only breaks ties between equal maxima.
  constexpr double kNone = std::numeric_limits<double>::infinity();
  auto square = [](int64_t cost) {
    return static_cast<double>(cost) * static_cast<double>(cost);
  };
  SmallVector<SmallVector<double>> squares(numCuts, SmallVector<double>(m, kNone));
  SmallVector<SmallVector<size_t>> parent(numCuts, SmallVector<size_t>(m, 0));
  for (size_t c = 0; c < m; ++c)
    if (body.cost(0, end(c)) <= optimum)
      squares[0][c] = square(body.cost(0, end(c)));
  for (size_t j = 1; j < numCuts; ++j)
    for (size_t c = j; c < m; ++c)
      for (size_t p = j - 1; p < c; ++p) {
        int64_t stage = body.cost(end(p), end(c));
        if (squares[j - 1][p] == kNone || stage > optimum)
          continue;
        double total = squares[j - 1][p] + square(stage);
        if (total < squares[j][c]) {
          squares[j][c] = total;
          parent[j][c] = p;
        }
      }
  size_t last = m;
  double bestTotal = kNone;
  for (size_t c = numCuts - 1; c < m; ++c) {
    int64_t stage = body.cost(end(c), n);
    if (squares[numCuts - 1][c] == kNone || stage > optimum)
      continue;
    double total = squares[numCuts - 1][c] + square(stage);
    if (total < bestTotal) {
      bestTotal = total;
      last = c;
    }
  }
  assert(last < m && "the optimum is reachable by construction");

  SmallVector<size_t> chosen(numCuts);
  for (size_t j = numCuts; j-- > 0;) {
    chosen[j] = afterOp[last];
    last = parent[j][last];
  }
  return chosen;
}

/// The cost of the most expensive stage when `body` is cut after each op of
/// `cuts` (sorted).
int64_t largestStage(const ModelBody &body, ArrayRef<size_t> cuts) {
  int64_t largest = 0;
  size_t begin = 0;
  for (size_t after : cuts) {
    largest = std::max(largest, body.cost(begin, after + 1));
    begin = after + 1;
  }
  return std::max(largest, body.cost(begin, body.ops.size()));
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ZBPartitionPass final
    : zbc::impl::ZBPartitionPassBase<ZBPartitionPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  LogicalResult partition(ModelOp model);
  void emitReport(ModelOp model);
};

} // namespace

LogicalResult ZBPartitionPass::partition(ModelOp model) {
  unsigned present = model.getNumStages();
  if (present > 1) {
    if (stages != 0 && static_cast<uint64_t>(stages) != present)
      return model.emitOpError("has ")
             << present << " stages from its 'zb.cut' ops, but stages="
             << static_cast<int64_t>(stages) << " was requested; remove the cuts or the option";
    return success();
  }
  if (stages <= 1)
    return success();

  ModelBody body(model);
  // A saturated prefix sum would balance on clamped numbers.
  if (body.prefix.back() == std::numeric_limits<int64_t>::max())
    return model.emitOpError("cannot be balanced into stages: its FLOP count "
                             "exceeds 2^63-1");
  Candidates candidates = findCandidates(body);
  size_t numCuts = static_cast<size_t>(stages) - 1;
  SmallVector<size_t> cheap = candidates.within(0);
  if (numCuts > cheap.size()) {
    InFlightDiagnostic diag = model.emitOpError("cannot be cut into ")
                              << static_cast<int64_t>(stages) << " stages: ";
    if (cheap.empty())
      diag << "no gap before the loss has a value crossing it, so at most 1 "
              "stage";
    else
      diag << "only " << cheap.size()
           << (cheap.size() == 1 ? " gap is" : " gaps are")
           << " crossed by the fewest values (" << candidates.numCrossing
           << "), so at most " << cheap.size() + 1
           << " stages";
    return diag;
  }

  // Note [Wider gaps]: the cheap gaps first, then wider ones while they
  // shrink the largest stage enough.
  int64_t ideal = body.prefix.back() / static_cast<int64_t>(stages);
  SmallVector<size_t> chosen = balance(body, cheap, numCuts);
  int64_t largest = largestStage(body, chosen);
  for (int64_t extra = 1; extra <= kWidestExtra; ++extra) {
    if (static_cast<double>(largest) <= kEvenEnough * static_cast<double>(ideal))
      break;
    SmallVector<size_t> cuts = balance(body, candidates.within(extra), numCuts);
    int64_t widerLargest = largestStage(body, cuts);
    if (static_cast<double>(widerLargest) * kWorthWidening >
        static_cast<double>(largest))
      break;
    chosen = std::move(cuts);
    largest = widerLargest;
  }
  // Anchors are ops, not indices: inserting a cut shifts the indices.
  SmallVector<Operation *> anchors =
      llvm::map_to_vector(chosen, [&](size_t i) { return body.ops[i]; });
  OpBuilder builder(model.getContext());
  for (Operation *anchor : anchors) {
    SmallVector<Value> crossing = getCrossingValues(anchor);
    LLVM_DEBUG(llvm::dbgs() << "zb-partition: cut after " << *anchor << " ("
                            << crossing.size() << " values)\n");
    builder.setInsertionPointAfter(anchor);
    auto cut = CutOp::create(builder, anchor->getLoc(), crossing);
    Block *block = cut->getBlock();
    for (auto [value, replacement] :
         llvm::zip_equal(crossing, cut.getOutputs()))
      value.replaceUsesWithIf(replacement, [&](OpOperand &use) {
        Operation *inBody = block->findAncestorOpInBlock(*use.getOwner());
        return inBody && cut->isBeforeInBlock(inBody);
      });
    ++numCutsInserted;
  }
  return success();
}

void ZBPartitionPass::emitReport(ModelOp model) {
  unsigned numStages = model.getNumStages();
  SmallVector<int64_t> stageCost(numStages, 0);
  llvm::DenseMap<Operation *, unsigned> stageOf = model.getStageOfOps();
  for (Operation &op : model.getBody().front()) {
    int64_t &cost = stageCost[stageOf.lookup(&op)];
    cost = addFlops(cost, getOpCost(&op).total());
  }
  int64_t total = 0;
  for (int64_t cost : stageCost)
    total = addFlops(total, cost);
  double ideal = static_cast<double>(total) / numStages;
  // Percentages of a model that computes nothing are reported as 0.
  auto ratio = [&](double part, double whole) {
    return whole > 0 ? part / whole : 0.0;
  };

  int64_t largest = 0;
  for (auto [stage, cost] : llvm::enumerate(stageCost)) {
    largest = std::max(largest, cost);
    double excess = ideal > 0 ? 100.0 * (cost / ideal - 1.0) : 0.0;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "stage " << stage << ": "
       << llvm::format("%.2e", static_cast<double>(cost)) << " FLOPs ("
       << llvm::format("%.1f", 100.0 * ratio(cost, total)) << "% of total, ";
    if (excess >= 0)
      os << llvm::format("+%.1f", excess) << "% over the ideal)";
    else
      os << llvm::format("%.1f", -excess) << "% under the ideal)";
    mlir::emitRemark(model.getLoc(), text);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "imbalance " << llvm::format("%.3f", ratio(largest, ideal))
     << " (largest stage / ideal; total "
     << llvm::format("%.2e", static_cast<double>(total)) << " FLOPs over "
     << numStages << (numStages == 1 ? " stage)" : " stages)");
  mlir::emitRemark(model.getLoc(), text);
}

void ZBPartitionPass::runOnOperation() {
  if (stages < 0) {
    getOperation().emitError("zb-partition: stages must be non-negative, got ")
        << static_cast<int64_t>(stages);
    return signalPassFailure();
  }
  bool failedAny = false;
  for (ModelOp model : getOperation().getOps<ModelOp>()) {
    if (failed(partition(model))) {
      failedAny = true;
      continue;
    }
    if (report)
      emitReport(model);
  }
  if (failedAny)
    signalPassFailure();
}
