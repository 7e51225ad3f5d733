#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the module (each `func FuzzXxx` in a
# _test.go file) for FUZZTIME each (default 60s), one after another. A crash
# leaves its input under the package's testdata/fuzz/ and fails the run.
# FUZZMINIMIZETIME (default 5s) caps the time spent minimising each new
# interesting input, so the run explores instead of shrinking one mutant.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
minimize=${FUZZMINIMIZETIME:-5s}
targets=$(grep -rl --include='*_test.go' -E '^func Fuzz[A-Z0-9]' . | sort)
[[ -n $targets ]] || { echo "fuzz: no fuzz targets" >&2; exit 1; }
failed=0
for file in $targets; do
  pkg=./$(dirname "${file#./}")
  for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
    echo "fuzz: $pkg $name for $fuzztime"
    if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg"; then
      failed=$((failed + 1))
    fi
  done
done
if [[ $failed -gt 0 ]]; then echo "fuzz: $failed target(s) failed" >&2; exit 1; fi
