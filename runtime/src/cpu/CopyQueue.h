//===- CopyQueue.h - the CPU backend's copy queue: one thread -*- C++ -*-===//
//
// The copies of offloaded stashes (Note [Offload in the IR]) on the CPU: a
// thread that runs them one at a time in issue order while the rank's own
// thread computes, as a GPU's copy engine would beside its compute stream.
// The arena and the host arena are both host memory here, so a copy is a
// memcpy per piece; what the queue adds is the overlap and the order, which
// the ledger (Note [Ledger]) checks: a compute that read a stash before its
// reload's wait, or wrote over one before its offload's, is refused there,
// and a wrong wait would show as wrong bytes in the e2e tests' bitwise
// comparison.
//
// Nothing is allocated after `start`: the queue is a ring of op indices
// sized for every op of the program (each copy is issued once per step and
// waited for before it is issued again).
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_CPU_COPYQUEUE_H
#define ZBC_RUNTIME_CPU_COPYQUEUE_H

#include "../Device.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zbc::rt::cpu {

class CopyQueue {
public:
  CopyQueue() = default;
  ~CopyQueue();
  CopyQueue(const CopyQueue &) = delete;
  CopyQueue &operator=(const CopyQueue &) = delete;

  /// Sizes the queue for ops 0 .. opCount - 1 and starts its thread.
  void start(int32_t opCount);
  /// Queues copy `op` behind those issued before it.
  std::string issue(int32_t op, const Device::CopyPiece *pieces,
                    int32_t count);
  /// Returns once copy `op` is done.
  std::string wait(int32_t op);
  /// Returns once every copy issued is done.
  void drain();
  /// When copy `op`, waited for, ran: steady_clock seconds since its epoch.
  void interval(int32_t op, double &begin, double &end);

private:
  enum class State : uint8_t { Idle, Queued, Done };
  struct Request {
    const Device::CopyPiece *pieces = nullptr;
    int32_t count = 0;
    double began = 0, ended = 0; // when the thread ran it
  };
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<State> state_;     // per op
  std::vector<Request> request_; // per op
  std::vector<int32_t> ring_;    // queued ops, in issue order
  size_t head_ = 0, size_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace zbc::rt::cpu

#endif // ZBC_RUNTIME_CPU_COPYQUEUE_H
