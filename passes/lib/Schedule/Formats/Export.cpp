//===- Export.cpp - schedules out: table, JSON, SVG, Chrome trace ---------===//
//
// Writes a simulated schedule in the formats `zbc schedule` offers; PyTorch's
// schedule CSV, both directions, is TorchCSV.cpp's.
//
// Numbers are printed with 12 significant digits: the simulator's times are
// sums of the user's costs, and 17-digit output would show binary round-off
// ("0.30000000000000004") that means nothing to a reader; 12 digits keep every
// time the inputs can distinguish.
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/Export.h"
#include "Core/Support.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace zbc::sched;

/// A time or amount as text: 12 significant digits, so round-off stays
/// hidden (file comment); "-0" prints as "0".
static std::string formatAmount(double x) {
  if (x == 0)
    return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.12g", x);
  return buffer;
}

/// A number as a JSON token: formatAmount(), or null where JSON has no number.
static std::string jsonNum(double x) {
  return std::isfinite(x) ? formatAmount(x) : "null";
}

/// Busy time (sum of compute durations: copies run beside them) and span
/// (first start to last end), as the simulator counts them.
static std::pair<double, double>
busyAndSpan(const std::vector<TimedAction> &line) {
  if (line.empty())
    return {0, 0};
  double busy = 0, end = 0;
  for (const TimedAction &t : line) {
    end = std::max(end, t.end);
    if (!isCopy(t.action.kind))
      busy += t.end - t.start;
  }
  return {busy, end - line.front().start};
}

//===----------------------------------------------------------------------===//
// Table
//===----------------------------------------------------------------------===//

/// "given"/"none" need no comment; a default names its rule.
static bool isDefaultOrigin(llvm::StringRef origin) {
  return !origin.empty() && origin != "given" && origin != "none";
}

void zbc::sched::writeTable(const Problem &problem, const ScheduleTable &table,
                            const SimResult &sim, llvm::raw_ostream &os,
                            llvm::StringRef budgetOrigin) {
  int numRanks = table.numRanks();
  os << "ranks " << numRanks << ", stages " << table.numStages()
     << ", microbatches " << table.microbatches << "\n";
  os << "rank of each stage:";
  for (int rank : table.rankOfStage)
    os << " " << rank;
  os << "\n";
  os << "comm " << formatAmount(problem.comm) << ", activation budget "
     << (problem.budget() > 0 ? formatAmount(problem.budget()) : std::string("none"));
  if (isDefaultOrigin(budgetOrigin))
    os << " (" << budgetOrigin << ")";
  if (problem.copyBandwidth > 0)
    os << ", copy bandwidth " << formatAmount(problem.copyBandwidth);
  os << "\n";
  os << "makespan " << formatAmount(sim.makespan) << " (longest rank span)\n";
  // Two rates, each named (Simulator.h): with uneven stages the busiest
  // rank's hides what the others wait.
  os << "bubble rate " << formatAmount(sim.bubbleRate) << " ("
     << llvm::format("%.2f", 100 * sim.bubbleRate)
     << "%) on the busiest rank (the Zero Bubble paper's)\n";
  os << "pipeline bubble rate " << formatAmount(sim.pipelineBubbleRate) << " ("
     << llvm::format("%.2f", 100 * sim.pipelineBubbleRate)
     << "%): idle over ranks x makespan; idle share per rank";
  for (double share : sim.idleShare)
    os << " " << llvm::format("%.3f", share);
  os << "\n\n";

  // Per-rank facts, right-aligned under their headings.
  // With offload, a sixth column: the host's peak (Note [Offload as
  // actions]).
  const char *headings[] = {"rank", "busy", "idle", "span", "peak memory",
                            "peak host"};
  int columns = sim.peakHostMemory.empty() ? 5 : 6;
  std::vector<std::vector<std::string>> rows;
  for (int r = 0; r < numRanks; ++r) {
    auto [busy, span] = r < static_cast<int>(sim.timeline.size())
                            ? busyAndSpan(sim.timeline[r])
                            : std::pair<double, double>{0, 0};
    auto at = [](const std::vector<double> &v, int i) {
      return i < static_cast<int>(v.size()) ? formatAmount(v[i]) : std::string("-");
    };
    rows.push_back({std::to_string(r), formatAmount(busy), at(sim.idle, r), formatAmount(span),
                    at(sim.peakMemory, r), at(sim.peakHostMemory, r)});
  }
  size_t widths[6];
  for (int c = 0; c < columns; ++c) {
    widths[c] = strlen(headings[c]);
    for (const auto &row : rows)
      widths[c] = std::max(widths[c], row[c].size());
  }
  for (int c = 0; c < columns; ++c)
    os << (c ? "  " : "") << llvm::right_justify(headings[c], widths[c]);
  os << "\n";
  for (const auto &row : rows) {
    for (int c = 0; c < columns; ++c)
      os << (c ? "  " : "") << llvm::right_justify(row[c], widths[c]);
    os << "\n";
  }

  // The order, wrapped at 100 columns under a "rank N:" prefix.
  os << "\norder (F forward, B input gradient, W weight gradient, "
        "BW fused backward"
     << (table.hasRecompute() ? ", R recompute" : "")
     << (table.hasOffload() ? ", O offload to host, L reload" : "")
     << (table.has(Kind::S) ? ", S and T a rank's vocabulary passes (its "
                              "shard in place of the stage)"
                            : "")
     << "; (stage,microbatch)):\n";
  const size_t lineWidth = 100;
  for (int r = 0; r < numRanks; ++r) {
    std::string prefix = "rank " + std::to_string(r) + ":";
    std::string indent(prefix.size(), ' ');
    os << prefix;
    size_t column = prefix.size();
    for (const Action &a : table.ranks[r]) {
      std::string token = a.str();
      if (column + 1 + token.size() > lineWidth && column > prefix.size()) {
        os << "\n" << indent;
        column = indent.size();
      }
      os << " " << token;
      column += 1 + token.size();
    }
    os << "\n";
  }
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

void zbc::sched::writeJSON(const Problem &problem, const ScheduleTable &table,
                           const SimResult &sim, llvm::raw_ostream &os,
                           llvm::StringRef budgetOrigin) {
  llvm::json::OStream json(os);
  // Numbers go through rawValue so they print as formatAmount() does, not with
  // llvm::json's 17 digits.
  auto number = [&](llvm::StringRef key, double x) {
    json.attributeBegin(key);
    json.rawValue(jsonNum(x));
    json.attributeEnd();
  };
  auto numbers = [&](llvm::StringRef key, const std::vector<double> &xs) {
    json.attributeArray(key, [&] {
      for (double x : xs)
        json.rawValue(jsonNum(x));
    });
  };
  json.object([&] {
    number("makespan", sim.makespan);
    number("bubble_rate", sim.bubbleRate);
    number("pipeline_bubble_rate", sim.pipelineBubbleRate);
    numbers("idle_share", sim.idleShare);
    numbers("peak_memory", sim.peakMemory);
    if (!sim.peakHostMemory.empty())
      numbers("peak_host_memory", sim.peakHostMemory);
    numbers("idle", sim.idle);
    json.attribute("ranks", table.numRanks());
    json.attribute("stages", table.numStages());
    json.attribute("microbatches", table.microbatches);
    number("comm", problem.comm);
    if (problem.copyBandwidth > 0)
      number("copy_bandwidth", problem.copyBandwidth);
    if (problem.vocab.enabled())
      json.attributeObject("vocab", [&] {
        json.attribute("barriers", problem.vocab.barriers);
        number("S", problem.vocab.S);
        number("T", problem.vocab.T);
        number("mem", problem.vocab.mem);
        number("collective", problem.vocab.collective);
      });
    number("activation_budget", problem.budget());
    json.attribute("activation_budget_origin",
                   budgetOrigin.empty()
                       ? (problem.budget() > 0 ? "given" : "none")
                       : budgetOrigin);
    json.attributeArray("placement", [&] {
      for (int rank : table.rankOfStage)
        json.value(rank);
    });
    json.attributeArray("order", [&] {
      for (const std::vector<TimedAction> &line : sim.timeline)
        json.array([&] {
          for (const TimedAction &t : line)
            json.object([&] {
              json.attribute("kind", kindName(t.action.kind));
              json.attribute("stage", t.action.stage);
              json.attribute("microbatch", t.action.microbatch);
              number("start", t.start);
              number("end", t.end);
            });
        });
    });
  });
  os << "\n";
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

namespace {
/// Fill colours after the Zero Bubble paper's figures: F blue, B teal, W
/// green, fused BW purple, recomputation (not in the paper) orange and
/// the copies of offload brown (O) and slate (L), the vocabulary passes
/// gold (S light, T dark); the
/// darker shade marks a rank's second (odd) stage under interleaved and V
/// placements.
const char *fillColour(Kind kind, bool darker) {
  switch (kind) {
  case Kind::F:
    return darker ? "#5b8fd9" : "#a9c8f5";
  case Kind::B:
    return darker ? "#2fa59c" : "#93e0da";
  case Kind::W:
    return darker ? "#5fae45" : "#b4e29f";
  case Kind::BW:
    return darker ? "#8b67c9" : "#cdb6ef";
  case Kind::R:
    return darker ? "#d98a3a" : "#f6c995";
  case Kind::O: // copies: browns, drawn as strips under the compute
    return darker ? "#7a5a3a" : "#b08a60";
  case Kind::L:
    return darker ? "#5a6270" : "#8a94a6";
  case Kind::S: // the vocabulary passes: golds (Note [Vocabulary passes])
    return "#e3c04d";
  case Kind::T:
    return "#c99a1e";
  }
  return "#cccccc";
}

/// A round tick step (1, 2 or 5 times a power of ten) giving ~10 ticks.
double tickStep(double range) {
  double raw = range / 10;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double mult : {1.0, 2.0, 5.0})
    if (mult * power >= raw)
      return mult * power;
  return 10 * power;
}
} // namespace

static std::string px(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", x);
  return buffer;
}

void zbc::sched::writeSVG(const Problem &problem, const ScheduleTable &table,
                          const SimResult &sim, llvm::raw_ostream &os,
                          llvm::StringRef title, llvm::StringRef timeUnit) {
  (void)problem;
  // Layout in pixels: rank labels left of the plot, then one row per rank,
  // the time axis and the legend below.
  const double width = 1600, left = 70, right = 30, top = 40, rowHeight = 30,
               boxHeight = 24;
  int numRanks = static_cast<int>(sim.timeline.size());
  double end = 0;
  for (const auto &line : sim.timeline)
    for (const TimedAction &t : line)
      end = std::max(end, t.end);
  if (end <= 0)
    end = 1;
  double scale = (width - left - right) / end;
  double axisY = top + numRanks * rowHeight + 4;
  double legendY = axisY + 38;
  double height = legendY + 26;

  // Which of its rank's stages each stage is (0, 1, ...), for the shade.
  std::vector<int> chunk(table.numStages(), 0), held(table.numRanks(), 0);
  for (int s = 0; s < table.numStages(); ++s)
    chunk[s] = held[table.rankOfStage[s]]++;
  bool severalPerRank = llvm::any_of(held, [](int n) { return n > 1; });

  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(width)
     << "\" height=\"" << px(height) << "\" viewBox=\"0 0 " << px(width) << " "
     << px(height) << "\" font-family=\"Helvetica, Arial, sans-serif\" "
     << "style=\"background:#ffffff\">\n";
  os << "<text x=\"" << px(left) << "\" y=\"22\" font-size=\"14\">";
  for (char c : title) // a file's path may hold XML's special characters
    os << (c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;"
                                                        : std::string(1, c));
  os << (title.empty() ? "" : ": ") << numRanks
     << " ranks, " << table.numStages() << " stages, " << table.microbatches
     << " microbatches: makespan " << formatAmount(sim.makespan) << ", bubble rate "
     << llvm::format("%.2f", 100 * sim.bubbleRate) << "%</text>\n";

  // Only actions are <rect>s (legend swatches are paths), so tools can count
  // or select them.
  for (int r = 0; r < numRanks; ++r) {
    double y = top + r * rowHeight + (rowHeight - boxHeight) / 2;
    os << "<text x=\"" << px(left - 8) << "\" y=\"" << px(y + boxHeight / 2 + 4)
       << "\" font-size=\"12\" text-anchor=\"end\">rank " << r << "</text>\n";
    for (const TimedAction &t : sim.timeline[r]) {
      const Action &a = t.action;
      double x = left + t.start * scale, w = (t.end - t.start) * scale;
      // A copy runs beside the compute: a strip along the row's foot, O's
      // in its upper half and L's in its lower, over the compute boxes.
      double strip = 5, boxY = y, boxH = boxHeight;
      if (isCopy(a.kind)) {
        boxH = strip;
        boxY = y + boxHeight + 2 - (a.kind == Kind::O ? 2 * strip : strip);
      }
      os << "<rect class=\"" << kindName(a.kind) << "\" x=\"" << px(x)
         << "\" y=\"" << px(boxY) << "\" width=\"" << px(w) << "\" height=\""
         << px(boxH) << "\" fill=\""
         << fillColour(a.kind, chunk[a.stage] % 2 == 1)
         << "\" stroke=\"#333333\" stroke-width=\"0.5\"><title>" << a.str()
         << " " << formatAmount(t.start) << "-" << formatAmount(t.end) << "</title></rect>\n";
      // The microbatch number, shrunk to fit; left out where even 6 px
      // text would spill over the box (large schedules).
      if (isCopy(a.kind))
        continue; // too thin to label
      std::string label = std::to_string(a.microbatch);
      double fontSize =
          std::min(12.0, (w - 2) / (0.62 * static_cast<double>(label.size())));
      if (fontSize >= 6)
        os << "<text class=\"mb\" x=\"" << px(x + w / 2) << "\" y=\""
           << px(y + boxHeight / 2 + fontSize * 0.35) << "\" font-size=\""
           << px(fontSize) << "\" text-anchor=\"middle\">" << label
           << "</text>\n";
    }
  }

  // Time axis.
  double plotRight = left + end * scale;
  os << "<line x1=\"" << px(left) << "\" y1=\"" << px(axisY) << "\" x2=\""
     << px(plotRight) << "\" y2=\"" << px(axisY)
     << "\" stroke=\"#333333\" stroke-width=\"1\"/>\n";
  double step = tickStep(end);
  for (int i = 0; i * step <= end * (1 + 1e-9); ++i) {
    double x = left + i * step * scale;
    os << "<line x1=\"" << px(x) << "\" y1=\"" << px(axisY) << "\" x2=\""
       << px(x) << "\" y2=\"" << px(axisY + 5)
       << "\" stroke=\"#333333\" stroke-width=\"1\"/>\n";
    os << "<text x=\"" << px(x) << "\" y=\"" << px(axisY + 18)
       << "\" font-size=\"11\" text-anchor=\"middle\">" << formatAmount(i * step)
       << "</text>\n";
  }
  os << "<text x=\"" << px(left - 8) << "\" y=\"" << px(axisY + 18)
     << "\" font-size=\"11\" text-anchor=\"end\">time</text>\n";
  if (!timeUnit.empty()) // under "time": the margin is narrow
    os << "<text x=\"" << px(left - 8) << "\" y=\"" << px(axisY + 31)
       << "\" font-size=\"11\" text-anchor=\"end\">(" << timeUnit
       << ")</text>\n"; // a word of ours, no markup

  // Legend.
  struct Entry {
    Kind kind;
    const char *label;
  };
  const Entry entries[] = {{Kind::F, "F forward"},
                           {Kind::B, "B input gradient"},
                           {Kind::W, "W weight gradient"},
                           {Kind::BW, "BW fused backward"},
                           {Kind::R, "R recompute"},
                           {Kind::O, "O offload (strip)"},
                           {Kind::L, "L reload (strip)"}};
  // R, O and L only where the schedule has them, so other pictures stay as
  // they were.
  bool recomputes = table.hasRecompute(), offloads = table.hasOffload();
  double x = left;
  for (const Entry &e : entries) {
    if ((e.kind == Kind::R && !recomputes) || (isCopy(e.kind) && !offloads))
      continue;
    os << "<path d=\"M" << px(x) << " " << px(legendY - 11)
       << " h14 v14 h-14 z\" fill=\"" << fillColour(e.kind, false)
       << "\" stroke=\"#333333\" stroke-width=\"0.5\"/>\n";
    os << "<text x=\"" << px(x + 20) << "\" y=\"" << px(legendY)
       << "\" font-size=\"12\">" << e.label << "</text>\n";
    x += 170;
  }
  if (severalPerRank)
    os << "<text x=\"" << px(x) << "\" y=\"" << px(legendY)
       << "\" font-size=\"12\">darker: a rank's 2nd (4th, ...) stage; "
          "numbers: microbatch</text>\n";
  else
    os << "<text x=\"" << px(x) << "\" y=\"" << px(legendY)
       << "\" font-size=\"12\">numbers: microbatch</text>\n";
  os << "</svg>\n";
}

//===----------------------------------------------------------------------===//
// Chrome trace
//===----------------------------------------------------------------------===//

void zbc::sched::writeChromeTrace(const Problem &problem,
                                  const ScheduleTable &table,
                                  const SimResult &sim, llvm::raw_ostream &os) {
  (void)problem;
  // One time unit is shown as one millisecond (the trace counts in us).
  const double usPerUnit = 1000;
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("displayTimeUnit", "ms");
    json.attributeArray("traceEvents", [&] {
      json.object([&] {
        json.attribute("name", "process_name");
        json.attribute("ph", "M");
        json.attribute("pid", 0);
        json.attributeObject("args",
                             [&] { json.attribute("name", "pipeline"); });
      });
      // Copies (O, L) get a track of their own under their rank's.
      int numRanks = static_cast<int>(sim.timeline.size());
      bool offloads = table.hasOffload();
      auto trackOf = [&](int r, Kind kind) {
        return offloads ? 2 * r + (isCopy(kind) ? 1 : 0) : r;
      };
      for (int r = 0; r < numRanks; ++r)
        for (bool copies : {false, true}) {
          if (copies && !offloads)
            continue;
          int tid = trackOf(r, copies ? Kind::O : Kind::F);
          json.object([&] {
            json.attribute("name", "thread_name");
            json.attribute("ph", "M");
            json.attribute("pid", 0);
            json.attribute("tid", tid);
            json.attributeObject("args", [&] {
              json.attribute("name", "rank " + std::to_string(r) +
                                         (copies ? " copies" : ""));
            });
          });
          // Keep tracks in rank order whatever the viewer's default.
          json.object([&] {
            json.attribute("name", "thread_sort_index");
            json.attribute("ph", "M");
            json.attribute("pid", 0);
            json.attribute("tid", tid);
            json.attributeObject("args",
                                 [&] { json.attribute("sort_index", tid); });
          });
        }
      for (int r = 0; r < static_cast<int>(sim.timeline.size()); ++r)
        for (const TimedAction &t : sim.timeline[r])
          json.object([&] {
            json.attribute("name", std::string(kindName(t.action.kind)) +
                                       std::to_string(t.action.microbatch));
            json.attribute("cat", kindName(t.action.kind));
            json.attribute("ph", "X");
            json.attribute("pid", 0);
            json.attribute("tid", trackOf(r, t.action.kind));
            json.attributeBegin("ts");
            json.rawValue(jsonNum(t.start * usPerUnit));
            json.attributeEnd();
            json.attributeBegin("dur");
            json.rawValue(jsonNum((t.end - t.start) * usPerUnit));
            json.attributeEnd();
            json.attributeObject("args", [&] {
              json.attribute("stage", t.action.stage);
              json.attribute("microbatch", t.action.microbatch);
            });
          });
    });
  });
  os << "\n";
}
