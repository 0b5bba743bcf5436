#!/usr/bin/env bash
# Runs every Fuzz target in the listed packages for a short, bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-5s}
for pkg in ./runtime/caps ./runtime/translate ./runtime/dialect ./runtime/server; do
	for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $f ($t)"
		go test -run "^$" -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime 1s "$pkg"
	done
done
