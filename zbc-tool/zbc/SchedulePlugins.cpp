//===- SchedulePlugins.cpp - schedules of one's own, loaded at start ------===//

#include "SchedulePlugins.h"

#include "Options.h"

#include "zbc/DSL/Schedule.h"
#include "zbc/Schedule/Registry.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/DynamicLibrary.h"

#include <map>
#include <memory>
#include <set>
#include <string>

using namespace llvm;
using zbc::fail;

namespace {

cl::list<std::string> pluginOpt(
    "schedule-plugin",
    cl::desc("Load schedules written with zbc/DSL/Schedule.h from this "
             "shared library (ZBC_SCHEDULE_PLUGIN), then --schedule names "
             "them"),
    cl::value_desc("LIB.so"), cl::sub(zbc::scheduleCommand()),
    cl::sub(zbc::compileCommand()), cl::sub(zbc::runCommand()),
    cl::sub(zbc::profileCommand()), cl::cat(zbc::zbcCategory));


/// Each schedule a plugin registered, and the plugin.
std::map<std::string, std::string> &pluginOfSchedule() {
  static std::map<std::string, std::string> plugins;
  return plugins;
}

std::set<std::string> scheduleNames() {
  std::set<std::string> names;
  for (const zbc::sched::ScheduleInfo &info :
       zbc::sched::registeredSchedules())
    names.insert(info.name);
  return names;
}

} // namespace

std::string zbc::schedulePluginOf(StringRef name) {
  auto it = pluginOfSchedule().find(name.str());
  return it == pluginOfSchedule().end() ? std::string() : it->second;
}

Error zbc::loadSchedulePlugins() {
  for (const std::string &path : pluginOpt) {
    std::string why;
    sys::DynamicLibrary library =
        sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &why);
    if (!library.isValid())
      return fail("--schedule-plugin '" + path + "': cannot load it: " + why);
    using ABI = unsigned long (*)();
    auto abi = reinterpret_cast<ABI>(
        library.getAddressOfSymbol("zbc_schedule_plugin_abi"));
    if (!abi)
      return fail("--schedule-plugin '" + path + "' has no "
                  "zbc_schedule_plugin_abi: it was not built with "
                  "ZBC_SCHEDULE_PLUGIN (zbc/DSL/Schedule.h)");
    if (abi() != dsl::schedulePluginABI())
      return fail("--schedule-plugin '" + path + "' was built against "
                  "another zbc's headers (its plugin ABI " +
                  Twine(abi()) + ", this zbc's " +
                  Twine(dsl::schedulePluginABI()) + "): rebuild it against "
                  "this zbc's package");
    std::set<std::string> before = scheduleNames();
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
    for (const std::string &name : scheduleNames())
      if (!before.count(name))
        pluginOfSchedule()[name] = path;
  }
  return Error::success();
}
