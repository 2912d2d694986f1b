#!/usr/bin/env bash
# Sets everything up (packages, configure, build) and runs every zbc test
# through ctest: the lit suite, the unit tests and the FileCheck lint.
# Extra arguments go to ctest (e.g. -R lit, -V).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
zbc_setup
cd "$ZBC_BUILD_DIR"
ctest --output-on-failure -j "$ZBC_JOBS" "$@"
