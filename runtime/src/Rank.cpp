//===- Rank.cpp - the calls of the rank's order ---------------------------===//
//
// What the generated `step` calls, op by op: computes (a phase function run
// on its frame), transfers and copies of stashes issued and waited for, and
// the end-of-compute optimizer updates (Optimizer.cpp). While the rank evaluates (rank->
// evaluating), the same order runs forward only: computes other than F,
// transfers of gradients and updates are skipped on every rank alike, so
// the activation transfers left still match in order (each pair is skipped
// or kept on both sides) and every wait that remains waited in the full
// order for the same transfers.
//
//===----------------------------------------------------------------------===//

#include "Rank.h"

#include <fmt/format.h>

#include <chrono>

namespace zbc::rt {

double Profile::now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

zbc_rt_status fail(zbc_rt_rank *rank, const std::string &message) {
  if (!rank->error.empty())
    return ZBC_RT_ERROR; // the first failure is the one to report
  const zbc_rt_program &p = *rank->program;
  std::string where = fmt::format("rank {}", p.rank);
  if (rank->transport && rank->transport->replicas() > 1)
    where += fmt::format(" of replica {}", rank->transport->replica());
  if (rank->op >= 0)
    where += fmt::format(", {} (op {} of its order)", p.ops[rank->op].name,
                         rank->op);
  where += rank->evaluating
               ? fmt::format(", evaluation after step {}", rank->step + 1)
               : fmt::format(", step {}", rank->step + 1);
  rank->error = where + ": " + message;
  return ZBC_RT_ERROR;
}

int32_t resolve(zbc_rt_rank *rank, int32_t id) {
  const zbc_rt_program &p = *rank->program;
  if (id < 0) {
    int32_t slot = -1 - id;
    if (!rank->frame || rank->op < 0 || slot >= rank->frameSize) {
      fail(rank, fmt::format("frame slot {} outside the running compute's "
                             "frame",
                             slot));
      return -1;
    }
    id = rank->frame[slot];
  }
  if (id < 0 || id >= p.buffer_count) {
    fail(rank, fmt::format("buffer {} outside the program's {} buffers", id,
                           p.buffer_count));
    return -1;
  }
  return id;
}

BatchPosition batchPosition(const zbc_rt_rank *rank, int32_t microbatch) {
  BatchPosition at;
  at.heldOut = rank->evaluating;
  at.batch = rank->evaluating ? rank->evalBatch : rank->step;
  // Replica d reads microbatches d m ... d m + m - 1 of the job's D m.
  int32_t m = rank->program->microbatches;
  at.microbatch = rank->transport->replica() * m + microbatch;
  at.microbatches = rank->transport->replicas() * m;
  return at;
}

void transferDone(void *context, int32_t op) {
  auto *rank = static_cast<zbc_rt_rank *>(context);
  const zbc_rt_op &o = rank->program->ops[op];
  rank->timeline.end(op, Profile::now());
  if (o.what == ZBC_RT_OP_SEND)
    rank->ledger.sendCompleted(o.buffer);
  else if (o.what == ZBC_RT_OP_RECV)
    rank->ledger.recvCompleted(o.buffer);
}

namespace {

/// Where buffer `b` lies: in the arena, or (a stash's host copy) in the
/// host arena.
char *placeOf(zbc_rt_rank *rank, int32_t b) {
  const zbc_rt_buffer &buffer = rank->program->buffers[b];
  return (buffer.kind == ZBC_RT_HOST ? rank->device->hostArena()
                                     : rank->device->arena()) +
         buffer.offset;
}

/// The (from, to) buffer pair `k` of copy op `o` (its frame).
std::pair<int32_t, int32_t> copyPair(const zbc_rt_program &p,
                                     const zbc_rt_op &o, int32_t k) {
  return {p.frames[o.frame + 2 * k], p.frames[o.frame + 2 * k + 1]};
}

/// Copy `op` is done: its bytes are where it put them, its source free. Its
/// time in the timeline is when the copy ran, where the device knows it,
/// else from its issue to its wait.
void copyDone(zbc_rt_rank *rank, int32_t op) {
  const zbc_rt_program &p = *rank->program;
  const zbc_rt_op &o = p.ops[op];
  double begin = rank->copyIssuedAt[op], end = Profile::now();
  rank->device->copyInterval(op, begin, end);
  rank->timeline.begin(op, begin);
  rank->timeline.end(op, end);
  for (int32_t k = 0; k < o.frame_size / 2; ++k) {
    auto [from, to] = copyPair(p, o, k);
    rank->ledger.copyCompleted(from, to);
  }
  rank->copyIssuedAt[op] = -1;
}

} // namespace

void finishCopies(zbc_rt_rank *rank) {
  if (rank->program->host_arena_bytes == 0)
    return; // a program without copies: nothing to look for each step
  for (int32_t op = 0; op < rank->program->op_count; ++op)
    if (rank->copyIssuedAt[op] >= 0) {
      if (std::string error = rank->device->waitCopy(op); !error.empty())
        fail(rank, error);
      copyDone(rank, op);
    }
}

} // namespace zbc::rt

using namespace zbc::rt;

extern "C" zbc_rt_status zbc_rt_compute(zbc_rt_rank *rank, int32_t op,
                                        zbc_rt_phase_fn phase) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || !zbc_rt_op_is_compute(p.ops[op].what))
    return fail(rank, fmt::format("zbc_rt_compute of op {}, which is not a "
                                  "compute",
                                  op));
  const zbc_rt_op &o = p.ops[op];
  if (rank->evaluating && o.what != ZBC_RT_OP_F)
    return ZBC_RT_OK;
  // The W of a fused BW of a split stage: the same op again, W's frame.
  bool again = rank->op == op && o.second_frame >= 0;
  rank->op = op;
  rank->frame = p.frames + (again ? o.second_frame : o.frame);
  rank->frameSize = again ? o.second_frame_size : o.frame_size;
  if (!again)
    rank->ledger.beginOp(p.ops[op].position);
  double begin = Profile::now();
  rank->timeline.begin(op, begin);
  rank->device->computeBegins(op);
  zbc_rt_status status = phase(rank);
  rank->device->computeEnds(op);
  rank->timeline.end(op, Profile::now());
  size_t slot = static_cast<size_t>(o.stage) * ZBC_RT_COMPUTE_KIND_COUNT +
                static_cast<size_t>(o.what);
  if (!rank->evaluating && slot < rank->profile.computeSeconds.size()) {
    if (!rank->device->timesComputes()) // else at the step's end (Main.cpp)
      rank->profile.computeSeconds[slot] += Profile::now() - begin;
    rank->profile.computeCount[slot] += again ? 0 : 1;
  }
  rank->ledger.endOp(); // again for a second phase: the sweep takes the max
  return status;
}

namespace {

/// The transfers op `op` stands for (itself, or a group's members), less
/// those evaluation skips; false if none is left.
struct Members {
  int32_t first = 0, count = 0;
  bool all = true; // every member, so that they start and end as one
};

Members membersOf(const zbc_rt_rank *rank, int32_t op) {
  const zbc_rt_op &o = rank->program->ops[op];
  Members m;
  m.first = op;
  m.count = 1;
  if (o.what == ZBC_RT_OP_GROUP) {
    m.first = o.first_member;
    m.count = o.member_count;
  }
  if (rank->evaluating)
    for (int32_t i = m.first; i < m.first + m.count; ++i)
      m.all = m.all && !rank->program->ops[i].gradient;
  return m;
}

bool skipped(const zbc_rt_rank *rank, int32_t op) {
  return rank->evaluating && rank->program->ops[op].gradient;
}

/// `call(first, count)` on the members as one unit, or on each one that
/// evaluation keeps; the first error.
template <typename Call>
std::string onMembers(const zbc_rt_rank *rank, const Members &m, Call call) {
  if (m.all)
    return call(m.first, m.count);
  for (int32_t i = m.first; i < m.first + m.count; ++i)
    if (!skipped(rank, i))
      if (std::string error = call(i, 1); !error.empty())
        return error;
  return {};
}

zbc_rt_status issue(zbc_rt_rank *rank, int32_t op, int32_t what) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || p.ops[op].what != what)
    return fail(rank, fmt::format("op {} is not the transfer issued", op));
  rank->op = op;
  rank->frame = nullptr;
  rank->frameSize = 0;
  rank->ledger.beginOp(p.ops[op].position);
  Members m = membersOf(rank, op);
  for (int32_t i = m.first; i < m.first + m.count; ++i) {
    if (skipped(rank, i))
      continue;
    const zbc_rt_op &t = p.ops[i];
    std::string error = t.what == ZBC_RT_OP_SEND
                            ? rank->ledger.sendStarted(t.buffer)
                            : rank->ledger.recvStarted(t.buffer);
    if (!error.empty())
      return fail(rank, error);
  }
  double begin = Profile::now();
  rank->timeline.begin(op, begin);
  std::string error;
  {
    InsideMPI mpi(rank);
    error = onMembers(rank, m, [&](int32_t first, int32_t count) {
      return rank->transport->start(first, count);
    });
  }
  rank->profile.commSeconds += Profile::now() - begin;
  if (!error.empty())
    return fail(rank, error);
  return ZBC_RT_OK;
}

} // namespace

extern "C" zbc_rt_status zbc_rt_send(zbc_rt_rank *rank, int32_t op) {
  return issue(rank, op, ZBC_RT_OP_SEND);
}
extern "C" zbc_rt_status zbc_rt_recv(zbc_rt_rank *rank, int32_t op) {
  return issue(rank, op, ZBC_RT_OP_RECV);
}
extern "C" zbc_rt_status zbc_rt_group(zbc_rt_rank *rank, int32_t op) {
  return issue(rank, op, ZBC_RT_OP_GROUP);
}

namespace {

/// Note [Offload in the IR]: issues copy `op` on the device's copy queue,
/// after telling the ledger what it reads and fills. While evaluating no
/// backward reads a stash: copies are skipped.
zbc_rt_status issueCopy(zbc_rt_rank *rank, int32_t op, int32_t what) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || p.ops[op].what != what)
    return fail(rank, fmt::format("op {} is not the {} issued", op,
                                  zbc_rt_op_spelling(what)));
  if (rank->evaluating)
    return ZBC_RT_OK;
  const zbc_rt_op &o = p.ops[op];
  rank->op = op;
  rank->frame = nullptr;
  rank->frameSize = 0;
  rank->ledger.beginOp(o.position);
  int32_t count = o.frame_size / 2;
  Device::CopyPiece *pieces = rank->copyPieces.data() + o.frame;
  for (int32_t k = 0; k < count; ++k) {
    auto [from, to] = copyPair(p, o, k);
    if (from < 0 || from >= p.buffer_count || to < 0 ||
        to >= p.buffer_count || p.buffers[from].bytes != p.buffers[to].bytes)
      return fail(rank, fmt::format("copies buffer {} into {}, not two "
                                    "buffers of one size",
                                    from, to));
    if (std::string error = rank->ledger.copyStarted(from, to); !error.empty())
      return fail(rank, error);
    pieces[k] = {placeOf(rank, to), placeOf(rank, from), p.buffers[from].bytes};
  }
  double issued = Profile::now();
  if (std::string error = rank->device->startCopy(op, pieces, count);
      !error.empty())
    return fail(rank, error);
  rank->copyIssuedAt[op] = issued;
  ++rank->profile.copyCount;
  return ZBC_RT_OK;
}

zbc_rt_status waitForCopy(zbc_rt_rank *rank, int32_t op) {
  if (rank->evaluating)
    return ZBC_RT_OK;
  rank->op = op;
  rank->frame = nullptr;
  rank->frameSize = 0;
  if (rank->copyIssuedAt[op] < 0)
    return fail(rank, fmt::format("waits for {}, which was not issued or was "
                                  "waited for already",
                                  rank->program->ops[op].name));
  double begin = Profile::now();
  std::string error = rank->device->waitCopy(op);
  rank->profile.copyWaitSeconds += Profile::now() - begin;
  if (!error.empty())
    return fail(rank, error);
  copyDone(rank, op);
  return ZBC_RT_OK;
}

} // namespace

extern "C" zbc_rt_status zbc_rt_offload(zbc_rt_rank *rank, int32_t op) {
  return issueCopy(rank, op, ZBC_RT_OP_OFFLOAD);
}
extern "C" zbc_rt_status zbc_rt_reload(zbc_rt_rank *rank, int32_t op) {
  return issueCopy(rank, op, ZBC_RT_OP_RELOAD);
}

extern "C" zbc_rt_status zbc_rt_wait(zbc_rt_rank *rank, int32_t op) {
  const zbc_rt_program &p = *rank->program;
  if (op < 0 || op >= p.op_count || p.ops[op].what < ZBC_RT_OP_SEND)
    return fail(rank, fmt::format("zbc_rt_wait of op {}, not a transfer or "
                                  "a copy",
                                  op));
  if (zbc_rt_op_is_copy(p.ops[op].what))
    return waitForCopy(rank, op);
  if (zbc_rt_op_is_collective(p.ops[op].what)) {
    // Evaluation sums no gradients; it gathers the parameters it reads.
    if (rank->evaluating && p.ops[op].what != ZBC_RT_OP_ALL_GATHER)
      return ZBC_RT_OK;
    std::string error;
    {
      InsideMPI mpi(rank, p.ops[op].name);
      error = rank->transport->waitCollective(op);
    }
    if (error.empty())
      error = collectiveCompleted(rank, op);
    return error.empty() ? ZBC_RT_OK : fail(rank, error);
  }
  Members m = membersOf(rank, op);
  bool any = false;
  for (int32_t i = m.first; i < m.first + m.count; ++i) {
    if (skipped(rank, i))
      continue;
    any = true;
    if (!rank->transport->pending(i))
      return fail(rank, fmt::format("waits for {}, which was not issued or "
                                    "was waited for already",
                                    p.ops[op].name));
  }
  if (!any)
    return ZBC_RT_OK;
  rank->op = op;
  rank->frame = nullptr;
  rank->frameSize = 0;
  double begin = Profile::now();
  std::string error;
  {
    InsideMPI mpi(rank);
    error = onMembers(rank, m, [&](int32_t first, int32_t count) {
      return rank->transport->wait(first, count);
    });
  }
  double now = Profile::now();
  rank->profile.commSeconds += now - begin;
  rank->timeline.end(op, now);
  if (!error.empty())
    return fail(rank, error);
  for (int32_t i = m.first; i < m.first + m.count; ++i)
    if (!skipped(rank, i))
      transferDone(rank, i);
  return ZBC_RT_OK;
}
