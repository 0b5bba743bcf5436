#!/usr/bin/env bash
# `make run`: the fake upstreams and pistrad on loopback, in the foreground.
# Ctrl-C stops everything this script started.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=.run/bin
mkdir -p "$bin"
go build -o "$bin/" ./cmd/pistrad ./cmd/pistrac ./cmd/fakeprovider

# pistrad serves a bundle built from policies/ rather than the graph compiled
# into it, so an edit is served after a rebuild and a reload:
#   .run/bin/pistrac build -o .run/policy policies && kill -HUP <pistrad>
# (or POST /admin/v1/reload). pistrad itself never compiles CUE.
"$bin/pistrac" build -o .run/policy policies

# Development credentials only: the fakes accept these and pistrad reads them
# from the variables the default policy names.
export PISTRA_FAKE_OPENAI_KEY=${PISTRA_FAKE_OPENAI_KEY:-fake-openai-dev}
export PISTRA_FAKE_ANTHROPIC_KEY=${PISTRA_FAKE_ANTHROPIC_KEY:-fake-anthropic-dev}
export PISTRA_ADMIN_TOKEN=${PISTRA_ADMIN_TOKEN:-pistra-admin-dev}

pids=()
stop() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop INT TERM EXIT

"$bin/fakeprovider" -openai 127.0.0.1:9901 -anthropic 127.0.0.1:9902 &
pids+=($!)
"$bin/pistrad" -bundle .run/policy/bundle.json -listen 127.0.0.1:8080 -admin-listen 127.0.0.1:8081 -ledger-dir .run/ledger &
pids+=($!)

echo "pistra: public API http://127.0.0.1:8080 (key sk-pistra-dev), admin http://127.0.0.1:8081 (token $PISTRA_ADMIN_TOKEN); Ctrl-C stops" >&2
wait -n "${pids[@]}"
