#!/usr/bin/env bash
# Tests `cmake --install` of a build folder into a temporary prefix (removed at the end): the
# oomlab binary runs from there (--help, list), the help pages of every subcommand, the
# scenarios' teaching pages and docs/*.md are in share/doc/oomlab, and no test or benchmark
# program came along. Exit 77 (skipped) when the folder has not built oomlab and its help pages.
#   usage: ci/tests/install_tree_test.sh BUILD_DIR [CMAKE]
set -uo pipefail
build="$(cd "$1" && pwd)"
cmake="${2:-cmake}"
source_dir="$(cd "$(dirname "$0")/../.." && pwd)"
if [[ ! -x "$build/harness/cli/oomlab" || ! -f "$build/help/oomlab.txt" ]]; then
  echo "install_tree_test: $build has not built oomlab and its help pages (cmake --build $build): skipped"
  exit 77
fi
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$cmake" --install "$build" --prefix "$prefix" >"$prefix/install.log" 2>&1; then
  cat "$prefix/install.log"
  echo "FAIL: cmake --install $build --prefix $prefix"
  exit 1
fi

oomlab="$prefix/bin/oomlab"
[[ "$(ls "$prefix/bin")" == oomlab ]] || fail "bin/ holds more than oomlab: $(ls "$prefix/bin" | tr '\n' ' ')"
help="$(cd / && "$oomlab" --help)" || fail "oomlab --help exited with $?"
[[ "$help" == *"Subcommands:"* ]] || fail "oomlab --help lists no subcommands"
list="$(cd / && "$oomlab" list)" || fail "oomlab list exited with $?"
[[ "$list" == *fragmentation* ]] || fail "oomlab list does not name fragmentation"

doc="$prefix/share/doc/oomlab"
for page in README.md install.md help/oomlab.txt; do
  [[ -s "$doc/$page" ]] || fail "share/doc/oomlab/$page is missing"
done
for command in $(sed -n '/^Subcommands:/,$ s/^  \([a-z][a-z0-9_-]*\) .*/\1/p' <<<"$help"); do
  page="$doc/help/oomlab-$command.txt"
  if [[ ! -s "$page" ]]; then
    fail "no help page for oomlab $command"
  elif ! grep -q "^Usage: oomlab $command " "$page"; then
    fail "help/oomlab-$command.txt does not start its usage with 'oomlab $command': $(grep -m1 Usage "$page")"
  fi
done
for readme in "$source_dir"/scenarios/*/README.md; do
  name="$(basename "$(dirname "$readme")")"
  cmp -s "$readme" "$doc/scenarios/$name.md" || fail "scenarios/$name/README.md is not installed as scenarios/$name.md"
done
for page in "$source_dir"/docs/*.md; do
  [[ -f "$doc/$(basename "$page")" ]] || fail "docs/$(basename "$page") is not installed"
done
programs="$(find "$prefix" -type f \( -name '*_test' -o -name '*_bench' -o -name '*.a' -o -name '*.so' \))"
[[ -z "$programs" ]] || fail "tests, benchmarks or libraries installed: $programs"

if ((failures > 0)); then
  echo "install_tree_test: $failures failure(s)"
  exit 1
fi
echo "install_tree_test: the installed tree in a temporary prefix works"
