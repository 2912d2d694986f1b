//===- Program.cpp - naming the ops of a per-rank program ------------------===//

#include "zbc/Schedule/Program.h"

#include "zbc/Support/CollectiveGroups.h"


#include <cassert>

using namespace zbc::sched;

const char *zbc::sched::productName(Product product) {
  return product == Product::Activation ? "act" : "grad";
}

std::string Program::name(const ProgramOp &op) const {
  bool csv = notation == ScheduleTable::Notation::CSV;
  switch (op.what) {
  case OpClass::Compute: {
    Action a{op.kind, op.stage, op.microbatch};
    return csv ? a.csvStr() : a.str();
  }
  case OpClass::Send:
  case OpClass::Recv: {
    bool send = op.what == OpClass::Send;
    if (csv) {
      // PyTorch names a transfer by the stage that runs it: the producer
      // sends, the consumer receives.
      int stage =
          send ? op.stage : consumerOf(op.payload, op.stage);
      return std::to_string(stage) + (send ? "SEND_" : "RECV_") +
             (op.payload == Product::Activation ? "F" : "B") +
             std::to_string(op.microbatch);
    }
    std::string text = std::string(send ? "send " : "recv ") +
                       productName(op.payload) + " stage " +
                       std::to_string(op.stage) + " mb " +
                       std::to_string(op.microbatch) +
                       (send ? " to " : " from ") + std::to_string(op.peer);
    if (!op.key.empty())
      text += " (" + op.key + ")";
    return text;
  }
  case OpClass::Group:
    return "group of " + std::to_string(op.members.size()) + " transfers";
  case OpClass::Collective: {
    if (isValueCollective(op.collective)) {
      std::string text =
          op.collective == CollectiveKind::Broadcast
              ? "broadcast"
              : std::string(op.reduction == Reduction::Max       ? "max"
                            : op.reduction == Reduction::Softmax ? "softmax"
                                                                 : "sum") +
                    (op.root < 0 ? " all-reduce" : " reduce");
      text += " of \"" + op.key + "\" mb " + std::to_string(op.microbatch);
      if (op.root >= 0)
        text += (op.collective == CollectiveKind::Broadcast ? " from " : " to ") +
                std::to_string(op.root);
      return text + " over \"" + op.over + "\" (" + std::to_string(op.bytes) +
             " bytes)";
    }
    const char *what = op.collective == CollectiveKind::AllReduce
                           ? "all-reduce"
                       : op.collective == CollectiveKind::ReduceScatter
                           ? "reduce-scatter"
                           : "all-gather";
    const char *of = op.collective == CollectiveKind::AllGather
                         ? "'s parameters"
                         : "'s gradients";
    return std::string(what) + " of stage " + std::to_string(op.stage) + of +
           " over \"" + op.over + "\" (" + op.key + ", " +
           std::to_string(op.bytes) + " bytes)";
  }
  }
  return "?";
}

std::vector<int> Program::membersOf(const std::string &over, int rank) const {
  if (over == kReplicasGroup)
    return {rank};
  if (over == kPipelineGroup) {
    std::vector<int> all(ranks.size());
    for (size_t r = 0; r < ranks.size(); ++r)
      all[r] = static_cast<int>(r);
    return all;
  }
  auto it = tiedHolders.find(over);
  return it == tiedHolders.end() ? std::vector<int>() : it->second;
}

const char *zbc::sched::boundaryKey(Product product) {
  return product == Product::Activation ? "out.0" : "d_in.0";
}

void zbc::sched::setOneMessagePerBoundary(Program &program) {
  int stages = program.numStages();
  program.actMessages.assign(stages, {});
  program.gradMessages.assign(stages, {});
  for (int s = 0; s < stages; ++s) {
    if (s + 1 < stages)
      program.actMessages[s] = {{boundaryKey(Product::Activation), ""}};
    if (s > 0)
      program.gradMessages[s] = {{boundaryKey(Product::InputGrad), ""}};
  }
}

std::vector<std::vector<int>>
zbc::sched::expandBoundaryTransfers(Program &program) {
  std::vector<std::vector<int>> origins;
  for (RankProgram &rank : program.ranks) {
    std::vector<ProgramOp> ops;
    std::vector<int> &origin = origins.emplace_back();
    std::vector<int> moved(rank.ops.size(), -1); // old index -> new, or -1
    auto remap = [&](const std::vector<int> &deps) {
      std::vector<int> out;
      for (int d : deps)
        if (moved[d] >= 0)
          out.push_back(moved[d]);
      return out;
    };
    for (size_t i = 0; i < rank.ops.size(); ++i) {
      ProgramOp op = rank.ops[i];
      assert(op.what != OpClass::Group && op.group < 0 &&
             "expandBoundaryTransfers takes a program without groups");
      op.deps = remap(op.deps);
      if (op.what == OpClass::Compute) {
        moved[i] = static_cast<int>(ops.size());
        ops.push_back(std::move(op));
        origin.push_back(static_cast<int>(i));
        continue;
      }
      const std::vector<Message> &messages =
          program.messages(op.payload, op.stage);
      if (messages.empty())
        continue;
      moved[i] = static_cast<int>(ops.size());
      if (messages.size() == 1) {
        op.key = messages[0].key;
        op.type = messages[0].type;
        ops.push_back(std::move(op));
        origin.push_back(static_cast<int>(i));
        continue;
      }
      ProgramOp group;
      group.what = OpClass::Group;
      group.deps = op.deps;
      int head = static_cast<int>(ops.size());
      ops.push_back(std::move(group));
      origin.push_back(static_cast<int>(i));
      for (const Message &message : messages) {
        ProgramOp member = op;
        member.deps.clear();
        member.key = message.key;
        member.type = message.type;
        member.group = head;
        ops[head].members.push_back(static_cast<int>(ops.size()));
        ops.push_back(std::move(member));
        origin.push_back(static_cast<int>(i));
      }
    }
    rank.ops = std::move(ops);
  }
  return origins;
}

Program zbc::sched::programOfTable(const ScheduleTable &table) {
  Program program;
  program.notation = table.notation;
  program.microbatches = table.microbatches;
  program.rankOfStage = table.rankOfStage;
  setOneMessagePerBoundary(program);
  for (const std::vector<Action> &actions : table.ranks) {
    RankProgram &rank = program.ranks.emplace_back();
    for (const Action &a : actions) {
      ProgramOp op;
      op.kind = a.kind;
      op.stage = a.stage;
      op.microbatch = a.microbatch;
      rank.ops.push_back(op);
    }
  }
  return program;
}
