//===- SchedulePlugins.cpp - schedules of one's own, loaded at start ------===//

#include "SchedulePlugins.h"

#include "Options.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/DynamicLibrary.h"

#include <memory>
#include <string>

using namespace llvm;

namespace {

cl::list<std::string> pluginOpt(
    "schedule-plugin",
    cl::desc("Load schedules written with zbc/DSL/Schedule.h from this "
             "shared library (ZBC_SCHEDULE_PLUGIN), then --schedule names "
             "them"),
    cl::value_desc("LIB.so"), cl::sub(zbc::scheduleCommand()),
    cl::sub(zbc::compileCommand()), cl::sub(zbc::runCommand()),
    cl::sub(zbc::profileCommand()), cl::cat(zbc::zbcCategory));

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

} // namespace

Error zbc::loadSchedulePlugins() {
  for (const std::string &path : pluginOpt) {
    std::string why;
    sys::DynamicLibrary library =
        sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &why);
    if (!library.isValid())
      return fail("--schedule-plugin '" + path + "': cannot load it: " + why);
    using Entry = Error *(*)();
    auto entry = reinterpret_cast<Entry>(
        library.getAddressOfSymbol("zbc_register_schedules"));
    if (!entry)
      return fail("--schedule-plugin '" + path + "' has no entry point "
                  "zbc_register_schedules (ZBC_SCHEDULE_PLUGIN in "
                  "zbc/DSL/Schedule.h)");
    std::unique_ptr<Error> result(entry());
    if (result && *result)
      return fail("--schedule-plugin '" + path +
                  "': " + toString(std::move(*result)));
    if (result)
      consumeError(std::move(*result));
  }
  return Error::success();
}
