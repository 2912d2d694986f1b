//===- NcclTransport.cpp - the CUDA backend's transfers over NCCL ---------===//
//
// Transport.h over NCCL, GPU to GPU:
//  - Bootstrap: under mpirun/srun, MPI gives the rank and size and rank 0's
//    ncclUniqueId reaches the others by MPI_Bcast (MPI does nothing else);
//    without MPI, ZBC_RANK and ZBC_RANKS name them and NCCL_COMM_ID the
//    address every rank's ncclGetUniqueId then agrees on (one process per
//    rank, started by any launcher).
//  - Transfers: one two-rank communicator per direction of every pair of
//    pipeline ranks that exchange anything (split from the job's), with a
//    stream each, so that a rank's sends and receives progress
//    independently, as MPI's do, and messages between two ranks match in
//    start order (Note [p2p semantics]). A transfer's stream first waits
//    for an event recorded on the compute stream where the order issues it
//    (its buffer is written, or free), a group is one ncclGroupStart/End,
//    and `wait` makes the compute stream wait for the transfer's event: the
//    host never blocks on a transfer inside a step.
//  - Gradients: ncclAllReduce over the replicas of a pipeline rank (a split
//    per pipeline rank) or a tied parameter's holders (a split per tied
//    parameter) on a reduction stream ordered the same way.
//  - The runtime's small collectives (a failure anywhere, fingerprints,
//    the loss, the norm) are NCCL all-reduces of a few bytes, waited for by
//    polling: a host wait polls the communicators' asynchronous errors
//    (ncclCommGetAsyncError), so a peer that fails ends the wait with its
//    error, and the watchdog's --timeout ends one that hangs; every
//    communicator is then aborted (ncclCommAbort) before the rank exits.
//
//===----------------------------------------------------------------------===//

#include "../Transport.h"

#include "CudaCheck.h"
#include "CudaDevice.h"

#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

namespace zbc::rt::cuda {
namespace {

/// An environment variable as an integer, or `fallback`.
int envInt(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

/// Whether a launcher that speaks MPI started this process.
bool launchedByMPI() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                           "MPI_LOCALNRANKS"})
    if (std::getenv(name))
      return true;
  return false;
}

/// One direction of a pair of pipeline ranks: a two-rank communicator
/// (the sender is its rank 0) and this rank's stream for it.
struct Channel {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int peerInComm = 0;
};

/// A transfer op of the program.
struct Transfer {
  int channel = -1;
  bool send = false;
  void *data = nullptr;
  size_t bytes = 0;
  cudaEvent_t ready = nullptr, done = nullptr;
};

class NcclTransport final : public Transport {
public:
  NcclTransport(Device *device, bool mpi, int rank, int size)
      : device_(device), compute_(computeStreamOf(device)), mpi_(mpi),
        rank_(rank), size_(size) {}

  /// Creates the job's communicator.
  std::string init() {
    ncclUniqueId id;
    if (mpi_) {
      if (rank_ == 0)
        ZBC_NCCL_TRY(ncclGetUniqueId(&id));
      if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD) !=
          MPI_SUCCESS)
        return "MPI_Bcast of the NCCL unique id failed";
    } else {
      // NCCL_COMM_ID set: every rank's id names the same root.
      ZBC_NCCL_TRY(ncclGetUniqueId(&id));
    }
    ZBC_NCCL_TRY(ncclCommInitRank(&world_, size_, id, rank_));
    comms_.push_back(world_);
    ZBC_CUDA_TRY(cudaStreamCreateWithFlags(&control_, cudaStreamNonBlocking));
    ZBC_CUDA_TRY(cudaStreamCreateWithFlags(&reduce_, cudaStreamNonBlocking));
    ZBC_CUDA_TRY(cudaEventCreateWithFlags(&reduceReady_,
                                          cudaEventDisableTiming));
    ZBC_CUDA_TRY(cudaEventCreateWithFlags(&reduceDone_,
                                          cudaEventDisableTiming));
    scratchBytes_ = static_cast<size_t>(size_) * 8 + 64;
    ZBC_CUDA_TRY(cudaMalloc(&scratch_, scratchBytes_));
    ZBC_CUDA_TRY(cudaMallocHost(&hostScratch_, scratchBytes_));
    return {};
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int replica() const override { return replica_; }
  int replicas() const override { return replicas_; }

  std::string configure(int pipelineRanks) override {
    if (pipelineRanks < 1 || size_ % pipelineRanks)
      return fmt::format("{} processes are not replicas of a {}-rank pipeline",
                         size_, pipelineRanks);
    pipelineRanks_ = pipelineRanks;
    replicas_ = size_ / pipelineRanks;
    replica_ = rank_ / pipelineRanks;
    pipeline_ = world_;
    if (replicas_ == 1)
      return {};
    ZBC_NCCL_TRY(ncclCommSplit(world_, replica_, rank_, &pipeline_, nullptr));
    comms_.push_back(pipeline_);
    ZBC_NCCL_TRY(ncclCommSplit(world_, rank_ % pipelineRanks, rank_,
                               &replicaComm_, nullptr));
    comms_.push_back(replicaComm_);
    return {};
  }

  std::string prepare(const zbc_rt_program &program, char *arena) override {
    int me = rank_ % pipelineRanks_;
    transfers_.assign(static_cast<size_t>(program.op_count), Transfer());
    pending_.assign(static_cast<size_t>(program.op_count), 0);
    inFlight_.assign(static_cast<size_t>(program.op_count), 0);
    for (int32_t i = 0; i < program.op_count; ++i) {
      const zbc_rt_op &op = program.ops[i];
      if (op.what != ZBC_RT_OP_SEND && op.what != ZBC_RT_OP_RECV)
        continue;
      Transfer &t = transfers_[i];
      t.send = op.what == ZBC_RT_OP_SEND;
      auto it = channelOf_.find(t.send ? std::make_pair(me, int(op.peer))
                                      : std::make_pair(int(op.peer), me));
      if (it == channelOf_.end())
        return fmt::format("{}: no channel between ranks {} and {} (the ranks' "
                           "programs disagree on their transfers)",
                           op.name, me, op.peer);
      t.channel = it->second;
      const zbc_rt_buffer &buffer = program.buffers[op.buffer];
      t.data = arena + buffer.offset;
      t.bytes = static_cast<size_t>(buffer.bytes);
      ZBC_CUDA_TRY(cudaEventCreateWithFlags(&t.ready, cudaEventDisableTiming));
      ZBC_CUDA_TRY(cudaEventCreateWithFlags(&t.done, cudaEventDisableTiming));
    }
    return {};
  }

  std::string start(int32_t first, int32_t count) override {
    // Each transfer waits for the compute stream as the order issues it.
    for (int32_t i = first; i < first + count; ++i) {
      Transfer &t = transfers_[i];
      ZBC_CUDA_TRY(cudaEventRecord(t.ready, compute_));
      ZBC_CUDA_TRY(cudaStreamWaitEvent(channels_[t.channel].stream, t.ready, 0));
    }
    if (count > 1)
      ZBC_NCCL_TRY(ncclGroupStart());
    for (int32_t i = first; i < first + count; ++i) {
      Transfer &t = transfers_[i];
      const Channel &c = channels_[t.channel];
      if (t.send)
        ZBC_NCCL_TRY(ncclSend(t.data, t.bytes, ncclChar, c.peerInComm, c.comm,
                              c.stream));
      else
        ZBC_NCCL_TRY(ncclRecv(t.data, t.bytes, ncclChar, c.peerInComm, c.comm,
                              c.stream));
    }
    if (count > 1)
      ZBC_NCCL_TRY(ncclGroupEnd());
    for (int32_t i = first; i < first + count; ++i) {
      Transfer &t = transfers_[i];
      ZBC_CUDA_TRY(cudaEventRecord(t.done, channels_[t.channel].stream));
      pending_[i] = 1;
      inFlight_[i] = 1;
    }
    return {};
  }

  std::string wait(int32_t first, int32_t count) override {
    for (int32_t i = first; i < first + count; ++i) {
      ZBC_CUDA_TRY(cudaStreamWaitEvent(compute_, transfers_[i].done, 0));
      pending_[i] = 0;
    }
    return {};
  }

  /// Polls every transfer of the step, waited for or not: one the compute
  /// stream waits for but a lost peer never completes must end here, with
  /// NCCL's error or the watchdog's timeout, not in a blocking
  /// synchronisation of the stream.
  std::string waitAll(void (*done)(void *, int32_t), void *context) override {
    for (size_t i = 0; i < transfers_.size(); ++i) {
      if (!inFlight_[i])
        continue;
      if (std::string error = poll(transfers_[i].done); !error.empty())
        return error;
      inFlight_[i] = 0;
      if (!pending_[i])
        continue;
      ZBC_CUDA_TRY(cudaStreamWaitEvent(compute_, transfers_[i].done, 0));
      pending_[i] = 0;
      done(context, static_cast<int32_t>(i));
    }
    return {};
  }

  bool pending(int32_t op) const override { return pending_[op] != 0; }

  bool anyFailed(bool failed) override {
    return reduceScalar<int32_t>(failed ? 1 : 0, ncclInt32, ncclMax, world_) !=
           0;
  }
  bool allEqual(uint64_t value) override {
    uint64_t lo = reduceScalar<uint64_t>(value, ncclUint64, ncclMin, world_);
    uint64_t hi = reduceScalar<uint64_t>(value, ncclUint64, ncclMax, world_);
    return lo == hi;
  }
  double sumOverPipeline(double value) override {
    return reduceScalar<double>(value, ncclFloat64, ncclSum, pipeline_);
  }
  double sumOverReplicas(double value) override {
    if (replicas_ == 1)
      return value;
    return reduceScalar<double>(value, ncclFloat64, ncclSum, replicaComm_);
  }
  int64_t maximum(int64_t value) override {
    return reduceScalar<int64_t>(value, ncclInt64, ncclMax, world_);
  }
  std::vector<uint64_t> allGather(uint64_t value) override {
    std::vector<uint64_t> all(static_cast<size_t>(size_));
    std::string error = [&]() -> std::string {
      *reinterpret_cast<uint64_t *>(hostScratch_) = value;
      ZBC_CUDA_TRY(cudaMemcpyAsync(scratch_, hostScratch_, 8,
                                   cudaMemcpyHostToDevice, control_));
      ZBC_NCCL_TRY(ncclAllGather(scratch_, static_cast<char *>(scratch_) + 64,
                                 1, ncclUint64, world_, control_));
      ZBC_CUDA_TRY(cudaMemcpyAsync(hostScratch_,
                                   static_cast<char *>(scratch_) + 64,
                                   all.size() * 8, cudaMemcpyDeviceToHost,
                                   control_));
      return pollStream(control_);
    }();
    if (!error.empty())
      collectiveFailed(error);
    std::memcpy(all.data(), hostScratch_, all.size() * 8);
    return all;
  }

  std::string prepareCommunicators(const zbc_rt_program &program) override {
    if (program.ranks > 64)
      return fmt::format("the CUDA backend's transport takes pipelines of up "
                         "to 64 ranks, not {}",
                         program.ranks);
    // Which pipeline ranks each one sends to, so that every rank splits the
    // same communicators in the same order.
    uint64_t sendsTo = 0;
    for (int32_t i = 0; i < program.op_count; ++i)
      if (program.ops[i].what == ZBC_RT_OP_SEND)
        sendsTo |= uint64_t(1) << program.ops[i].peer;
    std::vector<uint64_t> masks = allGather(sendsTo);
    int me = rank_ % pipelineRanks_;

    for (int from = 0; from < pipelineRanks_; ++from)
      for (int to = 0; to < pipelineRanks_; ++to) {
        if (!(masks[from] >> to & 1)) // replica 0's ranks speak for all
          continue;
        bool member = me == from || me == to;
        ncclComm_t comm = nullptr;
        ZBC_NCCL_TRY(ncclCommSplit(world_, member ? replica_ : NCCL_SPLIT_NOCOLOR,
                                   me == from ? 0 : 1, &comm, nullptr));
        if (!member)
          continue;
        comms_.push_back(comm);
        Channel channel;
        channel.comm = comm;
        channel.peerInComm = me == from ? 1 : 0;
        ZBC_CUDA_TRY(cudaStreamCreateWithFlags(&channel.stream,
                                               cudaStreamNonBlocking));
        channelOf_[{from, to}] = static_cast<int>(channels_.size());
        channels_.push_back(channel);
      }
    // A communicator per tied parameter: its holders in every replica.
    tiedComms_.assign(static_cast<size_t>(program.tied_count), nullptr);
    for (int32_t g = 0; g < program.tied_count; ++g) {
      const zbc_rt_tied &tied = program.tied[g];
      bool holds = false;
      for (int32_t i = 0; i < tied.rank_count; ++i)
        holds |= program.tied_ranks[tied.first_rank + i] == me;
      ZBC_NCCL_TRY(ncclCommSplit(world_, holds ? 0 : NCCL_SPLIT_NOCOLOR, rank_,
                                 &tiedComms_[g], nullptr));
      if (holds)
        comms_.push_back(tiedComms_[g]);
    }
    return {};
  }

  ncclComm_t commOf(int32_t group) const {
    return group >= 0                        ? tiedComms_[group]
           : group == ZBC_RT_GROUP_PIPELINE ? pipeline_
                                            : replicaComm_;
  }
  /// The collectives run on the reduction stream after what the compute
  /// stream has issued (the gradients' last writes, the update).
  std::string afterCompute() {
    ZBC_CUDA_TRY(cudaEventRecord(reduceReady_, compute_));
    ZBC_CUDA_TRY(cudaStreamWaitEvent(reduce_, reduceReady_, 0));
    reducing_ = true;
    return {};
  }

  /// A collective over `group`, once the reduction stream follows the
  /// compute stream; `skip` for a group of one process, which moves
  /// nothing. With `member`, this process's place in the group (a shard's).
  std::string enter(int32_t group, bool &skip, int *member = nullptr) {
    skip = group == ZBC_RT_GROUP_REPLICAS && replicas_ == 1;
    if (skip)
      return {};
    if (std::string error = afterCompute(); !error.empty())
      return error;
    if (member)
      ZBC_NCCL_TRY(ncclCommUserRank(commOf(group), member));
    return {};
  }

  std::string startReduceScatter(int32_t, float *data, float *into,
                                 int64_t shard, int32_t group) override {
    int member = 0;
    bool skip = false;
    if (std::string error = enter(group, skip, &member);
        !error.empty() || skip)
      return error;
    // In place, NCCL's layout is Note [Sharded optimizer]'s; under zero 2
    // into the shard (Note [Sharded gradients]).
    ZBC_NCCL_TRY(ncclReduceScatter(data, into ? into : data + member * shard,
                                   static_cast<size_t>(shard), ncclFloat32,
                                   ncclSum, commOf(group), reduce_));
    return {};
  }

  std::string startAllGather(int32_t, char *data, int64_t shardBytes,
                             int32_t group) override {
    int member = 0;
    bool skip = false;
    if (std::string error = enter(group, skip, &member);
        !error.empty() || skip)
      return error;
    ZBC_NCCL_TRY(ncclAllGather(data + member * shardBytes, data,
                               static_cast<size_t>(shardBytes), ncclUint8,
                               commOf(group), reduce_));
    return {};
  }

  std::string startAllReduce(int32_t, float *data, int64_t n,
                             int32_t group) override {
    bool skip = false;
    if (std::string error = enter(group, skip); !error.empty() || skip)
      return error;
    ZBC_NCCL_TRY(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat32,
                               ncclSum, commOf(group), reduce_));
    return {};
  }
  // The rank's collectives run in issue order on one stream, so a wait for
  // one waits for those issued before it too: more than the proof's model
  // (Note [Collectives in the program]) asks, where they complete in any
  // order. zb-insert-collectives has nothing wait for them before the
  // step's end, where every one is waited for anyway.
  std::string waitCollective(int32_t) override { return finishCollectives(); }
  std::string finishCollectives() override {
    if (!reducing_)
      return {};
    reducing_ = false;
    ZBC_CUDA_TRY(cudaEventRecord(reduceDone_, reduce_));
    ZBC_CUDA_TRY(cudaStreamWaitEvent(compute_, reduceDone_, 0));
    return {};
  }

  [[noreturn]] void abort(int code) override {
    for (ncclComm_t comm : comms_)
      ncclCommAbort(comm);
    if (mpi_)
      MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  void finish() override {
    for (ncclComm_t comm : comms_)
      ncclCommDestroy(comm);
    comms_.clear();
    if (mpi_)
      MPI_Finalize();
  }

private:
  /// Waits for `event`, polling every communicator's asynchronous error.
  std::string poll(cudaEvent_t event) {
    for (;;) {
      cudaError_t state = cudaEventQuery(event);
      if (state == cudaSuccess)
        return {};
      if (state != cudaErrorNotReady)
        return cudaFailure(state, "cudaEventQuery", __FILE__, __LINE__);
      for (ncclComm_t comm : comms_) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        if (async != ncclSuccess && async != ncclInProgress)
          return fmt::format("NCCL reports an asynchronous error: {}{}{} (a "
                             "peer rank failed or left)",
                             ncclGetErrorString(async), ": ",
                             ncclGetLastError(comm));
      }
      std::this_thread::yield();
    }
  }
  std::string pollStream(cudaStream_t stream) {
    cudaEvent_t event = nullptr;
    ZBC_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    std::string error;
    cudaError_t code = cudaEventRecord(event, stream);
    error = code == cudaSuccess ? poll(event)
                                : cudaFailure(code, "cudaEventRecord",
                                              __FILE__, __LINE__);
    cudaEventDestroy(event);
    return error;
  }

  /// An all-reduce of one value over `comm`, waited for.
  template <typename T>
  T reduceScalar(T value, ncclDataType_t type, ncclRedOp_t op,
                 ncclComm_t comm) {
    std::string error = [&]() -> std::string {
      std::memcpy(hostScratch_, &value, sizeof(T));
      ZBC_CUDA_TRY(cudaMemcpyAsync(scratch_, hostScratch_, sizeof(T),
                                   cudaMemcpyHostToDevice, control_));
      ZBC_NCCL_TRY(ncclAllReduce(scratch_, scratch_, 1, type, op, comm,
                                 control_));
      ZBC_CUDA_TRY(cudaMemcpyAsync(hostScratch_, scratch_, sizeof(T),
                                   cudaMemcpyDeviceToHost, control_));
      return pollStream(control_);
    }();
    if (!error.empty())
      collectiveFailed(error);
    T result;
    std::memcpy(&result, hostScratch_, sizeof(T));
    return result;
  }

  /// The runtime's collectives have no error result: a failure ends the
  /// rank, after saying why.
  [[noreturn]] void collectiveFailed(const std::string &error) {
    fmt::print(stderr, "zbc rank {}: error: a collective of the runtime "
                       "failed: {}\n",
               rank_, error);
    std::fflush(stderr);
    abort(1);
  }

  Device *device_;
  cudaStream_t compute_;
  bool mpi_;
  int rank_, size_, pipelineRanks_ = 1, replica_ = 0, replicas_ = 1;
  ncclComm_t world_ = nullptr, pipeline_ = nullptr, replicaComm_ = nullptr;
  std::vector<ncclComm_t> comms_; // every one this rank is in
  std::vector<ncclComm_t> tiedComms_;
  std::vector<Channel> channels_;
  std::map<std::pair<int, int>, int> channelOf_; // (from, to) -> channel
  std::vector<Transfer> transfers_;
  std::vector<uint8_t> pending_;  // started, not yet waited for
  std::vector<uint8_t> inFlight_; // started, not yet seen complete
  cudaStream_t control_ = nullptr, reduce_ = nullptr;
  cudaEvent_t reduceReady_ = nullptr, reduceDone_ = nullptr;
  bool reducing_ = false;
  void *scratch_ = nullptr, *hostScratch_ = nullptr;
  size_t scratchBytes_ = 0;
};

} // namespace

/// The launcher's local rank of this process (which GPU it takes).
int localRankFromEnvironment() {
  for (const char *name : {"ZBC_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (std::getenv(name))
      return envInt(name, 0);
  return 0;
}

Transport *createNcclTransport(int *argc, char ***argv, Device *device,
                               std::string &error) {
  bool mpi = launchedByMPI() || !std::getenv("ZBC_RANK");
  int rank = 0, size = 1;
  if (mpi) {
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
      error = "MPI_Init failed";
      return nullptr;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  } else {
    rank = envInt("ZBC_RANK", 0);
    size = envInt("ZBC_RANKS", 1);
    if (size > 1 && !std::getenv("NCCL_COMM_ID")) {
      error = "ZBC_RANK without mpirun needs NCCL_COMM_ID (host:port of "
              "rank 0) so that the ranks find each other";
      return nullptr;
    }
  }
  auto *transport = new NcclTransport(device, mpi, rank, size);
  error = transport->init();
  if (!error.empty()) {
    error = "starting NCCL: " + error;
    if (mpi)
      MPI_Abort(MPI_COMM_WORLD, 1);
    delete transport;
    return nullptr;
  }
  return transport;
}

} // namespace zbc::rt::cuda
