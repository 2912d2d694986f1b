#!/usr/bin/env bash
# Sets everything up (packages, configure, build) and runs every zbc test
# through ctest: the lit suite, the unit tests, the FileCheck lint and the
# fuzzer (fuzz-replay: every seed and committed reproducer once; fuzz: a
# timed mutation run). Then it builds zbc again with AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/ and runs the same tests there.
# Extra arguments go to both ctest runs (e.g. -R lit, -V). Exits 1 if either
# run fails.
#
# Environment:
#   ZBC_SANITIZERS=0   skip the sanitizer build and run (default 1; CI runs it)
#   ZBC_FUZZ_SECONDS   time budget of the fuzz test (default 60)
#   ZBC_SANITIZER_FUZZ_SECONDS  the same in the sanitizer run (default 20)
#   ZBC_SANITIZER_CTEST_EXCLUDE  tests the sanitizer run skips (a ctest -E
#                      regex; default: the two wall-clock speed tests, which
#                      time the uninstrumented build, and the known failures
#                      below)
#   ZBC_CTEST_BUDGET_SECONDS  the normal run's budget (default 600): when
#                      test.sh runs the whole suite (no extra arguments) and
#                      the plain ctest takes longer than the budget plus
#                      ZBC_CTEST_BUDGET_MARGIN_SECONDS (default 120), it fails,
#                      naming the slowest tests; 0 turns the check off
#   and those of setup.sh (ZBC_BUILD_DIR, ZBC_ASAN_BUILD_DIR, ZBC_JOBS, ...).
#
# Budgets on the 2-core CI machine (docs/benchmarks.md, "Test suite timing"):
# the plain ctest -j2 at most 10 minutes, `ctest -L quick` at most 3, the
# whole of this script from a fresh clone at most 35. The margin of 2 minutes
# (20%) is above the run-to-run noise of a quiet machine and below what a
# new family of tests adds, so a slower suite fails here rather than in CI's
# 90-minute limit.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
began=$(date +%s)

speed_tests='^(Simulator\.LargeScheduleIsFast|VScheduleTiming\.LargeBuildsAreFast)$'
# Tests that fail under the sanitizers because of a reported product bug,
# skipped there until it is fixed; delete the pattern with the fix. None now.
known_sanitizer_failures=''

ZBC_PACKAGES+=(python3-torch) # the PyTorch checks of test/torch/
zbc_setup
echo "zbc: built in $(( $(date +%s) - began )) s"
status=0
budget=${ZBC_CTEST_BUDGET_SECONDS:-600}
margin=${ZBC_CTEST_BUDGET_MARGIN_SECONDS:-120}
log="$ZBC_BUILD_DIR/ctest.log"
start=$(date +%s)
if ! (cd "$ZBC_BUILD_DIR" && ctest --output-on-failure -j "$ZBC_JOBS" "$@") 2>&1 |
     tee "$log"; then
  status=1
fi
took=$(( $(date +%s) - start ))
echo "zbc: the normal ctest took $took s (budget $budget s, margin $margin s)"
if [ $# -eq 0 ] && [ "$budget" -gt 0 ] && [ "$took" -gt $((budget + margin)) ]; then
  echo "zbc: error: the normal ctest took $took s, over its budget of $budget s" \
       "by more than the margin of $margin s; make the new cases cheaper" \
       "(docs/benchmarks.md, \"Test suite timing\"). The slowest tests:" >&2
  sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .* \([0-9.]*\) sec$/\2 s \1/p' "$log" |
    sort -rn | head -10 >&2
  status=1
fi

if [ "${ZBC_SANITIZERS:-1}" != 0 ]; then
  echo "zbc: the tests again with AddressSanitizer and UndefinedBehaviorSanitizer ($ZBC_ASAN_BUILD_DIR)"
  start=$(date +%s)
  zbc_build_sanitized
  echo "zbc: sanitizer build in $(( $(date +%s) - start )) s"
  zbc_sanitizer_env
  exclude=${ZBC_SANITIZER_CTEST_EXCLUDE:-$speed_tests${known_sanitizer_failures:+|$known_sanitizer_failures}}
  start=$(date +%s)
  (cd "$ZBC_ASAN_BUILD_DIR" &&
   ZBC_FUZZ_SECONDS=${ZBC_SANITIZER_FUZZ_SECONDS:-20} \
     ctest --output-on-failure -j "$ZBC_JOBS" -E "$exclude" "$@") || status=1
  echo "zbc: the sanitizer ctest took $(( $(date +%s) - start )) s"
fi
echo "zbc: test.sh took $(( $(date +%s) - began )) s in all"
exit $status
