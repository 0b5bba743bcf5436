#!/usr/bin/env bash
# Runs every Fuzz target in the listed packages for a short, bounded time.
# Minimizing is off: with a cold fuzz cache nearly every input is new, and
# when the time runs out mid-minimization go test reports "context deadline
# exceeded" as a failure. A crash still fails the run, unminimized.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-5s}
for pkg in ./runtime/caps ./runtime/translate ./runtime/dialect ./runtime/server; do
	for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $f ($t)"
		go test -run "^$" -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime 0 "$pkg"
	done
done
