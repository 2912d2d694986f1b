//===- SchedulePlugins.h - schedules of one's own, loaded at start -*- C++ -*-===//
//
// `--schedule-plugin LIB.so` (zbc schedule, compile, run, profile; may be
// given several times): a shared library built against zbc's package
// (find_package(zbc), zbc::Schedule) whose ZBC_SCHEDULE_PLUGIN entry point
// registers schedules written with zbc/DSL/Schedule.h. zbc loads each before
// the subcommand runs, so `--schedule NAME` finds them; zbc exports its own
// symbols (EXPORT_SYMBOLS) so that a plugin registers into zbc's registry.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_SCHEDULEPLUGINS_H
#define ZBC_TOOL_SCHEDULEPLUGINS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace zbc {

/// Loads every --schedule-plugin and runs its entry point; an error names
/// the library and what failed (not loadable, no entry point, or the
/// entry point's own error).
llvm::Error loadSchedulePlugins();

/// The plugin that registered schedule `name`, or "" for zbc's own: the
/// banner, report.json and the picture name it as the schedule's source.
std::string schedulePluginOf(llvm::StringRef name);

} // namespace zbc

#endif // ZBC_TOOL_SCHEDULEPLUGINS_H
