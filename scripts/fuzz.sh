#!/usr/bin/env bash
# Runs every Fuzz target in the listed packages for a bounded number of
# executions. A count, not a duration: with -fuzztime set to a duration,
# go test can report the deadline itself ("context deadline exceeded") as a
# failure when it lands between the coordinator's and the workers' contexts
# being cancelled. Counts are sized for about 3 s a target on 2 cores.
# Minimizing is off so a crash fails the run at once, unminimized.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-1}
while read -r pkg execs; do
	n=$((execs * scale))
	for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $f (${n}x)"
		go test -run "^$" -fuzz "^$f\$" -fuzztime "${n}x" -fuzzminimizetime 0 "$pkg"
	done
done <<'TARGETS'
./runtime/jsonscan 100000
./runtime/caps 100000
./runtime/translate 40000
./runtime/dialect 60000
./runtime/meter 50000
./runtime/h1 30000
./runtime/proxy 30000
./runtime/server 2000
TARGETS
