//===- Timeline.cpp - when each op of the last steps ran ------------------===//
//
// Note [Timelines] (Timeline.h).
//
//===----------------------------------------------------------------------===//

#include "Timeline.h"

#include "zbc/contracts/JsonSubset.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sys/stat.h>

namespace zbc::rt {

namespace {
/// A collective's bytes (each member's: the whole gradients it sums or the
/// working copies it gathers) and its group: what zbc profile turns into a
/// bandwidth.
std::string collectiveFields(const zbc_rt_program &p, const zbc_rt_op &o) {
  if (!zbc_rt_op_is_collective(o.what))
    return {};
  int64_t bytes = 0;
  for (int32_t k = 0; k < o.member_count; ++k) {
    const zbc_rt_param &param = p.params[p.collective_params[o.first_member + k]];
    bytes += p.buffers[o.what == ZBC_RT_OP_ALL_GATHER ? param.param : param.grad]
                 .bytes;
  }
  const char *over = o.peer == ZBC_RT_GROUP_REPLICAS   ? "replicas"
                     : o.peer == ZBC_RT_GROUP_PIPELINE ? "pipeline"
                                                        : "tied";
  return fmt::format(", \"bytes\": {}, \"over\": \"{}\"", bytes, over);
}
} // namespace

void Timeline::init(const zbc_rt_program &program, int64_t steps,
                    double origin) {
  program_ = &program;
  steps_ = steps;
  origin_ = origin;
  stepOf_.assign(static_cast<size_t>(steps), -1);
  times_.assign(static_cast<size_t>(steps * program.op_count * 2), -1.0);
}

void Timeline::beginStep(int64_t step) {
  if (!steps_)
    return;
  size_t slot = static_cast<size_t>(recorded_++ % steps_);
  stepOf_[slot] = step;
  current_ = times_.data() + slot * static_cast<size_t>(program_->op_count) * 2;
  std::fill(current_, current_ + program_->op_count * 2, -1.0);
}

std::string Timeline::write(const std::string &dir) const {
  const zbc_rt_program &p = *program_;
  ::mkdir(dir.c_str(), 0777);
  std::string path = fmt::format("{}/rank{}.json", dir, p.rank);
  std::ofstream out(path);
  if (!out)
    return fmt::format("cannot write '{}'", path);
  out << fmt::format("{{\"rank\": {}, \"ops\": [", p.rank);
  for (int32_t i = 0; i < p.op_count; ++i) {
    const zbc_rt_op &o = p.ops[i];
    out << fmt::format("{}\n  {{\"name\": {}, \"what\": \"{}\", \"stage\": {}, "
                       "\"microbatch\": {}{}}}",
                       i ? "," : "", jsonQuoted(o.name), zbc_rt_op_spelling(o.what), o.stage,
                       o.microbatch, collectiveFields(p, o));
  }
  out << "],\n\"steps\": [";
  int64_t kept = std::min(recorded_, steps_);
  for (int64_t k = 0; k < kept; ++k) {
    // Oldest first.
    size_t slot = static_cast<size_t>((recorded_ - kept + k) % steps_);
    const double *t = times_.data() + slot * static_cast<size_t>(p.op_count) * 2;
    out << fmt::format("{}\n  {{\"step\": {}, \"events\": [", k ? "," : "",
                       stepOf_[slot] + 1);
    bool first = true;
    for (int32_t i = 0; i < p.op_count; ++i) {
      double end = t[2 * i + 1];
      // A group ends with its last member (the end of the step may have
      // completed them one by one).
      if (p.ops[i].what == ZBC_RT_OP_GROUP)
        for (int32_t m = 0; m < p.ops[i].member_count; ++m)
          end = std::max(end, t[2 * (p.ops[i].first_member + m) + 1]);
      if (t[2 * i] < 0 || end < 0)
        continue;
      out << fmt::format("{}[{}, {:.7f}, {:.7f}]", first ? "" : ", ", i,
                         t[2 * i], end);
      first = false;
    }
    out << "]}";
  }
  out << "]}\n";
  return out ? "" : fmt::format("cannot write '{}'", path);
}

} // namespace zbc::rt
