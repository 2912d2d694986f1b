//===- Timeline.h - when each op of the last steps ran -------------*- C++ -*-===//
//
// Note [Timelines]
// With --trace DIR a rank records, for its last --trace-steps training
// steps (default 8), when each op of its order began and ended: a compute
// from its first phase call to the end of its last, a transfer or a
// collective from its issue to the wait that completed it (a group as one;
// a collective nothing waits for, to the step's end: --wait-collectives
// waits for each as it is issued). Times are seconds
// since the moment every rank left one barrier at start-up, so the ranks'
// records line up (on one host to the barrier's exit skew, microseconds).
// The records live in a ring sized at start-up: recording allocates
// nothing. At the end the rank writes DIR/rankR.json:
//   {"rank": R, "ops": [{"name", "what", "stage", "microbatch"}, ...],
//    (a collective's also "bytes", each member's, and "over": "replicas",
//    "pipeline" or "tied")
//    "steps": [{"step": S, "events": [[op, begin, end], ...]}, ...]}
// which `zbc run` merges into one Chrome/Perfetto trace, the measured bubble
// rate and a picture beside the predicted one.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_RUNTIME_TIMELINE_H
#define ZBC_RUNTIME_TIMELINE_H

#include "zbc/runtime/zbc_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbc::rt {

class Timeline {
public:
  /// Keeps the last `steps` steps of `program` (0: records nothing);
  /// `origin` is time 0.
  void init(const zbc_rt_program &program, int64_t steps, double origin);
  bool enabled() const { return steps_ > 0; }

  void beginStep(int64_t step);
  /// The op began or ended at `now` (Profile::now()). A compute's second
  /// phase call does not move its begin.
  void begin(int32_t op, double now) {
    if (current_ && current_[op * 2] < 0)
      current_[op * 2] = now - origin_;
  }
  void end(int32_t op, double now) {
    if (current_)
      current_[op * 2 + 1] = now - origin_;
  }
  /// Stops recording until the next beginStep (an evaluation pass).
  void pause() { current_ = nullptr; }

  std::string write(const std::string &dir) const;

private:
  const zbc_rt_program *program_ = nullptr;
  int64_t steps_ = 0, recorded_ = 0;
  double origin_ = 0;
  std::vector<int64_t> stepOf_;  // per ring slot
  std::vector<double> times_;    // per slot, per op: begin, end (-1: none)
  double *current_ = nullptr;
};

} // namespace zbc::rt

#endif // ZBC_RUNTIME_TIMELINE_H
