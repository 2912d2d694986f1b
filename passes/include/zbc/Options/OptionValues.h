//===- OptionValues.h - the typed values of compile options -------*- C++ -*-===//
//
// The types a compile option holds beyond plain numbers and names (the
// memory levers, the activation budget's three states, the optimizer), and
// the one reading and writing of every option value as text. The `zbc`
// flags and the MLIR pass options (PassOptionBinder.h) both go through
// readOptionValue/optionValueText, so a value means the same and is refused
// with the same words wherever it is given.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_OPTIONS_OPTIONVALUES_H
#define ZBC_OPTIONS_OPTIONVALUES_H

#include "zbc/Schedule/Offload.h"
#include "zbc/Schedule/Recompute.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zbc {

struct Bounds;

/// What rebuilds a microbatch's stash instead of keeping it: R ops the
/// schedule places (none, full, selective, auto: sched::RecomputeMode), or
/// the backward rebuilding it segment by segment (checkpoint: Note
/// [Checkpointed backward], a rewrite of the stages before the schedule).
enum class RecomputeLever { None, Full, Selective, Auto, Checkpoint };
const char *leverName(RecomputeLever lever);
/// The schedule library's mode for `lever`: a checkpointed backward has no
/// R ops (none).
sched::RecomputeMode scheduleModeOf(RecomputeLever lever);

/// Stashes copied to host memory and back (Note [Offload in the IR]).
using OffloadLever = sched::OffloadMode;

/// The update the ranks run, which sizes the optimizer state a rank holds.
enum class Optimizer { SGD, AdamW };
/// "sgd" or "adamw", as the program's `optimizer` attribute spells it.
const char *optimizerName(Optimizer optimizer);

/// Note [Two memory limits]: what a schedule keeps in flight, as asked:
/// the schedule's own default, none at all, or a number of bytes.
class ActivationBudget {
public:
  /// The schedule's default (zb-auto's 2p max(M_B, M_W), ...).
  ActivationBudget() = default;
  static ActivationBudget none() { return ActivationBudget(0); }
  static ActivationBudget bytes(double amount) {
    return ActivationBudget(amount);
  }
  /// As sched::Problem::activationBudget takes it: unset for the
  /// schedule's default, 0 for none.
  static ActivationBudget fromProblem(std::optional<double> budget) {
    return budget ? ActivationBudget(*budget) : ActivationBudget();
  }
  std::optional<double> forProblem() const { return amount; }

  bool isScheduleDefault() const { return !amount; }
  bool isNone() const { return amount && *amount == 0; }
  /// The bytes of a given budget (not none, not the default).
  std::optional<double> givenBytes() const {
    return amount && *amount > 0 ? amount : std::nullopt;
  }
  bool operator==(const ActivationBudget &other) const {
    return amount == other.amount;
  }

private:
  explicit ActivationBudget(double amount) : amount(amount) {}
  std::optional<double> amount;
};

/// Reads `text` as an option's value, checking `bounds` for a number; the
/// error says what was given and what is accepted, without the option's
/// name (the caller names it as its front end spells it).
llvm::Error readOptionValue(llvm::StringRef text, std::string &value,
                            const std::optional<Bounds> &bounds);
llvm::Error readOptionValue(llvm::StringRef text, int64_t &value,
                            const std::optional<Bounds> &bounds);
llvm::Error readOptionValue(llvm::StringRef text, std::optional<int64_t> &value,
                            const std::optional<Bounds> &bounds);
llvm::Error readOptionValue(llvm::StringRef text, double &value,
                            const std::optional<Bounds> &bounds);
llvm::Error readOptionValue(llvm::StringRef text, RecomputeLever &value,
                            const std::optional<Bounds> &bounds);
llvm::Error readOptionValue(llvm::StringRef text, OffloadLever &value,
                            const std::optional<Bounds> &bounds);
llvm::Error readOptionValue(llvm::StringRef text, Optimizer &value,
                            const std::optional<Bounds> &bounds);
llvm::Error readOptionValue(llvm::StringRef text, ActivationBudget &value,
                            const std::optional<Bounds> &bounds);

/// The text readOptionValue reads back as `value`.
std::string optionValueText(const std::string &value);
std::string optionValueText(int64_t value);
std::string optionValueText(const std::optional<int64_t> &value);
std::string optionValueText(double value);
std::string optionValueText(RecomputeLever value);
std::string optionValueText(OffloadLever value);
std::string optionValueText(Optimizer value);
std::string optionValueText(const ActivationBudget &value);

/// `text` as a decimal integer in [min, max]; `option` ("--ranks") names
/// it. Every numeric flag of zbc goes through these or readOptionValue,
/// so a value is the whole text read exactly and within range, or an error
/// naming the option, what was given and the range accepted (llvm::cl's
/// own parsers take '' as 0 and print messages without "error:").
llvm::Expected<int64_t> parseInteger(llvm::StringRef option,
                                     llvm::StringRef text, int64_t min,
                                     int64_t max);
/// `text` as a finite number in [min, max].
llvm::Expected<double> parseNumber(llvm::StringRef option, llvm::StringRef text,
                                   double min, double max);

} // namespace zbc

#endif // ZBC_OPTIONS_OPTIONVALUES_H
