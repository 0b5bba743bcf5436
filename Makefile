# Two commands matter on a fresh machine: `make run` and `make test`.
GO ?= go
# Multiplies each fuzz target's execution count (scripts/fuzz.sh).
FUZZSCALE ?= 1

.PHONY: run test build gen gencheck policycheck vet fmtcheck rules unit policytest fuzz image bench bench-nginx bench-scale bench-profile chaos

run: gen
	./scripts/run.sh

build:
	$(GO) build ./...

# gen/ is the compiled default policy. It is checked in; CI fails when it is stale.
gen:
	$(GO) run ./cmd/pistrac build -o gen policies

# Regenerates gen/ as `make gen` does, but built with -race like vet and the
# tests, so a fresh machine compiles each dependency once rather than twice.
gencheck:
	$(GO) run -race ./cmd/pistrac build -o gen policies
	@if [ -n "$$(git status --porcelain -- gen)" ]; then \
		echo "gen/ is stale: run 'make gen' and commit the result"; git status --short -- gen; git diff --stat -- gen; exit 1; fi

# -race: the same build configuration as the tests (see gencheck).
vet:
	$(GO) vet -race ./...

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The alert rules shipped in deploy/prometheus, checked and their cases run
# by promtool (Debian's prometheus package, unpacked into .run/promtool when
# it is not on PATH). The unit tests use the same promtool for the
# dashboard's queries, so this runs before them.
rules:
	@promtool=$$(./scripts/promtool.sh) && $$promtool check rules deploy/prometheus/pistra.rules.yml && \
		cd deploy/prometheus && $$promtool test rules pistra.rules.test.yml

# vet ran already, in full, as its own target. It includes the short chaos
# run (bench/chaos TestChaosShort, 12-20 s with its race-built pistrad).
# -timeout: the e2e package runs many processes and nears go test's
# 10-minute default on a loaded machine.
unit:
	$(GO) test -race -count=1 -vet=off -timeout 25m ./...

# Every policy's golden routing cases (tests/*.cue), run the way a policy
# author's CI runs them. -race: the same build configuration as the tests.
policytest:
	@for d in policies policies/examples/*/; do $(GO) run -race ./cmd/pistrac test $$d || exit 1; done

# Short, bounded fuzzing of the readers and translators that see client and
# upstream bytes.
fuzz:
	./scripts/fuzz.sh $(FUZZSCALE)

# The default policy and every example, warnings refused as CI should
# (-race: the build gencheck already made, see there).
policycheck:
	$(GO) run -race ./cmd/pistrac check -strict policies
	@for d in policies/examples/*/; do echo "$$d"; $(GO) run -race ./cmd/pistrac check -strict "$$d" || exit 1; done

test: vet fmtcheck gencheck policycheck rules unit policytest fuzz

# pistrad's container image (deploy/image/Dockerfile: a static binary and the
# CA roots on an empty base, non-root), built offline into
# .image/pistrad-image.tar without a container engine; `docker load -i` it,
# or with Docker: docker build -f deploy/image/Dockerfile -t pistra/pistrad .image
CA_ROOTS ?= /etc/ssl/certs/ca-certificates.crt
image:
	mkdir -p .image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o .image/pistrad ./cmd/pistrad
	cp $(CA_ROOTS) .image/ca-certificates.crt
	$(GO) run ./deploy/image -f deploy/image/Dockerfile -context .image -o .image/pistrad-image.tar

# The load benchmark, then the per-request and per-chunk costs in allocs/op.
# BENCHFLAGS passes flags to bench/load, e.g. BENCHFLAGS="-duration 500ms
# -rounds 1" for a quick look, or -targets pistrad,leanrelay.
BENCHFLAGS ?=
bench: bench-nginx
	$(GO) run ./bench/load $(BENCHFLAGS)
	$(GO) test -run '^$$' -bench 'RelayStream|Inference|TranslatedStream' -benchmem ./runtime/proxy ./runtime/server

# nginx, the bench's reference gateway: installed from Debian's package when
# missing and run as root, else the bench skips it and says so.
bench-nginx:
	@./scripts/bench-nginx.sh

# The scale mode: SCALE streams (default 1000) held open at once, each 17
# events over 4 s, against pistrad (everything on), the lean relay and nginx:
# RSS, CPU and goroutines per open stream and time to first byte.
SCALE ?= 1000
bench-scale: bench-nginx
	$(GO) run ./bench/load -scale $(SCALE) $(BENCHFLAGS)

# CPU and allocation profiles of pistrad (everything on) under the load, at
# c=16, JSON and SSE, into PROFILEDIR, with their top entries (the
# allocation sites without the profiler's own, which runs in the window).
PROFILEDIR ?= bench-profiles
bench-profile:
	$(GO) run ./bench/load -targets pistrad -rounds 1 -concurrency 16 -profile $(PROFILEDIR) $(BENCHFLAGS)
	@for f in $(PROFILEDIR)/*.cpu.pprof; do echo "== $$f (cumulative)"; $(GO) tool pprof -top -cum -nodecount=15 $$f 2>/dev/null; \
		echo "== $$f (flat)"; $(GO) tool pprof -top -nodecount=15 $$f 2>/dev/null; done
	@for f in $(PROFILEDIR)/*.allocs.pprof; do echo "== $$f (allocation sites)"; \
		$(GO) tool pprof -top -sample_index=alloc_objects -hide="runtime/pprof|internal/profile" -nodecount=15 $$f 2>/dev/null; done

# The chaos run: pistrad against fake providers failing at random, a few
# thousand requests; CHAOSFLAGS passes flags, e.g. CHAOSFLAGS="-seed 42".
CHAOSFLAGS ?=
chaos:
	$(GO) run ./bench/chaos $(CHAOSFLAGS)
