//===- CopyQueue.cpp - the CPU backend's copy queue: one thread ----------===//
//
// CopyQueue.h. The rank's thread queues a copy and goes on; the queue's
// thread takes copies in issue order and marks each done; a wait sleeps
// until its copy is marked.
//
//===----------------------------------------------------------------------===//

#include "CopyQueue.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

namespace zbc::rt::cpu {

namespace {
/// Profile::now()'s clock (Rank.cpp), which the timeline keeps.
double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

CopyQueue::~CopyQueue() {
  if (!thread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CopyQueue::start(int32_t opCount) {
  size_t n = static_cast<size_t>(opCount);
  state_.assign(n, State::Idle);
  request_.assign(n, Request{});
  ring_.assign(n + 1, -1);
  thread_ = std::thread([this] { run(); });
}

std::string CopyQueue::issue(int32_t op, const Device::CopyPiece *pieces,
                             int32_t count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (op < 0 || static_cast<size_t>(op) >= state_.size() ||
        state_[op] != State::Idle)
      return fmt::format("copy op {} issued again before its wait", op);
    state_[op] = State::Queued;
    request_[op] = {pieces, count};
    ring_[(head_ + size_++) % ring_.size()] = op;
  }
  changed_.notify_all();
  return {};
}

std::string CopyQueue::wait(int32_t op) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (op < 0 || static_cast<size_t>(op) >= state_.size() ||
      state_[op] == State::Idle)
    return fmt::format("waits for copy op {}, which was not issued or was "
                       "waited for already",
                       op);
  changed_.wait(lock, [&] { return state_[op] == State::Done; });
  state_[op] = State::Idle;
  return {};
}

void CopyQueue::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return size_ == 0; });
}

void CopyQueue::interval(int32_t op, double &begin, double &end) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (op < 0 || static_cast<size_t>(op) >= request_.size())
    return;
  begin = request_[op].began;
  end = request_[op].ended;
}

void CopyQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || size_ > 0; });
    if (stopping_)
      return;
    int32_t op = ring_[head_];
    Request request = request_[op];
    // The copy runs unlocked: the rank's thread issues and computes
    // meanwhile.
    lock.unlock();
    double began = now();
    for (int32_t i = 0; i < request.count; ++i)
      std::memcpy(request.pieces[i].to, request.pieces[i].from,
                  static_cast<size_t>(request.pieces[i].bytes));
    double ended = now();
    lock.lock();
    request_[op].began = began;
    request_[op].ended = ended;
    state_[op] = State::Done;
    head_ = (head_ + 1) % ring_.size();
    --size_;
    changed_.notify_all();
  }
}

} // namespace zbc::rt::cpu
