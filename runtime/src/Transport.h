//===- Transport.h - point-to-point transfers of the rank's order -*- C++ -*-===//
//
// The interface the rank issues its transfers through, one implementation
// per backend: MPI for the CPU backend (cpu/MPITransport.cpp), NCCL for the
// CUDA backend (cuda/NcclTransport.cpp). Every transfer of the program is
// known at start-up, so a transport prepares one request per transfer op
// then (MPI's persistent requests) and a step only starts and completes
// them: no allocation, and messages between two ranks match in the order
// they are started (Note [p2p semantics] in
// passes/include/zbc/Schedule/Program.h: FIFO per peer, no tags).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_TRANSPORT_H
#define ZBC_RUNTIME_TRANSPORT_H

#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbc::rt {

/// Data parallelism: the job's processes are D replicas of a P-rank
/// pipeline, replica-major (process w is pipeline rank w mod P of replica
/// w / P). Transfers stay inside a replica; each pipeline rank's replicas
/// all-reduce their gradients.
class Transport {
public:
  virtual ~Transport() = default;
  /// This process's rank in the job and the job's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Splits the job into replicas of a `pipelineRanks`-rank pipeline (the
  /// size must be a multiple; collective). Before it: one replica.
  virtual std::string configure(int pipelineRanks) = 0;
  virtual int replica() const = 0;
  virtual int replicas() const = 0;
  /// Prepares a request for every transfer op of `program` on `arena` (the
  /// device's address of it; local to the process).
  virtual std::string prepare(const zbc_rt_program &program, char *arena) = 0;
  /// Starts ops[first, first + count) as one unit.
  virtual std::string start(int32_t first, int32_t count) = 0;
  /// Waits for ops[first, first + count).
  virtual std::string wait(int32_t first, int32_t count) = 0;
  /// Waits for every transfer started and not yet waited for; calls
  /// `done(op)` for each one that completes here.
  virtual std::string waitAll(void (*done)(void *, int32_t), void *context) = 0;
  /// True if op `op` was started and has not been waited for.
  virtual bool pending(int32_t op) const = 0;
  /// An OR over all ranks of `failed` (collective: every rank calls it).
  virtual bool anyFailed(bool failed) = 0;
  /// The same value on every rank? (collective)
  virtual bool allEqual(uint64_t value) = 0;
  /// A sum over this replica's pipeline ranks (collective in the replica).
  virtual double sumOverPipeline(double value) = 0;
  /// A sum over the replicas of this pipeline rank (collective among them).
  virtual double sumOverReplicas(double value) = 0;
  /// Sets up what the job's processes set up together for `program`: one
  /// communicator per tied parameter (its holders in every replica) and,
  /// for NCCL, one per direction of each pair of ranks with transfers
  /// between them. Collective over the job: every process calls it, before
  /// `prepare`, whatever failed before it.
  virtual std::string prepareCommunicators(const zbc_rt_program &program) = 0;
  /// Starts summing `n` floats at `data` in place (a gradient), as part of
  /// all-reduce op `op`, over its group (Note [Collective groups]): the
  /// replicas of this pipeline rank (ZBC_RT_GROUP_REPLICAS), this replica's
  /// pipeline (ZBC_RT_GROUP_PIPELINE), or the holders of tied parameter
  /// `group` (>= 0) in every replica.
  virtual std::string startAllReduce(int32_t op, float *data, int64_t n,
                                     int32_t group) = 0;
  /// Note [Sharded optimizer] (zbc/contracts/Shards.h), over the group's
  /// d members, this one member k: sums the `d x shard` floats at `data`
  /// and leaves the sum's k-th shard at `into` (Note [Sharded gradients]),
  /// or, `into` null, in place at data + k x shard; gathers every member's
  /// `shardBytes` at data + m x shardBytes (its own given), in place.
  virtual std::string startReduceScatter(int32_t op, float *data, float *into,
                                         int64_t shard, int32_t group) = 0;
  virtual std::string startAllGather(int32_t op, char *data,
                                     int64_t shardBytes, int32_t group) = 0;
  /// Waits for collective op `op`'s, or every one started.
  virtual std::string waitCollective(int32_t op) = 0;
  virtual std::string finishCollectives() = 0;
  /// The largest value over all ranks (collective).
  virtual int64_t maximum(int64_t value) = 0;
  /// Every rank's `value`, by rank of the job (collective; allocates, so
  /// not in steps).
  virtual std::vector<uint64_t> allGather(uint64_t value) = 0;
  /// Ends the job on every rank (this rank failed alone).
  [[noreturn]] virtual void abort(int code) = 0;
  virtual void finish() = 0;
};

/// MPI, as `mpirun` started this process; nullptr and `error` if MPI fails.
Transport *createMPITransport(int *argc, char ***argv, std::string &error);

} // namespace zbc::rt

#endif // ZBC_RUNTIME_TRANSPORT_H
