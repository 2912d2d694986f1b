//===- PassOptionBinder.h - typed options as MLIR pass options ----*- C++ -*-===//
//
// Binds the fields of a typed options struct (CompileOptions.h) to the
// textual options of a pass or a pass pipeline, so that zbc-opt's
// `--zb-schedule="schedule=zb-h1 microbatches=8"` and
// `--zb-lower-to-program=...` read the same declaration as the `zbc` flags.
// Each option keeps its text (what MLIR parses and prints, for the
// pipeline's textual form and crash reproducers); a text is checked when it
// is parsed, with the value's one reading (readOptionValue), so a bad value
// is refused there, naming the option; `read` then fills the struct.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_PASSES_PASSOPTIONBINDER_H
#define ZBC_PASSES_PASSOPTIONBINDER_H

#include "zbc/Options/CompileOptions.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

namespace zbc {

namespace detail {
/// An option's text, checked as a `T` when parsed.
template <typename T>
struct CheckedTextParser : public llvm::cl::parser<std::string> {
  using llvm::cl::parser<std::string>::parser;
  std::optional<Bounds> bounds;
  /// Where a refusal goes (the binder's, for a pass to report), else
  /// llvm::cl's stream.
  std::string *refusal = nullptr;
  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef text,
             std::string &value) {
    T typed{};
    if (llvm::Error error = readOptionValue(text, typed, bounds)) {
      std::string message = llvm::toString(std::move(error));
      if (!refusal)
        return option.error(message);
      *refusal = (option.ArgStr + ": " + message).str();
      return true;
    }
    value = text.str();
    return false;
  }
};
} // namespace detail

/// `Parent` is an mlir::Pass (its options) or an
/// mlir::PassPipelineOptions (a pipeline's).
template <typename Parent> class PassOptionBinder {
public:
  /// Binds the options of `groups` (OptionGroup bits); the others stay as
  /// the struct has them.
  PassOptionBinder(Parent &parent, unsigned groups)
      : parent(parent), groups(groups) {}
  PassOptionBinder(const PassOptionBinder &) = delete;

  /// Declares `field`'s option (CompileOptions::bind calls it once per
  /// option), its default the field's value now.
  template <typename T> void operator()(T &field, const OptionInfo &info) {
    if (!(info.group & groups))
      return;
    using Parser = detail::CheckedTextParser<T>;
    using Option =
        std::conditional_t<std::is_base_of_v<mlir::Pass, Parent>,
                           mlir::Pass::Option<std::string, Parser>,
                           mlir::detail::PassOptions::Option<std::string, Parser>>;
    std::string defaultText = optionValueText(field);
    auto option = std::make_unique<Option>(
        parent, info.name, llvm::cl::desc(info.help),
        llvm::cl::value_desc(info.valueName), llvm::cl::init(defaultText));
    option->getParser().bounds = info.bounds;
    // A pass reports a refusal itself (initializeOptions); a pipeline's
    // options leave it to llvm::cl.
    if constexpr (std::is_base_of_v<mlir::Pass, Parent>)
      option->getParser().refusal = &refused;
    Option *text = option.get();
    readers.push_back([text, &field, bounds = info.bounds,
                       defaultText = std::move(defaultText)] {
      // A default stays the field's own (a count's 0 is "not given",
      // outside its bounds); a text given was checked when parsed.
      if (text->getValue() != defaultText)
        llvm::cantFail(readOptionValue(text->getValue(), field, bounds));
    });
    options.push_back(std::shared_ptr<void>(std::move(option)));
  }

  /// The last value refused when parsed ("microbatches: '0' is not ..."),
  /// or empty.
  const std::string &refusal() const { return refused; }

  /// The options' texts into the bound fields.
  void read() {
    for (const std::function<void()> &reader : readers)
      reader();
  }

private:
  Parent &parent;
  unsigned groups;
  std::string refused;
  std::vector<std::shared_ptr<void>> options;
  std::vector<std::function<void()>> readers;
};

} // namespace zbc

#endif // ZBC_PASSES_PASSOPTIONBINDER_H
