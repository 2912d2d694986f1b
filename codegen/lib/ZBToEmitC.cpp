//===- ZBToEmitC.cpp - convert-zb-to-emitc: one emitc.file per rank -------===//
//
// The second half of the lowering (RankTables.h is the first): prints each
// rank's tables as EmitC globals, each stage phase as one function of
// runtime calls on frame slots (Note [Frames]), the rank's order as `step`
// and `main`, and replaces the program and its pipeline with the files.
// Every runtime call is one ZBC_RT_CALL statement, so a failing kernel
// returns its status up to zbc_rt_main, which reports it.
//
//===----------------------------------------------------------------------===//

#include "zbc/Codegen/Codegen.h"

#include "RankTables.h"

#include "zbc/Analysis/ProgramTable.h"
#include "zbc/Dialect/ZB/KernelShape.h"
#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Dialect/ZB/ZBOps.h"
#include "zbc/Passes/Passes.h"
#include "zbc/Passes/Pipelines.h"
#include "zbc/runtime/KernelTable.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/Cpp/CppEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

namespace zbc {
#define GEN_PASS_DEF_CONVERTZBTOEMITCPASS
#include "zbc/Codegen/Passes.h.inc"
} // namespace zbc

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;
using namespace zbc::codegen;

std::string zbc::rankFileId(int rank) { return "rank" + std::to_string(rank); }

void zbc::registerZBCodegenPipelines() {
  PassPipelineRegistration<LowerToProgramCLOptions>(
      "zb-lower-to-cpp",
      "zb.model or zb.pipeline -> one emitc.file per rank: "
      "zb-lower-to-program, then convert-zb-to-emitc (zbc compile's whole "
      "lowering; mlir-translate --mlir-to-cpp --file-id=rankN prints one)",
      [](OpPassManager &pm, const LowerToProgramCLOptions &cl) {
        buildLowerToProgramPipeline(pm, cl.options());
        pm.addPass(createConvertZBToEmitCPass());
      });
}

LogicalResult zbc::printRankFile(ModuleOp module, int rank,
                                 llvm::raw_ostream &os) {
  return emitc::translateToCpp(module, os, /*declareVariablesAtTop=*/false,
                               rankFileId(rank));
}

namespace {

/// `text` as a C string literal.
std::string cString(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += llvm::formatv("\\{0:o3}", static_cast<unsigned>(c)).str();
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// A C identifier for `prefix` + `name`: other characters become '_'.
std::string identifier(StringRef prefix, StringRef name) {
  std::string out = prefix.str();
  for (char c : name)
    out += llvm::isAlnum(c) ? c : '_';
  return out;
}

std::string shapeList(ArrayRef<int64_t> shape) {
  std::string out = "{";
  for (auto [i, d] : llvm::enumerate(shape))
    out += (i ? ", " : "") + std::to_string(d);
  return out + "}";
}

/// The operands of one kernel call (Note [Kernel table]), in order, and
/// their kinds: 'b' a buffer id (a frame slot or a table's buffer), 'd' a
/// dim, 'r' a real.
struct KernelOperands {
  KernelOperands(OpBuilder &b, llvm::function_ref<FailureOr<Attribute>(Value)> idOf,
                 Attribute workspaceSlot)
      : b(b), idOf(idOf), workspaceSlot(workspaceSlot) {}
  void id(Value v) {
    FailureOr<Attribute> a = idOf(v);
    bad |= failed(a);
    args.push_back(succeeded(a) ? *a : Attribute(b.getI64IntegerAttr(0)));
    kinds += 'b';
  }
  void n(int64_t value) {
    args.push_back(b.getI64IntegerAttr(value));
    kinds += 'd';
  }
  void real(double value) {
    args.push_back(
        emitc::OpaqueAttr::get(b.getContext(), llvm::formatv("{0:e}", value).str()));
    kinds += 'r';
  }
  /// An optional buffer the op goes without.
  void absent() {
    args.push_back(emitc::OpaqueAttr::get(b.getContext(), "ZBC_RT_ABSENT"));
    kinds += 'b';
  }
  /// The op's workspace slot in its frame.
  void workspace() {
    args.push_back(workspaceSlot);
    kinds += 'b';
  }

  OpBuilder &b;
  llvm::function_ref<FailureOr<Attribute>(Value)> idOf;
  Attribute workspaceSlot;
  SmallVector<Attribute> args;
  std::string kinds;
  bool bad = false;
};

/// The reals of an op's kernel call (its attributes), in its row's order;
/// none for most ops.
template <typename OpT> void realsOf(OpT, KernelOperands &) {}

// RoPE's reals (rope and rope_grad share a row's shape): theta and the
// Llama 3 scaling, 0 for each when the op has none.
template <typename RopeLike> void ropeReals(RopeLike o, KernelOperands &k) {
  k.real(o.getTheta().convertToDouble());
  auto real = [](std::optional<APFloat> v) {
    return v ? v->convertToDouble() : 0.0;
  };
  k.real(real(o.getLlama3Factor())), k.real(real(o.getLlama3LowFreqFactor())),
      k.real(real(o.getLlama3HighFreqFactor()));
  std::optional<uint64_t> original = o.getLlama3OriginalMaxPositions();
  k.real(original ? static_cast<double>(*original) : 0.0);
}
void realsOf(RopeOp o, KernelOperands &k) { ropeReals(o, k); }
void realsOf(RopeGradOp o, KernelOperands &k) { ropeReals(o, k); }

/// The norms' epsilon.
template <typename NormLike> void epsilonOf(NormLike o, KernelOperands &k) {
  k.real(o.getEpsilon().convertToDouble());
}
void realsOf(LayerNormOp o, KernelOperands &k) { epsilonOf(o, k); }
void realsOf(LayerNormGradInputOp o, KernelOperands &k) { epsilonOf(o, k); }
void realsOf(LayerNormGradGammaOp o, KernelOperands &k) { epsilonOf(o, k); }
void realsOf(RmsNormOp o, KernelOperands &k) { epsilonOf(o, k); }
void realsOf(RmsNormGradInputOp o, KernelOperands &k) { epsilonOf(o, k); }
void realsOf(RmsNormGradWeightOp o, KernelOperands &k) { epsilonOf(o, k); }

void realsOf(FillOp o, KernelOperands &k) {
  k.real(o.getValue().convertToDouble());
}

/// The operands of op `o`'s kernel call: its kernel shape's buffers (the
/// workspace as its frame slot) and dims (KernelShape.h), then its reals.
template <typename OpT> void operandsOf(OpT o, KernelOperands &k) {
  KernelShape<OpT> shape = kernelShapeOf(o);
  const char *roles = KernelDims<OpT>::kBufferRoles;
  for (auto [index, buffer] : llvm::enumerate(shape.buffers)) {
    if (buffer)
      k.id(buffer);
    else if (roles[index] == 'w')
      k.workspace();
    else
      k.absent();
  }
  shape.dims.forEach([&](int64_t dim) { k.n(dim); });
  realsOf(o, k);
}

/// Writes one rank's file.
class FileWriter {
public:
  FileWriter(OpBuilder &b, Location loc, const RankTables &t)
      : b(b), loc(loc), t(t), ctx(b.getContext()) {
    rankType = emitc::PointerType::get(emitc::OpaqueType::get(ctx, "zbc_rt_rank"));
    statusType = emitc::OpaqueType::get(ctx, "zbc_rt_status");
  }

  LogicalResult write();

private:
  void verbatim(const std::string &text) {
    emitc::VerbatimOp::create(b, loc, b.getStringAttr(text));
  }
  Attribute opaque(const std::string &text) {
    return emitc::OpaqueAttr::get(ctx, text);
  }
  /// One ZBC_RT_CALL(fn, rank, args...) statement.
  void call(StringRef fn, ArrayRef<Attribute> args) {
    SmallVector<Attribute> all = {opaque(fn.str()), b.getIndexAttr(0)};
    all.append(args.begin(), args.end());
    emitc::CallOpaqueOp::create(b, loc, TypeRange{}, "ZBC_RT_CALL",
                                ValueRange{rankArg}, b.getArrayAttr(all),
                                ArrayAttr());
  }
  void writeNames();
  void writeTables();
  void global(StringRef name, Type type, Attribute value) {
    emitc::GlobalOp::create(b, loc, name, type, value,
                            /*extern=*/false, /*static=*/true, /*const=*/true);
  }
  emitc::FuncOp beginFunction(StringRef name, StringRef comment);
  void endFunction();
  LogicalResult writePhase(const PhaseLayout &layout);
  FailureOr<Attribute> idOf(const PhaseLayout &layout, Value value);
  LogicalResult writeKernel(const PhaseLayout &layout, Operation *op);
  void writeStep();
  void writeMain();

  OpBuilder &b;
  Location loc;
  const RankTables &t;
  MLIRContext *ctx;
  Type rankType, statusType;
  Value rankArg;
  std::map<int, std::string> nameOfBuffer; // persistent ids the bodies name
  OpBuilder::InsertPoint fileEnd;
};

void FileWriter::writeNames() {
  std::set<std::string> taken;
  std::string text = "// The persistent buffers the phases name (ids into "
                     "kBuffers).\nenum {\n";
  for (const auto &[key, id] : t.persistentId) {
    std::optional<PhaseKey> parsed = PhaseKey::parse(key);
    if (!parsed || (parsed->kind != KeyKind::Param && parsed->kind != KeyKind::Grad))
      continue;
    std::string name = identifier(
        parsed->kind == KeyKind::Param ? "param_" : "grad_", parsed->suffix);
    while (!taken.insert(name).second)
      name += "_";
    nameOfBuffer[id] = name;
  }
  for (const auto &[id, name] : nameOfBuffer)
    text += llvm::formatv("  {0} = {1},\n", name, id).str();
  verbatim(text + "};");
}

void FileWriter::writeTables() {
  // Buffers.
  std::string text = "{\n";
  for (const Buffer &buffer : t.buffers)
    text += llvm::formatv("  {{{0}, {1}, {2}, {3}, {4}},\n", cString(buffer.name),
                          buffer.offset, buffer.bytes, spell(buffer.kind),
                          spell(buffer.element))
                .str();
  verbatim("// The arena: name, offset, bytes, kind, element type.");
  global("kBuffers",
         emitc::ArrayType::get({static_cast<int64_t>(t.buffers.size())},
                               emitc::OpaqueType::get(ctx, "zbc_rt_buffer")),
         opaque(text + "}"));
  // Frames.
  if (!t.frames.empty()) {
    verbatim("// Per compute, the buffer behind each slot of its phase "
             "(Note [Frames]); per copy of\n// a stash, its (from, to) "
             "buffer pairs.");
    auto type = RankedTensorType::get({static_cast<int64_t>(t.frames.size())},
                                      b.getI32Type());
    global("kFrames",
           emitc::ArrayType::get({static_cast<int64_t>(t.frames.size())},
                                 b.getI32Type()),
           DenseIntElementsAttr::get(type, ArrayRef<int>(t.frames)));
  }
  // Ops.
  text = "{\n";
  for (const OrderOp &op : t.ops)
    text += llvm::formatv("  {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, "
                          "{10}, {11}, {12}, {13}},\n",
                          spell(op.what), op.stage, op.microbatch, op.position,
                          op.frame, op.frameSize, op.secondFrame,
                          op.secondFrameSize, op.buffer, op.peer, op.firstMember,
                          op.memberCount, op.gradient ? 1 : 0,
                          cString(op.name))
                .str();
  verbatim("// The verified order: what, stage, microbatch, position, frame, "
           "frame size,\n// W's frame and size (fused BW of a split stage), "
           "buffer, peer, group members,\n// gradient (a transfer of B's "
           "d_in), name.");
  global("kOps",
         emitc::ArrayType::get({static_cast<int64_t>(t.ops.size())},
                               emitc::OpaqueType::get(ctx, "zbc_rt_op")),
         opaque(text + "}"));
  // Parameters and data.
  if (!t.params.empty()) {
    text = "{\n";
    for (const Param &param : t.params)
      text += llvm::formatv("  {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7:e}, {8}, "
                            "{9}, {10}, {11}},\n",
                            cString(param.name), param.param, param.grad,
                            param.state0, param.state1, param.master,
                            param.init, param.scale, param.shape.size(),
                            shapeList(param.shape), param.tied,
                            param.gradShard)
                  .str();
    verbatim("// Parameters: name, buffers (param, grad, optimizer state, "
             "f32 master or -1),\n// init, scale, shape, tied (an index into "
             "kTied, or -1), gradient shard (zero 2) or -1.");
    global("kParams",
           emitc::ArrayType::get({static_cast<int64_t>(t.params.size())},
                                 emitc::OpaqueType::get(ctx, "zbc_rt_param")),
           opaque(text + "}"));
  }
  std::vector<int> tiedRanks;
  if (!t.tied.empty()) {
    text = "{\n";
    for (const Tied &entry : t.tied) {
      text += llvm::formatv("  {{{0}, {1}, {2}},\n", cString(entry.name),
                            tiedRanks.size(), entry.ranks.size())
                  .str();
      tiedRanks.insert(tiedRanks.end(), entry.ranks.begin(), entry.ranks.end());
    }
    verbatim("// Parameters tied across ranks (all of the pipeline's): name, "
             "its holders in kTiedRanks.");
    global("kTied",
           emitc::ArrayType::get({static_cast<int64_t>(t.tied.size())},
                                 emitc::OpaqueType::get(ctx, "zbc_rt_tied")),
           opaque(text + "}"));
    auto type = RankedTensorType::get({static_cast<int64_t>(tiedRanks.size())},
                                      b.getI32Type());
    global("kTiedRanks",
           emitc::ArrayType::get({static_cast<int64_t>(tiedRanks.size())},
                                 b.getI32Type()),
           DenseIntElementsAttr::get(type, ArrayRef<int>(tiedRanks)));
  }
  if (!t.collectiveParams.empty()) {
    verbatim("// The parameters of each all-reduce op (indices into kParams).");
    auto type = RankedTensorType::get(
        {static_cast<int64_t>(t.collectiveParams.size())}, b.getI32Type());
    global("kCollectiveParams",
           emitc::ArrayType::get(
               {static_cast<int64_t>(t.collectiveParams.size())},
               b.getI32Type()),
           DenseIntElementsAttr::get(type, ArrayRef<int>(t.collectiveParams)));
  }
  if (!t.data.empty()) {
    text = "{\n";
    for (const Data &data : t.data)
      text += llvm::formatv("  {{{0}, {1}, {2}, {3}, {4}},\n", cString(data.key),
                            spell(data.element), data.bound, data.shape.size(),
                            shapeList(data.shape))
                  .str();
    verbatim("// Data of one microbatch: key, element type, bound, shape.");
    global("kData",
           emitc::ArrayType::get({static_cast<int64_t>(t.data.size())},
                                 emitc::OpaqueType::get(ctx, "zbc_rt_data")),
           opaque(text + "}"));
  }
  auto orNull = [](bool some, StringRef name) {
    return some ? name.str() : std::string("nullptr");
  };
  text = llvm::formatv(
             "{{\n  {0}, {1}, {2}, {3},\n  {4}, {21}, {5}, {6},\n  {7}, {8},\n"
             "  kBuffers, {9}, kOps, {10}, {11},\n  {12}, {13}, {14}, {15}, "
             "{16}, {17},\n  {18}, {19}, {20},\n  {22}, {23}, {24},\n  {25},\n"
             "  {26}, {27},\n  {28}, {29},\n  {30}, {31}, {32}, {33}}",
             t.rank, t.ranks, t.stages, t.microbatches, cString(t.model),
             cString(t.schedule), cString(t.optimizer), t.arenaBytes,
             t.peakBytes, t.buffers.size(), t.ops.size(), t.positions,
             orNull(!t.frames.empty(), "kFrames"), t.frames.size(),
             orNull(!t.params.empty(), "kParams"), t.params.size(),
             orNull(!t.data.empty(), "kData"), t.data.size(), t.loss,
             t.tokensPerMicrobatch, t.maxKernelCalls, cString(t.modelHash),
             orNull(!t.tied.empty(), "kTied"), t.tied.size(),
             orNull(!t.tied.empty(), "kTiedRanks"), cString(t.hfConfig),
             t.hostArenaBytes, t.hostPeakBytes, t.countedLabels,
             t.ignoreIndex, t.replicas,
             orNull(!t.collectiveParams.empty(), "kCollectiveParams"),
             t.collectiveParams.size(), t.zero)
             .str();
  verbatim("// The program zbc_rt_main runs: rank, ranks, stages, "
           "microbatches, model, its hash,\n// schedule, optimizer, arena and peak "
           "bytes, tables, loss buffer, tokens per microbatch, kernel calls,\n"
           "// tied parameters, the Hugging Face config, the host arena and "
           "its peak,\n// the data labels the loss counts and the value "
           "it ignores,\n// the data-parallel replicas, the "
           "collectives' parameters and whether the optimizer is sharded.");
  global("kProgram", emitc::OpaqueType::get(ctx, "zbc_rt_program"),
         opaque(text));
}

emitc::FuncOp FileWriter::beginFunction(StringRef name, StringRef comment) {
  if (!comment.empty())
    verbatim(comment.str());
  auto type = FunctionType::get(ctx, {rankType}, {statusType});
  auto func = emitc::FuncOp::create(b, loc, name, type);
  func.setSpecifiersAttr(b.getStrArrayAttr({"static"}));
  fileEnd = b.saveInsertionPoint();
  Block *entry = func.addEntryBlock();
  rankArg = entry->getArgument(0);
  b.setInsertionPointToStart(entry);
  return func;
}

void FileWriter::endFunction() {
  Value ok = emitc::LiteralOp::create(b, loc, statusType, "ZBC_RT_OK");
  emitc::ReturnOp::create(b, loc, ok);
  b.restoreInsertionPoint(fileEnd);
}

FailureOr<Attribute> FileWriter::idOf(const PhaseLayout &layout, Value value) {
  auto slot = layout.slotOf.find(value);
  if (slot != layout.slotOf.end())
    return opaque(llvm::formatv("ZBC_RT_FRAME({0})", slot->second).str());
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    StringRef key = layout.phase.getArgKeyList()[arg.getArgNumber()];
    auto id = t.persistentId.find(key.str());
    if (id != t.persistentId.end())
      return opaque(nameOfBuffer.at(id->second));
  }
  layout.phase.emitOpError("has a value the code generator placed nowhere");
  return failure();
}

LogicalResult FileWriter::writeKernel(const PhaseLayout &layout, Operation *op) {
  auto idOfValue = [&](Value v) { return idOf(layout, v); }; // outlives k
  KernelOperands k(
      b, idOfValue,
      opaque(llvm::formatv("ZBC_RT_FRAME({0})", layout.workspaceSlotOf.lookup(op))
                 .str()));
  // Note [Kernel table]: the row's op becomes the row's call, with the
  // operands operandsOf computes, which must be the row's kinds in order.
  StringRef expected;
#define ZBC_CODEGEN_CASE(name, method, opClass, signature)                     \
  .Case([&](opClass o) {                                                       \
    operandsOf(o, k);                                                          \
    expected = signature(ZBC_RT_KIND_BUF, ZBC_RT_KIND_DIM, ZBC_RT_KIND_REAL);  \
    return "zbc_rt_" #name;                                                    \
  })
  StringRef fn = llvm::TypeSwitch<Operation *, StringRef>(op)
                     ZBC_RT_KERNELS(ZBC_CODEGEN_CASE)
                         .Default([&](Operation *) { return ""; });
#undef ZBC_CODEGEN_CASE
  if (fn.empty())
    return op->emitOpError("has no kernel in the runtime; convert-zb-to-emitc "
                           "lowers the ops of zb-autodiff's phases only");
  if (k.kinds != expected)
    return op->emitOpError("lowers to ")
           << fn << " with operands of kinds '" << k.kinds
           << "', but the kernel table says '" << expected
           << "' (b buffer, d dim, r real): a compiler bug";
  if (k.bad)
    return failure();
  call(fn, k.args);
  return success();
}

LogicalResult FileWriter::writePhase(const PhaseLayout &layout) {
  PhaseOp phase = layout.phase;
  auto ops = llvm::make_filter_range(
      phase.getBodyBlock().without_terminator(),
      [&](Operation &op) { return layout.runsOp(&op); });
  std::string comment = llvm::formatv(
      "// {0} of stage {1}{4}: {2} ops, {3} frame slots.", stringifyComputeKind(layout.kind),
      layout.stage, std::distance(ops.begin(), ops.end()), layout.slots.size(),
      layout.kept == YieldsKept::AllButRebuilt
          ? ", keeping only what its R does not rebuild (it is recomputed)"
          : layout.kind == ComputeKind::R
              ? ", the ops of F that rebuild its stash"
              : "");
  beginFunction(layout.function, comment);
  for (auto [slot, data] : layout.loads)
    call("zbc_rt_load", {opaque(llvm::formatv("ZBC_RT_FRAME({0})", slot).str()),
                         b.getI32IntegerAttr(data)});
  for (Operation &op : ops) {
    // The seed of the loss's backward is the microbatch's weight in the
    // step's loss, which the runtime knows (Note [Loss over real tokens]).
    if (auto seed = dyn_cast<LossSeedOp>(op)) {
      FailureOr<Attribute> id = idOf(layout, seed.getResult());
      if (failed(id))
        return failure();
      call("zbc_rt_loss_seed", {*id});
      continue;
    }
    if (failed(writeKernel(layout, &op)))
      return failure();
  }
  for (const PhaseLayout::Copy &copy : layout.copies)
    call("zbc_rt_copy",
         {opaque(llvm::formatv("ZBC_RT_FRAME({0})", copy.from).str()),
          opaque(llvm::formatv("ZBC_RT_FRAME({0})", copy.to).str()),
          b.getI64IntegerAttr(copy.elements)});
  YieldOp yield = phase.getYield();
  for (auto [key, value] : llvm::zip(yield.getKeyList(), yield.getValues())) {
    std::optional<PhaseKey> parsed = PhaseKey::parse(key);
    if (!parsed || (parsed->kind != KeyKind::Grad && parsed->kind != KeyKind::Loss) ||
        (parsed->kind == KeyKind::Loss && !layout.addsLoss()))
      continue;
    FailureOr<Attribute> v = idOf(layout, value);
    if (failed(v))
      return failure();
    if (parsed->kind == KeyKind::Loss) {
      call("zbc_rt_add_loss", {*v});
      continue;
    }
    auto grad = t.persistentId.find(key.str());
    if (grad == t.persistentId.end())
      return yield.emitOpError("yields '") << key << "', which has no "
                                                "accumulator in the memory plan";
    call("zbc_rt_accumulate", {opaque(nameOfBuffer.at(grad->second)), *v});
  }
  endFunction();
  return success();
}

void FileWriter::writeStep() {
  beginFunction("step", "// One training step: the rank's verified order.");
  auto update = [&](int param) {
    verbatim(llvm::formatv("// the optimizer step of {0}", t.params[param].name));
    call("zbc_rt_update", {b.getI32IntegerAttr(param)});
  };
  for (auto [i, op] : llvm::enumerate(t.ops)) {
    if (!op.topLevel)
      continue;
    std::string comment = "// " + op.name;
    bool compute = zbc_rt_op_is_compute(static_cast<int32_t>(op.what));
    if (compute)
      comment += llvm::formatv(": stage {0}, microbatch {1}", op.stage,
                               op.microbatch)
                     .str();
    if (op.what == OpKind::Group)
      comment += llvm::formatv(": {0} transfers", op.memberCount).str();
    if (op.what == OpKind::Offload || op.what == OpKind::Reload)
      comment += llvm::formatv(": {0} tensors", op.frameSize / 2).str();
    if (zbc_rt_op_is_collective(static_cast<int32_t>(op.what)))
      comment += llvm::formatv(": {0} parameters", op.memberCount).str();
    verbatim(comment);
    for (int wait : op.waits)
      call("zbc_rt_wait", {b.getI32IntegerAttr(wait)});
    auto index = b.getI32IntegerAttr(static_cast<int32_t>(i));
    if (compute)
      for (const PhaseLayout *layout : op.phases)
        call("zbc_rt_compute", {index, opaque(layout->function)});
    else
      call(op.what == OpKind::Send        ? "zbc_rt_send"
           : op.what == OpKind::Recv      ? "zbc_rt_recv"
           : op.what == OpKind::Offload   ? "zbc_rt_offload"
           : op.what == OpKind::Reload    ? "zbc_rt_reload"
           : zbc_rt_op_is_collective(static_cast<int32_t>(op.what))
               ? "zbc_rt_collective"
                                          : "zbc_rt_group",
           {index});
    for (int param : op.updates)
      update(param);
  }
  for (int param : t.updatesAtEnd)
    update(param);
  endFunction();
}

void FileWriter::writeMain() {
  Type intType = emitc::OpaqueType::get(ctx, "int");
  Type argvType = emitc::PointerType::get(
      emitc::PointerType::get(emitc::OpaqueType::get(ctx, "char")));
  auto func = emitc::FuncOp::create(b, loc, "main",
                                    FunctionType::get(ctx, {intType, argvType}, {intType}));
  OpBuilder::InsertPoint end = b.saveInsertionPoint();
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto result = emitc::CallOpaqueOp::create(
      b, loc, TypeRange{intType}, "zbc_rt_main", entry->getArguments(),
      b.getArrayAttr({b.getIndexAttr(0), b.getIndexAttr(1), opaque("&kProgram"),
                      opaque("step")}),
      ArrayAttr());
  emitc::ReturnOp::create(b, loc, result.getResult(0));
  b.restoreInsertionPoint(end);
}

LogicalResult FileWriter::write() {
  verbatim(llvm::formatv(
      "// Rank {0} of {1}: {2} under {3}, {4} microbatches per step, {5}.\n"
      "// Written by zbc (convert-zb-to-emitc) from the verified program; the "
      "kernels, the\n// transfers and the checks live in the runtime "
      "(zbc_runtime.h).\n// Arena {6} bytes; peak live bytes {7} (the "
      "verifier's figure).",
      t.rank, t.ranks, t.model, t.schedule, t.microbatches, t.optimizer,
      t.arenaBytes, t.peakBytes));
  emitc::IncludeOp::create(b, loc, "zbc/runtime/zbc_runtime.h", /*isStandard=*/false);
  writeNames();
  writeTables();
  for (const auto &[key, layout] : t.layouts)
    if (failed(writePhase(layout)))
      return failure();
  writeStep();
  writeMain();
  return success();
}

struct ConvertZBToEmitCPass final
    : zbc::impl::ConvertZBToEmitCPassBase<ConvertZBToEmitCPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<ProgramOp> programs(module.getOps<ProgramOp>());
    if (programs.size() != 1) {
      module.emitError("convert-zb-to-emitc lowers one zb.program per module; "
                       "this one has ")
          << programs.size();
      return signalPassFailure();
    }
    ProgramOp program = programs.front();
    PipelineOp pipeline = pipelineOfProgram(program);
    if (!pipeline) {
      program.emitOpError("names no pipeline; convert-zb-to-emitc needs its "
                          "stages' phases");
      return signalPassFailure();
    }
    // Nothing unproven is lowered.
    if (failed(verifyScheduleProgram(program)))
      return signalPassFailure();
    FailureOr<std::vector<RankTables>> tables = buildRankTables(program, pipeline);
    if (failed(tables))
      return signalPassFailure();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    for (const RankTables &t : *tables) {
      auto file = emitc::FileOp::create(b, program.getLoc(), rankFileId(t.rank));
      OpBuilder inFile = OpBuilder::atBlockEnd(&file.getBodyRegion().front());
      FileWriter writer(inFile, program.getLoc(), t);
      if (failed(writer.write()))
        return signalPassFailure();
    }
    // The files replace the zb IR they were made from.
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (!isa<emitc::FileOp>(op))
        op.erase();
  }
};

} // namespace
