#!/usr/bin/env bash
# Shared by demo.sh and test.sh (source it, do not run it): installs the Debian
# packages zbc needs when any is missing, then configures and builds zbc into
# build/ with Ninja. Quiet and fast when everything is already there.
#
# Environment: ZBC_BUILD_DIR (default: build), ZBC_JOBS (default: 2),
# ZBC_BUILD_TYPE (default: Release), ZBC_ENABLE_CUDA (default: AUTO),
# ZBC_ASAN_BUILD_DIR (default: build-asan; see zbc_build_sanitized).

ZBC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZBC_BUILD_DIR=${ZBC_BUILD_DIR:-$ZBC_ROOT/build}
ZBC_JOBS=${ZBC_JOBS:-2}
ZBC_ASAN_BUILD_DIR=${ZBC_ASAN_BUILD_DIR:-$ZBC_ROOT/build-asan}

# Every package zbc builds or tests with. MLIR/LLVM 22 come from Debian's
# bookworm-security suite; CUDA is optional and never installed from here.
ZBC_PACKAGES=(
  cmake ninja-build g++ python3 pkg-config
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev coinor-libcbc-dev
  libfmt-dev libopenblas-dev libopenmpi-dev openmpi-bin ccache
)
# ccache (CMakeLists.txt uses it when found): checkouts anywhere under the
# checkout's parent share one cache, so a fresh clone of sources built
# before compiles little.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$ZBC_ROOT")}

zbc_install_packages() {
  local missing=()
  local pkg
  for pkg in "${ZBC_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "zbc: installing missing packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || { echo "zbc: error: apt-get update failed" >&2; return 1; }
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { echo "zbc: error: could not install: ${missing[*]}" >&2; return 1; }
}

zbc_build() {
  if [ ! -f "$ZBC_BUILD_DIR/build.ninja" ]; then
    cmake -G Ninja -S "$ZBC_ROOT" -B "$ZBC_BUILD_DIR" \
      -DCMAKE_BUILD_TYPE="${ZBC_BUILD_TYPE:-Release}" \
      -DZBC_ENABLE_CUDA="${ZBC_ENABLE_CUDA:-AUTO}" >"$ZBC_BUILD_DIR.configure.log" 2>&1 \
      || { cat "$ZBC_BUILD_DIR.configure.log" >&2; echo "zbc: error: cmake configure failed" >&2; return 1; }
  fi
  ninja -C "$ZBC_BUILD_DIR" -j "$ZBC_JOBS" \
    || { echo "zbc: error: build failed" >&2; return 1; }
}

zbc_setup() {
  zbc_install_packages && zbc_build
}

# A second tree with zbc's own code built with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DZBC_SANITIZE; the LLVM/MLIR libraries stay
# Debian's uninstrumented ones), at -O1 with debug info and assertions on,
# without CUDA. test.sh runs the tests in it after the normal ones.
zbc_build_sanitized() {
  if [ ! -f "$ZBC_ASAN_BUILD_DIR/build.ninja" ]; then
    mkdir -p "$ZBC_ASAN_BUILD_DIR"
    cmake -G Ninja -S "$ZBC_ROOT" -B "$ZBC_ASAN_BUILD_DIR" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
      -DZBC_SANITIZE=address,undefined \
      -DZBC_ENABLE_CUDA=OFF >"$ZBC_ASAN_BUILD_DIR/configure.log" 2>&1 \
      || { cat "$ZBC_ASAN_BUILD_DIR/configure.log" >&2; rm -f "$ZBC_ASAN_BUILD_DIR/build.ninja"
           echo "zbc: error: cmake configure (sanitizers) failed" >&2; return 1; }
  fi
  ninja -C "$ZBC_ASAN_BUILD_DIR" -j "$ZBC_JOBS" \
    || { echo "zbc: error: sanitizer build failed" >&2; return 1; }
}

# How the sanitized programs report: stop at the first error with a stack
# trace and abort (a signal, so that lit's `not` and ctest see a crash rather
# than exit code 1). Leak checking is off: LLVM's and MLIR's global state
# (option registry, dialect registrations, interned types) is never freed.
zbc_sanitizer_env() {
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:detect_leaks=0:disable_coredump=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
}
