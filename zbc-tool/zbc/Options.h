//===- Options.h - command-line pieces shared by zbc's subcommands -*- C++ -*-===//
#ifndef ZBC_TOOL_OPTIONS_H
#define ZBC_TOOL_OPTIONS_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

namespace zbc {
/// An error of the tool's saying `message` (printed as "zbc: error:
/// MESSAGE" by the subcommand that returns it).
inline llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The category every zbc option belongs to; `--help` shows only these.
extern llvm::cl::OptionCategory zbcCategory;

/// The subcommands whose options live in more than one file, made on first
/// use: a global in one file would not yet be constructed when another
/// file's options register with it (the order of static initialisation
/// across files is unspecified). Defined in Options.cpp.
llvm::cl::SubCommand &scheduleCommand(); // run: ScheduleCommand.cpp
llvm::cl::SubCommand &verifyCommand();   // run: VerifyCommand.cpp
llvm::cl::SubCommand &compileCommand();  // run: CompileCommand.cpp
llvm::cl::SubCommand &runCommand();      // run: RunCommand.cpp
llvm::cl::SubCommand &profileCommand();  // run: ProfileCommand.cpp
llvm::cl::SubCommand &inspectCommand();  // run: InspectCommand.cpp
llvm::cl::SubCommand &importHFCommand(); // run: ImportHFCommand.cpp
llvm::cl::SubCommand &exportHFCommand(); // run: ExportHFCommand.cpp
llvm::cl::SubCommand &packCommand();     // run: PackCommand.cpp
int runScheduleCommand();
int runVerifyCommand();
int runCompileCommand();
int runRunCommand();
int runProfileCommand();
int runInspectCommand();
int runImportHFCommand();
int runExportHFCommand();
int runPackCommand();
} // namespace zbc

#endif // ZBC_TOOL_OPTIONS_H
