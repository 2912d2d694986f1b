//===- Options.h - command-line pieces shared by zbc's subcommands -*- C++ -*-===//
#ifndef ZBC_TOOL_OPTIONS_H
#define ZBC_TOOL_OPTIONS_H

#include "llvm/Support/CommandLine.h"

namespace zbc {
/// The category every zbc option belongs to; `--help` shows only these.
extern llvm::cl::OptionCategory zbcCategory;

/// `zbc schedule`: defined in ScheduleCommand.cpp.
extern llvm::cl::SubCommand scheduleCommand;
int runScheduleCommand();

/// `zbc verify`: defined in VerifyCommand.cpp.
extern llvm::cl::SubCommand verifyCommand;
int runVerifyCommand();
} // namespace zbc

#endif // ZBC_TOOL_OPTIONS_H
