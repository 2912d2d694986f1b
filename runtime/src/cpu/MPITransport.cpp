//===- MPITransport.cpp - the CPU backend's transfers over MPI -------------===//
//
// Transport.h over MPI: one persistent request per transfer op
// (MPI_Send_init / MPI_Recv_init on the replica's pipeline communicator, a
// split of a duplicate of MPI_COMM_WORLD, tag 0, so messages between two
// ranks match in start order), the program's all-reduces as
// MPI_Iallreduce on a communicator per group (Note [Collective groups]:
// non-blocking collectives on one communicator match in issue order, as
// the proof assumes), MPI_Start /
// MPI_Startall to issue a transfer or a group, MPI_Wait / MPI_Waitall to
// complete it. Errors return (MPI_ERRORS_RETURN) and are reported with
// MPI_Error_string.
//
//===----------------------------------------------------------------------===//

#include "../Transport.h"

#include <fmt/format.h>
#include <mpi.h>

#include <cstring>
#include <vector>

namespace zbc::rt {
namespace {

std::string mpiError(const char *what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return fmt::format("{} failed: {}", what, std::string(text, length));
}

class MPITransport final : public Transport {
public:
  explicit MPITransport(MPI_Comm comm) : comm_(comm), pipeline_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int replica() const override { return replica_; }
  int replicas() const override { return replicas_; }

  std::string configure(int pipelineRanks) override {
    if (pipelineRanks < 1 || size_ % pipelineRanks)
      return fmt::format("{} processes are not replicas of a {}-rank pipeline",
                         size_, pipelineRanks);
    replicas_ = size_ / pipelineRanks;
    replica_ = rank_ / pipelineRanks;
    if (replicas_ == 1)
      return {};
    int code = MPI_Comm_split(comm_, replica_, rank_, &pipeline_);
    if (code == MPI_SUCCESS)
      code = MPI_Comm_split(comm_, rank_ % pipelineRanks, rank_, &replicaComm_);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Comm_split", code);
    MPI_Comm_set_errhandler(pipeline_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(replicaComm_, MPI_ERRORS_RETURN);
    return {};
  }

  std::string prepare(const zbc_rt_program &program, char *arena) override {
    requests_.assign(static_cast<size_t>(program.op_count), MPI_REQUEST_NULL);
    reductionRequests_.assign(
        static_cast<size_t>(program.collective_param_count), MPI_REQUEST_NULL);
    moves_.assign(reductionRequests_.size(), Move());
    reductionsOf_.assign(static_cast<size_t>(program.op_count), {0, 0});
    pending_.assign(static_cast<size_t>(program.op_count), 0);
    for (int32_t i = 0; i < program.op_count; ++i) {
      const zbc_rt_op &op = program.ops[i];
      if (op.what != ZBC_RT_OP_SEND && op.what != ZBC_RT_OP_RECV)
        continue;
      const zbc_rt_buffer &buffer = program.buffers[op.buffer];
      if (buffer.bytes > INT32_MAX)
        return fmt::format("{} moves {} bytes, more than one MPI message "
                           "carries",
                           op.name, buffer.bytes);
      int count = static_cast<int>(buffer.bytes);
      int code = op.what == ZBC_RT_OP_SEND
                     ? MPI_Send_init(arena + buffer.offset, count, MPI_BYTE,
                                     op.peer, 0, pipeline_, &requests_[i])
                     : MPI_Recv_init(arena + buffer.offset, count, MPI_BYTE,
                                     op.peer, 0, pipeline_, &requests_[i]);
      if (code != MPI_SUCCESS)
        return mpiError(op.what == ZBC_RT_OP_SEND ? "MPI_Send_init"
                                                  : "MPI_Recv_init",
                        code);
    }
    return {};
  }

  std::string start(int32_t first, int32_t count) override {
    int code = count == 1
                   ? MPI_Start(&requests_[first])
                   : MPI_Startall(count, &requests_[first]);
    if (code != MPI_SUCCESS)
      return mpiError(count == 1 ? "MPI_Start" : "MPI_Startall", code);
    for (int32_t i = first; i < first + count; ++i)
      pending_[i] = 1;
    return {};
  }

  std::string wait(int32_t first, int32_t count) override {
    int code = count == 1 ? MPI_Wait(&requests_[first], MPI_STATUS_IGNORE)
                          : MPI_Waitall(count, &requests_[first],
                                        MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS)
      return mpiError(count == 1 ? "MPI_Wait" : "MPI_Waitall", code);
    for (int32_t i = first; i < first + count; ++i)
      pending_[i] = 0;
    return {};
  }

  std::string waitAll(void (*done)(void *, int32_t), void *context) override {
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (!pending_[i])
        continue;
      int code = MPI_Wait(&requests_[i], MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS)
        return mpiError("MPI_Wait", code);
      pending_[i] = 0;
      done(context, static_cast<int32_t>(i));
    }
    return {};
  }

  bool pending(int32_t op) const override { return pending_[op] != 0; }

  bool anyFailed(bool failed) override {
    int local = failed ? 1 : 0, any = 0;
    MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, comm_);
    return any != 0;
  }

  bool allEqual(uint64_t value) override {
    unsigned long long local = value, lo = 0, hi = 0;
    MPI_Allreduce(&local, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm_);
    MPI_Allreduce(&local, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm_);
    return lo == hi;
  }

  double sumOverPipeline(double value) override {
    double total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, pipeline_);
    return total;
  }

  double sumOverReplicas(double value) override {
    if (replicas_ == 1)
      return value;
    double total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, replicaComm_);
    return total;
  }

  std::string prepareCommunicators(const zbc_rt_program &program) override {
    int pipelineRank = rank_ % program.ranks;
    tiedComms_.assign(static_cast<size_t>(program.tied_count), MPI_COMM_NULL);
    for (int32_t g = 0; g < program.tied_count; ++g) {
      const zbc_rt_tied &tied = program.tied[g];
      bool holds = false;
      for (int32_t i = 0; i < tied.rank_count; ++i)
        holds |= program.tied_ranks[tied.first_rank + i] == pipelineRank;
      int code = MPI_Comm_split(comm_, holds ? 0 : MPI_UNDEFINED, rank_,
                                &tiedComms_[g]);
      if (code != MPI_SUCCESS)
        return mpiError("MPI_Comm_split (a tied parameter's holders)", code);
      if (holds)
        MPI_Comm_set_errhandler(tiedComms_[g], MPI_ERRORS_RETURN);
    }
    return {};
  }

  MPI_Comm commOf(int32_t group) const {
    return group >= 0                        ? tiedComms_[group]
           : group == ZBC_RT_GROUP_PIPELINE ? pipeline_
                                            : replicaComm_;
  }
  /// A group of one process (the replicas of a one-replica job) moves
  /// nothing.
  bool alone(int32_t group) const {
    return group == ZBC_RT_GROUP_REPLICAS && replicas_ == 1;
  }
  /// The next request of op `op`'s collective, or an error.
  std::string nextRequest(int32_t op, MPI_Request *&request) {
    if (reductions_ == reductionRequests_.size())
      return "more gradients in flight than the program's collectives hold";
    auto &[first, count] = reductionsOf_[op];
    if (count == 0)
      first = reductions_;
    ++count;
    request = &reductionRequests_[reductions_++];
    return {};
  }

  std::string startAllReduce(int32_t op, float *data, int64_t n,
                             int32_t group) override {
    if (alone(group))
      return {};
    if (n > INT32_MAX)
      return fmt::format("a gradient of {} elements is more than one "
                         "all-reduce takes",
                         n);
    MPI_Request *request = nullptr;
    if (std::string error = nextRequest(op, request); !error.empty())
      return error;
    int code = MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n),
                              MPI_FLOAT, MPI_SUM, commOf(group), request);
    return code == MPI_SUCCESS ? "" : mpiError("MPI_Iallreduce", code);
  }

  std::string startReduceScatter(int32_t op, float *data, float *into,
                                 int64_t shard, int32_t group) override {
    if (alone(group))
      return {};
    if (shard > INT32_MAX)
      return fmt::format("a shard of {} elements is more than one "
                         "reduce-scatter takes",
                         shard);
    MPI_Request *request = nullptr;
    if (std::string error = nextRequest(op, request); !error.empty())
      return error;
    // In place, MPI leaves this member's shard of the sum at the start of
    // the buffer; it moves to its place (data + k shard) once complete.
    int member = 0;
    MPI_Comm_rank(commOf(group), &member);
    if (member > 0 && !into)
      moves_[request - reductionRequests_.data()] = {
          data + member * shard, data, shard * sizeof(float)};
    int code = MPI_Ireduce_scatter_block(into ? data : MPI_IN_PLACE,
                                         into ? into : data,
                                         static_cast<int>(shard), MPI_FLOAT,
                                         MPI_SUM, commOf(group), request);
    return code == MPI_SUCCESS ? "" : mpiError("MPI_Ireduce_scatter_block",
                                               code);
  }

  std::string startAllGather(int32_t op, char *data, int64_t shardBytes,
                             int32_t group) override {
    if (alone(group))
      return {};
    if (shardBytes > INT32_MAX)
      return fmt::format("a shard of {} bytes is more than one all-gather "
                         "takes",
                         shardBytes);
    MPI_Request *request = nullptr;
    if (std::string error = nextRequest(op, request); !error.empty())
      return error;
    int code = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data,
                              static_cast<int>(shardBytes), MPI_BYTE,
                              commOf(group), request);
    return code == MPI_SUCCESS ? "" : mpiError("MPI_Iallgather", code);
  }

  /// Requests [first, first + count) are complete: the moves they left.
  void finishMoves(size_t first, size_t count) {
    for (size_t i = first; i < first + count; ++i)
      if (Move &move = moves_[i]; move.bytes) {
        std::memmove(move.to, move.from, move.bytes);
        move = Move();
      }
  }

  std::string waitCollective(int32_t op) override {
    auto &[first, count] = reductionsOf_[op];
    int code = MPI_Waitall(static_cast<int>(count), &reductionRequests_[first],
                           MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Waitall (a collective)", code);
    finishMoves(first, count);
    count = 0;
    return {};
  }

  std::string finishCollectives() override {
    // Those waited for already are MPI_REQUEST_NULL: no-ops here.
    int code = MPI_Waitall(static_cast<int>(reductions_),
                           reductionRequests_.data(), MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Waitall (the collectives)", code);
    finishMoves(0, reductions_);
    reductions_ = 0;
    for (auto &[first, count] : reductionsOf_)
      count = 0;
    return {};
  }

  int64_t maximum(int64_t value) override {
    long long local = value, largest = 0;
    MPI_Allreduce(&local, &largest, 1, MPI_LONG_LONG, MPI_MAX, comm_);
    return largest;
  }

  std::vector<uint64_t> allGather(uint64_t value) override {
    std::vector<unsigned long long> all(static_cast<size_t>(size_));
    unsigned long long local = value;
    MPI_Allgather(&local, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1,
                  MPI_UNSIGNED_LONG_LONG, comm_);
    return std::vector<uint64_t>(all.begin(), all.end());
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  void finish() override {
    for (MPI_Request &request : requests_)
      if (request != MPI_REQUEST_NULL)
        MPI_Request_free(&request);
    if (pipeline_ != comm_)
      MPI_Comm_free(&pipeline_);
    if (replicaComm_ != MPI_COMM_NULL)
      MPI_Comm_free(&replicaComm_);
    for (MPI_Comm &tied : tiedComms_)
      if (tied != MPI_COMM_NULL)
        MPI_Comm_free(&tied);
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

private:
  MPI_Comm comm_;     // the job
  MPI_Comm pipeline_; // this replica's pipeline (the job, with one replica)
  MPI_Comm replicaComm_ = MPI_COMM_NULL; // this pipeline rank's replicas
  int rank_ = 0, size_ = 0, replica_ = 0, replicas_ = 1;
  std::vector<MPI_Comm> tiedComms_; // per tied parameter: its holders
  std::vector<MPI_Request> reductionRequests_;
  size_t reductions_ = 0;
  /// Per op, its collective's requests: reductionRequests_[first, +count).
  std::vector<std::pair<size_t, size_t>> reductionsOf_;
  /// Per request, the copy it leaves for its completion (a reduce-scatter's
  /// shard to its place).
  struct Move {
    void *to = nullptr;
    const void *from = nullptr;
    size_t bytes = 0;
  };
  std::vector<Move> moves_;
  std::vector<MPI_Request> requests_;
  std::vector<uint8_t> pending_;
};

} // namespace

Transport *createMPITransport(int *argc, char ***argv, std::string &error) {
  int code = MPI_Init(argc, argv);
  if (code != MPI_SUCCESS) {
    error = mpiError("MPI_Init", code);
    return nullptr;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return new MPITransport(comm);
}

} // namespace zbc::rt
