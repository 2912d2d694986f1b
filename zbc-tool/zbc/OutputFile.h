//===- OutputFile.h - every file the tool writes, whole or not at all -*- C++ -*-===//
//
// zbc's one writer of files (schedule.svg, program.mlir, src/rankN.cpp,
// launch.sh, report.json, a cost file, an imported model, a run's
// timelines): the text is made in memory, then written to PATH.tmp beside
// PATH and renamed over it (rt::writeFileAtomically). A failed write, such
// as a full disk, is an error naming PATH ("cannot write 'PATH': No space
// left on device") and leaves neither PATH cut off nor the temporary
// behind; LLVM's raw_fd_ostream would instead abort at its destruction
// ("LLVM ERROR: IO failure on output stream") without naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef ZBC_TOOL_OUTPUTFILE_H
#define ZBC_TOOL_OUTPUTFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace zbc {

/// Writes the file `path` with what `body` prints, executable when
/// `executable`; an error names the path.
llvm::Error writeFile(const std::string &path,
                      llvm::function_ref<void(llvm::raw_ostream &)> body,
                      bool executable = false);

/// Writes `text` to `path` (as writeFile does).
llvm::Error writeFile(const std::string &path, llvm::StringRef text,
                      bool executable = false);

} // namespace zbc

#endif // ZBC_TOOL_OUTPUTFILE_H
