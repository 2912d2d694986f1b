//===- Ledger.cpp - what each buffer of the arena holds, and for how long -===//
//
// Note [Ledger] (Ledger.h). Per buffer, one version per step: when and by
// whom it was written, its last read (op and tick), and its transfer state;
// per arena granule, its last writer. Temporaries are swept when their op
// ends, the values between ops when the step ends.
//
//===----------------------------------------------------------------------===//

#include "Ledger.h"

#include <fmt/format.h>

#include <algorithm>

namespace zbc::rt {

namespace {
constexpr int64_t kGranule = 64; // the plan's alignment (MemoryPlan.h)
// sendInFlight_: what reads the buffer (a send, or a copy of a stash).
constexpr uint8_t kReadBySend = 1, kReadByCopy = 2;
} // namespace

void Ledger::init(const zbc_rt_program &program) {
  program_ = &program;
  size_t n = static_cast<size_t>(program.buffer_count);
  stamp_.assign(n, -1);
  writer_.assign(n, Writer::Kernel);
  writeOp_.assign(n, 0);
  writeTick_.assign(n, 0);
  lastReadOp_.assign(n, -1);
  lastReadTick_.assign(n, -1);
  completedAt_.assign(n, -1);
  sendInFlight_.assign(n, 0);
  recvInFlight_.assign(n, 0);
  clobberedBy_.assign(n, -1);
  owner_.assign(static_cast<size_t>((program.arena_bytes + kGranule - 1) /
                                    kGranule),
                -1);
  hostOwner_.assign(static_cast<size_t>(
                        (program.host_arena_bytes + kGranule - 1) / kGranule),
                    -1);
  int32_t maxFrame = 0;
  for (int32_t i = 0; i < program.op_count; ++i)
    maxFrame = std::max(maxFrame, program.ops[i].frame_size);
  writtenThisOp_.reserve(static_cast<size_t>(maxFrame) * 2 + 8);
  tickDelta_.assign(static_cast<size_t>(program.max_kernel_calls) * 2 + 8, 0);
  temporaries_.assign(static_cast<size_t>(program.position_count) + 1, 0);
  liveDelta_.assign(static_cast<size_t>(program.position_count) + 2, 0);
  hostLiveDelta_.assign(liveDelta_.size(), 0);
  persistentBytes_ = 0;
  for (int32_t b = 0; b < program.buffer_count; ++b)
    if (persistent(b))
      persistentBytes_ += program.buffers[b].bytes;
}

bool Ledger::persistent(int32_t buffer) const {
  int32_t kind = program_->buffers[buffer].kind;
  return kind == ZBC_RT_PARAM || kind == ZBC_RT_GRAD || kind == ZBC_RT_STATE ||
         kind == ZBC_RT_LOSS;
}

void Ledger::beginStep() {
  ++step_;
  position_ = -1;
  tick_ = 0;
  std::fill(temporaries_.begin(), temporaries_.end(), 0);
  std::fill(liveDelta_.begin(), liveDelta_.end(), 0);
  std::fill(hostLiveDelta_.begin(), hostLiveDelta_.end(), 0);
}

void Ledger::beginOp(int32_t position) {
  position_ = position;
  opStartTick_ = tick_;
  writtenThisOp_.clear();
}

void Ledger::endOp() {
  if (writtenThisOp_.empty())
    return;
  // The op's temporaries: each value a kernel wrote here, from its tick to
  // its last read here (a yielded one, which outlives the op, to its end).
  int32_t ticks = tick_ - opStartTick_;
  if (static_cast<size_t>(ticks) + 2 > tickDelta_.size())
    tickDelta_.resize(static_cast<size_t>(ticks) + 2); // never: sized at init
  std::fill(tickDelta_.begin(), tickDelta_.begin() + ticks + 2, 0);
  for (int32_t b : writtenThisOp_) {
    int32_t from = writeTick_[b] - opStartTick_;
    int32_t until = from;
    if (lastReadOp_[b] == position_)
      until = std::max(until, lastReadTick_[b] - opStartTick_);
    if (program_->buffers[b].kind == ZBC_RT_YIELDED)
      until = std::max(until, ticks - 1);
    tickDelta_[from] += program_->buffers[b].bytes;
    tickDelta_[until + 1] -= program_->buffers[b].bytes;
  }
  int64_t live = 0, most = 0;
  for (int32_t t = 0; t <= ticks; ++t)
    most = std::max(most, live += tickDelta_[t]);
  temporaries_[position_] = std::max(temporaries_[position_], most);
}

std::string Ledger::read(int32_t buffer) {
  if (persistent(buffer))
    return {};
  const zbc_rt_buffer &b = program_->buffers[buffer];
  if (stamp_[buffer] != step_)
    return fmt::format("reads {} before anything was written to it in this "
                       "step",
                       b.name);
  if (recvInFlight_[buffer])
    return fmt::format("reads {} before its {} completed (no wait for it "
                       "precedes this op)",
                       b.name, writer_[buffer] == Writer::Copy ? "copy" : "recv");
  if (int32_t by = clobberedBy_[buffer]; by >= 0)
    return fmt::format("reads {} after {} was written over its bytes (the "
                       "memory plan overlaps two live buffers)",
                       b.name, program_->buffers[by].name);
  lastReadOp_[buffer] = position_;
  lastReadTick_[buffer] = tick_;
  return {};
}

std::string Ledger::write(int32_t buffer, Writer writer) {
  if (persistent(buffer))
    return {};
  const zbc_rt_buffer &b = program_->buffers[buffer];
  if (stamp_[buffer] == step_)
    return fmt::format("writes {} a second time in one step", b.name);
  // Take the bytes over: a buffer whose granule this write takes holds
  // garbage from now on, which its next read reports (reads stay O(1)); a
  // send still reading them is an error now.
  int64_t first = b.offset / kGranule;
  int64_t last = (b.offset + std::max<int64_t>(b.bytes, 1) - 1) / kGranule;
  std::vector<int32_t> &owners = onHost(buffer) ? hostOwner_ : owner_;
  for (int64_t g = first; g <= last; ++g) {
    int32_t &owner = owners[static_cast<size_t>(g)];
    if (owner == buffer)
      continue;
    if (owner >= 0) {
      if (sendInFlight_[owner])
        return fmt::format("writes {} over bytes that the {} of {} still "
                           "reads (the memory plan overlaps them while it "
                           "is in flight)",
                           b.name, sendInFlight_[owner] == kReadByCopy ? "copy" : "send",
                           program_->buffers[owner].name);
      clobberedBy_[owner] = buffer;
    }
    owner = buffer;
  }
  clobberedBy_[buffer] = -1;
  stamp_[buffer] = step_;
  writer_[buffer] = writer;
  writeOp_[buffer] = position_;
  writeTick_[buffer] = tick_;
  lastReadOp_[buffer] = -1;
  lastReadTick_[buffer] = -1;
  completedAt_[buffer] = -1;
  if (writer == Writer::Kernel)
    writtenThisOp_.push_back(buffer);
  return {};
}

std::string Ledger::accumulate(int32_t buffer, bool &first) {
  first = stamp_[buffer] != step_;
  if (first)
    return write(buffer, Writer::Accumulator);
  if (sendInFlight_[buffer])
    return fmt::format("adds into {} while its sum reads it (a W after the "
                       "collective that sums it)",
                       program_->buffers[buffer].name);
  return read(buffer);
}

std::string Ledger::sendStarted(int32_t buffer) {
  std::string error = read(buffer);
  if (error.empty())
    sendInFlight_[buffer] = kReadBySend;
  return error;
}

std::string Ledger::recvStarted(int32_t buffer) {
  std::string error = write(buffer, Writer::Recv);
  if (error.empty())
    recvInFlight_[buffer] = 1;
  return error;
}

void Ledger::sendCompleted(int32_t buffer) {
  sendInFlight_[buffer] = 0;
  // The buffer is free at the op after the current one (the one whose wait
  // this is), or at the end of the step.
  completedAt_[buffer] = position_ + 1;
}

void Ledger::recvCompleted(int32_t buffer) { recvInFlight_[buffer] = 0; }

std::string Ledger::copyStarted(int32_t from, int32_t to) {
  if (std::string error = read(from); !error.empty())
    return error;
  if (std::string error = write(to, Writer::Copy); !error.empty())
    return error;
  sendInFlight_[from] = kReadByCopy;
  recvInFlight_[to] = 1;
  return {};
}

void Ledger::copyCompleted(int32_t from, int32_t to) {
  sendCompleted(from);
  recvCompleted(to);
}

int64_t Ledger::endStep() {
  int32_t n = program_->position_count;
  for (int32_t b = 0; b < program_->buffer_count; ++b) {
    if (stamp_[b] != step_ || persistent(b))
      continue;
    int32_t kind = program_->buffers[b].kind;
    if (kind == ZBC_RT_TEMP || kind == ZBC_RT_WORKSPACE)
      continue; // counted in their op's temporaries
    int32_t from = writer_[b] == Writer::Kernel ? writeOp_[b] + 1 : writeOp_[b];
    int32_t until = lastReadOp_[b] + 1;
    if (completedAt_[b] >= 0)
      until = std::max(until, completedAt_[b]);
    if (sendInFlight_[b]) // a sum the step's end completes
      until = n;
    until = std::min(until, n);
    if (until <= from)
      continue;
    std::vector<int64_t> &delta = onHost(b) ? hostLiveDelta_ : liveDelta_;
    delta[from] += program_->buffers[b].bytes;
    delta[until] -= program_->buffers[b].bytes;
  }
  int64_t held = 0, stepPeak = 0;
  int32_t at = 0;
  for (int32_t k = 0; k < n; ++k) {
    held += liveDelta_[k];
    int64_t live = persistentBytes_ + held + temporaries_[k];
    if (live > stepPeak) {
      stepPeak = live;
      at = k;
    }
  }
  if (n == 0)
    stepPeak = persistentBytes_;
  int64_t onHostNow = 0;
  for (int32_t k = 0; k < n; ++k)
    hostPeak_ = std::max(hostPeak_, onHostNow += hostLiveDelta_[k]);
  if (stepPeak > peak_) {
    peak_ = stepPeak;
    peakPosition_ = at;
  }
  // Every buffer of the step is dead now: the next step writes afresh.
  std::fill(owner_.begin(), owner_.end(), -1);
  std::fill(hostOwner_.begin(), hostOwner_.end(), -1);
  std::fill(clobberedBy_.begin(), clobberedBy_.end(), -1);
  return stepPeak;
}

} // namespace zbc::rt
