//===- ProgramTable.cpp - zb.program and the schedule library, both ways ---===//

#include "zbc/Analysis/ProgramTable.h"

#include "zbc/Dialect/ZB/PhaseKeys.h"
#include "zbc/Support/CollectiveGroups.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <deque>
#include <map>
#include <set>

using namespace mlir;
using namespace zbc;
using namespace zbc::zb;

ComputeKind zbc::toComputeKind(sched::Kind kind) {
  switch (kind) {
  case sched::Kind::F:
    return ComputeKind::F;
  case sched::Kind::B:
    return ComputeKind::B;
  case sched::Kind::W:
    return ComputeKind::W;
  case sched::Kind::BW:
    return ComputeKind::BW;
  case sched::Kind::R:
    return ComputeKind::R;
  case sched::Kind::O:
  case sched::Kind::L:
    break; // zb.offload and zb.reload (isStashCopy)
  case sched::Kind::S:
  case sched::Kind::T:
    llvm_unreachable("vocabulary passes are simulated, not yet written as "
                     "zb.compute (Note [Vocabulary passes])");
  }
  llvm_unreachable("a copy (O, L) is a zb.offload or zb.reload, not a "
                   "zb.compute");
}

sched::Kind zbc::toScheduleKind(ComputeKind kind) {
  switch (kind) {
  case ComputeKind::F:
    return sched::Kind::F;
  case ComputeKind::B:
    return sched::Kind::B;
  case ComputeKind::W:
    return sched::Kind::W;
  case ComputeKind::BW:
    return sched::Kind::BW;
  case ComputeKind::R:
    return sched::Kind::R;
  }
  llvm_unreachable("unknown kind");
}

std::optional<sched::Action> zbc::actionOf(Operation *op) {
  auto action = [](sched::Kind kind, int64_t stage, int64_t mb) {
    return sched::Action{kind, static_cast<int>(stage), static_cast<int>(mb)};
  };
  if (auto compute = dyn_cast<ComputeOp>(op))
    return action(toScheduleKind(compute.getKind()), compute.getStage(),
                  compute.getMicrobatch());
  if (auto offload = dyn_cast<OffloadOp>(op))
    return action(sched::Kind::O, offload.getStage(), offload.getMicrobatch());
  if (auto reload = dyn_cast<ReloadOp>(op))
    return action(sched::Kind::L, reload.getStage(), reload.getMicrobatch());
  return std::nullopt;
}

sched::ScheduleTable zbc::tableOfProgram(ProgramOp program) {
  sched::ScheduleTable table;
  table.microbatches = static_cast<int>(program.getMicrobatches());
  for (int64_t rank : program.getPlacement())
    table.rankOfStage.push_back(static_cast<int>(rank));
  for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
    std::vector<sched::Action> &actions = table.ranks.emplace_back();
    // Note [Offload as actions]: an O's place in a table is its fence, the
    // first op that waits for it, not where the copy is issued.
    llvm::MapVector<Value, sched::Action> inFlight;
    for (Operation &op : rank.getBody().front()) {
      for (Value token : op.getOperands())
        if (auto it = inFlight.find(token); it != inFlight.end()) {
          actions.push_back(it->second);
          inFlight.erase(it);
        }
      std::optional<sched::Action> action = actionOf(&op);
      if (!action)
        continue;
      if (action->kind == sched::Kind::O)
        inFlight.insert({op.getResult(0), *action});
      else
        actions.push_back(*action);
    }
    for (auto &[token, action] : inFlight)
      actions.push_back(action);
  }
  return table;
}

namespace {
std::string printed(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}
} // namespace

void zbc::setMessagesFromPipeline(ProgramModel &model, PipelineOp pipeline) {
  sched::Program &program = model.program;
  int numStages = program.numStages();
  program.actMessages.assign(numStages, {});
  program.gradMessages.assign(numStages, {});
  for (StageOp stage : pipeline.getBody().front().getOps<StageOp>()) {
    int s = static_cast<int>(stage.getIndex());
    if (s >= numStages)
      continue;
    for (PhaseOp phase : stage.getPhases())
      for (auto [key, value] : llvm::zip(phase.getYield().getKeyList(),
                                         phase.getYield().getValues())) {
        std::optional<PhaseKey> parsed = PhaseKey::parse(key);
        if (!parsed || (parsed->kind != KeyKind::Out && parsed->kind != KeyKind::DIn))
          continue;
        std::string type = printed(value.getType());
        model.types[type] = value.getType();
        (parsed->kind == KeyKind::Out ? program.actMessages[s]
                                      : program.gradMessages[s])
            .push_back({key.str(), type});
      }
  }
}

PipelineOp zbc::pipelineOfProgram(ProgramOp program) {
  auto name = program->getAttrOfType<FlatSymbolRefAttr>("pipeline");
  if (!name)
    return {};
  Operation *table = program->getParentWithTrait<OpTrait::SymbolTable>();
  if (!table)
    return {};
  return dyn_cast_or_null<PipelineOp>(SymbolTable::lookupSymbolIn(table, name));
}

ProgramOp zbc::programOfPipeline(PipelineOp pipeline) {
  auto module = pipeline->getParentOfType<ModuleOp>();
  for (ProgramOp program : module.getOps<ProgramOp>())
    if (pipelineOfProgram(program) == pipeline)
      return program;
  return {};
}

std::map<std::string, std::vector<int>>
zbc::tiedHoldersOf(PipelineOp pipeline, ProgramOp program) {
  std::map<std::string, std::set<int>> holders;
  for (auto [s, stage] :
       llvm::enumerate(pipeline.getBody().front().getOps<StageOp>()))
    if (static_cast<int64_t>(s) < program.getNumStages())
      for (ParamOp param : stage.getBody().front().getOps<ParamOp>())
        holders[tiedGroupOf(param.getName())].insert(
            static_cast<int>(program.getRankOfStage(s)));
  std::map<std::string, std::vector<int>> tied;
  for (auto &[group, ranks] : holders)
    if (ranks.size() > 1)
      tied[group] = std::vector<int>(ranks.begin(), ranks.end());
  return tied;
}

bool zbc::isCollective(Operation *op) {
  return isa<AllReduceOp, ReduceScatterOp, AllGatherOp, BroadcastOp, ReduceOp>(
      op);
}

bool zbc::isValueCollective(Operation *op) {
  return isa<BroadcastOp, ReduceOp>(op);
}

SmallVector<StringRef> zbc::collectiveParamsOf(Operation *op) {
  ArrayAttr params;
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    params = reduce.getParams();
  else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    params = scatter.getParams();
  else if (auto gather = dyn_cast<AllGatherOp>(op))
    params = gather.getParams();
  SmallVector<StringRef> names;
  if (params)
    for (StringRef name : params.getAsValueRange<StringAttr>())
      names.push_back(name);
  return names;
}

ProgramModel zbc::modelOfProgram(ProgramOp program, PipelineOp pipeline) {
  ProgramModel model;
  sched::Program &p = model.program;
  p.microbatches = static_cast<int>(program.getMicrobatches());
  for (int64_t rank : program.getPlacement())
    p.rankOfStage.push_back(static_cast<int>(rank));
  int numStages = p.numStages();
  p.actMessages.assign(numStages, {});
  p.gradMessages.assign(numStages, {});
  if (pipeline) {
    setMessagesFromPipeline(model, pipeline);
    p.tiedHolders = tiedHoldersOf(pipeline, program);
  }

  // Types repeat across every microbatch: print each once.
  llvm::DenseMap<Type, std::string> spelled;
  auto spell = [&](Type type) -> const std::string & {
    auto [it, inserted] = spelled.try_emplace(type);
    if (inserted) {
      it->second = printed(type);
      model.types[it->second] = type;
    }
    return it->second;
  };
  auto transferOf = [&](Operation *op, sched::ProgramOp &out) {
    auto fill = [&](auto transfer, sched::OpClass what) {
      out.what = what;
      out.payload = transfer.getPayload() == Payload::Act ? sched::Product::Activation
                                                          : sched::Product::InputGrad;
      out.stage = static_cast<int>(transfer.getStage());
      out.microbatch = static_cast<int>(transfer.getMicrobatch());
      out.peer = static_cast<int>(transfer.getPeer());
      out.key = transfer.getKey().str();
      out.type = spell(transfer.getType());
      if (std::optional<uint64_t> stream = transfer.getStream())
        out.stream = static_cast<int>(*stream);
      // Without a pipeline, the boundary carries what its transfers name.
      if (!pipeline && out.stage < numStages) {
        std::vector<sched::Message> &messages =
            out.payload == sched::Product::Activation ? p.actMessages[out.stage]
                                               : p.gradMessages[out.stage];
        if (!llvm::any_of(messages, [&](const sched::Message &m) {
              return m.key == out.key;
            }))
          messages.push_back({out.key, out.type});
      }
    };
    if (auto send = dyn_cast<SendOp>(op))
      fill(send, sched::OpClass::Send);
    else
      fill(cast<RecvOp>(op), sched::OpClass::Recv);
  };

  for (RankOp rank : program.getBody().front().getOps<RankOp>()) {
    sched::RankProgram &rp = p.ranks.emplace_back();
    std::vector<Operation *> &ops = model.ops.emplace_back();
    llvm::DenseMap<Value, int> indexOf;
    auto deps = [&](ValueRange tokens, sched::ProgramOp &out) {
      for (Value token : tokens)
        if (auto it = indexOf.find(token); it != indexOf.end())
          out.deps.push_back(it->second);
    };
    for (Operation &op : rank.getBody().front()) {
      int index = static_cast<int>(rp.ops.size());
      sched::ProgramOp &out = rp.ops.emplace_back();
      ops.push_back(&op);
      if (std::optional<sched::Action> action = actionOf(&op)) {
        // A copy is an action of its rank like a compute (Note [Offload as
        // actions]); what waits for it is the proof's to check.
        out.what = sched::OpClass::Compute;
        out.kind = action->kind;
        out.stage = action->stage;
        out.microbatch = action->microbatch;
        deps(op.getOperands(), out);
        indexOf[op.getResult(0)] = index;
      } else if (auto group = dyn_cast<GroupOp>(op)) {
        out.what = sched::OpClass::Group;
        deps(group.getDeps(), out);
        indexOf[group.getDone()] = index;
        for (Operation &member : group.getBody().front()) {
          int m = static_cast<int>(rp.ops.size());
          rp.ops[index].members.push_back(m);
          sched::ProgramOp &mo = rp.ops.emplace_back();
          ops.push_back(&member);
          transferOf(&member, mo);
          mo.group = index;
        }
      } else if (isValueCollective(&op)) {
        // Note [Value collectives]: a microbatch's tensor, no stage.
        auto read = [&](auto collective, sched::CollectiveKind kind) {
          out.what = sched::OpClass::Collective;
          out.collective = kind;
          out.stage = -1;
          out.microbatch = static_cast<int>(collective.getMicrobatch());
          out.over = collective.getOver().str();
          out.key = collective.getKey().str();
          out.type = spell(collective.getType());
          out.bytes = collective.getBytes();
          if (std::optional<uint64_t> root = collective.getRoot())
            out.root = static_cast<int>(*root);
          deps(collective.getDeps(), out);
          indexOf[collective.getDone()] = index;
        };
        if (auto reduce = dyn_cast<ReduceOp>(op)) {
          read(reduce, sched::CollectiveKind::Reduce);
          out.reduction = reduce.getReduction() == Reduction::Max
                              ? sched::Reduction::Max
                          : reduce.getReduction() == Reduction::Softmax
                              ? sched::Reduction::Softmax
                              : sched::Reduction::Sum;
        } else {
          read(cast<BroadcastOp>(op), sched::CollectiveKind::Broadcast);
        }
      } else if (isCollective(&op)) {
        auto read = [&](auto collective, sched::CollectiveKind kind) {
          out.what = sched::OpClass::Collective;
          out.collective = kind;
          out.stage = static_cast<int>(collective.getStage());
          out.over = collective.getOver().str();
          out.bytes = collective.getBytes();
          llvm::raw_string_ostream key(out.key);
          llvm::interleaveComma(collectiveParamsOf(&op), key);
          deps(collective.getDeps(), out);
          indexOf[collective.getDone()] = index;
        };
        if (auto reduce = dyn_cast<AllReduceOp>(op))
          read(reduce, sched::CollectiveKind::AllReduce);
        else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
          read(scatter, sched::CollectiveKind::ReduceScatter);
        else
          read(cast<AllGatherOp>(op), sched::CollectiveKind::AllGather);
      } else {
        transferOf(&op, out);
        deps(op.getOperands(), out);
        indexOf[op.getResult(0)] = index;
      }
    }
  }
  return model;
}

ProgramOp zbc::buildComputeProgram(PipelineOp pipeline,
                                   const sched::ScheduleTable &table,
                                   StringRef name, StringRef schedule,
                                   StringRef optimizer) {
  OpBuilder b(pipeline.getContext());
  b.setInsertionPointAfter(pipeline);
  Location loc = pipeline.getLoc();
  SmallVector<int64_t> placement(table.rankOfStage.begin(),
                                 table.rankOfStage.end());
  auto program = ProgramOp::create(
      b, loc, b.getStringAttr(name), b.getI64IntegerAttr(table.microbatches),
      b.getDenseI64ArrayAttr(placement),
      /*memory_limit=*/IntegerAttr(), b.getStringAttr(optimizer),
      /*activation_budget=*/IntegerAttr(), /*predicted_makespan=*/FloatAttr(),
      /*predicted_bubble_rate=*/FloatAttr(), /*levers=*/DictionaryAttr(),
      /*replicas=*/IntegerAttr(), /*zero=*/IntegerAttr());
  program->setAttr("pipeline",
                   FlatSymbolRefAttr::get(pipeline.getSymNameAttr()));
  program->setAttr("schedule", b.getStringAttr(schedule));
  b.setInsertionPointToStart(&program.getBody().emplaceBlock());
  int numStages = table.numStages();
  auto index = [&](const sched::ProductRef &d) {
    return sched::productIndex(d, numStages, table.microbatches);
  };
  std::vector<bool> restored = table.restoredMask();
  for (auto [rank, actions] : llvm::enumerate(table.ranks)) {
    auto rankOp = RankOp::create(b, loc, rank);
    OpBuilder rb = OpBuilder::atBlockEnd(&rankOp.getBody().emplaceBlock());
    // The token of each product made on this rank (Dependences.h), and of
    // each offload by its (stage, microbatch).
    llvm::DenseMap<int64_t, Value> made;
    std::map<std::pair<int, int>, Value> offloadOf;
    // Note [Offload in the IR]: an offload is issued as soon as its F is
    // done and the offload before it issued (the copy queue keeps the
    // table's order of O), and the action after its place in the table
    // (its fence) waits for it.
    std::deque<sched::Action> toIssue;
    for (const sched::Action &a : actions)
      if (a.kind == sched::Kind::O)
        toIssue.push_back(a);
    SmallVector<Value> fences;
    auto issueOffloads = [&]() {
      while (!toIssue.empty()) {
        const sched::Action &o = toIssue.front();
        Value f = made.lookup(index({sched::Product::Activation, o.stage,
                                     o.microbatch}));
        if (!f)
          return;
        offloadOf[{o.stage, o.microbatch}] =
            OffloadOp::create(rb, loc, o.stage, o.microbatch, ValueRange{f})
                .getDone();
        toIssue.pop_front();
      }
    };
    for (const sched::Action &a : actions) {
      if (a.kind == sched::Kind::O) {
        fences.push_back(offloadOf.at({a.stage, a.microbatch}));
        continue;
      }
      SmallVector<Value> deps = std::move(fences);
      fences.clear();
      sched::forEachDependence(
          a, numStages,
          [&](const sched::ProductRef &d) {
            if (Value token = made.lookup(index(d)))
              deps.push_back(token);
          },
          table.isRecomputed(restored, a));
      Value done;
      if (a.kind == sched::Kind::L) {
        deps.push_back(offloadOf.at({a.stage, a.microbatch}));
        llvm::SetVector<Value> once(deps.begin(), deps.end());
        deps.assign(once.begin(), once.end());
        done = ReloadOp::create(rb, loc, a.stage, a.microbatch, deps).getDone();
      } else {
        done = ComputeOp::create(rb, loc, toComputeKind(a.kind), a.stage,
                                 a.microbatch, deps)
                   .getDone();
      }
      if (std::optional<sched::ProductRef> d = sched::productOf(a))
        made[index(*d)] = done;
      issueOffloads();
    }
  }
  return program;
}

namespace {
Payload toPayload(sched::Product payload) {
  return payload == sched::Product::Activation ? Payload::Act : Payload::Grad;
}
} // namespace

void zbc::writeRankBodies(ProgramOp program, const ProgramModel &model) {
  MLIRContext *context = program.getContext();
  Type token = TokenType::get(context);
  for (auto [r, rankOp] :
       llvm::enumerate(program.getBody().front().getOps<RankOp>())) {
    // The computes' (and copies') locations, in order, before the body
    // goes.
    SmallVector<Location> computeLocs;
    for (Operation &op : rankOp.getBody().front())
      if (actionOf(&op))
        computeLocs.push_back(op.getLoc());
    Block &body = rankOp.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      op.erase();

    const std::vector<sched::ProgramOp> &ops = model.program.ranks[r].ops;
    std::vector<Value> tokenOf(ops.size());
    // A transfer is placed for the compute after it (a recv) or before it
    // (a send); its location is that compute's.
    std::vector<Location> locOf(ops.size(), program.getLoc());
    {
      size_t c = 0;
      Location last = program.getLoc();
      for (size_t i = 0; i < ops.size(); ++i)
        if (ops[i].what == sched::OpClass::Compute)
          locOf[i] = last = c < computeLocs.size() ? computeLocs[c++] : last;
        else
          locOf[i] = ops[i].what == sched::OpClass::Send ||
                             c >= computeLocs.size()
                         ? last
                         : computeLocs[c];
    }
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    auto deps = [&](const sched::ProgramOp &op) {
      SmallVector<Value> values;
      for (int d : op.deps)
        values.push_back(tokenOf[d]);
      return values;
    };
    auto transfer = [&](OpBuilder &builder, size_t i) -> Value {
      const sched::ProgramOp &op = ops[i];
      auto payload = PayloadAttr::get(context, toPayload(op.payload));
      Type type = model.types.lookup(op.type);
      IntegerAttr stream =
          op.stream >= 0 ? builder.getI64IntegerAttr(op.stream) : IntegerAttr();
      SmallVector<Value> after = deps(op);
      if (op.what == sched::OpClass::Send)
        return SendOp::create(builder, locOf[i], token, payload,
                              builder.getI64IntegerAttr(op.stage),
                              builder.getI64IntegerAttr(op.microbatch),
                              builder.getI64IntegerAttr(op.peer),
                              builder.getStringAttr(op.key),
                              TypeAttr::get(type), stream, after)
            .getDone();
      return RecvOp::create(builder, locOf[i], token, payload,
                            builder.getI64IntegerAttr(op.stage),
                            builder.getI64IntegerAttr(op.microbatch),
                            builder.getI64IntegerAttr(op.peer),
                            builder.getStringAttr(op.key), TypeAttr::get(type),
                            stream, after)
          .getDone();
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      const sched::ProgramOp &op = ops[i];
      if (op.group >= 0)
        continue; // built with its group
      switch (op.what) {
      case sched::OpClass::Compute:
        if (op.kind == sched::Kind::O)
          tokenOf[i] =
              OffloadOp::create(b, locOf[i], op.stage, op.microbatch, deps(op))
                  .getDone();
        else if (op.kind == sched::Kind::L)
          tokenOf[i] =
              ReloadOp::create(b, locOf[i], op.stage, op.microbatch, deps(op))
                  .getDone();
        else
          tokenOf[i] = ComputeOp::create(b, locOf[i], toComputeKind(op.kind),
                                         op.stage, op.microbatch, deps(op))
                           .getDone();
        break;
      case sched::OpClass::Send:
      case sched::OpClass::Recv:
        tokenOf[i] = transfer(b, i);
        break;
      case sched::OpClass::Collective:
        // zb-insert-collectives adds them to a program with its transfers;
        // no program with collectives is rewritten from its model.
        llvm::report_fatal_error("writeRankBodies: a program with "
                                 "collectives");
      case sched::OpClass::Group: {
        Location loc = locOf[op.members.front()];
        auto group = GroupOp::create(b, loc, token, deps(op));
        OpBuilder inner =
            OpBuilder::atBlockEnd(&group.getBody().emplaceBlock());
        for (int m : op.members)
          tokenOf[m] = transfer(inner, m);
        tokenOf[i] = group.getDone();
        break;
      }
      }
    }
  }
}
