//===- InsertTransfers.cpp - the sends and receives a program needs -------===//
//
// insertTransfers (Program.h): for every dependence (Dependences.h) whose
// product is made on another rank, one send on the producer's rank and one
// recv on the consumer's, per message of the stage boundary, placed so that
// the program verifies under Note [p2p semantics] and compute rarely waits:
//
//  * A send goes right after the compute that makes what it sends, waiting
//    for it; the sends of one compute are one group.
//  * The send's buffer is free once the peer has posted the recv
//    (rendezvous). A compute that waits for the send marks that point in
//    the program (Note [Program memory]), but a wait placed by rule (say, the
//    next compute of the stage) can close a cycle with the peer, which posts
//    the recv only after it has waited for something of ours. So the waits
//    are placed on a run: the program without them is executed once (ranks
//    taking turns, runProgram), and each send (group) is waited for by the
//    first later compute of its rank that the run issued after the send
//    completed. That run is then a run of the program with the waits too,
//    so they can never deadlock it; and they free each buffer about when the
//    peer takes the data.
//  * A recv is posted one compute ahead of its consumer (before the compute
//    that runs just before it), so the transfer overlaps that compute and
//    the sender's send completes early; the consumer waits for the recv.
//    The recvs one compute needs, posted together, are one group.
//  * Messages between two ranks match in issue order, with no tags, so a
//    rank posts its recvs from a peer in the order the peer sends them: a
//    recv that the order puts before one that is needed sooner is posted
//    (earlier) with it. The sends' order is fixed by the sender's computes.
//  * Every transfer gets its own stream per peer and direction (2 * peer for
//    sends to it, 2 * peer + 1 for recvs from it), so transfers to different
//    peers never wait for each other.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Program.h"
#include "Core/Support.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace zbc::sched;

namespace {

/// A transfer to place: the op, and the slot it goes to (slot k: just
/// before the rank's k-th compute; slot n: after the last).
struct Placed {
  ProgramOp op;
  int slot = 0;
  int consumer = -1; // recv: the compute index (into computes) it feeds
  int producer = -1; // send: the compute index it sends from
  int64_t order = 0; // recv: its place in its channel's send order
};

} // namespace

llvm::Error zbc::sched::insertTransfers(Program &program) {
  int numRanks = static_cast<int>(program.ranks.size());
  int numStages = program.numStages();
  for (const RankProgram &rank : program.ranks)
    for (const ProgramOp &op : rank.ops)
      if (op.what != OpClass::Compute)
        return fail("the program has transfers already; insert them into a "
                    "compute-only program");

  // The computes of each rank, in order, with the deps they already have.
  std::vector<std::vector<ProgramOp>> computes(numRanks);
  for (int r = 0; r < numRanks; ++r)
    computes[r] = program.ranks[r].ops;

  // Sends first: their order on each channel fixes the recvs' order.
  std::vector<std::vector<Placed>> placed(numRanks);
  // Per channel (from, to): each message's position in the send order.
  std::map<std::tuple<int, int, Product, int, int, std::string>, int64_t>
      sendOrder;
  std::map<std::pair<int, int>, int64_t> channelCount;
  for (int r = 0; r < numRanks; ++r) {
    for (int i = 0, n = static_cast<int>(computes[r].size()); i < n; ++i) {
      const ProgramOp &c = computes[r][i];
      std::optional<ProductRef> made = productOf({c.kind, c.stage, c.microbatch});
      if (!made)
        continue;
      Product payload = made->product;
      int consumer = consumerOf(made->product, c.stage);
      if (consumer < 0 || consumer >= numStages)
        continue;
      int to = program.rankOfStage[consumer];
      if (to == r)
        continue; // same rank: the consumer reads it in place
      for (const Message &message : program.messages(payload, c.stage)) {
        Placed send;
        send.op.what = OpClass::Send;
        send.op.payload = payload;
        send.op.stage = c.stage;
        send.op.microbatch = c.microbatch;
        send.op.peer = to;
        send.op.key = message.key;
        send.op.type = message.type;
        send.op.stream = 2 * to;
        send.slot = i + 1;
        send.producer = i;
        placed[r].push_back(send);
        sendOrder[{r, to, payload, c.stage, c.microbatch, message.key}] =
            channelCount[{r, to}]++;
      }
    }
  }

  // Recvs: one compute ahead of the consumer, no later than any recv the
  // peer's send order puts after them.
  for (int r = 0; r < numRanks; ++r) {
    std::vector<Placed> recvs;
    for (int i = 0, n = static_cast<int>(computes[r].size()); i < n; ++i) {
      const ProgramOp &c = computes[r][i];
      forEachDependence({c.kind, c.stage, c.microbatch}, numStages,
                        [&](const ProductRef &d) {
        int from = program.rankOfStage[d.stage];
        if (from == r)
          return;
        Product payload = d.product;
        for (const Message &message : program.messages(payload, d.stage)) {
          Placed recv;
          recv.op.what = OpClass::Recv;
          recv.op.payload = payload;
          recv.op.stage = d.stage;
          recv.op.microbatch = d.microbatch;
          recv.op.peer = from;
          recv.op.key = message.key;
          recv.op.type = message.type;
          recv.op.stream = 2 * from + 1;
          recv.slot = std::max(0, i - 1);
          recv.consumer = i;
          auto it = sendOrder.find(
              {from, r, payload, d.stage, d.microbatch, message.key});
          recv.order = it == sendOrder.end() ? -1 : it->second;
          recvs.push_back(recv);
        }
      });
    }
    // Per peer, in the peer's send order: each recv's slot is at most the
    // slot of every recv after it (a suffix minimum). A recv whose send does
    // not exist (order -1) cannot be matched; the verifier names it.
    std::map<int, std::vector<Placed *>> byPeer;
    for (Placed &recv : recvs)
      byPeer[recv.op.peer].push_back(&recv);
    for (auto &[peer, list] : byPeer) {
      std::stable_sort(list.begin(), list.end(), [](Placed *a, Placed *b) {
        return a->order < b->order;
      });
      int bound = std::numeric_limits<int>::max();
      for (auto it = list.rbegin(); it != list.rend(); ++it) {
        bound = std::min(bound, (*it)->slot);
        (*it)->slot = bound;
      }
    }
    llvm::append_range(placed[r], recvs);
  }

  // Rebuild each rank: at each slot the recvs (in send order), then the
  // computes and sends.
  for (int r = 0; r < numRanks; ++r) {
    std::vector<Placed> &list = placed[r];
    std::stable_sort(list.begin(), list.end(), [](const Placed &a, const Placed &b) {
      bool aRecv = a.op.what == OpClass::Recv, bRecv = b.op.what == OpClass::Recv;
      if (a.slot != b.slot)
        return a.slot < b.slot;
      if (aRecv != bRecv)
        return !aRecv; // a slot's sends (from the compute before it) first
      return aRecv ? a.order < b.order : false;
    });
    int n = static_cast<int>(computes[r].size());
    std::vector<ProgramOp> ops;
    std::vector<int> computeIndex(n, -1);
    // The op (group or single transfer) each compute waits for.
    std::vector<std::vector<int>> waitsFor(n);
    size_t next = 0;
    auto emitTransfers = [&](int slot, OpClass what) {
      // One group: the transfers of one compute at this slot (its sends,
      // or the recvs it needs, consecutive in issue order), so that a
      // compute waits for nothing it does not need.
      std::vector<Placed *> here;
      auto owner = [](const Placed &p) { return std::max(p.producer, p.consumer); };
      while (next < list.size() && list[next].slot == slot &&
             list[next].op.what == what &&
             (here.empty() || owner(list[next]) == owner(*here.front())))
        here.push_back(&list[next++]);
      if (here.empty())
        return -1;
      auto depsOf = [&](const Placed &p) {
        std::vector<int> deps;
        if (p.producer >= 0)
          deps.push_back(computeIndex[p.producer]);
        return deps;
      };
      int head = static_cast<int>(ops.size());
      if (here.size() == 1) {
        ops.push_back(here[0]->op);
        ops.back().deps = depsOf(*here[0]);
      } else {
        ProgramOp group;
        group.what = OpClass::Group;
        ops.push_back(group);
        for (Placed *p : here) {
          for (int d : depsOf(*p))
            if (!llvm::is_contained(ops[head].deps, d))
              ops[head].deps.push_back(d);
          ops[head].members.push_back(static_cast<int>(ops.size()));
          ops.push_back(p->op);
          ops.back().group = head;
        }
      }
      for (Placed *p : here)
        if (p->consumer >= 0 && !llvm::is_contained(waitsFor[p->consumer], head))
          waitsFor[p->consumer].push_back(head);
      return head;
    };
    for (int slot = 0; slot <= n; ++slot) {
      // Sends of the compute before this slot, then the recvs posted here.
      emitTransfers(slot, OpClass::Send);
      while (emitTransfers(slot, OpClass::Recv) >= 0)
        ;
      if (slot == n)
        break;
      ProgramOp c = computes[r][slot];
      std::vector<int> deps;
      for (int d : c.deps) // same-rank deps: earlier computes
        if (d >= 0 && d < slot)
          deps.push_back(computeIndex[d]);
      for (int w : waitsFor[slot])
        deps.push_back(w);
      c.deps = std::move(deps);
      computeIndex[slot] = static_cast<int>(ops.size());
      ops.push_back(std::move(c));
    }
    if (next != list.size())
      return fail("rank " + llvm::Twine(r) +
                  ": internal error placing transfers");
    program.ranks[r].ops = std::move(ops);
  }

  // The waits that free the send buffers, placed on a run (file comment).
  ProgramRun run = runProgram(program);
  if (run.error)
    return fail("the transfers inserted do not run: " + run.error->message);
  for (int r = 0; r < numRanks; ++r) {
    std::vector<ProgramOp> &ops = program.ranks[r].ops;
    const std::vector<int64_t> &issuedAt = run.issuedAt[r];
    for (int i = 0, n = static_cast<int>(ops.size()); i < n; ++i) {
      const ProgramOp &op = ops[i];
      bool sends = op.what == OpClass::Send ||
                   (op.what == OpClass::Group &&
                    ops[op.members.front()].what == OpClass::Send);
      if (op.group >= 0 || !sends)
        continue;
      int64_t free = run.completedAt[r][i];
      for (int k = i + 1; k < n; ++k)
        if (ops[k].what == OpClass::Compute && !isCopy(ops[k].kind) &&
            issuedAt[k] > free) { // a copy queue waits for no send
          ops[k].deps.push_back(i);
          break;
        }
    }
  }
  return llvm::Error::success();
}
