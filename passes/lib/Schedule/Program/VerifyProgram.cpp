//===- VerifyProgram.cpp - proving a per-rank program ---------------------===//
//
// verifyProgram (Program.h) in three passes, each linear in the ops:
//  1. the compute order (ScheduleTable::firstFault on the computes);
//  2. dependences and the endpoints of transfers, from indices of each
//     rank's computes and receives;
//  3. the abstract execution of Note [p2p semantics]: a work list of ranks,
//     each advanced until its next op waits for an incomplete one; an op's
//     completion wakes the rank parked on it. Every op is issued once and
//     every completion is tried a bounded number of times, so the cost is
//     linear. If the list empties with ranks unfinished, each one waits for
//     a transfer whose partner has not been posted (or for the transfer
//     ahead of it on its stream); following "the partner's rank" from rank
//     to rank finds the cycle that is reported, or a rank that finished
//     without posting the partner (a missing send or recv). A collective
//     completes when the last member of its group issues its match (Note
//     [Collectives in the program]); a rank stuck on one needs the first
//     member that has not issued it.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Program.h"

#include "zbc/Support/CollectiveGroups.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <map>
#include <tuple>

using namespace zbc::sched;

namespace {

/// How a program says that an op waits for another, in the words of the
/// format it came from: the IR's after(...) tokens, or, for a PyTorch CSV,
/// the order of the cells in a rank's row.
std::string waitHint(const Program &program, bool forRecv) {
  if (program.notation == ScheduleTable::Notation::CSV)
    return forRecv ? "(in the CSV: put the recv's cell before this one in "
                     "the rank's row)"
                   : "(in the CSV: put this send's cell after that compute's "
                     "in the rank's row)";
  return forRecv ? "(in IR: the recv's token, or its group's, in its "
                   "after(...))"
                 : "(list its token in after(...))";
}

bool isTransfer(const ProgramOp &op) {
  return op.what == OpClass::Send || op.what == OpClass::Recv;
}

/// "the 3rd"
std::string ordinal(size_t n) {
  const char *suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1)
      suffix = "st";
    else if (n % 10 == 2)
      suffix = "nd";
    else if (n % 10 == 3)
      suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

/// Whether the k-th collectives of two members of a group match (Note
/// [Collectives in the program], Note [Value collectives]).
bool sameCollective(const ProgramOp &a, const ProgramOp &b) {
  if (a.collective != b.collective || a.bytes != b.bytes)
    return false;
  if (!isValueCollective(a.collective))
    return true;
  return a.root == b.root && a.reduction == b.reduction && a.key == b.key &&
         a.microbatch == b.microbatch;
}

ProgramError error(int rank, int op, std::string message,
                   std::vector<ProgramNote> notes = {}) {
  return ProgramError{rank, op, std::move(message), std::move(notes)};
}

//===----------------------------------------------------------------------===//
// 1 and 2: structure, compute order, dependences
//===----------------------------------------------------------------------===//

/// Where each rank's computes and receives are, by what they are.
struct Index {
  using ComputeKey = std::tuple<int, int, Kind>; // stage, mb, kind
  using RecvKey = std::tuple<Product, int, int, std::string>;
  std::vector<std::map<ComputeKey, int>> compute;
  std::vector<std::map<RecvKey, int>> recv;
};

std::optional<ProgramError> checkStructure(const Program &program) {
  int numRanks = static_cast<int>(program.ranks.size());
  for (int r = 0; r < numRanks; ++r) {
    const std::vector<ProgramOp> &ops = program.ranks[r].ops;
    int n = static_cast<int>(ops.size());
    for (int i = 0; i < n; ++i) {
      const ProgramOp &op = ops[i];
      for (int d : op.deps)
        if (d < 0 || d >= i || ops[d].group >= 0)
          return error(r, i, program.name(op) + " waits for an op that is not an "
                                            "earlier op of its rank");
      if (op.what == OpClass::Group) {
        for (int m : op.members)
          if (m <= i || m >= n || !isTransfer(ops[m]) || ops[m].group != i)
            return error(r, i, "a group holds only transfers, each once");
      } else if (op.group >= 0) {
        if (!op.deps.empty())
          return error(r, i, program.name(op) + " is in a group: the group "
                                            "waits, its members do not");
      }
      if (op.what == OpClass::Collective) {
        if (op.group >= 0)
          return error(r, i, program.name(op) + " is in a group of transfers");
        std::vector<int> members = program.membersOf(op.over, r);
        if (!llvm::is_contained(members, r))
          return error(r, i, program.name(op) + ": rank " + std::to_string(r) +
                                 " is not a member of group \"" + op.over +
                                 "\"");
        if (isValueCollective(op.collective)) {
          if (op.root >= 0 && !llvm::is_contained(members, op.root))
            return error(r, i, program.name(op) + ": root rank " +
                                   std::to_string(op.root) +
                                   " is not a member of group \"" + op.over +
                                   "\"");
          if (op.microbatch < 0 || op.microbatch >= program.microbatches)
            return error(r, i, program.name(op) + ": microbatch out of range");
          continue; // it has no stage (Note [Value collectives])
        }
        if (op.stage >= 0 && op.stage < program.numStages() &&
            program.rankOfStage[op.stage] != r)
          return error(r, i, program.name(op) + ": stage " +
                                 std::to_string(op.stage) + " is on rank " +
                                 std::to_string(program.rankOfStage[op.stage]));
      }
      if (isTransfer(op)) {
        if (op.peer < 0 || op.peer >= numRanks || op.peer == r)
          return error(r, i, program.name(op) + ": peer " +
                                 std::to_string(op.peer) + " is not another rank");
      }
      bool staged = op.what != OpClass::Group;
      if (staged && (op.stage < 0 || op.stage >= program.numStages() ||
                     op.microbatch < 0 || op.microbatch >= program.microbatches))
        return error(r, i, program.name(op) + ": stage or microbatch out of range");
    }
  }
  return std::nullopt;
}

std::optional<ProgramError> checkComputeOrder(const Program &program) {
  ScheduleTable table;
  table.microbatches = program.microbatches;
  table.rankOfStage = program.rankOfStage;
  std::vector<std::vector<int>> opOfAction(program.ranks.size());
  for (auto [r, rank] : llvm::enumerate(program.ranks)) {
    std::vector<Action> &actions = table.ranks.emplace_back();
    for (auto [i, op] : llvm::enumerate(rank.ops))
      if (op.what == OpClass::Compute) {
        actions.push_back({op.kind, op.stage, op.microbatch});
        opOfAction[r].push_back(static_cast<int>(i));
      }
  }
  std::optional<ScheduleTable::Fault> fault = table.firstFault();
  if (!fault)
    return std::nullopt;
  int op = fault->rank >= 0 && fault->action >= 0
               ? opOfAction[fault->rank][fault->action]
               : -1;
  return error(std::max(fault->rank, 0), op, fault->message);
}

/// True if op `i` of `ops`, or its group, lists `target` (or its group).
bool waitsFor(const std::vector<ProgramOp> &ops, int i, int target) {
  int waiter = ops[i].group >= 0 ? ops[i].group : i;
  int awaited = ops[target].group >= 0 ? ops[target].group : target;
  return llvm::is_contained(ops[waiter].deps, awaited);
}

/// Note [Offload in the IR]: a copy runs on its own queue, so what reads
/// its bytes must wait for it, not only come after it: an O for its F (the
/// stash it copies), an L for its O (the host copy it reads), and the
/// backward of an offloaded microbatch (B or BW) for its L. A W needs no
/// wait of its own: it follows its B, which waited.
std::optional<ProgramError> checkStashCopyWaits(const Program &program,
                                                const Index &index, int r,
                                                int i) {
  const std::vector<ProgramOp> &ops = program.ranks[r].ops;
  const ProgramOp &op = ops[i];
  auto find = [&](Kind kind) -> std::optional<int> {
    auto it = index.compute[r].find({op.stage, op.microbatch, kind});
    if (it == index.compute[r].end())
      return std::nullopt;
    return it->second;
  };
  auto mustWait = [&](Kind kind, const char *why) -> std::optional<ProgramError> {
    std::optional<int> awaited = find(kind);
    if (!awaited || waitsFor(ops, i, *awaited))
      return std::nullopt;
    return error(r, i,
                 "rank " + std::to_string(r) + ": " + program.name(op) +
                     " does not wait for " +
                     program.name(ops[*awaited]) + why,
                 {{r, *awaited, "the copy it must wait for"}});
  };
  switch (op.kind) {
  case Kind::O:
    return mustWait(Kind::F, ": the copy would read a stash still being "
                             "written (list it in the offload's after)");
  case Kind::L:
    return mustWait(Kind::O, ": it would reload host memory before its "
                             "offload completes (list the offload in the "
                             "reload's after)");
  case Kind::B:
  case Kind::BW:
    if (!find(Kind::L))
      return std::nullopt;
    return mustWait(Kind::L, ": it would read the stash before its reload "
                             "completes (list the reload in its after)");
  default:
    return std::nullopt;
  }
}

/// Note [Collectives in the program]: an all-reduce (or reduce-scatter)
/// sums the gradients of its stage in place, so it waits for the last
/// compute of the stage that writes them (a W or a BW), and none writes
/// them after it: a later one would add to a sum already on its way. An
/// all-gather fills the parameters the stage's computes read, so it comes
/// before them all and the first waits for it.
std::optional<ProgramError> checkCollectiveWaits(const Program &program,
                                                 int r, int i) {
  const std::vector<ProgramOp> &ops = program.ranks[r].ops;
  const ProgramOp &op = ops[i];
  if (op.collective == CollectiveKind::AllGather) {
    // It fills the parameters every compute of the stage reads: the first
    // of them waits for it (and the rest follow that one).
    for (int k = 0, e = static_cast<int>(ops.size()); k < e; ++k) {
      const ProgramOp &other = ops[k];
      if (other.what != OpClass::Compute || other.stage != op.stage)
        continue;
      if (k < i)
        return error(r, i,
                     program.name(op) + " is issued after " +
                         program.name(other) +
                         ", which reads the parameters it gathers",
                     {{r, k, "the first compute of the stage"}});
      if (!waitsFor(ops, k, i))
        return error(r, k,
                     program.name(other) + " does not wait for " +
                         program.name(op) + ", which gathers the parameters "
                         "it reads " + waitHint(program, /*forRecv=*/true),
                     {{r, i, "the all-gather"}});
      return std::nullopt;
    }
    return std::nullopt;
  }
  auto writesGradients = [&](const ProgramOp &other) {
    return other.what == OpClass::Compute && other.stage == op.stage &&
           (other.kind == Kind::W || other.kind == Kind::BW);
  };
  int last = -1;
  for (int k = 0, e = static_cast<int>(ops.size()); k < e; ++k)
    if (writesGradients(ops[k]))
      last = k;
  if (last < 0)
    return error(r, i, program.name(op) + ": rank " + std::to_string(r) +
                           " computes no gradient of stage " +
                           std::to_string(op.stage));
  if (last > i)
    return error(r, i,
                 program.name(op) + " is issued before " +
                     program.name(ops[last]) +
                     ", which still adds to the gradients it sums",
                 {{r, last, "the last compute writing them"}});
  if (!waitsFor(ops, i, last))
    return error(r, i,
                 program.name(op) + " does not wait for " +
                     program.name(ops[last]) +
                     ", the last compute writing the gradients it sums " +
                     waitHint(program, /*forRecv=*/false),
                 {{r, last, "the last compute writing them"}});
  return std::nullopt;
}

std::optional<ProgramError> checkDependences(const Program &program,
                                             const Index &index) {
  int numStages = program.numStages();
  for (auto [rr, rank] : llvm::enumerate(program.ranks)) {
    int r = static_cast<int>(rr);
    const std::vector<ProgramOp> &ops = rank.ops;
    for (auto [ii, op] : llvm::enumerate(ops)) {
      int i = static_cast<int>(ii);
      if (op.what == OpClass::Compute) {
        Action a{op.kind, op.stage, op.microbatch};
        std::optional<ProgramError> problem;
        forEachDependence(a, numStages, [&](const ProductRef &d) {
          if (problem)
            return;
          std::string what = std::string(d.product == Product::Activation
                                             ? "the activation"
                                             : "the input gradient") +
                             " of stage " + std::to_string(d.stage) +
                             " microbatch " + std::to_string(d.microbatch);
          int producerRank = program.rankOfStage[d.stage];
          if (producerRank == r) {
            // Made here: by an earlier compute (the compute stream runs
            // in order).
            for (Kind k : {Kind::F, Kind::B, Kind::BW}) {
              if (productMadeBy(k) != d.product)
                continue;
              auto it = index.compute[r].find({d.stage, d.microbatch, k});
              if (it != index.compute[r].end() && it->second > i)
                problem = error(r, i,
                                program.name(op) + " needs " + what +
                                    ", which this rank computes later",
                                {{r, it->second, "computed here"}});
            }
            return;
          }
          Product payload = d.product;
          const std::vector<Message> &messages =
              program.messages(payload, d.stage);
          for (const Message &message : messages) {
            auto it = index.recv[r].find(
                {payload, d.stage, d.microbatch, message.key});
            std::string of = what + (message.key.empty()
                                         ? std::string()
                                         : " (" + message.key + ")");
            if (it == index.recv[r].end()) {
              problem = error(r, i,
                              program.name(op) + " needs " + of + " from rank " +
                                  std::to_string(producerRank) +
                                  ", but rank " + std::to_string(r) +
                                  " has no recv of it");
              return;
            }
            if (!waitsFor(ops, i, it->second)) {
              problem = error(r, i,
                              program.name(op) + " needs " + of +
                                  " but does not wait for its recv, which "
                                  "must come before it on its rank " +
                                  waitHint(program, /*forRecv=*/true),
                              {{r, it->second, "the recv"}});
              return;
            }
          }
        });
        if (problem)
          return problem;
        if (std::optional<ProgramError> copy =
                checkStashCopyWaits(program, index, r, i))
          return copy;
        continue;
      }
      if (op.what == OpClass::Collective) {
        if (isValueCollective(op.collective))
          continue; // its phases place it (Note [Value collectives])
        if (std::optional<ProgramError> e =
                checkCollectiveWaits(program, r, i))
          return e;
        continue;
      }
      if (!isTransfer(op))
        continue;
      // Endpoints: a send leaves the producing stage's rank for the
      // consumer's; a recv arrives there. The last stage sends no
      // activation, stage 0 no input gradient.
      bool send = op.what == OpClass::Send;
      int consumer = consumerOf(op.payload, op.stage);
      if (consumer < 0 || consumer >= numStages)
        return error(r, i, program.name(op) + ": stage " + std::to_string(op.stage) +
                               " has no " +
                               (op.payload == Product::Activation ? "next" : "previous") +
                               " stage to send to");
      int from = program.rankOfStage[op.stage];
      int to = program.rankOfStage[consumer];
      if ((send ? from : to) != r || (send ? to : from) != op.peer)
        return error(r, i, program.name(op) + ": " + productName(op.payload) +
                               " of stage " + std::to_string(op.stage) +
                               " goes from rank " + std::to_string(from) +
                               " to rank " + std::to_string(to));
      const std::vector<Message> &messages =
          program.messages(op.payload, op.stage);
      if (!llvm::any_of(messages,
                        [&](const Message &m) { return m.key == op.key; }))
        return error(r, i, program.name(op) + ": stage " + std::to_string(op.stage) +
                               " sends no message '" + op.key + "' as " +
                               productName(op.payload));
      if (!send)
        continue;
      // The send reads what its producer made: it waits for that compute.
      std::optional<int> producer;
      for (Kind k : {Kind::F, Kind::B, Kind::BW}) {
        if (*productMadeBy(k) != op.payload)
          continue;
        auto it = index.compute[r].find({op.stage, op.microbatch, k});
        if (it != index.compute[r].end())
          producer = it->second;
      }
      if (!producer)
        return error(r, i, program.name(op) + ": rank " + std::to_string(r) +
                               " never computes what it sends");
      if (!waitsFor(ops, i, *producer))
        return error(r, i,
                     program.name(op) + " does not wait for " +
                         program.name(ops[*producer]) +
                         ", which makes what it sends " +
                         waitHint(program, /*forRecv=*/false),
                     {{r, *producer, "the producer"}});
    }
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// 3: the abstract execution (Note [p2p semantics])
//===----------------------------------------------------------------------===//

class Execution {
public:
  explicit Execution(const Program &program) : program(program) {
    int n = static_cast<int>(program.ranks.size());
    state.resize(n);
    for (int r = 0; r < n; ++r) {
      const std::vector<ProgramOp> &ops = program.ranks[r].ops;
      RankState &rs = state[r];
      rs.issued.assign(ops.size(), 0);
      rs.complete.assign(ops.size(), 0);
      rs.issuedAt.assign(ops.size(), -1);
      rs.completedAt.assign(ops.size(), -1);
      rs.partner.assign(ops.size(), {-1, -1});
      rs.pending.assign(ops.size(), 0);
      rs.streamPrev.assign(ops.size(), -1);
      rs.streamNext.assign(ops.size(), -1);
      rs.collectiveIndex.assign(ops.size(), -1);
      // Issue order, and the transfers in it (members in member order).
      llvm::DenseMap<int, int> lastOnStream;
      auto addTransfer = [&](int t) {
        rs.transfers.push_back(t);
        int stream = ops[t].stream;
        if (stream < 0)
          return;
        auto [it, first] = lastOnStream.try_emplace(stream, t);
        if (!first) {
          rs.streamPrev[t] = it->second;
          rs.streamNext[it->second] = t;
          it->second = t;
        }
      };
      for (int i = 0, e = static_cast<int>(ops.size()); i < e; ++i) {
        if (ops[i].group >= 0)
          continue;
        rs.order.push_back(i);
        if (isTransfer(ops[i]) || ops[i].what == OpClass::Collective)
          addTransfer(i);
        for (int m : ops[i].members)
          addTransfer(m);
      }
    }
  }

  std::optional<ProgramError> run();
  /// The steps of the run: when each op was issued and completed (-1:
  /// never), and each transfer's partner.
  ProgramRun result() const;

private:
  struct RankState {
    std::vector<int> order;     // top-level ops, issue order
    std::vector<int> transfers; // every transfer, issue order
    size_t pc = 0;              // next op of `order` to issue
    size_t finalWait = 0;       // first transfer not known complete
    int blockedOn = -1;         // op whose completion the rank awaits
    bool done = false;
    std::vector<char> issued, complete;
    std::vector<int64_t> issuedAt, completedAt;
    std::vector<std::pair<int, int>> partner; // matched (rank, op)
    std::vector<int> pending;                 // group: members incomplete
    std::vector<int> streamPrev, streamNext;
    std::vector<int> collectiveIndex; // its place among its group's (k-th)
  };
  /// The transfers from one rank to another, in issue order on each side.
  struct Channel {
    std::vector<int> sends, recvs; // op indices on the sender, receiver
  };

  const ProgramOp &opAt(int r, int i) const { return program.ranks[r].ops[i]; }
  Channel &channel(int from, int to) {
    return channels[static_cast<int64_t>(from) * program.ranks.size() + to];
  }
  void issue(int r, int i);
  void issueTransfer(int r, int t);
  void issueCollective(int r, int c);
  /// The first member of `c`'s group that has not issued its match, or -1.
  int memberBehind(int r, int c) const;
  void complete(int r, int i);
  void tryComplete(int r, int t);
  void advance(int r);
  std::optional<ProgramError> diagnoseStuck();

  const Program &program;
  std::vector<RankState> state;
  std::map<int64_t, Channel> channels;
  /// Per group and member rank, the collectives issued over it, in order.
  std::map<std::string, std::map<int, std::vector<int>>> collectives;
  std::vector<int> work;
  std::vector<std::pair<int, int>> toTry; // transfers whose completion may be due
  std::optional<ProgramError> failure;
  int64_t step = 0; // a counter of issues: the run's clock
};

void Execution::complete(int r, int i) {
  RankState &rs = state[r];
  rs.complete[i] = 1;
  rs.completedAt[i] = step;
  if (rs.blockedOn == i) {
    rs.blockedOn = -1;
    work.push_back(r);
  }
  const ProgramOp &op = opAt(r, i);
  if (op.group >= 0 && --rs.pending[op.group] == 0)
    complete(r, op.group);
  if (isTransfer(op) && rs.streamNext[i] >= 0)
    toTry.push_back({r, rs.streamNext[i]});
}

void Execution::tryComplete(int r, int t) {
  toTry.push_back({r, t});
  while (!toTry.empty()) {
    auto [rank, op] = toTry.back();
    toTry.pop_back();
    RankState &rs = state[rank];
    if (rs.complete[op] || rs.partner[op].first < 0)
      continue;
    int prev = rs.streamPrev[op];
    if (prev >= 0 && !rs.complete[prev])
      continue;
    // A send completes once its recv is posted (rendezvous), a recv once
    // its send is issued: both mean "matched", which is when partner is
    // set.
    complete(rank, op);
  }
}

void Execution::issueTransfer(int r, int t) {
  RankState &rs = state[r];
  rs.issued[t] = 1;
  rs.issuedAt[t] = step;
  const ProgramOp &op = opAt(r, t);
  bool send = op.what == OpClass::Send;
  int from = send ? r : op.peer, to = send ? op.peer : r;
  Channel &ch = channel(from, to);
  std::vector<int> &mine = send ? ch.sends : ch.recvs;
  std::vector<int> &theirs = send ? ch.recvs : ch.sends;
  size_t n = mine.size();
  mine.push_back(t);
  if (n >= theirs.size())
    return; // the partner comes later (or never)
  int other = send ? to : from;
  int p = theirs[n];
  const ProgramOp &partnerOp = opAt(other, p);
  // FIFO per ordered pair of ranks: the n-th send meets the n-th recv.
  std::string field;
  if (op.payload != partnerOp.payload)
    field = "payload";
  else if (op.stage != partnerOp.stage)
    field = "stage";
  else if (op.microbatch != partnerOp.microbatch)
    field = "microbatch";
  else if (op.key != partnerOp.key)
    field = "message";
  else if (op.type != partnerOp.type)
    field = "type (" + op.type + " against " + partnerOp.type + ")";
  if (!field.empty() && !failure) {
    const ProgramOp &s = send ? op : partnerOp, &q = send ? partnerOp : op;
    failure = error(
        r, t,
        program.name(op) + " on rank " + std::to_string(r) + " meets " +
            program.name(partnerOp) + " on rank " + std::to_string(other) +
            ": both are the " + ordinal(n + 1) + " message from rank " +
            std::to_string(from) + " to rank " + std::to_string(to) +
            " (messages match in issue order), and they disagree on the " +
            field + (field == "payload" || field == "stage" ||
                             field == "microbatch"
                         ? " (" + program.name(s) + " against " + program.name(q) + ")"
                         : ""),
        {{other, p, "the " + std::string(send ? "recv" : "send") + " it meets"}});
    return;
  }
  rs.partner[t] = {other, p};
  state[other].partner[p] = {r, t};
  tryComplete(r, t);
  tryComplete(other, p);
}

int Execution::memberBehind(int r, int c) const {
  const ProgramOp &op = opAt(r, c);
  auto group = collectives.find(op.over);
  for (int m : program.membersOf(op.over, r)) {
    size_t issued = 0;
    if (group != collectives.end())
      if (auto it = group->second.find(m); it != group->second.end())
        issued = it->second.size();
    if (issued <= static_cast<size_t>(state[r].collectiveIndex[c]))
      return m;
  }
  return -1;
}

void Execution::issueCollective(int r, int c) {
  RankState &rs = state[r];
  rs.issued[c] = 1;
  rs.issuedAt[c] = step;
  const ProgramOp &op = opAt(r, c);
  std::map<int, std::vector<int>> &issued = collectives[op.over];
  std::vector<int> &mine = issued[r];
  size_t n = mine.size();
  rs.collectiveIndex[c] = static_cast<int>(n);
  mine.push_back(c);
  std::vector<int> members = program.membersOf(op.over, r);
  for (int m : members) {
    auto it = issued.find(m);
    if (m == r || it == issued.end() || it->second.size() <= n)
      continue;
    int other = it->second[n];
    const ProgramOp &theirs = opAt(m, other);
    if (!sameCollective(op, theirs) && !failure) {
      failure = error(
          r, c,
          "group \"" + op.over + "\": the " + ordinal(n + 1) +
              " collective rank " + std::to_string(r) + " issues over it is " +
              program.name(op) + ", but rank " + std::to_string(m) + "'s is " +
              program.name(theirs) +
              (isValueCollective(op.collective) ||
                       isValueCollective(theirs.collective)
                   ? " (the members of a group issue its collectives in the "
                     "same order, each the same collective of the same "
                     "microbatch's values)"
                   : " (the members of a group issue its collectives in the "
                     "same order, with the same bytes)"),
          {{m, other, "rank " + std::to_string(m) + "'s " + ordinal(n + 1)}});
      return;
    }
  }
  if (memberBehind(r, c) >= 0)
    return; // completes when the last member issues it
  for (int m : members) {
    int match = issued[m][n];
    state[m].partner[match] = {r, c};
    complete(m, match);
  }
}

void Execution::issue(int r, int i) {
  RankState &rs = state[r];
  const ProgramOp &op = opAt(r, i);
  ++step;
  rs.issuedAt[i] = step;
  switch (op.what) {
  case OpClass::Compute:
    rs.issued[i] = 1;
    complete(r, i);
    return;
  case OpClass::Send:
  case OpClass::Recv:
    issueTransfer(r, i);
    return;
  case OpClass::Group:
    rs.issued[i] = 1;
    rs.pending[i] = static_cast<int>(op.members.size());
    if (op.members.empty()) {
      complete(r, i);
      return;
    }
    for (int m : op.members)
      issueTransfer(r, m);
    return;
  case OpClass::Collective:
    issueCollective(r, i);
    return;
  }
}

void Execution::advance(int r) {
  RankState &rs = state[r];
  const std::vector<ProgramOp> &ops = program.ranks[r].ops;
  if (rs.pc < rs.order.size() && !failure) {
    // One op per turn: the ranks take turns, so the run's clock orders
    // their ops as ranks of equal speed would (insertTransfers reads it).
    int i = rs.order[rs.pc];
    for (int d : ops[i].deps)
      if (!rs.complete[d]) {
        rs.blockedOn = d;
        return;
      }
    issue(r, i);
    ++rs.pc;
    work.push_back(r);
    return;
  }
  // The step's end: wait for every transfer.
  while (rs.finalWait < rs.transfers.size() &&
         rs.complete[rs.transfers[rs.finalWait]])
    ++rs.finalWait;
  if (rs.finalWait < rs.transfers.size())
    rs.blockedOn = rs.transfers[rs.finalWait];
  else
    rs.done = true;
}

std::optional<ProgramError> Execution::run() {
  // A FIFO of turns: a rank that issued goes to the back, one woken joins
  // it. Each turn issues an op or parks the rank, so turns are linear too.
  for (int r = 0, n = static_cast<int>(state.size()); r < n; ++r)
    work.push_back(r);
  for (size_t head = 0; head < work.size() && !failure; ++head) {
    int r = work[head];
    if (!state[r].done && state[r].blockedOn < 0)
      advance(r);
  }
  if (failure)
    return failure;
  return diagnoseStuck();
}

ProgramRun Execution::result() const {
  ProgramRun run;
  for (const RankState &rs : state) {
    run.issuedAt.push_back(rs.issuedAt);
    run.completedAt.push_back(rs.completedAt);
    run.partner.push_back(rs.partner);
  }
  return run;
}

std::optional<ProgramError> Execution::diagnoseStuck() {
  int n = static_cast<int>(state.size());
  // Why each stuck rank waits: the transfer at the root of its wait (a
  // group's first incomplete member; down a stream to the first transfer
  // not yet matched), and the rank whose post it needs.
  struct Wait {
    int at = -1;       // the op the rank is stuck at (-1: its end)
    int transfer = -1; // the unmatched transfer at the root of the wait
    int needs = -1;    // the rank that must post its partner
  };
  std::vector<Wait> waits(n);
  int first = -1;
  for (int r = 0; r < n; ++r) {
    RankState &rs = state[r];
    if (rs.done)
      continue;
    if (first < 0)
      first = r;
    Wait &w = waits[r];
    w.at = rs.pc < rs.order.size() ? static_cast<int>(rs.order[rs.pc]) : -1;
    int t = rs.blockedOn;
    if (opAt(r, t).what == OpClass::Group)
      for (int m : opAt(r, t).members)
        if (!rs.complete[m]) {
          t = m;
          break;
        }
    while (rs.partner[t].first >= 0 && rs.streamPrev[t] >= 0 &&
           !rs.complete[rs.streamPrev[t]])
      t = rs.streamPrev[t];
    w.transfer = t;
    w.needs = opAt(r, t).what == OpClass::Collective ? memberBehind(r, t)
                                                     : opAt(r, t).peer;
  }
  if (first < 0)
    return std::nullopt;

  auto waitText = [&](int r) {
    const Wait &w = waits[r];
    const ProgramOp &t = opAt(r, w.transfer);
    bool send = t.what == OpClass::Send;
    bool collective = t.what == OpClass::Collective;
    std::string at = w.at >= 0 ? program.name(opAt(r, w.at))
                               : std::string("the end of its step");
    std::string text = "rank " + std::to_string(r) + " waits at " + at +
                       (w.at >= 0 && opAt(r, w.at).what == OpClass::Compute
                            ? " (stage " + std::to_string(opAt(r, w.at).stage) +
                                  ", microbatch " +
                                  std::to_string(opAt(r, w.at).microbatch) + ")"
                            : std::string()) +
                       " for " + program.name(t) +
                       (collective ? ", which rank " + std::to_string(w.needs) +
                                         " has not issued"
                                   : ", whose " +
                                         std::string(send ? "recv" : "send") +
                                         " rank " + std::to_string(w.needs) +
                                         " has not posted");
    return text;
  };

  // A partner that will never come: its rank finished, or is stuck past
  // the point where it posts its transfers to this rank.
  for (int r = 0; r < n; ++r) {
    if (state[r].done)
      continue;
    const Wait &w = waits[r];
    int peer = w.needs;
    if (!state[peer].done && state[peer].pc < state[peer].order.size())
      continue;
    const ProgramOp &t = opAt(r, w.transfer);
    if (t.what == OpClass::Collective) {
      auto issued = collectives[t.over][peer].size();
      return error(r, w.transfer,
                   program.name(t) + " on rank " + std::to_string(r) +
                       " is never matched: rank " + std::to_string(peer) +
                       " issues only " + std::to_string(issued) +
                       " collectives over group \"" + t.over + "\"");
    }
    bool send = t.what == OpClass::Send;
    Channel &ch = send ? channel(r, peer) : channel(peer, r);
    size_t posted = send ? ch.recvs.size() : ch.sends.size();
    return error(r, w.transfer,
                 program.name(t) + " on rank " + std::to_string(r) +
                     " is never matched: rank " + std::to_string(peer) +
                     " posts only " + std::to_string(posted) + " " +
                     (send ? "recvs from" : "sends to") + " rank " +
                     std::to_string(r) + " (a missing " +
                     (send ? "recv" : "send") + ")");
  }

  // Otherwise every stuck rank needs a post from another stuck rank that
  // has not got there: follow them to a cycle.
  std::vector<int> seenAt(n, -1);
  std::vector<int> path;
  int r = first;
  while (seenAt[r] < 0) {
    seenAt[r] = static_cast<int>(path.size());
    path.push_back(r);
    r = waits[r].needs;
  }
  std::vector<int> cycle(path.begin() + seenAt[r], path.end());
  std::string ranks;
  for (size_t k = 0; k < cycle.size(); ++k)
    ranks += (k ? (k + 1 == cycle.size() ? " and " : ", ") : "") +
             std::to_string(cycle[k]);
  std::string message = "deadlock: ranks " + ranks + " wait for each other";
  std::vector<ProgramNote> notes;
  for (int q : cycle) {
    message += "\n  " + waitText(q);
    const Wait &w = waits[q];
    notes.push_back({q, w.at >= 0 ? w.at : w.transfer,
                     "rank " + std::to_string(q) + " waits here"});
  }
  const Wait &head = waits[cycle.front()];
  return error(cycle.front(), head.at >= 0 ? head.at : head.transfer, message,
               std::move(notes));
}

} // namespace

std::optional<ProgramError> zbc::sched::verifyProgram(const Program &program) {
  if (program.actMessages.size() != program.rankOfStage.size() ||
      program.gradMessages.size() != program.rankOfStage.size())
    return error(0, -1, "the program names messages for another number of "
                        "stages");
  if (std::optional<ProgramError> e = checkStructure(program))
    return e;
  Index index;
  index.compute.resize(program.ranks.size());
  index.recv.resize(program.ranks.size());
  for (auto [r, rank] : llvm::enumerate(program.ranks))
    for (auto [i, op] : llvm::enumerate(rank.ops)) {
      if (op.what == OpClass::Compute)
        index.compute[r][{op.stage, op.microbatch, op.kind}] =
            static_cast<int>(i);
      else if (op.what == OpClass::Recv &&
               !index.recv[r]
                    .try_emplace({op.payload, op.stage, op.microbatch, op.key},
                                 static_cast<int>(i))
                    .second)
        return error(static_cast<int>(r), static_cast<int>(i),
                     program.name(op) + " is received twice on rank " +
                         std::to_string(r));
    }
  if (std::optional<ProgramError> e = checkComputeOrder(program))
    return e;
  if (std::optional<ProgramError> e = checkDependences(program, index))
    return e;
  return Execution(program).run();
}

ProgramRun zbc::sched::runProgram(const Program &program) {
  Execution execution(program);
  std::optional<ProgramError> error = execution.run();
  ProgramRun run = execution.result();
  run.error = std::move(error);
  return run;
}
