//===- ZBPipeline.cpp - zb.pipeline, zb.stage, zb.phase, zb.yield ---------===//
//
// Custom syntax of phases and yields (`%x = "in.0" : type`, `"out.0" = %h`)
// and the verifiers of the pipeline level: keys are well formed and used by
// the right phase, every key a phase reads is available to it, and
// neighbouring stages agree on the types of what they exchange.
//
//===----------------------------------------------------------------------===//

#include "zbc/Dialect/ZB/ZBOps.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"

#include "VerifyUtils.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

static SmallVector<StringRef> toStringRefs(ArrayAttr array) {
  return llvm::to_vector(llvm::map_range(array.getAsRange<StringAttr>(),
                                         [](StringAttr s) { return s.getValue(); }));
}

//===----------------------------------------------------------------------===//
// zb.phase
//===----------------------------------------------------------------------===//

ParseResult PhaseOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  StringRef kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&kindName))
    return failure();
  std::optional<ComputeKind> kind = symbolizeComputeKind(kindName);
  if (!kind)
    return parser.emitError(kindLoc, "unknown phase kind '")
           << kindName << "'; expected F, B, W or BW";
  if (*kind == ComputeKind::R)
    return parser.emitError(kindLoc, "a stage has no R phase: a zb.compute R "
                                     "runs the stage's F again");

  SmallVector<OpAsmParser::Argument> args;
  SmallVector<Attribute> keys;
  if (parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
            OpAsmParser::Argument arg;
            std::string key;
            if (parser.parseArgument(arg) || parser.parseEqual() ||
                parser.parseString(&key) || parser.parseColonType(arg.type))
              return failure();
            args.push_back(arg);
            keys.push_back(b.getStringAttr(key));
            return success();
          }))
    return failure();
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();

  Properties &props = result.getOrAddProperties<Properties>();
  props.setKind(ComputeKindAttr::get(b.getContext(), *kind));
  props.setArgKeys(b.getArrayAttr(keys));
  // A phase is isolated from above: its arguments may reuse names of the
  // enclosing stage's declarations.
  return parser.parseRegion(*result.addRegion(), args,
                            /*enableNameShadowing=*/true);
}

void PhaseOp::print(OpAsmPrinter &p) {
  p << " " << stringifyComputeKind(getKind()) << "(";
  llvm::interleaveComma(
      llvm::zip(getBodyBlock().getArguments(), getArgKeyList()), p,
      [&](auto pair) {
        auto [arg, key] = pair;
        p.printOperand(arg);
        p << " = ";
        p.printString(key);
        p << " : ";
        p.printType(arg.getType());
      });
  p << ")";
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                                     {"kind", "arg_keys"});
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false);
}

void PhaseOp::getAsmBlockArgumentNames(Region &region,
                                       OpAsmSetValueNameFn setNameFn) {
  // Name each argument after its key: %in.0, %param.fc0.weight, ...
  for (auto [arg, key] : llvm::zip(region.getArguments(), getArgKeyList()))
    setNameFn(arg, key);
}

SmallVector<StringRef> PhaseOp::getArgKeyList() {
  return toStringRefs(getArgKeys());
}

YieldOp PhaseOp::getYield() {
  return cast<YieldOp>(getBodyBlock().getTerminator());
}

/// Checks that `keys` parse, are unique, and (via `allowed`) belong here.
static LogicalResult
verifyKeyList(Operation *op, ArrayRef<StringRef> keys, StringRef role,
              llvm::function_ref<bool(KeyKind)> allowed) {
  llvm::StringSet<> seen;
  for (StringRef key : keys) {
    std::optional<PhaseKey> parsed = PhaseKey::parse(key);
    if (!parsed)
      return op->emitOpError("has malformed key '") << key << "'";
    if (!allowed(parsed->kind))
      return op->emitOpError("cannot ") << role << " key '" << key << "'";
    if (!seen.insert(key).second)
      return op->emitOpError("names key '") << key << "' twice";
  }
  return success();
}

LogicalResult PhaseOp::verify() {
  if (getBody().empty() ||
      getBodyBlock().getNumArguments() != getArgKeys().size())
    return emitOpError("has ") << getArgKeys().size()
                               << " argument keys for a different number "
                                  "of arguments";
  for (Type type : getBodyBlock().getArgumentTypes())
    if (failed(verifyTensorSize(*this, type,
                                "argument type")))
      return failure();
  // Which keys are external and which come from earlier phases is the
  // stage's to check; here only the form.
  return verifyKeyList(*this, getArgKeyList(), "read", [](KeyKind kind) {
    return kind != KeyKind::Out && kind != KeyKind::DIn &&
           kind != KeyKind::Grad && kind != KeyKind::Loss;
  });
}

LogicalResult PhaseOp::verifyRegions() {
  if (!isa<YieldOp>(getBodyBlock().getTerminator()))
    return emitOpError("must end with 'zb.yield'");
  return success();
}

//===----------------------------------------------------------------------===//
// zb.yield
//===----------------------------------------------------------------------===//

ParseResult YieldOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  SmallVector<OpAsmParser::UnresolvedOperand> values;
  SmallVector<Attribute> keys;
  std::string key;
  if (succeeded(parser.parseOptionalString(&key))) {
    auto parseEntry = [&](std::string entryKey) -> ParseResult {
      OpAsmParser::UnresolvedOperand value;
      if (parser.parseEqual() || parser.parseOperand(value))
        return failure();
      keys.push_back(b.getStringAttr(entryKey));
      values.push_back(value);
      return success();
    };
    if (parseEntry(key))
      return failure();
    while (succeeded(parser.parseOptionalComma()))
      if (parser.parseString(&key) || parseEntry(key))
        return failure();
  }
  SmallVector<Type> types;
  if (parser.parseOptionalAttrDict(result.attributes))
    return failure();
  if (!values.empty() && parser.parseColonTypeList(types))
    return failure();
  if (parser.resolveOperands(values, types, parser.getCurrentLocation(),
                             result.operands))
    return failure();
  result.getOrAddProperties<Properties>().setKeys(b.getArrayAttr(keys));
  return success();
}

void YieldOp::print(OpAsmPrinter &p) {
  if (!getValues().empty()) {
    p << " ";
    llvm::interleaveComma(llvm::zip(getKeyList(), getValues()), p,
                          [&](auto pair) {
                            auto [key, value] = pair;
                            p.printString(key);
                            p << " = ";
                            p.printOperand(value);
                          });
  }
  p.printOptionalAttrDict((*this)->getAttrs(), {"keys"});
  if (!getValues().empty()) {
    p << " : ";
    llvm::interleaveComma(getValues().getTypes(), p);
  }
}

SmallVector<StringRef> YieldOp::getKeyList() { return toStringRefs(getKeys()); }

LogicalResult YieldOp::verify() {
  if (getKeys().size() != getValues().size())
    return emitOpError("has ") << getKeys().size() << " keys for "
                               << getValues().size() << " values";
  ComputeKind phase = cast<PhaseOp>((*this)->getParentOp()).getKind();
  if (failed(verifyKeyList(*this, getKeyList(), "yield", [&](KeyKind kind) {
        return isYieldableBy(kind, phase);
      })))
    return failure();
  for (auto [key, value] : llvm::zip(getKeyList(), getValues())) {
    auto type = cast<RankedTensorType>(value.getType());
    if (key == "loss" &&
        (type.getRank() != 0 || !isa<FloatType>(type.getElementType())))
      return emitOpError("yields a loss of type ")
             << type << "; a loss is a floating-point scalar";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// zb.stage
//===----------------------------------------------------------------------===//

SmallVector<PhaseOp> StageOp::getPhases() {
  return llvm::to_vector(getBody().front().getOps<PhaseOp>());
}

PhaseOp StageOp::getPhase(ComputeKind kind) {
  for (PhaseOp phase : getBody().front().getOps<PhaseOp>())
    if (phase.getKind() == kind)
      return phase;
  return {};
}

/// Checks one key a phase of `stage` yields against what the stage declares
/// and has seen so far, then records it as available.
static LogicalResult verifyYieldedKey(PhaseOp phase, StringRef key, Type type,
                                      const llvm::StringMap<Operation *> &declared,
                                      llvm::StringMap<Type> &available) {
  auto stage = cast<StageOp>(phase->getParentOp());
  PhaseKey parsed = *PhaseKey::parse(key);
  if (available.count(key))
    return phase.emitOpError("yields '")
           << key << "', which stage " << stage.getIndex()
           << " already has (yielded twice, it would count twice)";
  switch (parsed.kind) {
  case KeyKind::Grad: {
    Operation *param = declared.lookup(keyOf(KeyKind::Param, parsed.suffix));
    if (!param)
      return phase.emitOpError("yields '")
             << key << "' but stage " << stage.getIndex()
             << " declares no parameter '" << parsed.suffix << "'";
    if (param->getResult(0).getType() != type)
      return phase.emitOpError("yields '")
             << key << "' as " << type << " but the parameter is "
             << param->getResult(0).getType();
    break;
  }
  case KeyKind::DIn:
    if (stage.getIndex() == 0)
      return phase.emitOpError("yields '")
             << key << "' but stage 0 has no previous stage";
    break;
  default:
    break;
  }
  available[key] = type;
  return success();
}

LogicalResult StageOp::verifyRegions() {
  SmallVector<ComputeKind> kinds;
  llvm::StringMap<Operation *> declared;
  llvm::StringSet<> declaredNames; // inputs, labels, params: one namespace
  for (Operation &op : getBody().front()) {
    if (std::optional<std::string> key = getLeafKey(&op)) {
      if (!kinds.empty())
        return op.emitOpError("must be declared before the stage's phases");
      std::optional<PhaseKey> parsed = PhaseKey::parse(*key);
      if (!parsed) // the only way a leaf's key fails to parse
        return op.emitOpError("needs a non-empty name");
      if (!declaredNames.insert(parsed->suffix).second)
        return op.emitOpError("declares the name '")
               << parsed->suffix << "' twice";
      declared[*key] = &op;
      continue;
    }
    auto phase = dyn_cast<PhaseOp>(op);
    if (!phase)
      return op.emitOpError("cannot appear in a 'zb.stage'; it holds only "
                            "declarations and 'zb.phase' ops");
    kinds.push_back(phase.getKind());
  }
  using K = ComputeKind;
  bool fused = kinds == SmallVector<ComputeKind>{K::F, K::BW};
  bool split = kinds == SmallVector<ComputeKind>{K::F, K::B, K::W};
  if (!fused && !split)
    return emitOpError("must hold the phases F, BW or F, B, W, in that order");

  // Every key read is external to its phase or yielded earlier, with the
  // same type.
  llvm::StringMap<Type> available;
  for (PhaseOp phase : getPhases()) {
    for (auto [arg, key] :
         llvm::zip(phase.getBodyBlock().getArguments(), phase.getArgKeyList())) {
      KeyKind kind = PhaseKey::parse(key)->kind;
      auto it = available.find(key);
      if (it != available.end()) {
        if (it->second != arg.getType())
          return phase.emitOpError("reads '")
                 << key << "' as " << arg.getType() << " but it is "
                 << it->second;
        continue;
      }
      if (!isExternalInputOf(kind, phase.getKind()))
        return phase.emitOpError("reads '")
               << key << "', which no earlier phase of stage " << getIndex()
               << " yields";
      if (kind == KeyKind::In && getIndex() == 0)
        return phase.emitOpError("reads '")
               << key << "' but stage 0 has no previous stage";
      if (kind == KeyKind::DOut) {
        std::string out = keyOf(KeyKind::Out, PhaseKey::parse(key)->suffix);
        auto sent = available.find(out);
        if (sent == available.end() || sent->second != arg.getType())
          return phase.emitOpError("reads '")
                 << key << "' as " << arg.getType() << " but stage "
                 << getIndex() << " sends no '" << out << "' of that type";
      }
      if (kind == KeyKind::Input || kind == KeyKind::Label ||
          kind == KeyKind::Param) {
        Operation *decl = declared.lookup(key);
        if (!decl)
          return phase.emitOpError("reads '")
                 << key << "', which stage " << getIndex()
                 << " does not declare";
        if (decl->getResult(0).getType() != arg.getType())
          return phase.emitOpError("reads '")
                 << key << "' as " << arg.getType() << " but it is declared as "
                 << decl->getResult(0).getType();
      }
      // External keys stay available to later phases of the microbatch.
      available[key] = arg.getType();
    }
    for (auto [key, value] :
         llvm::zip(phase.getYield().getKeyList(), phase.getYield().getValues()))
      if (failed(verifyYieldedKey(phase, key, value.getType(), declared,
                                  available)))
        return failure();
  }
  return verifyRebuiltKeys();
}

/// Note [Selective recomputation] (RecomputePlan.h): the policy names F.I
/// keys the stage's F yields, each once.
LogicalResult StageOp::verifyRebuiltKeys() {
  std::optional<ArrayAttr> rebuilt = getRebuilt();
  if (!rebuilt)
    return success();
  llvm::StringSet<> stash, listed;
  PhaseOp forward = getPhase(ComputeKind::F);
  for (StringRef key : forward.getYield().getKeyList())
    if (PhaseKey::parse(key)->kind == KeyKind::SavedF)
      stash.insert(key);
  for (Attribute attr : *rebuilt) {
    StringRef key = cast<StringAttr>(attr).getValue();
    if (!stash.contains(key))
      return emitOpError("rebuilds '")
             << key << "', which is not an F.i that stage " << getIndex()
             << "'s F yields; `rebuilt` lists keys of its stash";
    if (!listed.insert(key).second)
      return emitOpError("rebuilds '") << key << "' twice";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// zb.pipeline
//===----------------------------------------------------------------------===//

int64_t PipelineOp::getNumStages() {
  return llvm::range_size(getBody().front().getOps<StageOp>());
}

/// The keys of one kind that a stage reads (`reads`) or yields, with types.
static llvm::StringMap<Type> collectKeys(StageOp stage, KeyKind kind,
                                         bool reads) {
  llvm::StringMap<Type> keys;
  for (PhaseOp phase : stage.getPhases()) {
    if (reads) {
      for (auto [arg, key] : llvm::zip(phase.getBodyBlock().getArguments(),
                                       phase.getArgKeyList()))
        if (PhaseKey::parse(key)->kind == kind)
          keys[PhaseKey::parse(key)->suffix] = arg.getType();
    } else {
      for (auto [key, value] : llvm::zip(phase.getYield().getKeyList(),
                                         phase.getYield().getValues()))
        if (PhaseKey::parse(key)->kind == kind)
          keys[PhaseKey::parse(key)->suffix] = value.getType();
    }
  }
  return keys;
}

LogicalResult PipelineOp::verifyRegions() {
  SmallVector<StageOp> stages;
  for (Operation &op : getBody().front()) {
    auto stage = dyn_cast<StageOp>(op);
    if (!stage)
      return op.emitOpError("cannot appear in a 'zb.pipeline'; it holds only "
                            "'zb.stage' ops");
    if (static_cast<int64_t>(stage.getIndex()) !=
        static_cast<int64_t>(stages.size()))
      return stage.emitOpError("is stage ")
             << stage.getIndex() << " but stage " << stages.size()
             << " is expected here; stages appear once each, in order";
    stages.push_back(stage);
  }
  if (stages.empty())
    return emitOpError("must hold at least one stage");

  // A parameter declared in several stages (tied) is one parameter: every
  // declaration must say the same. Labels are loaded for the last stage.
  llvm::StringMap<ParamOp> firstDeclaration;
  for (StageOp stage : stages) {
    for (ParamOp param : stage.getBody().front().getOps<ParamOp>()) {
      auto [it, inserted] = firstDeclaration.try_emplace(param.getName(), param);
      if (!inserted &&
          (it->second.getResult().getType() != param.getResult().getType() ||
           it->second->getAttrDictionary() != param->getAttrDictionary()))
        return param.emitOpError("declares '")
               << param.getName() << "' unlike stage "
               << it->second->getParentOfType<StageOp>().getIndex()
               << " (a parameter in several stages is tied: the same type "
                  "and initialisation everywhere)";
    }
    if (stage != stages.back())
      for (LabelOp label : stage.getBody().front().getOps<LabelOp>())
        return label.emitOpError("is declared in stage ")
               << stage.getIndex() << "; labels are loaded for the last stage ("
               << stages.size() - 1 << ") only";
  }

  for (auto [k, stage] : llvm::enumerate(stages)) {
    bool last = k + 1 == stages.size();
    bool yieldsLoss = !collectKeys(stage, KeyKind::Loss, false).empty();
    if (last && !yieldsLoss)
      return stage.emitOpError("is the last stage but yields no 'loss'");
    if (!last && yieldsLoss)
      return stage.emitOpError("yields 'loss' but is not the last stage");
    if (last) {
      // (A d_out.i needs an out.i of its own stage: the stage check.)
      if (!collectKeys(stage, KeyKind::Out, false).empty())
        return stage.emitOpError("is the last stage but sends activations on");
      continue;
    }
    // Stage k+1 reads as in.i what stage k yields as out.i, and stage k
    // reads as d_out.i what stage k+1 yields as d_in.i.
    StageOp next = stages[k + 1];
    auto match = [](StageOp reader, KeyKind readKind, StringRef readPrefix,
                    StageOp provider, KeyKind yieldKind,
                    StringRef yieldPrefix) -> LogicalResult {
      llvm::StringMap<Type> provided = collectKeys(provider, yieldKind, false);
      for (auto &entry : collectKeys(reader, readKind, true)) {
        auto it = provided.find(entry.getKey());
        if (it == provided.end())
          return reader.emitOpError("reads '")
                 << readPrefix << "." << entry.getKey() << "' but stage "
                 << provider.getIndex() << " yields no '" << yieldPrefix << "."
                 << entry.getKey() << "'";
        if (it->second != entry.getValue())
          return reader.emitOpError("reads '")
                 << readPrefix << "." << entry.getKey() << "' as "
                 << entry.getValue() << " but stage " << provider.getIndex()
                 << " yields '" << yieldPrefix << "." << entry.getKey()
                 << "' as " << it->second;
      }
      return success();
    };
    if (failed(match(next, KeyKind::In, "in", stage, KeyKind::Out, "out")) ||
        failed(match(stage, KeyKind::DOut, "d_out", next, KeyKind::DIn, "d_in")))
      return failure();
    // Every gradient sent back is the gradient of something sent on.
    llvm::StringMap<Type> sent = collectKeys(stage, KeyKind::Out, false);
    for (auto &entry : collectKeys(next, KeyKind::DIn, false)) {
      auto it = sent.find(entry.getKey());
      if (it == sent.end() || it->second != entry.getValue())
        return next.emitOpError("yields 'd_in.")
               << entry.getKey() << "' as " << entry.getValue()
               << " but stage " << stage.getIndex() << " sends no 'out."
               << entry.getKey() << "' of that type";
    }
  }
  return success();
}
