#!/usr/bin/env bash
# Tests ci/install-deps.sh without installing anything or touching the network. Each case runs it
# with a PATH of its own: cmake and ninja are wrapper scripts (as pip installs them), dpkg-query
# says nothing is installed, apt-get records its arguments and fails (no network). Checks that
# apt-get is never asked for cmake or ninja when the commands work, that a missing header leads to
# its Debian package (installed, or named as missing), and that a cmake too old or no cmake at
# all stops the script with one clear line.
set -uo pipefail
script="$(cd "$(dirname "$0")/.." && pwd)/install-deps.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL [$case_name]: $*"; failures=$((failures + 1)); }

real_cmake="$(command -v cmake)"
real_ninja="$(command -v ninja)"
real_cxx="$(command -v "${CXX:-c++}")"
if [[ -z "$real_cmake" || -z "$real_ninja" || -z "$real_cxx" ]]; then
  echo "install_deps_test: needs cmake, ninja and a C++ compiler to wrap"
  exit 1
fi

# The system tools the script uses, and nothing else: no cmake, ninja, apt-get, dpkg or sudo.
system="$work/system"
mkdir -p "$system"
for tool in bash env sed sort head cat grep dirname mktemp rm; do ln -s "$(command -v "$tool")" "$system/$tool"; done
ln -s "$real_cxx" "$system/c++"
if command -v git >/dev/null; then ln -s "$(command -v git)" "$system/git"; fi

# A fresh stub directory per case. $1: the version the cmake wrapper reports ("" for no cmake).
make_stubs() {
  stubs="$work/$case_name"
  mkdir -p "$stubs"
  : >"$stubs/apt-get.log"
  cat >"$stubs/apt-get" <<STUB
#!/bin/sh
echo "\$*" >>"$stubs/apt-get.log"
echo "E: Could not resolve 'deb.debian.org'" >&2
exit 100
STUB
  printf '#!/bin/sh\necho "dpkg-query: no packages found matching $*" >&2\nexit 1\n' >"$stubs/dpkg-query"
  if [[ -n "$1" ]]; then
    cat >"$stubs/cmake" <<STUB
#!/bin/sh
if [ "\$1" = "--version" ]; then echo "cmake version $1"; echo; echo "CMake suite maintained by Kitware"; exit 0; fi
exec "$real_cmake" "\$@"
STUB
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$real_ninja" >"$stubs/ninja"
  fi
  chmod +x "$stubs"/*
}

# Runs the script; sets output and rc.
run_script() {
  output="$(env -i HOME="$work" PATH="$stubs:$system" "$@" bash "$script" 2>&1)"
  rc=$?
}

expect_output() { [[ "$output" == *"$1"* ]] || fail "output lacks '$1':"$'\n'"$output"; }
expect_no_output() { [[ "$output" != *"$1"* ]] || fail "output says '$1':"$'\n'"$output"; }
expect_apt_not_asked_for_commands() {
  if grep -Eq '(^| )(cmake|ninja-build)( |$)' "$stubs/apt-get.log"; then
    fail "apt-get was asked for cmake/ninja: $(cat "$stubs/apt-get.log")"
  fi
}

case_name=pip_cmake_and_ninja
make_stubs 3.31.6
run_script
((rc == 0)) || fail "exit $rc:"$'\n'"$output"
expect_apt_not_asked_for_commands
# Headers this machine lacks may be reported; the wrapped commands must not be.
for word in "no cmake" "cmake at" "no ninja" "no C++ compiler"; do expect_no_output "$word"; done

case_name=missing_header
make_stubs 3.31.6
# A compiler that finds every header but CLI11's.
cat >"$stubs/c++-without-cli11" <<STUB
#!/bin/bash
source="\$(cat)"
if [[ "\$source" == *CLI/CLI.hpp* ]]; then echo "fatal error: CLI/CLI.hpp: No such file or directory" >&2; exit 1; fi
printf '%s\n' "\$source" | exec "$real_cxx" "\$@"
STUB
chmod +x "$stubs/c++-without-cli11"
run_script CXX="$stubs/c++-without-cli11"
((rc == 0)) || fail "a missing header must not stop the script (exit $rc):"$'\n'"$output"
expect_apt_not_asked_for_commands
expect_output "CLI11 not found: no <CLI/CLI.hpp> where $stubs/c++-without-cli11 looks (Debian package libcli11-dev)"
if ((EUID == 0)); then
  grep -q "install .*libcli11-dev" "$stubs/apt-get.log" || fail "apt-get install libcli11-dev not tried: $(cat "$stubs/apt-get.log")"
else
  expect_output "install yourself: libcli11-dev"
fi

case_name=cmake_too_old
make_stubs 3.22.1
run_script
((rc == 1)) || fail "a cmake older than the minimum must stop the script (exit $rc)"
expect_apt_not_asked_for_commands
expect_output "cmake at $stubs/cmake is 3.22.1; the project needs >= 3.25"

case_name=no_cmake_no_ninja
make_stubs ""
run_script
((rc == 1)) || fail "no cmake must stop the script (exit $rc)"
expect_output "no cmake on PATH"
expect_output "no ninja on PATH"
if ((EUID == 0)); then
  grep -q "install .*cmake ninja-build" "$stubs/apt-get.log" || fail "apt-get install cmake ninja-build not tried: $(cat "$stubs/apt-get.log")"
fi

if ((failures)); then
  echo "install_deps_test: $failures failure(s)"
  exit 1
fi
echo "install_deps_test: all cases pass"
