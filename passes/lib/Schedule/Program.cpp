//===- Program.cpp - naming the ops of a per-rank program ------------------===//

#include "zbc/Schedule/Program.h"

#include "zbc/Schedule/TorchCSV.h"

using namespace zbc::sched;

const char *zbc::sched::payloadName(Payload payload) {
  return payload == Payload::Act ? "act" : "grad";
}

std::string Program::name(const ProgramOp &op) const {
  bool csv = notation == ScheduleTable::Notation::CSV;
  switch (op.what) {
  case OpClass::Compute: {
    Action a{op.kind, op.stage, op.microbatch};
    return csv ? csvCell(a) : a.str();
  }
  case OpClass::Send:
  case OpClass::Recv: {
    bool send = op.what == OpClass::Send;
    if (csv) {
      // PyTorch names a transfer by the stage that runs it: the producer
      // sends, the consumer receives.
      int stage = send ? op.stage
                       : op.payload == Payload::Act ? op.stage + 1 : op.stage - 1;
      return std::to_string(stage) + (send ? "SEND_" : "RECV_") +
             (op.payload == Payload::Act ? "F" : "B") +
             std::to_string(op.microbatch);
    }
    std::string text = std::string(send ? "send " : "recv ") +
                       payloadName(op.payload) + " stage " +
                       std::to_string(op.stage) + " mb " +
                       std::to_string(op.microbatch) +
                       (send ? " to " : " from ") + std::to_string(op.peer);
    if (!op.key.empty())
      text += " (" + op.key + ")";
    return text;
  }
  case OpClass::Group:
    return "group of " + std::to_string(op.members.size()) + " transfers";
  }
  return "?";
}

void zbc::sched::setOneMessagePerBoundary(Program &program) {
  int stages = program.numStages();
  program.actMessages.assign(stages, {});
  program.gradMessages.assign(stages, {});
  for (int s = 0; s < stages; ++s) {
    if (s + 1 < stages)
      program.actMessages[s] = {{"out.0", ""}};
    if (s > 0)
      program.gradMessages[s] = {{"d_in.0", ""}};
  }
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
