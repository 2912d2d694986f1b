#!/bin/sh
# The host compiler of the lever and every-schedule tests (their $ZBC_CXX,
# test/CMakeLists.txt): the compiler zbc calls ($ZBC_E2E_HOST_CXX, MPI's C++
# wrapper) with the same arguments, linking with gold instead of the default
# BFD linker where gold is installed (binutils has it): a rank program then
# links in half the time (those tests build about a thousand), and it is the
# same program. Every other test builds its rank programs as users do.
if command -v ld.gold >/dev/null 2>&1; then
  exec "$ZBC_E2E_HOST_CXX" -fuse-ld=gold "$@"
fi
exec "$ZBC_E2E_HOST_CXX" "$@"
