//===- Model.cpp - the zbc embedded DSL over the zb dialect ---------------===//
//
// Implements zbc/DSL/Model.h: each DSL call checks its operands, infers the
// result type with the op's own shape rule (ZBShapes.cpp) and appends a zb op
// located at the caller's file:line:col. Errors are reported through MLIR's
// diagnostics as they happen and make the model unprintable; the finished
// model is run through the full dialect verifier before it is printed.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Model.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_os_ostream.h"
#include "llvm/Support/raw_ostream.h"

#include "zbc/Dialect/ZB/ZBOps.h"

#include <fstream>
#include <sstream>

using namespace mlir;
namespace zb = zbc::zb;

namespace zbc::dsl {

struct Model::Impl {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  zb::ModelOp model;
  OpBuilder builder{&context};
  bool hadError = false;
  bool finished = false;

  Location toLoc(SourceLoc loc) {
    return FileLineColLoc::get(&context, loc.file, loc.line, loc.column);
  }

  /// Reports an error at `loc` as `'zb.<op>' op <message>`, the way the
  /// dialect verifier words it.
  InFlightDiagnostic error(Location loc, StringRef opName) {
    hadError = true;
    InFlightDiagnostic diag = emitError(loc);
    if (!opName.empty())
      diag << "'" << opName << "' op ";
    return diag;
  }

  /// Checks that the model is still open for ops.
  bool checkOpen(Location loc, StringRef opName) {
    if (!finished)
      return true;
    error(loc, opName) << "added after loss(); loss() ends the model";
    return false;
  }

  /// The value behind `t`, or null after reporting why it cannot be used.
  Value unwrap(const Tensor &t, const Model *self, Location loc,
               StringRef opName, StringRef role) {
    if (!t.value) {
      // A null tensor comes from an earlier failed call, which has already
      // reported an error; only a never-assigned one needs a message.
      if (!hadError)
        error(loc, opName) << role << " is a null Tensor";
      hadError = true;
      return {};
    }
    if (t.owner != self) {
      error(loc, opName) << role << " belongs to a different model";
      return {};
    }
    return Value::getFromOpaquePointer(t.value);
  }

  Type elementType(DType dtype) {
    switch (dtype) {
    case DType::F16:
      return builder.getF16Type();
    case DType::BF16:
      return builder.getBF16Type();
    case DType::F32:
      return builder.getF32Type();
    case DType::F64:
      return builder.getF64Type();
    case DType::I32:
      return builder.getI32Type();
    case DType::I64:
      return builder.getI64Type();
    }
    llvm_unreachable("unknown DType");
  }

  /// A static tensor type, or null after reporting a bad shape.
  RankedTensorType tensorType(ArrayRef<int64_t> shape, DType dtype,
                              Location loc, StringRef opName) {
    for (int64_t dim : shape)
      if (dim <= 0) {
        error(loc, opName) << "dimensions must be positive, got " << dim;
        return {};
      }
    return RankedTensorType::get(shape, elementType(dtype));
  }
};

/// Prints a diagnostic as `file:line[:col]: error: message`, the form
/// compilers use, so editors and terminals link it to the DSL call.
static void printDiagnostic(Diagnostic &diag, llvm::raw_ostream &os) {
  auto printOne = [&](Location loc, DiagnosticSeverity severity,
                      const std::string &message) {
    if (auto fileLoc = dyn_cast<FileLineColLoc>(loc)) {
      os << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine();
      if (fileLoc.getColumn() != 0)
        os << ":" << fileLoc.getColumn();
      os << ": ";
    }
    switch (severity) {
    case DiagnosticSeverity::Error:
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    }
    os << message << "\n";
  };
  printOne(diag.getLocation(), diag.getSeverity(), diag.str());
  for (Diagnostic &note : diag.getNotes())
    printOne(note.getLocation(), note.getSeverity(), note.str());
  os.flush();
}

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

std::vector<int64_t> Tensor::shape() const {
  if (!value)
    return {};
  ArrayRef<int64_t> shape = typeOf(Value::getFromOpaquePointer(value)).getShape();
  return {shape.begin(), shape.end()};
}

DType Tensor::dtype() const {
  if (!value)
    return DType::F32;
  Type type = typeOf(Value::getFromOpaquePointer(value)).getElementType();
  if (type.isF16())
    return DType::F16;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF64())
    return DType::F64;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isInteger(64))
    return DType::I64;
  return DType::F32;
}

Model::Model(const std::string &name) : impl(std::make_unique<Impl>()) {
  impl->context.loadDialect<zb::ZBDialect>();
  impl->context.printOpOnDiagnostic(false);
  impl->context.getDiagEngine().registerHandler([](Diagnostic &diag) {
    printDiagnostic(diag, llvm::errs());
  });
  OpBuilder &b = impl->builder;
  Location loc = UnknownLoc::get(&impl->context);
  impl->module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(impl->module->getBody());
  impl->model = zb::ModelOp::create(b, loc, b.getStringAttr(name), StringAttr());
  b.setInsertionPointToEnd(&impl->model.getBody().emplaceBlock());
}

Model::~Model() = default;

//===----------------------------------------------------------------------===//
// Leaves
//===----------------------------------------------------------------------===//

/// Builds an input, label or parameter; returns its value, or null after an
/// error. The op is verified at once (e.g. a parameter's initialiser), so an
/// error points at this call rather than at print time.
template <typename OpTy, typename... Extra>
static void *buildLeaf(Model::Impl &impl, const std::string &name,
                       ArrayRef<int64_t> shape, DType dtype, SourceLoc sloc,
                       Extra... extra) {
  Location loc = impl.toLoc(sloc);
  StringRef opName = OpTy::getOperationName();
  if (!impl.checkOpen(loc, opName))
    return nullptr;
  RankedTensorType type = impl.tensorType(shape, dtype, loc, opName);
  if (!type)
    return nullptr;
  auto op = OpTy::create(impl.builder, loc, type,
                         impl.builder.getStringAttr(name), extra...);
  if (failed(op.verify())) {
    impl.hadError = true;
    op.erase();
    return nullptr;
  }
  return op.getResult().getAsOpaquePointer();
}

Tensor Model::input(const std::string &name, const std::vector<int64_t> &shape,
                    DType dtype, SourceLoc loc) {
  return wrap(buildLeaf<zb::InputOp>(*impl, name, shape, dtype, loc));
}

Tensor Model::label(const std::string &name, const std::vector<int64_t> &shape,
                    DType dtype, SourceLoc loc) {
  return wrap(buildLeaf<zb::LabelOp>(*impl, name, shape, dtype, loc));
}

static zb::InitKind toInitKind(Init::Kind kind) {
  switch (kind) {
  case Init::Kind::Zeros:
    return zb::InitKind::Zeros;
  case Init::Kind::Ones:
    return zb::InitKind::Ones;
  case Init::Kind::Normal:
    return zb::InitKind::Normal;
  case Init::Kind::Uniform:
    return zb::InitKind::Uniform;
  }
  llvm_unreachable("unknown Init::Kind");
}

Tensor Model::param(const std::string &name, const std::vector<int64_t> &shape,
                    Init init, DType dtype, SourceLoc loc) {
  bool hasScale =
      init.kind == Init::Kind::Normal || init.kind == Init::Kind::Uniform;
  FloatAttr scale = hasScale ? impl->builder.getF64FloatAttr(init.scale)
                             : FloatAttr();
  auto kind = zb::InitKindAttr::get(&impl->context, toInitKind(init.kind));
  return wrap(
      buildLeaf<zb::ParamOp>(*impl, name, shape, dtype, loc, kind, scale));
}

//===----------------------------------------------------------------------===//
// Tensor ops
//===----------------------------------------------------------------------===//

/// Builds a two-operand tensor op whose result type comes from its shape
/// rule; returns the result as an opaque value, or null after an error.
template <typename OpTy>
static void *buildBinary(const Model *self, Model::Impl &impl, Tensor lhs,
                         StringRef lhsRole, Tensor rhs, StringRef rhsRole,
                         SourceLoc sloc) {
  Location loc = impl.toLoc(sloc);
  StringRef opName = OpTy::getOperationName();
  if (!impl.checkOpen(loc, opName))
    return nullptr;
  Value a = impl.unwrap(lhs, self, loc, opName, lhsRole);
  Value b = impl.unwrap(rhs, self, loc, opName, rhsRole);
  if (!a || !b)
    return nullptr;
  FailureOr<RankedTensorType> type = OpTy::inferResultType(
      typeOf(a), typeOf(b), [&] { return impl.error(loc, opName); });
  if (failed(type))
    return nullptr;
  return OpTy::create(impl.builder, loc, *type, a, b)
      .getResult()
      .getAsOpaquePointer();
}

#define ZB_DSL_BINARY(METHOD, OP, LHS, RHS)                                    \
  Tensor Model::METHOD(Tensor lhs, Tensor rhs, SourceLoc loc) {                \
    return wrap(buildBinary<zb::OP>(this, *impl, lhs, LHS, rhs, RHS, loc));    \
  }
ZB_DSL_BINARY(matmul, MatmulOp, "lhs", "rhs")
ZB_DSL_BINARY(biasAdd, BiasAddOp, "input", "bias")
ZB_DSL_BINARY(embedding, EmbeddingOp, "indices", "table")
ZB_DSL_BINARY(crossEntropy, CrossEntropyOp, "logits", "labels")
#undef ZB_DSL_BINARY

Tensor Model::add(Tensor lhs, Tensor rhs, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::AddOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value a = impl->unwrap(lhs, this, loc, opName, "lhs");
  Value b = impl->unwrap(rhs, this, loc, opName, "rhs");
  if (!a || !b)
    return {};
  if (a.getType() != b.getType()) {
    impl->error(loc, opName) << "operands have different types: "
                             << a.getType() << " and " << b.getType();
    return {};
  }
  return wrap(zb::AddOp::create(impl->builder, loc, a, b)
                  .getResult()
                  .getAsOpaquePointer());
}

Tensor Model::swiGlu(Tensor gate, Tensor up, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::SwiGluOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value g = impl->unwrap(gate, this, loc, opName, "gate");
  Value u = impl->unwrap(up, this, loc, opName, "up");
  if (!g || !u)
    return {};
  if (g.getType() != u.getType()) {
    impl->error(loc, opName) << "gate and up have different types: "
                             << g.getType() << " and " << u.getType();
    return {};
  }
  return wrap(zb::SwiGluOp::create(impl->builder, loc, g, u)
                  .getResult()
                  .getAsOpaquePointer());
}

Tensor Model::linear(Tensor input, Tensor weight, SourceLoc sloc) {
  return linear(input, weight, WeightLayout::InOut, sloc);
}

Tensor Model::linear(Tensor input, Tensor weight, WeightLayout layout,
                     SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::LinearOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value x = impl->unwrap(input, this, loc, opName, "input");
  Value w = impl->unwrap(weight, this, loc, opName, "weight");
  if (!x || !w)
    return {};
  bool outIn = layout == WeightLayout::OutIn;
  FailureOr<RankedTensorType> type = zb::LinearOp::inferResultType(
      typeOf(x), typeOf(w), outIn, [&] { return impl->error(loc, opName); });
  if (failed(type))
    return {};
  return wrap(zb::LinearOp::create(impl->builder, loc, *type, x, w,
                                   outIn ? impl->builder.getUnitAttr()
                                         : UnitAttr())
                  .getResult()
                  .getAsOpaquePointer());
}

/// Builds an elementwise op on a float tensor.
template <typename OpTy>
static void *buildUnary(const Model *self, Model::Impl &impl, Tensor input,
                        SourceLoc sloc) {
  Location loc = impl.toLoc(sloc);
  StringRef opName = OpTy::getOperationName();
  if (!impl.checkOpen(loc, opName))
    return nullptr;
  Value x = impl.unwrap(input, self, loc, opName, "input");
  if (!x)
    return nullptr;
  if (!isa<FloatType>(typeOf(x).getElementType())) {
    impl.error(loc, opName) << "needs a floating-point tensor, got "
                            << x.getType();
    return nullptr;
  }
  return OpTy::create(impl.builder, loc, x).getResult().getAsOpaquePointer();
}

Tensor Model::relu(Tensor input, SourceLoc loc) {
  return wrap(buildUnary<zb::ReluOp>(this, *impl, input, loc));
}

Tensor Model::transpose(Tensor input, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::TransposeOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value x = impl->unwrap(input, this, loc, opName, "input");
  if (!x)
    return {};
  FailureOr<RankedTensorType> type = zb::TransposeOp::inferResultType(
      typeOf(x), [&] { return impl->error(loc, opName); });
  if (failed(type))
    return {};
  return wrap(zb::TransposeOp::create(impl->builder, loc, *type, x)
                  .getResult()
                  .getAsOpaquePointer());
}

Tensor Model::gelu(Tensor input, SourceLoc loc) {
  return wrap(buildUnary<zb::GeluOp>(this, *impl, input, loc));
}

Tensor Model::layerNorm(Tensor input, Tensor gamma, Tensor beta,
                        double epsilon, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::LayerNormOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value x = impl->unwrap(input, this, loc, opName, "input");
  Value g = impl->unwrap(gamma, this, loc, opName, "gamma");
  Value b = impl->unwrap(beta, this, loc, opName, "beta");
  if (!x || !g || !b)
    return {};
  FailureOr<RankedTensorType> type = zb::LayerNormOp::inferResultType(
      typeOf(x), typeOf(g), typeOf(b), epsilon,
      [&] { return impl->error(loc, opName); });
  if (failed(type))
    return {};
  return wrap(zb::LayerNormOp::create(impl->builder, loc, *type, x, g, b,
                                      impl->builder.getF64FloatAttr(epsilon))
                  .getResult()
                  .getAsOpaquePointer());
}

Tensor Model::rmsNorm(Tensor input, Tensor weight, double epsilon,
                      SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::RmsNormOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value x = impl->unwrap(input, this, loc, opName, "input");
  Value w = impl->unwrap(weight, this, loc, opName, "weight");
  if (!x || !w)
    return {};
  FailureOr<RankedTensorType> type = zb::RmsNormOp::inferResultType(
      typeOf(x), typeOf(w), epsilon, [&] { return impl->error(loc, opName); });
  if (failed(type))
    return {};
  return wrap(zb::RmsNormOp::create(impl->builder, loc, *type, x, w,
                                    impl->builder.getF64FloatAttr(epsilon))
                  .getResult()
                  .getAsOpaquePointer());
}

Tensor Model::rope(Tensor input, Tensor positions, const Rope &rope,
                   SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::RopeOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value x = impl->unwrap(input, this, loc, opName, "input");
  Value p = impl->unwrap(positions, this, loc, opName, "positions");
  if (!x || !p)
    return {};
  FailureOr<RankedTensorType> type = zb::RopeOp::inferResultType(
      typeOf(x), typeOf(p), rope.headDim,
      [&] { return impl->error(loc, opName); });
  if (failed(type))
    return {};
  OpBuilder &b = impl->builder;
  auto op = zb::RopeOp::create(
      b, loc, *type, x, p, b.getI64IntegerAttr(rope.headDim),
      b.getF64FloatAttr(rope.theta), b.getI64IntegerAttr(rope.maxPositions),
      FloatAttr(), FloatAttr(), FloatAttr(), IntegerAttr());
  if (rope.llama3.factor != 0.0) {
    op.setLlama3FactorAttr(b.getF64FloatAttr(rope.llama3.factor));
    op.setLlama3LowFreqFactorAttr(b.getF64FloatAttr(rope.llama3.lowFreqFactor));
    op.setLlama3HighFreqFactorAttr(
        b.getF64FloatAttr(rope.llama3.highFreqFactor));
    op.setLlama3OriginalMaxPositionsAttr(
        b.getI64IntegerAttr(rope.llama3.originalMaxPositions));
  }
  return wrap(op.getResult().getAsOpaquePointer());
}

Tensor Model::attention(Tensor q, Tensor k, Tensor v, int64_t heads,
                        int64_t kvHeads, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::AttentionOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value qv = impl->unwrap(q, this, loc, opName, "q");
  Value kv = impl->unwrap(k, this, loc, opName, "k");
  Value vv = impl->unwrap(v, this, loc, opName, "v");
  if (!qv || !kv || !vv)
    return {};
  FailureOr<RankedTensorType> type = zb::AttentionOp::inferResultType(
      typeOf(qv), typeOf(kv), typeOf(vv), heads, kvHeads,
      [&] { return impl->error(loc, opName); });
  if (failed(type))
    return {};
  OpBuilder &b = impl->builder;
  return wrap(zb::AttentionOp::create(b, loc, *type, qv, kv, vv,
                                      /*documents=*/Value(),
                                      b.getI64IntegerAttr(heads),
                                      b.getI64IntegerAttr(kvHeads))
                  .getResult()
                  .getAsOpaquePointer());
}

Tensor Model::causalAttention(Tensor qkv, int64_t heads, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::CausalAttentionOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return {};
  Value x = impl->unwrap(qkv, this, loc, opName, "qkv");
  if (!x)
    return {};
  FailureOr<RankedTensorType> type = zb::CausalAttentionOp::inferResultType(
      typeOf(x), heads, [&] { return impl->error(loc, opName); });
  if (failed(type))
    return {};
  return wrap(zb::CausalAttentionOp::create(impl->builder, loc, *type, x,
                                            /*documents=*/Value(),
                                            impl->builder.getI64IntegerAttr(heads))
                  .getResult()
                  .getAsOpaquePointer());
}

//===----------------------------------------------------------------------===//
// Stages and the loss
//===----------------------------------------------------------------------===//

std::vector<Tensor> Model::cut(const std::vector<Tensor> &xs, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::CutOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return std::vector<Tensor>(xs.size());
  SmallVector<Value> values;
  for (const Tensor &x : xs)
    values.push_back(impl->unwrap(x, this, loc, opName, "activation"));
  if (values.empty()) {
    impl->error(loc, opName)
        << "must pass at least one activation to the next stage";
    return {};
  }
  if (llvm::any_of(values, [](Value v) { return !v; }))
    return std::vector<Tensor>(xs.size());
  auto op = zb::CutOp::create(impl->builder, loc, values);
  std::vector<Tensor> results;
  for (Value v : op.getResults())
    results.push_back(wrap(v.getAsOpaquePointer()));
  return results;
}

Tensor Model::cut(Tensor x, SourceLoc loc) { return cut(std::vector<Tensor>{x}, loc)[0]; }

void Model::setHuggingFaceConfig(const std::string &json) {
  impl->model.setHfConfigAttr(impl->builder.getStringAttr(json));
}

void Model::loss(Tensor value, SourceLoc sloc) {
  Location loc = impl->toLoc(sloc);
  StringRef opName = zb::LossOp::getOperationName();
  if (!impl->checkOpen(loc, opName))
    return;
  Value v = impl->unwrap(value, this, loc, opName, "loss");
  if (!v)
    return;
  RankedTensorType type = typeOf(v);
  if (type.getRank() != 0 || !isa<FloatType>(type.getElementType())) {
    impl->error(loc, opName) << "needs a scalar floating-point tensor, got "
                             << type;
    return;
  }
  zb::LossOp::create(impl->builder, loc, v);
  impl->finished = true;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

bool Model::print(std::ostream &os) {
  if (impl->hadError)
    return false;
  if (!impl->finished) {
    emitError(impl->model.getLoc())
        << "model '" << impl->model.getSymName()
        << "' has no loss; call loss() to end it";
    return false;
  }
  if (failed(verify(*impl->module)))
    return false;
  llvm::raw_os_ostream out(os);
  impl->module->print(out);
  return true;
}

std::string Model::str() {
  std::ostringstream os;
  return print(os) ? os.str() : std::string();
}

int Model::emit(int argc, char **argv) {
  std::string outPath;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      llvm::outs() << "usage: " << argv[0] << " [-o FILE]\n"
                   << "Prints the model's zb IR to FILE (default: stdout).\n";
      return 0;
    }
    if (arg == "-o" && i + 1 < argc) {
      outPath = argv[++i];
    } else {
      llvm::errs() << argv[0] << ": error: unknown argument '" << arg
                   << "' (usage: " << argv[0] << " [-o FILE])\n";
      return 1;
    }
  }
  return emit(outPath);
}

int Model::emit(const std::string &path) {
  std::string text = str();
  if (text.empty())
    return 1;
  if (path.empty() || path == "-") {
    llvm::outs() << text;
    return 0;
  }
  std::ofstream file(path);
  file << text;
  if (!file.flush()) {
    llvm::errs() << "error: could not write '" << path << "'\n";
    return 1;
  }
  return 0;
}

} // namespace zbc::dsl
