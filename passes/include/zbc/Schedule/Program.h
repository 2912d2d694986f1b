//===- Program.h - per-rank programs with transfers, and their proof -*- C++ -*-===//
//
// The schedule level without the IR: each rank's ops in issue order
// (computes, sends, receives and groups of transfers issued together), each
// waiting for earlier ops of its rank by index, as a zb.program's `after`
// tokens do. zb-verify-schedule builds one from the IR, `zbc verify` from a
// PyTorch CSV, and `verifyProgram` proves it, or names what is wrong:
//
//  * its compute order: every F and B+W (or BW) once, in order on each rank
//    (ScheduleTable::verify);
//  * dependences (Dependences.h): a product of the same rank is computed
//    earlier; one of another rank arrives by a matching recv that the
//    compute waits for, one recv per message of the stage boundary; a send
//    waits for the compute that makes what it sends;
//  * that every rank terminates, by an abstract execution under the p2p
//    semantics the runtimes share, at their strictest (Note [p2p semantics]);
//  * that each matched pair agrees on payload, stage, microbatch, key and
//    type;
//  * collectives (Note [Collectives in the program]): an all-reduce of a
//    stage's gradients waits for the last compute of the stage that writes
//    them, and the members of each group issue the group's collectives in
//    the same order with the same bytes (the run matches them).
// Memory is the IR's to account (ProgramMemory.h): it needs the tensors.
// Cost: linear in the number of ops plus the group sizes.
//
// Note [p2p semantics]
// A rank issues its ops in order, each once the ops in its `deps` are
// complete, so an op waiting holds up everything after it on the rank, as
// straight-line host code does. A compute completes when issued. Sends and
// receives are non-blocking to issue. Messages between one ordered pair of
// ranks match in issue order (FIFO per peer, no tags). A recv completes
// once its matching send has been issued; a send completes (its buffer free)
// once its matching recv has been posted: rendezvous, never eager
// buffering, which would hide deadlocks that appear only at larger sizes. A
// transfer on a stream completes only after the one before it on the same
// stream of its rank (NCCL serializes the p2p calls of one CUDA stream). A
// group is issued as one unit, once its deps are complete, and completes as
// one, when all its members have. At its end a rank waits for all its
// transfers. This is how MPI's Isend/Irecv/Wait and NCCL's grouped p2p
// behave, and how PyTorch's runtime runs its CSV actions. Depends on this
// note: verifyProgram (VerifyProgram.cpp), zb-insert-p2p (InsertP2P.cpp),
// the runtime (runtime/src/Rank.cpp, MPITransport.cpp).
//
// Note [Collectives in the program]
// A collective (an all-reduce over a group: Note [Collective groups]) is
// non-blocking to issue, like a transfer, and completes once every member
// of its group has issued its matching collective: the k-th collective a
// member issues over a group meets the k-th of every other member, as MPI's
// non-blocking collectives on one communicator and NCCL's on one
// communicator match, so they must agree on what they are and on their
// bytes. A rank waits for its collectives at its end, as for its
// transfers. A sum of gradients (all-reduce, reduce-scatter) waits for, and
// follows, the last compute of its stage that writes them; a gather of
// parameters precedes every compute of its stage, the first waiting for
// it. So a collective joins a wait cycle like a transfer does: the
// run finds a cycle through both, and a reordering names the group, the
// two ranks and the first collective that differs.
//
// Note [Value collectives]
// A collective can also move one microbatch's values rather than a stage's
// gradients or parameters: a tensor named by its phase key, broadcast from
// a root rank to the group, or combined element by element (sum, max) into
// the root or into every member. Vocabulary parallelism needs them: the
// last stage's hidden states go to every rank's shard of the output layer,
// whose softmax maximum, sums and input gradient are combined over the
// pipeline. They follow the rules above: issued without blocking, complete
// once every member has issued its match, matched k-th to k-th per group.
// Members must agree on all of what they are (kind, reduction, root, key,
// microbatch and bytes), since NCCL and MPI would otherwise combine
// different tensors, or different microbatches of one, without an error;
// a root must be a member. Where they sit among the computes is the
// business of the phases that make and read their values.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_SCHEDULE_PROGRAM_H
#define ZBC_SCHEDULE_PROGRAM_H

#include "zbc/Schedule/Dependences.h"

#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace zbc::sched {

/// What a transfer carries across a stage boundary is a product of
/// Dependences.h (Note [Stage boundaries]): "act" or "grad" in its name.
const char *productName(Product product);

enum class OpClass : uint8_t { Compute, Send, Recv, Group, Collective };

/// What a collective does: to a stage's gradients or parameters (Note
/// [Sharded optimizer] in zbc/contracts/Shards.h for ReduceScatter and
/// AllGather), or to one microbatch's values (Note [Value collectives]).
enum class CollectiveKind : uint8_t {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce
};
/// Whether `kind` moves a microbatch's values rather than a stage's
/// gradients or parameters.
inline bool isValueCollective(CollectiveKind kind) {
  return kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
}
/// How a Reduce combines its members' values (Softmax: the merge of
/// zb.vocab_stats' planes, Note [Softmax over vocabulary shards]).
enum class Reduction : uint8_t { Sum, Max, Softmax };

struct ProgramOp {
  OpClass what = OpClass::Compute;
  // Compute: kind, stage, microbatch. Transfers: the producing stage's
  // payload and microbatch, the peer rank, which of the boundary's messages
  // (key, e.g. "out.0") with its type, and the stream (-1: its own).
  Kind kind = Kind::F;
  int stage = 0, microbatch = 0;
  Product payload = Product::Activation;
  int peer = 0;
  std::string key, type;
  int stream = -1;
  /// Ops of the same rank (indices into RankProgram::ops) this op waits for.
  std::vector<int> deps;
  /// Group: its members (transfers, indices). Transfer: its group, or -1.
  std::vector<int> members;
  int group = -1;
  /// Collective: what it does to `stage`'s gradients or parameters, the
  /// group it runs over (Note [Collective groups]), the bytes each member
  /// gives, and the parameters (`key`, for messages). A value collective
  /// (Note [Value collectives]) has no stage (-1): it moves the tensor
  /// `key` (of `type`) of `microbatch`, from or to `root` (-1: every
  /// member), combined by `reduction`.
  CollectiveKind collective = CollectiveKind::AllReduce;
  std::string over;
  int64_t bytes = 0;
  int root = -1;
  Reduction reduction = Reduction::Sum;
};

/// One rank's ops. The issue order is the order of the ops whose `group` is
/// -1; a group's members follow it in `ops` and are issued with it.
struct RankProgram {
  std::vector<ProgramOp> ops;
};

/// One message of a stage boundary: its key in the producing stage ("out.0",
/// "d_in.0") and type.
struct Message {
  std::string key, type;
};

struct Program {
  /// How messages name ops: the papers' "B(1,3)", "send act stage 0 mb 3 to
  /// 1", or the cells of PyTorch's CSV, "1I3", "0SEND_F3", for a program
  /// read from one.
  ScheduleTable::Notation notation = ScheduleTable::Notation::Papers;
  int microbatches = 0;
  std::vector<int> rankOfStage;
  std::vector<RankProgram> ranks;
  /// Per stage, the messages its activation and its input gradient travel
  /// in; an empty list for the input gradient means the stage sends none
  /// (Note [No gradient upstream]), and the dependence on it is void.
  std::vector<std::vector<Message>> actMessages, gradMessages;
  /// The ranks of each "tied:NAME" group its collectives name (Note
  /// [Collective groups]), ascending.
  std::map<std::string, std::vector<int>> tiedHolders;
  /// The ranks of this replica that group `over` spans, `rank` among them
  /// ("replicas": `rank` alone); empty for a group the program does not
  /// know.
  std::vector<int> membersOf(const std::string &over, int rank) const;

  int numStages() const { return static_cast<int>(rankOfStage.size()); }
  /// `op` in this program's notation, for messages.
  std::string name(const ProgramOp &op) const;
  const std::vector<Message> &messages(Product payload, int stage) const {
    return payload == Product::Activation ? actMessages[stage] : gradMessages[stage];
  }
};

/// The key of a boundary's one message in a program without a model (a
/// CSV, a table): the producing stage's first output, "out.0" forward and
/// "d_in.0" backward (the phase keys of zbc/Dialect/ZB/PhaseKeys.h).
const char *boundaryKey(Product product);

/// One message per stage boundary, boundaryKey's, untyped: the messages of
/// a program without a model (a CSV, a table).
void setOneMessagePerBoundary(Program &program);

/// Makes a program whose transfers each name a boundary (read from a
/// compute+comms CSV, with setOneMessagePerBoundary's messages) carry the
/// boundaries' real messages, once `actMessages` and `gradMessages` hold
/// them (from a model): a transfer of a boundary with one message takes its
/// key and type; of several, becomes a group of one transfer per message,
/// issued and completed as one, as PyTorch sends a stage's outputs
/// together; of none (a stage that sends no input gradient: Note [No
/// gradient upstream]) it goes, and the dependences on it with it. The
/// program must have no groups yet; dependences are renumbered. Returns,
/// per rank and new op, the index of the op it came from.
std::vector<std::vector<int>> expandBoundaryTransfers(Program &program);

/// The compute-only program of `table` (its notation kept), with one
/// message per boundary.
Program programOfTable(const ScheduleTable &table);

/// A place in a program, and what to say there.
struct ProgramNote {
  int rank = 0, op = 0;
  std::string message;
};
struct ProgramError {
  int rank = 0, op = -1; // op -1: the rank's end (its final wait)
  std::string message;
  std::vector<ProgramNote> notes;
};

/// Proves `program` (file comment), or returns the first error found.
std::optional<ProgramError> verifyProgram(const Program &program);

/// One execution of `program` under Note [p2p semantics], the ranks taking
/// turns one op at a time (ranks of equal speed), without the static checks
/// of verifyProgram: for every op, the step at which it was issued and
/// completed (-1: never), each transfer's partner (rank, op), and the
/// deadlock or mismatch that stopped it, if any.
struct ProgramRun {
  std::vector<std::vector<int64_t>> issuedAt, completedAt;
  std::vector<std::vector<std::pair<int, int>>> partner;
  std::optional<ProgramError> error;
};
ProgramRun runProgram(const Program &program);

/// Adds the sends and receives a compute-only program needs, with their
/// groups, streams and the waits that free their buffers
/// (InsertTransfers.cpp says where each goes and why). The compute order
/// is kept; a compute's deps must name earlier computes.
llvm::Error insertTransfers(Program &program);

} // namespace zbc::sched

#endif // ZBC_SCHEDULE_PROGRAM_H
