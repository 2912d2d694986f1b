//===- Ledger.h - what each buffer of the arena holds, and for how long -*- C++ -*-===//
//
// Note [Ledger]
// Every access the rank makes to its arena is told to the ledger: a kernel
// reading or writing a buffer, the data source filling one, a recv posted
// into one, a send reading one until it completes, a copy of an offloaded
// stash reading one and filling another (Note [Offload in the IR]). From
// that alone the ledger
//  - refuses an access that would compute garbage: reading a buffer that
//    holds nothing yet this step, or whose recv has not completed, or whose
//    bytes a later write to another buffer has taken (the memory plan
//    overlapped two live buffers: each 64-byte granule of the arena
//    remembers its last writer); writing a buffer twice in one step, or
//    over bytes a send in flight still reads;
//  - measures the live bytes at each op of the rank's order, counted as
//    Note [Program memory] (passes/include/zbc/Analysis/ProgramMemory.h)
//    counts them, from the accesses rather than the program: a buffer a
//    kernel writes counts as its compute's temporary from that kernel until
//    its last read in the compute (to the end of the compute if it outlives
//    it: a yielded one), and from the next op until its last read (a sent
//    one: until its send completes, at the op whose wait completes it); one
//    the data source or a recv writes counts from its op; the persistent
//    state counts throughout. A copy reads its source as a send does and
//    fills its target as a recv does; the host arena's buffers (a stash's
//    host copy) are counted apart, as the host's live bytes.
// The measured peak therefore equals the verifier's figure exactly when the
// generated program does what the proof assumed, and the e2e tests hold it
// to that. Each buffer holds one value per step (the plan gives every
// microbatch's tensors their own buffer), so the ledger keeps one version
// per buffer, in arrays sized at start-up: nothing is allocated during a
// step.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_LEDGER_H
#define ZBC_RUNTIME_LEDGER_H

#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbc::rt {

class Ledger {
public:
  /// Who wrote a buffer's value.
  enum class Writer : uint8_t { Kernel, Data, Recv, Copy, Accumulator };

  void init(const zbc_rt_program &program);

  void beginStep();
  /// Closes the step: every value's interval joins the live bytes per op;
  /// returns the step's peak.
  int64_t endStep();

  void beginOp(int32_t position);
  void endOp();
  int32_t position() const { return position_; }
  /// Ends a kernel call: its reads and writes share one tick.
  void tick() { ++tick_; }

  /// Each returns an empty string, or what is wrong (to be prefixed with the
  /// rank and op). Persistent buffers are never checked.
  std::string read(int32_t buffer);
  std::string write(int32_t buffer, Writer writer);
  /// A kernel adds into whole gradient `buffer` (a STEP_GRAD, Note
  /// [Sharded gradients]): the step's first add writes it, live from its
  /// op (`first` is set: the caller zeroes it first), the others read and
  /// write it again.
  std::string accumulate(int32_t buffer, bool &first);
  /// A send reads `buffer` until sendCompleted; a recv fills it until
  /// recvCompleted (the data may land any time in between).
  std::string sendStarted(int32_t buffer);
  std::string recvStarted(int32_t buffer);
  void sendCompleted(int32_t buffer);
  void recvCompleted(int32_t buffer);
  /// A copy of a stash (an offload or a reload) reads `from` and fills `to`
  /// until copyCompleted, as a send and a recv.
  std::string copyStarted(int32_t from, int32_t to);
  void copyCompleted(int32_t from, int32_t to);

  /// The largest live bytes measured at any op of any step so far, and the
  /// first position where the last step reached its peak.
  int64_t peak() const { return peak_; }
  int32_t peakPosition() const { return peakPosition_; }
  /// The same for the host arena's buffers (0 without offload).
  int64_t hostPeak() const { return hostPeak_; }

private:
  bool persistent(int32_t buffer) const;
  bool onHost(int32_t buffer) const {
    return program_->buffers[buffer].kind == ZBC_RT_HOST;
  }

  const zbc_rt_program *program_ = nullptr;
  int64_t persistentBytes_ = 0;
  int64_t step_ = 0;
  int32_t position_ = -1;
  int32_t tick_ = 0, opStartTick_ = 0;

  // Per buffer: the step its value was written in (-1: none), and how.
  std::vector<int64_t> stamp_;
  std::vector<Writer> writer_;
  std::vector<int32_t> writeOp_, writeTick_;
  std::vector<int32_t> lastReadOp_, lastReadTick_;
  std::vector<int32_t> completedAt_; // sends: the op whose wait freed it
  std::vector<uint8_t> sendInFlight_, recvInFlight_;
  // The last writer of every 64-byte granule of the arena, and per buffer
  // the one that wrote over its bytes since its own write (-1: none).
  std::vector<int32_t> owner_, hostOwner_; // the arena's, the host arena's
  std::vector<int32_t> clobberedBy_;
  // Buffers a kernel wrote in the running op; the op's tick sweep.
  std::vector<int32_t> writtenThisOp_;
  std::vector<int64_t> tickDelta_;
  // Per position: the op's temporaries, and the difference array of the
  // buffers live across ops.
  std::vector<int64_t> temporaries_, liveDelta_, hostLiveDelta_;
  int64_t peak_ = 0, hostPeak_ = 0;
  int32_t peakPosition_ = 0;
};

} // namespace zbc::rt

#endif // ZBC_RUNTIME_LEDGER_H
