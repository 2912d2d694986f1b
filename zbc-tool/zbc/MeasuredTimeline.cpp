//===- MeasuredTimeline.cpp - what a run's ranks recorded, merged ---------===//

#include "MeasuredTimeline.h"
#include "Options.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace zbc;

namespace {


bool isCompute(const TraceEvent &e) {
  return e.what == "F" || e.what == "B" || e.what == "W" || e.what == "BW" ||
         e.what == "R";
}

/// A copy of a stash (Note [Offload in the IR]), on the rank's copy queue.
bool isCopy(const TraceEvent &e) {
  return e.what == "offload" || e.what == "reload";
}

sched::Kind kindOf(const std::string &what) {
  return what == "F"   ? sched::Kind::F
         : what == "B" ? sched::Kind::B
         : what == "W" ? sched::Kind::W
         : what == "R" ? sched::Kind::R
                       : sched::Kind::BW;
}

} // namespace

Expected<MeasuredRun> zbc::readMeasuredRun(const std::string &dir, int ranks) {
  MeasuredRun run;
  for (int r = 0; r < ranks; ++r) {
    std::string path = formatv("{0}/rank{1}.json", dir, r).str();
    ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(path);
    if (!buffer)
      return fail("cannot read the trace '" + path + "'");
    Expected<json::Value> value = json::parse((*buffer)->getBuffer());
    if (!value)
      return fail("'" + path + "': " + toString(value.takeError()));
    const json::Object *root = value->getAsObject();
    const json::Array *ops = root ? root->getArray("ops") : nullptr;
    const json::Array *steps = root ? root->getArray("steps") : nullptr;
    if (!ops || !steps)
      return fail("'" + path + "' is not a rank's trace");
    if (r == 0) {
      for (const json::Value &s : *steps)
        if (const json::Object *o = s.getAsObject())
          run.steps.push_back(o->getInteger("step").value_or(0));
      run.events.assign(run.steps.size(),
                        std::vector<std::vector<TraceEvent>>(ranks));
    }
    if (steps->size() != run.steps.size())
      return fail("'" + path + "' holds " + Twine(steps->size()) +
                  " steps, rank 0's " + Twine(run.steps.size()));
    for (auto [k, s] : llvm::enumerate(*steps)) {
      const json::Object *o = s.getAsObject();
      const json::Array *events = o ? o->getArray("events") : nullptr;
      if (!events)
        return fail("'" + path + "': a step without events");
      for (const json::Value &e : *events) {
        const json::Array *t = e.getAsArray();
        if (!t || t->size() != 3)
          return fail("'" + path + "': an event is not [op, begin, end]");
        int64_t op = (*t)[0].getAsInteger().value_or(-1);
        if (op < 0 || op >= static_cast<int64_t>(ops->size()))
          return fail("'" + path + "': an event of no op");
        const json::Object *info = (*ops)[op].getAsObject();
        TraceEvent event;
        event.name = info->getString("name").value_or("").str();
        event.what = info->getString("what").value_or("").str();
        event.stage = info->getInteger("stage").value_or(0);
        event.microbatch = info->getInteger("microbatch").value_or(0);
        event.bytes = info->getInteger("bytes").value_or(0);
        event.over = info->getString("over").value_or("").str();
        event.begin = (*t)[1].getAsNumber().value_or(0);
        event.end = (*t)[2].getAsNumber().value_or(0);
        run.events[k][r].push_back(std::move(event));
      }
    }
  }
  // The bubble rate of each step, by the simulator's definition.
  for (size_t k = 0; k < run.steps.size(); ++k) {
    double first = std::numeric_limits<double>::infinity(), last = -first;
    double busiest = 0;
    for (const std::vector<TraceEvent> &line : run.events[k]) {
      double busy = 0;
      for (const TraceEvent &e : line)
        if (isCompute(e)) {
          first = std::min(first, e.begin);
          last = std::max(last, e.end);
          busy += e.end - e.begin;
        }
      busiest = std::max(busiest, busy);
    }
    double span = last - first;
    run.bubbleRates.push_back(span > 0 ? std::max(0.0, (span - busiest) / span)
                                       : 0.0);
  }
  // The run's first step warms caches up: leave it out when there are more.
  size_t from = run.steps.size() > 1 && run.steps.front() == 1 ? 1 : 0;
  for (size_t k = from; k < run.bubbleRates.size(); ++k)
    run.bubbleRate += run.bubbleRates[k];
  run.stepsUsed = static_cast<int>(run.bubbleRates.size() - from);
  if (run.stepsUsed)
    run.bubbleRate /= run.stepsUsed;
  // The last step as the simulator would report it, in milliseconds.
  if (!run.steps.empty()) {
    const auto &step = run.events.back();
    double first = std::numeric_limits<double>::infinity();
    for (const auto &line : step)
      for (const TraceEvent &e : line)
        if (isCompute(e))
          first = std::min(first, e.begin);
    sched::SimResult &sim = run.lastStep;
    sim.timeline.resize(step.size());
    for (auto [r, line] : llvm::enumerate(step)) {
      for (const TraceEvent &e : line)
        if (isCompute(e))
          sim.timeline[r].push_back(
              {{kindOf(e.what), e.stage, e.microbatch},
               (e.begin - first) * 1e3,
               (e.end - first) * 1e3});
      std::sort(sim.timeline[r].begin(), sim.timeline[r].end(),
                [](const sched::TimedAction &a, const sched::TimedAction &b) {
                  return a.start < b.start;
                });
      if (!sim.timeline[r].empty())
        sim.makespan = std::max(sim.makespan, sim.timeline[r].back().end);
    }
    sim.bubbleRate = run.bubbleRates.back();
  }
  return std::move(run);
}

void zbc::writeMeasuredTrace(const MeasuredRun &run, raw_ostream &os) {
  json::OStream json(os);
  json.object([&] {
    json.attribute("displayTimeUnit", "ms");
    json.attributeArray("traceEvents", [&] {
      int ranks = run.events.empty() ? 0 : static_cast<int>(run.events[0].size());
      for (int r = 0; r < ranks; ++r) {
        json.object([&] {
          json.attribute("name", "process_name");
          json.attribute("ph", "M");
          json.attribute("pid", r);
          json.attributeObject("args", [&] {
            json.attribute("name", "rank " + std::to_string(r));
          });
        });
        for (int track = 0; track < 3; ++track)
          json.object([&] {
            json.attribute("name", "thread_name");
            json.attribute("ph", "M");
            json.attribute("pid", r);
            json.attribute("tid", track);
            json.attributeObject("args", [&] {
              json.attribute("name", track == 0   ? "computes"
                                     : track == 1 ? "transfers"
                                                  : "copies");
            });
          });
      }
      for (size_t k = 0; k < run.events.size(); ++k)
        for (int r = 0; r < ranks; ++r)
          for (const TraceEvent &e : run.events[k][r])
            json.object([&] {
              json.attribute("name", e.name);
              json.attribute("cat", e.what);
              json.attribute("ph", "X");
              json.attribute("pid", r);
              json.attribute("tid", isCompute(e) ? 0 : isCopy(e) ? 2 : 1);
              json.attribute("ts", e.begin * 1e6);
              json.attribute("dur", (e.end - e.begin) * 1e6);
              json.attributeObject("args", [&] {
                json.attribute("step", run.steps[k]);
                json.attribute("stage", e.stage);
                json.attribute("microbatch", e.microbatch);
              });
            });
    });
  });
}
