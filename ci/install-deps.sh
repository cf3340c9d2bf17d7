#!/usr/bin/env bash
# Makes sure what the build needs is here, installing with apt-get only what is really missing.
# It checks the things themselves — the commands (cmake >= the project's minimum, ninja, a C++
# compiler) and the libraries' headers (GoogleTest, Google Benchmark, nlohmann_json, CLI11) — not
# dpkg's list: on the GPU machine cmake and ninja come from pip, and that machine has no network.
# When apt-get cannot run (not there, not root, no network) it names what is missing and goes on.
# Exit 1 only when the build certainly cannot work: no cmake, a cmake older than the minimum, no
# ninja (the presets' generator) or no C++ compiler. A missing header only warns: the libraries
# may sit under CMAKE_PREFIX_PATH, and CMake's configure step says for sure.
# The CUDA toolkit is optional: without nvcc the build is CPU-only (host and dry backends).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
say() { echo "ci/install-deps.sh: $*"; }

min_cmake="$(sed -n 's/^cmake_minimum_required(VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
min_cmake="${min_cmake:-3.25}"

# header | library | Debian package
libraries=(
  "gtest/gtest.h|GoogleTest|libgtest-dev"
  "benchmark/benchmark.h|Google Benchmark|libbenchmark-dev"
  "nlohmann/json.hpp|nlohmann_json|nlohmann-json3-dev"
  "CLI/CLI.hpp|CLI11|libcli11-dev"
)

find_cxx() {
  local candidate
  for candidate in "${CXX:-}" c++ g++ clang++; do
    if [[ -n "$candidate" ]] && command -v "$candidate" >/dev/null; then
      echo "$candidate"
      return
    fi
  done
}

# "3.25.1" from "cmake version 3.25.1" (apt's and pip's cmake print the same first line).
cmake_version() { cmake --version 2>/dev/null | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p'; }
version_at_least() { [[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" == "$2" ]]; }

# The preprocessor finds the header where the build's compiler would (plus CMAKE_PREFIX_PATH).
has_header() {
  local includes=() prefix
  local IFS=':'
  for prefix in ${CMAKE_PREFIX_PATH:-}; do [[ -n "$prefix" ]] && includes+=("-I$prefix/include"); done
  unset IFS
  printf '#include <%s>\n' "$1" | "$cxx" -std=c++17 -E -x c++ "${includes[@]}" - -o /dev/null >/dev/null 2>&1
}

# Fills: packages (Debian names to install), problems (one line each), notes (optional things
# missing), fatal (1: cannot build).
check() {
  packages=() problems=() notes=() fatal=0
  if ! command -v cmake >/dev/null; then
    packages+=(cmake) problems+=("no cmake on PATH (Debian package cmake, or pip install cmake)") fatal=1
  else
    local version
    version="$(cmake_version)"
    if [[ -z "$version" ]] || ! version_at_least "$version" "$min_cmake"; then
      problems+=("cmake at $(command -v cmake) is ${version:-of unknown version}; the project needs >= $min_cmake (pip install 'cmake>=$min_cmake')")
      fatal=1
    fi
  fi
  if ! command -v ninja >/dev/null; then
    packages+=(ninja-build) problems+=("no ninja on PATH (Debian package ninja-build, or pip install ninja)") fatal=1
  fi
  cxx="$(find_cxx)"
  if [[ -z "$cxx" ]]; then
    packages+=(g++) problems+=("no C++ compiler (c++, g++ or clang++; Debian package g++)") fatal=1
  else
    local entry header library package
    for entry in "${libraries[@]}"; do
      IFS='|' read -r header library package <<<"$entry"
      if ! has_header "$header"; then
        packages+=("$package") problems+=("$library not found: no <$header> where $cxx looks (Debian package $package)")
      fi
    done
  fi
  if ! command -v git >/dev/null; then
    packages+=(git) notes+=("no git (records name the commit only with OOMLAB_GIT_COMMIT set; Debian package git)")
  fi
}

# apt-get install as root, or through passwordless sudo; says why not when it cannot.
install_packages() {
  local sudo=()
  if ! command -v apt-get >/dev/null; then
    say "no apt-get here; install yourself: $*"
    return 1
  fi
  if ((EUID != 0)); then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      say "not root and no passwordless sudo; install yourself: $*"
      return 1
    fi
  fi
  say "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || say "apt-get update failed (no network?); trying the package lists already here"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" || {
    say "apt-get install $* failed"
    return 1
  }
}

check
if ((${#packages[@]})); then
  install_packages "${packages[@]}"
  check
fi
for problem in "${problems[@]}"; do say "$problem"; done
for note in "${notes[@]}"; do say "optional: $note"; done
if ((fatal)); then
  say "the build cannot work without the above"
  exit 1
fi
if ((${#problems[@]})); then
  say "going on; CMake's configure step will say whether the build can find what is missing"
else
  say "cmake $(cmake_version), ninja, $cxx and the libraries' headers are here"
fi
