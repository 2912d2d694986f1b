//===- OutputFile.cpp - every file the tool writes, whole or not at all ---===//
//
// writeFile (OutputFile.h).
//
//===----------------------------------------------------------------------===//

#include "OutputFile.h"
#include "Options.h"

#include "zbc/contracts/SafeTensors.h"

using namespace llvm;

Error zbc::writeFile(const std::string &path, StringRef text, bool executable) {
  if (std::string e = rt::writeFileAtomically(path, text.str(),
                                              executable ? 0755 : 0644);
      !e.empty())
    return fail(e);
  return Error::success();
}

Error zbc::writeFile(const std::string &path,
                     function_ref<void(raw_ostream &)> body, bool executable) {
  std::string text;
  raw_string_ostream os(text);
  body(os);
  return writeFile(path, StringRef(text), executable);
}
