//===- TorchCSV.cpp - PyTorch's schedule CSV, written and read -----------===//
//
// One home for both directions of torch.distributed.pipelining's schedule
// CSV (TorchCSV.h), so the writer and the reader cannot disagree on it.
//
// The CSV follows torch/distributed/pipelining/schedules.py
// (PipelineScheduleMulti._dump_csv / _load_csv, _Action.__repr__/from_str):
// row r (0-based) is rank r's action list, one action per cell, written
// [stage][type][microbatch] with global stage indices, type F (forward),
// I (input gradient: our B), W (weight gradient), B (full backward: our BW).
// An empty cell is PyTorch's None, an idle step, and carries nothing here:
// the simulator derives idle time from dependencies. See parseCSV for
// what else PyTorch may write and how it is treated.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/TorchCSV.h"
#include "zbc/Support/StageBoundary.h"
#include "Core/Support.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

using namespace zbc::sched;

//===----------------------------------------------------------------------===//
// CSV (PyTorch's format; file comment)
//===----------------------------------------------------------------------===//

llvm::Error zbc::sched::checkCSVExpressible(const ScheduleTable &table) {
  for (auto [r, actions] : llvm::enumerate(table.ranks))
    for (auto [i, a] : llvm::enumerate(actions))
      if (isVocabPass(a.kind))
        return fail("PyTorch's schedule CSV cannot express vocabulary "
                    "parallelism: rank " + llvm::Twine(r) + ", action " +
                    llvm::Twine(i) + " " + a.str() + " (microbatch " +
                    llvm::Twine(a.microbatch) + ") has no computation type "
                    "there; write the schedule as a table, JSON, SVG or "
                    "trace");
      else if (a.kind == Kind::R || isCopy(a.kind))
        return fail(llvm::Twine("PyTorch's schedule CSV cannot express ") +
                    (a.kind == Kind::R ? "recomputation" : "offload") +
                    ": rank " + llvm::Twine(r) + ", action " + llvm::Twine(i) +
                    " " + a.str() + " (microbatch " + llvm::Twine(a.microbatch) +
                    ") has no computation type there; write the schedule as "
                    "a table, JSON, SVG or trace, or build it with " +
                    (a.kind == Kind::R ? "--recompute none" : "--offload none"));
  return llvm::Error::success();
}

llvm::Error zbc::sched::writeCSV(const ScheduleTable &table,
                                 llvm::raw_ostream &os) {
  if (llvm::Error error = checkCSVExpressible(table))
    return error;
  // Python's csv module ends rows with "\r\n"; PyTorch's reader (and ours)
  // take either, and "\n" keeps the file friendly to diff and grep.
  for (auto [r, actions] : llvm::enumerate(table.ranks)) {
    llvm::ListSeparator comma(",");
    const std::vector<std::pair<int, std::string>> none;
    const auto &kept = r < table.passthrough.size() ? table.passthrough[r] : none;
    auto keptBefore = [&](size_t i) {
      for (const auto &[at, cell] : kept)
        if (at == static_cast<int>(i))
          os << comma << cell;
    };
    for (size_t i = 0; i < actions.size(); ++i) {
      keptBefore(i);
      if (i + 1 < actions.size() &&
          table.overlaps.count({static_cast<int>(r), static_cast<int>(i)})) {
        os << comma << "(" << actions[i].csvStr() << ";"
           << actions[i + 1].csvStr() << ")OVERLAP_F_B";
        ++i;
        continue;
      }
      os << comma << actions[i].csvStr();
    }
    keptBefore(actions.size());
    os << "\n";
  }
  return llvm::Error::success();
}

/// The lines of a CSV as rows, as csv.reader yields them: every line is a
/// row, even a blank one (a rank with no actions), except blank lines after
/// the last row (an editor's trailing newlines are not ranks).
static llvm::SmallVector<llvm::StringRef> csvRows(llvm::StringRef text) {
  text.consume_front("\xEF\xBB\xBF"); // a UTF-8 byte-order mark
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  while (!lines.empty() && lines.back().trim().empty())
    lines.pop_back();
  return lines;
}

namespace {

/// Where a cell came from, for messages: "line 2 (rank 1), cell 5 '0X3'".
struct CellRef {
  int line = 0; // 1-based; 0: none
  int cell = 0; // 1-based
  std::string text;
  std::string str() const {
    return "line " + std::to_string(line) + " (rank " +
           std::to_string(line - 1) + "), cell " + std::to_string(cell) + " '" +
           text + "'";
  }
};

/// Splits one CSV line into cells as Python's csv.reader does for the
/// cells PyTorch writes: commas separate; a double-quoted cell may hold
/// commas and "" for a quote. Returns false on an unterminated quote.
bool splitCells(llvm::StringRef line, llvm::SmallVectorImpl<std::string> &out) {
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c != '"')
        cell += c;
      else if (i + 1 < line.size() && line[i + 1] == '"')
        cell += '"', ++i;
      else
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  out.push_back(std::move(cell));
  return !quoted;
}

/// One cell's action: a compute, a transfer (named as zbc names it: the
/// producing stage and the payload), or an FSDP op that zbc accepts and
/// ignores.
struct Cell {
  enum What { Compute, Send, Recv, Ignored } what = Compute;
  Action action{Kind::F, 0, 0}; // Compute
  Product payload = Product::Activation;   // Send, Recv
  int stage = 0, microbatch = 0;    // Send, Recv: the producing stage
};

struct CSVParser {
  int ranks, numStages, microbatches;
  std::vector<int> rankOfStage;

  /// One action "[stage][type][microbatch]" (already trimmed) from `where`
  /// (which names the cell in messages).
  llvm::Expected<Cell> parseAction(llvm::StringRef text, const CellRef &where,
                                   int rank) const {
    auto error = [&](const llvm::Twine &why) {
      return fail(where.str() + ": " + why);
    };
    llvm::StringRef rest = text;
    llvm::StringRef stageText = rest.take_while(llvm::isDigit);
    rest = rest.drop_front(stageText.size());
    llvm::StringRef type =
        rest.take_while([](char c) { return llvm::isAlpha(c) || c == '_'; });
    rest = rest.drop_front(type.size());
    llvm::StringRef mbText = rest.take_while(llvm::isDigit);
    rest = rest.drop_front(mbText.size());
    if (stageText.empty() || type.empty() || !rest.empty())
      return error("malformed action '" + text +
                   "'; expected [stage][type][microbatch], e.g. 0F3");

    Cell cell;
    if (type == "F" || type == "I" || type == "W" || type == "B") {
      cell.what = Cell::Compute;
      cell.action.kind = type == "F"   ? Kind::F
                         : type == "I" ? Kind::B
                         : type == "W" ? Kind::W
                                       : Kind::BW;
    } else if (type == "SEND_F" || type == "RECV_F" || type == "SEND_B" ||
               type == "RECV_B") {
      cell.what = type.starts_with("SEND") ? Cell::Send : Cell::Recv;
      cell.payload = type.ends_with("F") ? Product::Activation : Product::InputGrad;
    } else if (type == "UNSHARD" || type == "RESHARD" || type == "REDUCE_GRAD") {
      cell.what = Cell::Ignored; // FSDP and gradient reduction: not modelled
    } else if (type == "OVERLAP_F_B") {
      return error("OVERLAP_F_B needs its sub-actions, as in "
                   "(0F1;7B0)OVERLAP_F_B");
    } else {
      return error("unknown computation type '" + type +
                   "' (expected F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, "
                   "UNSHARD, RESHARD or REDUCE_GRAD" +
                   (type == "BW" ? "; PyTorch writes a fused backward as B"
                                 : "") +
                   ")");
    }

    unsigned stage, microbatch = 0;
    if (stageText.getAsInteger(10, stage) || stage >= unsigned(numStages))
      return error("stage " + stageText + " out of range [0, " +
                   llvm::Twine(numStages) + ")");
    if (rankOfStage[stage] != rank)
      return error("stage " + llvm::Twine(stage) + " is on rank " +
                   llvm::Twine(rankOfStage[stage]) +
                   " under this placement, but the row is rank " +
                   llvm::Twine(rank) + " (wrong placement?)");
    if (cell.what == Cell::Ignored)
      return cell; // FSDP ops name no microbatch
    if (mbText.empty())
      return error("the action has no microbatch");
    if (mbText.getAsInteger(10, microbatch) ||
        microbatch >= unsigned(microbatches))
      return error("microbatch " + mbText + " out of range [0, " +
                   llvm::Twine(microbatches) + ")");
    int s = static_cast<int>(stage), j = static_cast<int>(microbatch);
    if (cell.what == Cell::Compute) {
      cell.action.stage = s;
      cell.action.microbatch = j;
      return cell;
    }
    // PyTorch names a transfer by the stage that runs it; zbc by the stage
    // that produced what moves. A RECV_F of stage s brings stage s-1's
    // activation, a RECV_B stage s+1's input gradient.
    bool act = cell.payload == Product::Activation;
    int producer = cell.what == Cell::Send ? s : zbc::producerStage(act, s);
    int consumer = zbc::consumerStage(act, producer);
    if (producer < 0 || producer >= numStages || consumer < 0 ||
        consumer >= numStages)
      return error(type + " of stage " + stageText + ": no stage " +
                   (cell.what == Cell::Send ? "receives it" : "sends it"));
    cell.stage = producer;
    cell.microbatch = j;
    return cell;
  }

  /// One cell: empty (an idle step), an action, or PyTorch's overlapped pair
  /// "(0F7;7B3)OVERLAP_F_B", whose sub-actions are appended in order.
  llvm::Error parseCell(llvm::StringRef text, const CellRef &where, int rank,
                        std::vector<std::pair<Cell, CellRef>> &out) const {
    text = text.trim();
    if (text.empty())
      return llvm::Error::success();
    if (!text.starts_with("(")) {
      llvm::Expected<Cell> a = parseAction(text, where, rank);
      if (!a)
        return a.takeError();
      out.push_back({*a, where});
      return llvm::Error::success();
    }
    size_t close = text.find(')');
    if (close == llvm::StringRef::npos)
      return fail(where.str() + ": malformed action: '(' without ')'");
    llvm::StringRef type = text.drop_front(close + 1).trim();
    if (type != "OVERLAP_F_B")
      return fail(where.str() + ": '(...)" + type +
                  "': only OVERLAP_F_B groups actions");
    llvm::SmallVector<llvm::StringRef> parts;
    text.slice(1, close).split(parts, ';');
    for (llvm::StringRef part : parts) {
      part = part.trim();
      if (part.empty())
        continue;
      llvm::Expected<Cell> a = parseAction(part, where, rank);
      if (!a)
        return a.takeError();
      if (a->what != Cell::Compute)
        return fail(where.str() + ": OVERLAP_F_B pairs compute actions only");
      out.push_back({*a, where});
    }
    return llvm::Error::success();
  }
};

/// Every cell of a CSV in either format, checked: rows, cells, duplicates
/// and the old meaning of B.
llvm::Expected<std::vector<std::pair<Cell, CellRef>>>
readCells(llvm::StringRef text, const CSVParser &parser) {
  int ranks = parser.ranks, microbatches = parser.microbatches;
  llvm::SmallVector<llvm::StringRef> lines = csvRows(text);
  if (static_cast<int>(lines.size()) > ranks)
    return fail("CSV line " + llvm::Twine(ranks + 1) +
                ": more rows than ranks (" + llvm::Twine(ranks) +
                "); the format has one row per rank");
  if (static_cast<int>(lines.size()) < ranks)
    return fail("CSV: " + llvm::Twine(lines.size()) + " rows for " +
                llvm::Twine(ranks) + " ranks; the format has one row per rank");
  std::vector<std::pair<Cell, CellRef>> parsed;
  for (int r = 0; r < ranks; ++r) {
    llvm::StringRef line = lines[r];
    line.consume_back("\r");
    llvm::SmallVector<std::string> cells;
    if (!splitCells(line, cells))
      return fail("CSV line " + llvm::Twine(r + 1) + " (rank " +
                  llvm::Twine(r) + "): unterminated quote");
    for (auto [c, cell] : llvm::enumerate(cells)) {
      CellRef where{r + 1, static_cast<int>(c) + 1, cell};
      if (llvm::Error error = parser.parseCell(cell, where, r, parsed))
        return fail("CSV " + llvm::toString(std::move(error)));
    }
  }

  // Duplicates and the old meaning of B, checked here because here the
  // message can point at the cells.
  auto computeKey = [&](const Action &a) {
    return (static_cast<uint64_t>(a.stage) * microbatches + a.microbatch) * 4 +
           static_cast<uint64_t>(a.kind);
  };
  llvm::DenseMap<uint64_t, size_t> seen;
  std::map<std::tuple<int, int, Product, int, int>, size_t> transfers;
  for (auto [i, entry] : llvm::enumerate(parsed)) {
    const Cell &cell = entry.first;
    if (cell.what == Cell::Compute) {
      auto [it, inserted] = seen.try_emplace(computeKey(cell.action), i);
      if (!inserted)
        return fail("CSV " + entry.second.str() + ": " + cell.action.csvStr() +
                    " appears twice (also at " +
                    parsed[it->second].second.str() + ")");
    } else if (cell.what != Cell::Ignored) {
      auto [it, inserted] = transfers.try_emplace(
          {entry.second.line, int(cell.what), cell.payload, cell.stage,
           cell.microbatch},
          i);
      if (!inserted)
        return fail("CSV " + entry.second.str() + " appears twice (also at " +
                    parsed[it->second].second.str() + ")");
    }
  }
  for (const auto &[cell, where] : parsed) {
    if (cell.what != Cell::Compute || cell.action.kind != Kind::BW)
      continue;
    const Action &a = cell.action;
    auto w = seen.find(computeKey(Action{Kind::W, a.stage, a.microbatch}));
    if (w != seen.end())
      return fail("CSV " + where.str() +
                  ": B is a full backward (input and weight gradient) in "
                  "PyTorch's format, but " +
                  parsed[w->second].second.str() +
                  " also runs W for it; write the input gradient as " +
                  std::to_string(a.stage) + "I" + std::to_string(a.microbatch) +
                  " (older PyTorch versions wrote B for it)");
  }
  return std::move(parsed);
}

/// An OVERLAP_F_B's two computes: PyTorch issues them together, so one
/// forward and one backward (B or BW), neither needing what the other makes.
llvm::Error checkOverlap(const Action &first, const Action &second,
                         int numStages, const CellRef &where) {
  auto backward = [](const Action &a) {
    return a.kind == Kind::B || a.kind == Kind::BW;
  };
  if (!((first.kind == Kind::F && backward(second)) ||
        (backward(first) && second.kind == Kind::F)))
    return fail("CSV " + where.str() + ": OVERLAP_F_B pairs a forward with "
                "a backward (F with I or B), not " + first.csvStr() +
                " with " + second.csvStr());
  bool dependent = false;
  for (auto [a, b] : {std::pair(first, second), std::pair(second, first)}) {
    std::optional<ProductRef> made = productOf(a);
    forEachDependence(b, numStages, [&](const ProductRef &d) {
      dependent |= made && d.product == made->product &&
                   d.stage == made->stage && d.microbatch == made->microbatch;
    });
    dependent |= a.stage == b.stage && a.microbatch == b.microbatch;
  }
  if (dependent)
    return fail("CSV " + where.str() + ": OVERLAP_F_B issues its two "
                "computes together, but " + second.csvStr() + " and " +
                first.csvStr() + " depend on each other");
  return llvm::Error::success();
}

/// The parser for a problem, after the checks every entry point shares.
llvm::Expected<CSVParser> parserFor(int ranks, int numStages, int microbatches,
                                    Placement placement) {
  if (ranks < 1 || numStages < 1 || microbatches < 1)
    return fail("CSV: ranks, stages and microbatches must be at least 1, got " +
                llvm::Twine(ranks) + ", " + llvm::Twine(numStages) + ", " +
                llvm::Twine(microbatches));
  bool placeable = placement == Placement::Linear ? numStages == ranks
                   : placement == Placement::Interleaved
                       ? numStages % ranks == 0
                       : numStages == 2 * ranks;
  if (!placeable)
    return fail("CSV: " + llvm::Twine(numStages) + " stages cannot be placed " +
                placementName(placement) + " on " + llvm::Twine(ranks) +
                " ranks");
  return CSVParser{ranks, numStages, microbatches,
                   placeStages(placement, ranks, numStages)};
}

} // namespace

CSVShape zbc::sched::scanCSV(llvm::StringRef text) {
  CSVShape shape;
  llvm::SmallVector<llvm::StringRef> rows = csvRows(text);
  shape.rows = rows.size();
  // Every run of digits, letters, digits is a candidate action; a number
  // that does not fit is left to parseCSV to reject.
  for (llvm::StringRef row : rows) {
    llvm::SmallVector<std::string> cells;
    splitCells(row, cells);
    for (const std::string &cell : cells) {
      llvm::SmallVector<llvm::StringRef> parts;
      llvm::StringRef(cell).split(parts, ';');
      for (llvm::StringRef part : parts) {
        part = part.trim().ltrim('(');
        llvm::StringRef stage = part.take_while(llvm::isDigit);
        llvm::StringRef rest = part.drop_front(stage.size());
        rest = rest.drop_while([](char c) { return llvm::isAlpha(c) || c == '_'; });
        llvm::StringRef mb = rest.take_while(llvm::isDigit);
        int64_t s, j;
        if (stage.empty() || mb.empty() || stage.getAsInteger(10, s) ||
            mb.getAsInteger(10, j))
          continue;
        shape.stages = std::max(shape.stages, s + 1);
        shape.microbatches = std::max(shape.microbatches, j + 1);
      }
    }
  }
  return shape;
}

llvm::Expected<ScheduleTable> zbc::sched::parseCSV(llvm::StringRef text,
                                                   int ranks, int numStages,
                                                   int microbatches,
                                                   Placement placement) {
  llvm::Expected<CSVParser> parser =
      parserFor(ranks, numStages, microbatches, placement);
  if (!parser)
    return parser.takeError();
  llvm::Expected<std::vector<std::pair<Cell, CellRef>>> cells =
      readCells(text, *parser);
  if (!cells)
    return cells.takeError();
  ScheduleTable table;
  table.notation = ScheduleTable::Notation::CSV;
  table.microbatches = microbatches;
  table.rankOfStage = parser->rankOfStage;
  table.ranks.resize(ranks);
  // The compute order; a compute+comms file's transfers are the program's,
  // not the table's (parseCSVProgram reads them). Two computes from one
  // cell are an OVERLAP_F_B; cells zbc does not schedule are kept to be
  // written back.
  table.passthrough.resize(ranks);
  for (size_t i = 0; i < cells->size(); ++i) {
    const auto &[cell, where] = (*cells)[i];
    int r = where.line - 1;
    int at = static_cast<int>(table.ranks[r].size());
    if (cell.what == Cell::Ignored)
      table.passthrough[r].push_back({at, where.text});
    if (cell.what != Cell::Compute)
      continue;
    if (i + 1 < cells->size() && (*cells)[i + 1].first.what == Cell::Compute &&
        (*cells)[i + 1].second.line == where.line &&
        (*cells)[i + 1].second.cell == where.cell) {
      if (llvm::Error error =
              checkOverlap(cell.action, (*cells)[i + 1].first.action,
                           numStages, where))
        return std::move(error);
      table.overlaps.insert({r, at});
    }
    table.ranks[r].push_back(cell.action);
  }
  if (llvm::Error error = table.verify())
    return fail("CSV: " + llvm::toString(std::move(error)));
  return std::move(table);
}

llvm::Expected<CSVProgram>
zbc::sched::parseCSVProgram(llvm::StringRef text, int ranks, int numStages,
                            int microbatches, Placement placement) {
  llvm::Expected<CSVParser> parser =
      parserFor(ranks, numStages, microbatches, placement);
  if (!parser)
    return parser.takeError();
  llvm::Expected<std::vector<std::pair<Cell, CellRef>>> cells =
      readCells(text, *parser);
  if (!cells)
    return cells.takeError();

  CSVProgram out;
  Program &program = out.program;
  program.notation = ScheduleTable::Notation::CSV;
  program.microbatches = microbatches;
  program.rankOfStage = parser->rankOfStage;
  // One message per boundary: PyTorch sends each stage's output as it is.
  setOneMessagePerBoundary(program);
  program.ranks.resize(ranks);
  out.cells.resize(ranks);
  out.positions.resize(ranks);
  for (const auto &[cell, where] : *cells)
    out.hasComms |= cell.what == Cell::Send || cell.what == Cell::Recv;

  // As PyTorch's runtime runs a compute+comms schedule: a compute waits for
  // the recvs of what it needs that its rank has posted before it; a send
  // waits for the compute that made what it sends; sends are waited for at
  // the end of the step; each transfer is its own batch (no streams shared).
  std::vector<std::map<std::tuple<Product, int, int>, int>> recvAt(ranks);
  std::vector<std::map<std::tuple<int, int, Product>, int>> madeAt(ranks);
  for (const auto &[cell, where] : *cells) {
    if (cell.what == Cell::Ignored)
      continue;
    int r = where.line - 1;
    std::vector<ProgramOp> &ops = program.ranks[r].ops;
    int index = static_cast<int>(ops.size());
    ProgramOp op;
    if (cell.what == Cell::Compute) {
      const Action &a = cell.action;
      op.kind = a.kind;
      op.stage = a.stage;
      op.microbatch = a.microbatch;
      forEachDependence(a, numStages, [&](const ProductRef &d) {
        auto it = recvAt[r].find({d.product, d.stage, d.microbatch});
        if (it != recvAt[r].end())
          op.deps.push_back(it->second);
      });
      if (std::optional<ProductRef> made = productOf(a))
        madeAt[r][{made->stage, made->microbatch, made->product}] = index;
      // The second compute of an OVERLAP_F_B (one cell): the two are issued
      // together, so the first also waits for what the second needs, and
      // either may run first without waiting on anything more.
      if (!ops.empty() && ops.back().what == OpClass::Compute &&
          out.positions[r].back() == std::pair(where.line, where.cell)) {
        Action first{ops.back().kind, ops.back().stage, ops.back().microbatch};
        if (llvm::Error error = checkOverlap(first, a, numStages, where))
          return std::move(error);
        for (int d : op.deps)
          if (!llvm::is_contained(ops.back().deps, d))
            ops.back().deps.push_back(d);
      }
    } else {
      bool send = cell.what == Cell::Send;
      bool act = cell.payload == Product::Activation;
      op.what = send ? OpClass::Send : OpClass::Recv;
      op.payload = cell.payload;
      op.stage = cell.stage;
      op.microbatch = cell.microbatch;
      op.key = boundaryKey(cell.payload);
      int consumer = consumerOf(cell.payload, cell.stage);
      op.peer = parser->rankOfStage[send ? consumer : cell.stage];
      if (send) {
        auto it = madeAt[r].find({cell.stage, cell.microbatch,
                                  act ? Product::Activation : Product::InputGrad});
        if (it != madeAt[r].end())
          op.deps.push_back(it->second);
      } else {
        recvAt[r][{cell.payload, cell.stage, cell.microbatch}] = index;
      }
    }
    ops.push_back(std::move(op));
    out.cells[r].push_back(where.str());
    out.positions[r].push_back({where.line, where.cell});
  }
  return std::move(out);
}

void zbc::sched::writeCSVComms(const Program &program, llvm::raw_ostream &os) {
  Program named = program;
  named.notation = ScheduleTable::Notation::CSV;
  for (const RankProgram &rank : program.ranks) {
    llvm::ListSeparator comma(",");
    for (const ProgramOp &op : rank.ops)
      if (op.what != OpClass::Group) // members follow their group in order
        os << comma << named.name(op);
    os << "\n";
  }
}
