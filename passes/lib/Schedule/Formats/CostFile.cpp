//===- CostFile.cpp - reading the JSON cost file --------------------------===//
//
// Type and range checks for every key of CostFile.h; llvm::json does the
// parsing, after checkJSONDepth has bounded its recursion.
//
//===----------------------------------------------------------------------===//

#include "zbc/Schedule/CostFile.h"
#include "zbc/Schedule/Problem.h"
#include "Core/Support.h"

#include "zbc/Support/Limits.h"
#include "zbc/Support/NestingDepth.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace zbc;
using namespace zbc::sched;
namespace json = llvm::json;

llvm::Error zbc::sched::checkJSONDepth(llvm::StringRef text,
                                       llvm::StringRef name, int maxDepth) {
  if (std::optional<TextPosition> at = findExcessNesting(
          std::string_view(text.data(), text.size()), maxDepth,
          NestingSyntax::JSON))
    return fail(name + ":" + llvm::Twine(at->line) + ":" +
                llvm::Twine(at->column) + ": JSON nested deeper than " +
                llvm::Twine(maxDepth) + " levels");
  return llvm::Error::success();
}

namespace {

/// The JSON type of a value, as a message names it.
const char *typeName(const json::Value &value) {
  switch (value.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "a list";
  case json::Value::Object:
    return "an object";
  }
  return "a value";
}

struct Reader {
  llvm::StringRef name;

  llvm::Error wrongType(llvm::StringRef key, const json::Value &value,
                        llvm::StringRef expected) const {
    std::string found = typeName(value);
    if (value.kind() == json::Value::Number)
      found += " (" + formatNumber(*value.getAsNumber()) + ")";
    else if (std::optional<llvm::StringRef> s = value.getAsString())
      found += " (\"" + s->str() + "\")";
    return fail(name + ": '" + key + "' must be " + expected + ", got " + found);
  }

  /// An integer in [1, max].
  llvm::Expected<int64_t> count(llvm::StringRef key, const json::Value &value,
                                int64_t max) const {
    std::string expected = "an integer in [1, " + std::to_string(max) + "]";
    std::optional<int64_t> n = value.getAsInteger();
    if (!n) {
      // An integer-valued number too large for int64 is out of range, not
      // of the wrong type.
      std::optional<double> x = value.getAsNumber();
      if (x && std::isfinite(*x) && *x == std::floor(*x))
        return fail(name + ": '" + key + "' must be " + expected + ", got " +
                    formatNumber(*x));
      return wrongType(key, value, expected);
    }
    if (*n < 1 || *n > max)
      return fail(name + ": '" + key + "' must be " + expected + ", got " +
                  llvm::Twine(*n));
    return *n;
  }

  /// A number in [0, kMaxAmount].
  llvm::Expected<double> amount(llvm::StringRef key,
                                const json::Value &value) const {
    std::string expected =
        "a number in [0, " + formatNumber(limits::kMaxAmount) + "]";
    std::optional<double> x = value.getAsNumber();
    if (!x)
      return wrongType(key, value, expected);
    if (!std::isfinite(*x) || *x < 0 || *x > limits::kMaxAmount)
      return fail(name + ": '" + key + "' must be " + expected + ", got " +
                  formatNumber(*x));
    return *x;
  }

  /// An activation budget (Note [Two memory limits]): an amount, "none"
  /// (0) or "default" (nullopt: the schedule's own), as the command line
  /// writes it.
  llvm::Expected<std::optional<double>>
  budget(llvm::StringRef key, const json::Value &value) const {
    if (std::optional<llvm::StringRef> text = value.getAsString()) {
      if (*text == "default" || *text == "none")
        return parseActivationBudget(*text);
      return wrongType(key, value,
                       "a number in [0, " + formatNumber(limits::kMaxAmount) +
                           "], \"none\" or \"default\"");
    }
    llvm::Expected<double> x = amount(key, value);
    if (!x)
      return x.takeError();
    return std::optional<double>(*x);
  }

  /// One amount, or a non-empty list of them.
  llvm::Expected<std::vector<double>> amounts(llvm::StringRef key,
                                              const json::Value &value) const {
    if (value.kind() == json::Value::Number) {
      llvm::Expected<double> one = amount(key, value);
      if (!one)
        return one.takeError();
      return std::vector<double>{*one};
    }
    const json::Array *list = value.getAsArray();
    if (!list)
      return wrongType(key, value, "a number or a list of numbers");
    if (list->empty())
      return fail(name + ": '" + key +
                  "' is an empty list; give one number, or one per stage");
    if (static_cast<int64_t>(list->size()) > limits::kMaxStages)
      return fail(name + ": '" + key + "' has " + llvm::Twine(list->size()) +
                  " values; at most " + llvm::Twine(limits::kMaxStages) +
                  " stages are accepted");
    std::vector<double> out;
    out.reserve(list->size());
    for (auto [i, item] : llvm::enumerate(*list)) {
      std::string itemKey = (key + "[" + llvm::Twine(i) + "]").str();
      llvm::Expected<double> x = amount(itemKey, item);
      if (!x)
        return x.takeError();
      out.push_back(*x);
    }
    return out;
  }
};

} // namespace

llvm::Expected<CostFile> zbc::sched::parseCostFile(llvm::StringRef text,
                                                   llvm::StringRef name) {
  if (llvm::Error error = checkJSONDepth(text, name, limits::kMaxJSONDepth))
    return std::move(error);
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fail(name + ": " + llvm::toString(parsed.takeError()));
  const json::Object *object = parsed->getAsObject();
  if (!object)
    return fail(name + ": expected a JSON object, got " + typeName(*parsed));

  static const llvm::StringRef known[] = {
      "ranks",     "microbatches", "virtual", "comm",
      "activation_budget", "copy_bandwidth", "collective_bandwidth", "F", "B",
      "W",         "R",            "M_B",     "M_W",
      "M_keep",    "M_offload",    "model",   "model_hash"};
  Reader read{name};
  CostFile file;
  // The key's name before the two limits were told apart (issue 26): a file
  // written then means the activation budget, and says so.
  if (object->get("mem_limit"))
    return fail(name + ": 'mem_limit' is now 'activation_budget' (what a "
                       "rank keeps in flight, in the units of M_B and M_W; "
                       "Note [Two memory limits])");
  // In the order of `known`, not the file's, so the first error is stable.
  for (const auto &entry : *object)
    if (!llvm::is_contained(known, llvm::StringRef(entry.first)))
      return fail(name + ": unknown key '" + llvm::StringRef(entry.first) +
                  "' (expected " + llvm::join(llvm::ArrayRef(known), ", ") + ")");
  for (auto [key, field] :
       {std::pair<llvm::StringRef, std::optional<int64_t> CostFile::*>{
            "ranks", &CostFile::ranks},
        {"microbatches", &CostFile::microbatches},
        {"virtual", &CostFile::virtualStages}}) {
    const json::Value *value = object->get(key);
    if (!value)
      continue;
    int64_t max = key == "ranks"          ? limits::kMaxRanks
                  : key == "microbatches" ? limits::kMaxMicrobatches
                                          : limits::kMaxStages;
    llvm::Expected<int64_t> n = read.count(key, *value, max);
    if (!n)
      return n.takeError();
    file.*field = *n;
  }
  for (auto [key, field] :
       {std::pair<llvm::StringRef, std::optional<double> CostFile::*>{
            "comm", &CostFile::comm},
        {"copy_bandwidth", &CostFile::copyBandwidth},
        {"collective_bandwidth", &CostFile::collectiveBandwidth}}) {
    if (const json::Value *value = object->get(key)) {
      llvm::Expected<double> x = read.amount(key, *value);
      if (!x)
        return x.takeError();
      file.*field = *x;
    }
  }
  if (const json::Value *value = object->get("activation_budget")) {
    llvm::Expected<std::optional<double>> budget =
        read.budget("activation_budget", *value);
    if (!budget)
      return budget.takeError();
    file.activationBudget = *budget;
  }
  for (auto [key, field] :
       {std::pair<llvm::StringRef, std::vector<double> CostFile::*>{
            "F", &CostFile::F},
        {"B", &CostFile::B},
        {"W", &CostFile::W},
        {"R", &CostFile::R},
        {"M_B", &CostFile::memB},
        {"M_W", &CostFile::memW},
        {"M_keep", &CostFile::memKeep},
        {"M_offload", &CostFile::memOffload}}) {
    if (const json::Value *value = object->get(key)) {
      llvm::Expected<std::vector<double>> xs = read.amounts(key, *value);
      if (!xs)
        return xs.takeError();
      file.*field = std::move(*xs);
    }
  }
  for (auto [key, field] :
       {std::pair<llvm::StringRef, std::optional<std::string> CostFile::*>{
            "model", &CostFile::model},
        {"model_hash", &CostFile::modelHash}}) {
    if (const json::Value *value = object->get(key)) {
      std::optional<llvm::StringRef> text = value->getAsString();
      if (!text)
        return fail(name + ": '" + key + "' must be a string, got " +
                    typeName(*value));
      file.*field = text->str();
    }
  }
  return std::move(file);
}
