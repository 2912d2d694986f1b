//===- ZBOps.cpp - zb op verifiers and helpers ----------------------------===//
//
// Verifiers for everything a single op or region can get wrong: model-level
// shapes (via the rules in ZBShapes.cpp), parameter initialisers, values that
// cross a stage boundary without a `zb.cut`, and, at the schedule level,
// stages and microbatches out of range, work on a rank that does not hold the
// stage, transfers to the wrong peer and duplicated work. Properties of a
// whole schedule (matching sends and receives, deadlock-freedom, memory)
// belong to the zb-verify-schedule pass, not here.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBOps.h"

#include "VerifyUtils.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Support/CollectiveGroups.h"
#include "zbc/Support/Limits.h"
#include "zbc/Support/StageBoundary.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace zbc::zb;

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

unsigned ModelOp::getNumStages() {
  return 1 + llvm::count_if(getBody().front(),
                            [](Operation &op) { return isa<CutOp>(op); });
}

llvm::DenseMap<Operation *, unsigned> ModelOp::getStageOfOps() {
  llvm::DenseMap<Operation *, unsigned> stageOf;
  unsigned stage = 0;
  for (Operation &op : getBody().front()) {
    stageOf[&op] = stage;
    if (isa<CutOp>(op))
      ++stage;
  }
  return stageOf;
}

LossOp ModelOp::getLossOp() {
  return cast<LossOp>(getBody().front().getTerminator());
}

/// Inputs, labels and parameters are leaves: the runtime provides them to the
/// stage that uses them, so using one is never a stage crossing. They share
/// one namespace.
static std::optional<StringRef> getLeafName(Operation *op) {
  if (auto input = dyn_cast<InputOp>(op))
    return input.getName();
  if (auto label = dyn_cast<LabelOp>(op))
    return label.getName();
  if (auto param = dyn_cast<ParamOp>(op))
    return param.getName();
  return std::nullopt;
}

void InputOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}
void LabelOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}
void ParamOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult zbc::zb::verifyTensorSize(Operation *op, Type type,
                                        StringRef what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  Type element = tensor ? tensor.getElementType() : Type();
  bool zbElement = element && (element.isF16() || element.isBF16() ||
                               element.isF32() || element.isF64() ||
                               element.isInteger(32) || element.isInteger(64));
  if (!tensor || !tensor.hasStaticShape() || !zbElement)
    return op->emitOpError(what)
           << " " << type
           << " is not a statically shaped tensor of f16, bf16, f32, f64, "
              "i32 or i64";
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  for (int64_t dim : tensor.getShape()) {
    if (dim == 0)
      return op->emitOpError(what) << " " << type << " has a zero dimension";
    if (bytes > limits::kMaxTensorBytes / dim)
      return op->emitOpError(what)
             << " " << type << " is larger than 2^50 bytes (the largest "
                               "tensor zbc plans memory for)";
    bytes *= dim;
  }
  return success();
}

LogicalResult ModelOp::verifyRegions() {
  Block &body = getBody().front();
  for (Operation &op : body) {
    // zb ops check their own parents (HasParent); others are foreign here.
    if (!isa<ZBDialect>(op.getDialect()))
      return op.emitOpError("cannot appear in a 'zb.model'; a model holds "
                            "only zb model-level ops");
    for (Type type : op.getResultTypes())
      if (failed(verifyTensorSize(&op, type, "result type")))
        return failure();
  }

  llvm::StringMap<Operation *> leafByName;
  for (Operation &op : body) {
    std::optional<StringRef> name = getLeafName(&op);
    if (!name)
      continue;
    if (name->empty())
      return op.emitOpError("needs a non-empty name");
    auto [it, inserted] = leafByName.try_emplace(*name, &op);
    if (!inserted) {
      InFlightDiagnostic diag = op.emitOpError("redefines the name '")
                                << *name << "'";
      diag.attachNote(it->second->getLoc()) << "first defined here";
      return diag;
    }
  }

  llvm::DenseMap<Operation *, unsigned> stageOf = getStageOfOps();
  // The stage a value lives in: a cut's results belong to the stage it starts.
  auto stageOfValue = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return stageOf.lookup(def) + (isa<CutOp>(def) ? 1 : 0);
  };

  unsigned lastStage = getNumStages() - 1;
  for (Operation &op : body) {
    unsigned stage = stageOf.lookup(&op);
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (isa<InputOp>(def))
        continue;
      if (isa<LabelOp>(def)) {
        if (stage != lastStage)
          return op.emitOpError("in stage ")
                 << stage << " reads a label; labels are loaded for the last "
                 << "stage (" << lastStage << ") only";
        continue;
      }
      // A parameter may be used in several stages (tied): each holds a
      // copy, and its gradient is the sum of every use's.
      if (isa<ParamOp>(def))
        continue;
      unsigned defStage = stageOfValue(operand);
      // A use before the definition is the dominance check's to report.
      if (defStage < stage) {
        InFlightDiagnostic diag =
            op.emitOpError("in stage ")
            << stage << " uses a value of stage " << defStage
            << "; values cross a stage boundary only through 'zb.cut'";
        diag.attachNote(def->getLoc()) << "value defined here";
        return diag;
      }
    }
  }
  return success();
}

LogicalResult ParamOp::verify() {
  bool needsScale = getInit() == InitKind::Normal || getInit() == InitKind::Uniform;
  std::optional<double> scale;
  if (FloatAttr scaleAttr = getScaleAttr())
    scale = scaleAttr.getValueAsDouble();
  if (needsScale && !scale)
    return emitOpError("init '") << stringifyInitKind(getInit())
                                 << "' needs a scale, e.g. "
                                 << stringifyInitKind(getInit()) << "(0.02)";
  if (!needsScale && scale)
    return emitOpError("init '") << stringifyInitKind(getInit())
                                 << "' takes no scale";
  if (scale && !(*scale > 0.0))
    return emitOpError("scale must be positive, got ") << *scale;
  return success();
}

LogicalResult zbc::zb::verifyKnownAttributes(Operation *op) {
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    if (attr.getName() == kFuseWeightGradAttrName)
      continue;
    std::string own;
    for (StringAttr name : op->getName().getAttributeNames())
      own += (own.empty() ? "" : ", ") + name.str();
    return op->emitOpError("has no attribute '")
           << attr.getName().getValue() << "' (it takes "
           << (own.empty() ? std::string("none") : own)
           << "; besides, only '" << kFuseWeightGradAttrName
           << "' may be attached)";
  }
  return success();
}

int64_t zbc::zb::getNumBytes(Type tensorType) {
  auto type = cast<RankedTensorType>(tensorType);
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

int64_t ParamOp::getNumBytes() { return zb::getNumBytes(getResult().getType()); }

LogicalResult CutOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  llvm::append_range(inferredReturnTypes, operands.getTypes());
  return success();
}

LogicalResult CutOp::verify() {
  if (getInputs().empty())
    return emitOpError("must pass at least one activation to the next stage");
  return success();
}

LogicalResult zbc::zb::verifyInferredResult(Operation *op,
                                            FailureOr<RankedTensorType> inferred) {
  if (failed(inferred))
    return failure();
  Type actual = op->getResult(0).getType();
  if (actual != *inferred)
    return op->emitOpError("result type ")
           << actual << " does not match the inferred type " << *inferred;
  return success();
}

#define ZB_VERIFY_BINARY(OP, LHS, RHS)                                         \
  LogicalResult OP::verify() {                                                 \
    return verifyInferredResult(                                                     \
        *this, inferResultType(get##LHS().getType(), get##RHS().getType(),     \
                               [&] { return emitOpError(); }));                \
  }
LogicalResult LinearOp::verify() {
  return verifyInferredResult(
      *this, inferResultType(getInput().getType(), getWeight().getType(),
                             getWeightOutIn(), [&] { return emitOpError(); }));
}
ZB_VERIFY_BINARY(MatmulOp, Lhs, Rhs)
ZB_VERIFY_BINARY(BiasAddOp, Input, Bias)
ZB_VERIFY_BINARY(EmbeddingOp, Indices, Table)
ZB_VERIFY_BINARY(CrossEntropyOp, Logits, Labels)
#undef ZB_VERIFY_BINARY

LogicalResult TransposeOp::verify() {
  return verifyInferredResult(
      *this, inferResultType(getInput().getType(), [&] { return emitOpError(); }));
}

LogicalResult LayerNormOp::verify() {
  return verifyInferredResult(
      *this, inferResultType(getInput().getType(), getGamma().getType(),
                             getBeta().getType(),
                             getEpsilon().convertToDouble(),
                             [&] { return emitOpError(); }));
}

LogicalResult RmsNormOp::verify() {
  return verifyInferredResult(
      *this, inferResultType(getInput().getType(), getWeight().getType(),
                             getEpsilon().convertToDouble(),
                             [&] { return emitOpError(); }));
}

LogicalResult CausalAttentionOp::verify() {
  if (getDocuments()) {
    auto qkv = getQkv().getType();
    auto type = cast<RankedTensorType>(getDocuments().getType());
    if (qkv.getRank() != 3 || type.getRank() != 2 ||
        type.getShape() != qkv.getShape().take_front(2))
      return emitOpError("documents must be [batch, seq] of qkv, got ")
             << type;
  }
  return verifyInferredResult(*this, inferResultType(getQkv().getType(), getHeads(),
                                               [&] { return emitOpError(); }));
}

//===----------------------------------------------------------------------===//
// Schedule level
//===----------------------------------------------------------------------===//

int64_t ProgramOp::getNumRanks() {
  return llvm::range_size(getBody().front().getOps<RankOp>());
}

LogicalResult ProgramOp::verify() {
  if (getPlacement().empty())
    return emitOpError("placement must name the rank of at least one stage");
  // The same ceilings as every other way into a schedule (Limits.h), so
  // that no later pass sizes anything by an absurd count.
  int64_t microbatches = getMicrobatches();
  if (microbatches > limits::kMaxMicrobatches)
    return emitOpError("has ")
           << microbatches << " microbatches; at most "
           << limits::kMaxMicrobatches << " are accepted";
  int64_t stages = getPlacement().size();
  if (stages > limits::kMaxStages)
    return emitOpError("places ") << stages << " stages; at most "
                                  << limits::kMaxStages << " are accepted";
  if (stages * microbatches > limits::kMaxStageMicrobatches)
    return emitOpError("has ")
           << stages << " stages x " << microbatches
           << " microbatches; at most " << limits::kMaxStageMicrobatches
           << " (stage, microbatch) pairs are accepted";
  for (auto [stage, rank] : llvm::enumerate(getPlacement()))
    if (rank < 0)
      return emitOpError("placement of stage ")
             << stage << " is negative (" << rank << ")";
  return success();
}

LogicalResult ProgramOp::verifyRegions() {
  int64_t expected = 0;
  for (Operation &op : getBody().front()) {
    auto rank = dyn_cast<RankOp>(op);
    if (!rank)
      return op.emitOpError("cannot appear in a 'zb.program'; it holds only "
                            "'zb.rank' ops");
    if (static_cast<int64_t>(rank.getRank()) != expected)
      return rank.emitOpError("is rank ")
             << rank.getRank() << " but rank " << expected
             << " is expected here; ranks appear once each, in order";
    ++expected;
  }
  int64_t numRanks = expected;
  llvm::SmallVector<bool> holdsStage(numRanks, false);
  for (auto [stage, rank] : llvm::enumerate(getPlacement())) {
    if (rank >= numRanks)
      return emitOpError("places stage ")
             << stage << " on rank " << rank << " but the program has "
             << numRanks << (numRanks == 1 ? " rank" : " ranks");
    holdsStage[rank] = true;
  }
  for (auto [rank, holds] : llvm::enumerate(holdsStage))
    if (!holds)
      return emitOpError("rank ") << rank << " holds no stage";
  return success();
}

LogicalResult RankOp::verifyRegions() {
  // One entry per unit of work: (what, stage, microbatch), where `what` names
  // the compute kind ("F", "B", "W") or the transfer ("send act", ...).
  using WorkKey = std::tuple<StringRef, int64_t, int64_t>;
  llvm::DenseMap<WorkKey, Operation *> seen;
  auto claim = [&](Operation *op, StringRef what, int64_t stage,
                   int64_t mb) -> LogicalResult {
    auto [it, inserted] = seen.try_emplace(WorkKey{what, stage, mb}, op);
    if (inserted)
      return success();
    InFlightDiagnostic diag = op->emitOpError("repeats ")
                              << what << " of stage " << stage
                              << " microbatch " << mb << " on rank "
                              << getRank();
    diag.attachNote(it->second->getLoc()) << "first done here";
    return diag;
  };
  // A transfer is one message: (direction and payload, key) per stage and
  // microbatch.
  llvm::StringMap<std::string> spelled; // keeps the claimed names alive
  auto claimTransfer = [&](Operation *op) -> LogicalResult {
    bool send = isa<SendOp>(op);
    auto [payload, stage, mb, key] =
        send ? std::make_tuple(cast<SendOp>(op).getPayload(),
                               int64_t(cast<SendOp>(op).getStage()),
                               int64_t(cast<SendOp>(op).getMicrobatch()),
                               cast<SendOp>(op).getKey())
             : std::make_tuple(cast<RecvOp>(op).getPayload(),
                               int64_t(cast<RecvOp>(op).getStage()),
                               int64_t(cast<RecvOp>(op).getMicrobatch()),
                               cast<RecvOp>(op).getKey());
    std::string what = std::string(send ? "send " : "recv ") +
                       (payload == Payload::Act ? "act" : "grad") + " '" +
                       key.str() + "'";
    StringRef name = spelled.try_emplace(what, what).first->second;
    return claim(op, name, stage, mb);
  };
  for (Operation &op : getBody().front()) {
    if (auto compute = dyn_cast<ComputeOp>(op)) {
      int64_t stage = compute.getStage(), mb = compute.getMicrobatch();
      // BW is B and W together: it clashes with either of them alone.
      SmallVector<StringRef, 2> parts;
      if (compute.getKind() == ComputeKind::BW)
        parts = {"B", "W"};
      else
        parts = {stringifyComputeKind(compute.getKind())};
      for (StringRef part : parts)
        if (failed(claim(&op, part, stage, mb)))
          return failure();
    } else if (isa<OffloadOp, ReloadOp>(op)) {
      auto [stage, mb] =
          isa<OffloadOp>(op)
              ? std::make_pair(int64_t(cast<OffloadOp>(op).getStage()),
                               int64_t(cast<OffloadOp>(op).getMicrobatch()))
              : std::make_pair(int64_t(cast<ReloadOp>(op).getStage()),
                               int64_t(cast<ReloadOp>(op).getMicrobatch()));
      if (failed(claim(&op, op.getName().stripDialect(), stage, mb)))
        return failure();
    } else if (isa<SendOp, RecvOp>(op)) {
      if (failed(claimTransfer(&op)))
        return failure();
    } else if (auto group = dyn_cast<GroupOp>(op)) {
      for (Operation &member : group.getBody().front())
        if (isa<SendOp, RecvOp>(member) && failed(claimTransfer(&member)))
          return failure();
    } else if (!isa<AllReduceOp, ReduceScatterOp, AllGatherOp, BroadcastOp,
                     ReduceOp>(op)) {
      // The proof (Program.h) checks the collectives' order per group.
      return op.emitOpError("cannot appear in a 'zb.rank'; it holds only "
                            "'zb.compute', 'zb.offload', 'zb.reload', "
                            "'zb.send', 'zb.recv', 'zb.group' and the "
                            "collectives");
    }
  }
  return success();
}

/// Checks the stage and microbatch of a schedule-level op against its program.
static LogicalResult verifyStageAndMicrobatch(Operation *op, ProgramOp program,
                                              int64_t stage, int64_t mb) {
  if (stage >= program.getNumStages())
    return op->emitOpError("stage ")
           << stage << " is out of range [0, " << program.getNumStages()
           << ")";
  if (mb >= static_cast<int64_t>(program.getMicrobatches()))
    return op->emitOpError("microbatch ")
           << mb << " is out of range [0, " << program.getMicrobatches()
           << ")";
  return success();
}

RankOp ComputeOp::getRankOp() { return cast<RankOp>((*this)->getParentOp()); }
RankOp GroupOp::getRankOp() { return cast<RankOp>((*this)->getParentOp()); }
RankOp OffloadOp::getRankOp() { return cast<RankOp>((*this)->getParentOp()); }
RankOp ReloadOp::getRankOp() { return cast<RankOp>((*this)->getParentOp()); }
RankOp AllReduceOp::getRankOp() {
  return cast<RankOp>((*this)->getParentOp());
}
RankOp ReduceScatterOp::getRankOp() {
  return cast<RankOp>((*this)->getParentOp());
}
RankOp AllGatherOp::getRankOp() {
  return cast<RankOp>((*this)->getParentOp());
}
RankOp BroadcastOp::getRankOp() {
  return cast<RankOp>((*this)->getParentOp());
}
RankOp ReduceOp::getRankOp() { return cast<RankOp>((*this)->getParentOp()); }
int64_t BroadcastOp::getBytes() { return zb::getNumBytes(getType()); }
int64_t ReduceOp::getBytes() { return zb::getNumBytes(getType()); }

/// The rank of a transfer: its parent, or its group's.
static RankOp rankOfTransfer(Operation *op) {
  Operation *parent = op->getParentOp();
  if (auto group = dyn_cast<GroupOp>(parent))
    parent = group->getParentOp();
  return cast<RankOp>(parent);
}
RankOp SendOp::getRankOp() { return rankOfTransfer(*this); }
RankOp RecvOp::getRankOp() { return rankOfTransfer(*this); }
GroupOp SendOp::getGroupOp() { return dyn_cast<GroupOp>((*this)->getParentOp()); }
GroupOp RecvOp::getGroupOp() { return dyn_cast<GroupOp>((*this)->getParentOp()); }

// e.g. %send_act0_3 for the send of stage 0's activation on microbatch 3.
template <typename TransferOp>
static void nameTransfer(TransferOp op, StringRef direction,
                         OpAsmSetValueNameFn setNameFn) {
  llvm::SmallString<24> name(direction);
  name += op.getPayload() == Payload::Act ? "_act" : "_grad";
  name += std::to_string(op.getStage()) + "_" +
          std::to_string(op.getMicrobatch());
  setNameFn(op.getDone(), name);
}
void SendOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  nameTransfer(*this, "send", setNameFn);
}
void RecvOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  nameTransfer(*this, "recv", setNameFn);
}
void GroupOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getDone(), "group");
}

void ComputeOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  // e.g. %F0_3 for the forward of stage 0 on microbatch 3.
  llvm::SmallString<16> name(stringifyComputeKind(getKind()));
  name += std::to_string(getStage()) + "_" + std::to_string(getMicrobatch());
  setNameFn(getDone(), name);
}

/// Checks that `op`, the work of (stage, mb), runs on the rank that holds
/// the stage.
static LogicalResult verifyStageWork(Operation *op, RankOp rank, int64_t stage,
                                     int64_t mb) {
  ProgramOp program = rank.getProgram();
  if (failed(verifyStageAndMicrobatch(op, program, stage, mb)))
    return failure();
  int64_t holder = program.getRankOfStage(stage);
  if (holder != static_cast<int64_t>(rank.getRank()))
    return op->emitOpError("runs on rank ")
           << rank.getRank() << " but stage " << stage
           << " is placed on rank " << holder;
  return success();
}

LogicalResult ComputeOp::verify() {
  return verifyStageWork(*this, getRankOp(), getStage(), getMicrobatch());
}
LogicalResult OffloadOp::verify() {
  return verifyStageWork(*this, getRankOp(), getStage(), getMicrobatch());
}
LogicalResult ReloadOp::verify() {
  return verifyStageWork(*this, getRankOp(), getStage(), getMicrobatch());
}

// e.g. %offload0_3 and %reload0_3 for the stash of stage 0 on microbatch 3.
void OffloadOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getDone(), "offload" + std::to_string(getStage()) + "_" +
                           std::to_string(getMicrobatch()));
}
void ReloadOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getDone(), "reload" + std::to_string(getStage()) + "_" +
                           std::to_string(getMicrobatch()));
}

// e.g. %allreduce0 for stage 0's gradients over the replicas,
// %allreduce_tied0 for a tied parameter's, %reducescatter0, %allgather0.
template <typename CollectiveOp>
static void nameCollective(CollectiveOp op, StringRef kind,
                           OpAsmSetValueNameFn setNameFn) {
  bool tied = op.getOver().starts_with(zbc::kTiedGroupPrefix);
  setNameFn(op.getDone(),
            (kind + (tied ? "_tied" : "") + Twine(op.getStage())).str());
}
void AllReduceOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  nameCollective(*this, "allreduce", setNameFn);
}
void ReduceScatterOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  nameCollective(*this, "reducescatter", setNameFn);
}
void AllGatherOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  nameCollective(*this, "allgather", setNameFn);
}
void BroadcastOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getDone(),
            ("broadcast_" + getKey() + "_" + Twine(getMicrobatch())).str());
}
void ReduceOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getDone(),
            ((getRoot() ? "reduce_" : "allreduce_") + getKey() + "_" +
             Twine(getMicrobatch()))
                .str());
}

/// Whether `over` names a group of Note [Collective groups].
static bool isCollectiveGroup(StringRef over) {
  return over == zbc::kReplicasGroup || over == zbc::kPipelineGroup ||
         (over.starts_with(zbc::kTiedGroupPrefix) &&
          over.size() > StringRef(zbc::kTiedGroupPrefix).size());
}

/// A collective runs on the rank that holds its stage, over a group of
/// Note [Collective groups], and moves something.
template <typename CollectiveOp>
static LogicalResult verifyCollective(CollectiveOp op) {
  RankOp rank = op.getRankOp();
  ProgramOp program = rank.getProgram();
  if (static_cast<int64_t>(op.getStage()) >= program.getNumStages())
    return op.emitOpError("stage ") << op.getStage() << " is out of range [0, "
                                    << program.getNumStages() << ")";
  if (program.getRankOfStage(op.getStage()) != int64_t(rank.getRank()))
    return op.emitOpError("runs on rank ")
           << rank.getRank() << " but stage " << op.getStage()
           << " is placed on rank " << program.getRankOfStage(op.getStage());
  StringRef over = op.getOver();
  if (!isCollectiveGroup(over))
    return op.emitOpError("is over '")
           << over << "'; a group is \"" << zbc::kReplicasGroup << "\", \""
           << zbc::kPipelineGroup << "\" or \"" << zbc::kTiedGroupPrefix << "NAME\"";
  if (op.getParams().empty())
    return op.emitOpError("moves no parameters");
  return success();
}
/// A value collective (Note [Value collectives]) moves a tensor of a
/// microbatch of its program over the replica's ranks; its root, if any,
/// is one of them. Whether its rank belongs to its group is the proof's to
/// say (Program.h), which knows the groups.
template <typename ValueCollectiveOp>
static LogicalResult verifyValueCollective(ValueCollectiveOp op,
                                           std::optional<uint64_t> root) {
  ProgramOp program = op.getRankOp().getProgram();
  if (op.getKey().empty())
    return op.emitOpError("names no key");
  if (!isCollectiveGroup(op.getOver()))
    return op.emitOpError("is over '")
           << op.getOver() << "'; a group is \"" << zbc::kReplicasGroup
           << "\", \"" << zbc::kPipelineGroup << "\" or \""
           << zbc::kTiedGroupPrefix << "NAME\"";
  if (op.getMicrobatch() >= program.getMicrobatches())
    return op.emitOpError("microbatch ")
           << op.getMicrobatch() << " is out of range [0, "
           << program.getMicrobatches() << ")";
  if (root && static_cast<int64_t>(*root) >= program.getNumRanks())
    return op.emitOpError("root rank ")
           << *root << " is out of range [0, " << program.getNumRanks() << ")";
  return verifyTensorSize(op, op.getType(), "type");
}
LogicalResult BroadcastOp::verify() {
  return verifyValueCollective(*this, getRoot());
}
LogicalResult ReduceOp::verify() {
  // The softmax merge reads and writes zb.vocab_stats' four planes.
  auto type = cast<RankedTensorType>(getType());
  if (getReduction() == Reduction::Softmax &&
      (type.getRank() < 2 || type.getShape()[0] != 4))
    return emitOpError("merges the softmax statistics of zb.vocab_stats, "
                       "four planes of rows (tensor<4x...>), not ")
           << type;
  return verifyValueCollective(*this, getRoot());
}
LogicalResult AllReduceOp::verify() { return verifyCollective(*this); }
LogicalResult ReduceScatterOp::verify() { return verifyCollective(*this); }
LogicalResult AllGatherOp::verify() { return verifyCollective(*this); }

/// Checks a transfer of `payload` produced by `stage` between the rank that
/// holds `stage` and the rank that holds its neighbour (downstream for
/// activations, upstream for gradients). `isSend` says which end `op` is.
static LogicalResult verifyTransfer(Operation *op, bool isSend, Payload payload,
                                    int64_t stage, int64_t mb, int64_t peer,
                                    StringRef key, Type type, size_t numDeps) {
  RankOp rank = rankOfTransfer(op);
  // One message per tensor of the boundary, named by its key in the
  // producing stage: out.I forward, d_in.I backward (PhaseKeys.h).
  std::optional<PhaseKey> parsed = PhaseKey::parse(key);
  KeyKind expected = payload == Payload::Act ? KeyKind::Out : KeyKind::DIn;
  if (!parsed || parsed->kind != expected)
    return op->emitOpError("carries key '")
           << key << "', but an " << (payload == Payload::Act ? "act" : "grad")
           << " message is named by the producing stage's "
           << (payload == Payload::Act ? "'out.I'" : "'d_in.I'") << " key";
  if (failed(verifyTensorSize(op, type, "message type")))
    return failure();
  if (numDeps && isa<GroupOp>(op->getParentOp()))
    return op->emitOpError("is in a 'zb.group', which waits for its members: "
                           "give the group the 'after' list");
  ProgramOp program = rank.getProgram();
  int64_t self = rank.getRank();
  if (failed(verifyStageAndMicrobatch(op, program, stage, mb)))
    return failure();
  if (peer >= program.getNumRanks())
    return op->emitOpError("peer rank ")
           << peer << " is out of range [0, " << program.getNumRanks() << ")";
  if (peer == self)
    return op->emitOpError(isSend ? "sends to its own rank "
                                  : "receives from its own rank ")
           << self;

  bool isAct = payload == Payload::Act;
  int64_t neighbour = zbc::consumerStage(isAct, stage);
  if (neighbour < 0 || neighbour >= program.getNumStages())
    return op->emitOpError("carries the ")
           << (isAct ? "activation" : "input gradient") << " of stage "
           << stage << ", which no stage consumes";
  int64_t producerRank = program.getRankOfStage(stage);
  int64_t consumerRank = program.getRankOfStage(neighbour);
  int64_t expectedSelf = isSend ? producerRank : consumerRank;
  int64_t expectedPeer = isSend ? consumerRank : producerRank;
  if (self != expectedSelf)
    return op->emitOpError("is on rank ")
           << self << " but stage " << (isSend ? stage : neighbour)
           << " is placed on rank " << expectedSelf;
  if (peer != expectedPeer)
    return op->emitOpError("names peer rank ")
           << peer << " but stage " << (isSend ? neighbour : stage)
           << " is placed on rank " << expectedPeer;
  return success();
}

LogicalResult SendOp::verify() {
  return verifyTransfer(*this, /*isSend=*/true, getPayload(), getStage(),
                        getMicrobatch(), getPeer(), getKey(), getType(),
                        getDeps().size());
}

LogicalResult RecvOp::verify() {
  return verifyTransfer(*this, /*isSend=*/false, getPayload(), getStage(),
                        getMicrobatch(), getPeer(), getKey(), getType(),
                        getDeps().size());
}

LogicalResult GroupOp::verify() {
  Block &body = getBody().front();
  if (body.empty())
    return emitOpError("holds no transfers");
  for (Operation &op : body)
    if (!isa<SendOp, RecvOp>(op))
      return op.emitOpError("cannot appear in a 'zb.group'; it holds only "
                            "'zb.send' and 'zb.recv'");
  return success();
}

#define GET_OP_CLASSES
#include "zbc/Dialect/ZB/ZBOps.cpp.inc"
