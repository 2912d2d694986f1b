//===- HostCompiler.cpp - building the generated rank programs ------------===//
//
// The compiler, include and library paths are the ones this build of zbc
// was configured with (ZBC_HOST_CXX, ZBC_RUNTIME_INCLUDE_DIR,
// ZBC_RUNTIME_LIBRARY_DIR, ZBC_RUNTIME_LINK_FLAGS from zbc-tool/zbc's
// CMakeLists.txt), or for an installed zbc its prefix's include and lib;
// $ZBC_CXX overrides the compiler.
//
//===----------------------------------------------------------------------===//

#include "HostCompiler.h"
#include "Options.h"
#include "OutputFile.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
using zbc::fail;

namespace {


std::string hostCompiler() {
  if (const char *cxx = std::getenv("ZBC_CXX"); cxx && *cxx)
    return cxx;
  return ZBC_HOST_CXX;
}

/// Where the runtime's headers and libraries are: in the prefix zbc is
/// installed in (PREFIX/bin/zbc: PREFIX/include, PREFIX/lib, as `cmake
/// --install` lays them out), else in the trees it was built from.
struct RuntimeDirs {
  std::string include, lib;
};
RuntimeDirs runtimeDirs() {
  static int anchor;
  std::string self = sys::fs::getMainExecutable(nullptr, &anchor);
  SmallString<256> prefix(sys::path::parent_path(sys::path::parent_path(self)));
  SmallString<256> include(prefix), lib(prefix), header, archive;
  sys::path::append(include, "include");
  sys::path::append(lib, "lib");
  header = include;
  sys::path::append(header, "zbc", "runtime", "zbc_runtime.h");
  archive = lib;
  sys::path::append(archive, "libzbc_runtime.a");
  if (!self.empty() && sys::fs::exists(header) && sys::fs::exists(archive))
    return {include.str().str(), lib.str().str()};
  return {ZBC_RUNTIME_INCLUDE_DIR, ZBC_RUNTIME_LIBRARY_DIR};
}

/// The command that builds rank `rank` of `dir` against `backend`.
std::vector<std::string> hostCompilerCommand(StringRef dir, int rank,
                                        StringRef backend) {
  RuntimeDirs runtime = runtimeDirs();
  const std::string &lib = runtime.lib;
  std::vector<std::string> args = {
      hostCompiler(), "-std=c++17", "-O2", "-I" + runtime.include,
      formatv("{0}/src/rank{1}.cpp", dir, rank).str(), "-o",
      formatv("{0}/rank{1}", dir, rank).str()};
  bool cuda = backend == "cuda";
  if (cuda)
    args.insert(args.end(), {lib + "/libzbc_runtime_cuda.a",
                             lib + "/libzbc_rt_cuda_kernels.a"});
  else
    args.insert(args.end(),
                {lib + "/libzbc_runtime.a", lib + "/libzbc_rt_kernels.a"});
  args.push_back(lib + "/libzbc_contracts.a");
  SmallVector<StringRef> flags;
  StringRef(cuda ? ZBC_CUDA_RUNTIME_LINK_FLAGS : ZBC_RUNTIME_LINK_FLAGS)
      .split(flags, ' ', -1, false);
  for (StringRef flag : flags)
    args.push_back(flag.str());
  return args;
}

/// The first "rankN.cpp:LINE:COL: error: ..." line of a compiler's output.
std::string firstError(StringRef output) {
  Regex located("(rank[0-9]+\\.cpp:[0-9]+:[0-9]+: (fatal )?error: .*)");
  SmallVector<StringRef> lines;
  output.split(lines, '\n');
  for (StringRef line : lines) {
    SmallVector<StringRef> match;
    if (located.match(line, &match))
      return line.trim().str();
  }
  // The linker's own reason (a full disk, a file-size limit) before
  // collect2's "ld returned 1 exit status", which says none.
  for (StringRef line : lines)
    if (line.contains("final link failed") ||
        line.contains("cannot open output file") ||
        line.contains("No space left on device"))
      return line.trim().str();
  for (StringRef line : lines)
    if (line.contains("error"))
      return line.trim().str();
  return lines.empty() ? "" : lines.front().trim().str();
}

struct Job {
  int rank;
  std::vector<std::string> args;
  std::string logPath;
  sys::ProcessInfo process;
};

} // namespace

StringRef zbc::mpirunPath() { return ZBC_MPIRUN; }

bool zbc::cudaBackendBuilt() { return ZBC_CUDA_BUILT; }

Error zbc::buildRankExecutables(StringRef dir, int ranks, StringRef backend) {
  std::string logPath = (dir + "/build.log").str();
  // The commands and their output, written once at the end (OutputFile.h).
  std::string logText;
  raw_string_ostream log(logText);
  constexpr int kParallel = 2;
  std::vector<Job> running;
  int next = 0;
  std::optional<std::string> failure;
  auto finish = [&](Job &job) {
    std::string message;
    sys::ProcessInfo done = sys::Wait(job.process, std::nullopt, &message);
    auto output = MemoryBuffer::getFile(job.logPath);
    std::string text = output ? (*output)->getBuffer().str() : "";
    log << "$ " << join(job.args, " ") << "\n" << text;
    sys::fs::remove(job.logPath);
    if ((done.ReturnCode != 0 || !message.empty()) && !failure) {
      std::string where = firstError(text);
      // A full disk: the compiler or linker says so (if its output could
      // be kept at all), or the directory has no room left.
      ErrorOr<sys::fs::space_info> space = sys::fs::disk_space(dir);
      if (StringRef(text).contains("No space left on device") ||
          (space && space->available < (1 << 20)))
        where = formatv("no space left on device in '{0}'{1}", dir,
                        space ? formatv(" ({0} bytes free)", space->available)
                                    .str()
                              : std::string())
                    .str();
      failure = formatv("the host compiler failed on {0}/src/rank{1}.cpp{2}{3} "
                        "(the commands and their output are in {4})",
                        dir, job.rank, where.empty() ? "" : ": ", where,
                        logPath)
                    .str();
      if (!message.empty() && where.empty())
        *failure += ": " + message;
    }
  };
  while (next < ranks || !running.empty()) {
    while (next < ranks && static_cast<int>(running.size()) < kParallel &&
           !failure) {
      Job job;
      job.rank = next++;
      job.args = hostCompilerCommand(dir, job.rank, backend);
      job.logPath = formatv("{0}/.build-rank{1}.log", dir, job.rank).str();
      SmallVector<StringRef> argv(job.args.begin(), job.args.end());
      std::optional<StringRef> redirects[] = {std::nullopt, StringRef(job.logPath),
                                              StringRef(job.logPath)};
      std::string message;
      bool failed = false;
      job.process = sys::ExecuteNoWait(job.args.front(), argv, std::nullopt,
                                       redirects, 0, &message, &failed);
      if (failed) {
        log << "$ " << join(job.args, " ") << "\n" << message << "\n";
        consumeError(writeFile(logPath, StringRef(logText)));
        return fail("cannot run the host compiler '" + job.args.front() +
                    "': " + message + " (set ZBC_CXX to another one)");
      }
      running.push_back(std::move(job));
    }
    if (running.empty())
      break;
    finish(running.front());
    running.erase(running.begin());
  }
  Error logged = writeFile(logPath, StringRef(logText));
  if (failure) {
    consumeError(std::move(logged)); // the failure says more
    return fail(*failure);
  }
  return logged;
}
