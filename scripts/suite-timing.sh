#!/usr/bin/env bash
# Times each family of tests alone (ctest -L FAMILY -j$ZBC_JOBS in the build
# directory) and prints the table of docs/benchmarks.md's "Test suite timing":
# family, tests, wall seconds. Then the quick loop (ctest -L quick). Run it on
# a quiet machine after a build (scripts/test.sh or zbc_setup); extra
# arguments go to every ctest (e.g. -E fuzz). The families' walls add up to
# a little more than one ctest -j2 of the whole suite, which packs tests of
# different families side by side.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
cd "$ZBC_BUILD_DIR"
families=(lit lint unit fuzz torch install e2e-schedules e2e-levers
          e2e-training e2e-failures e2e-deploy bench quick)
echo "$(date -u +%Y-%m-%d) $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| family | tests | wall (s) |"
echo "|---|---:|---:|"
for family in "${families[@]}"; do
  count=$(ctest -N -L "^$family\$" "$@" | sed -n 's/^Total Tests: //p')
  start=$(date +%s%N)
  ctest -L "^$family\$" -j "$ZBC_JOBS" "$@" >"$ZBC_BUILD_DIR/ctest-$family.log" 2>&1 ||
    echo "suite-timing: $family failed (ctest-$family.log)" >&2
  wall=$(( ($(date +%s%N) - start + 500000000) / 1000000000 ))
  echo "| $family | $count | $wall |"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
