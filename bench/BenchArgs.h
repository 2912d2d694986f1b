//===- BenchArgs.h - the bench programs' positional numbers ----*- C++ -*-===//
//
// Every benchmark program takes a few positional counts (runs, sizes) and
// `--smoke` (one run at the smallest sizes, which ctest's bench family runs
// so that no benchmark rots unseen). This reads them: `--help` (or -h)
// prints the usage and exits 0; a value that is not a positive integer, or
// too many values, prints the usage to stderr and exits 2. Header-only and
// free of LLVM, so the kernel benchmark, which links no LLVM, uses it too.
//
//===----------------------------------------------------------------------===//

#ifndef ZBC_BENCH_BENCHARGS_H
#define ZBC_BENCH_BENCHARGS_H

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace zbc::bench {

/// Whether argv holds `flag`; takes it out of argv (and argc) so that
/// positionalCounts, called after, sees only the counts.
inline bool takeFlag(int &argc, char **argv, const char *flag) {
  bool found = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], flag))
      found = true;
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  return found;
}

/// The positional values of argv, each a positive integer; `usage` is the
/// whole usage text (its first line "usage: NAME ..."). At most `most`
/// values; the caller supplies defaults for those not given.
inline std::vector<int64_t> positionalCounts(int argc, char **argv,
                                             const char *usage, int most) {
  std::vector<int64_t> values;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    char *end = nullptr;
    errno = 0;
    long long value = std::strtoll(argv[i], &end, 10);
    if (end == argv[i] || *end || errno || value <= 0 ||
        static_cast<int>(values.size()) == most) {
      std::fprintf(stderr, "%s: error: unexpected argument '%s'\n%s", argv[0],
                   argv[i], usage);
      std::exit(2);
    }
    values.push_back(value);
  }
  return values;
}

} // namespace zbc::bench

#endif // ZBC_BENCH_BENCHARGS_H
