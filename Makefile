# Two commands matter on a fresh machine: `make run` and `make test`.
GO ?= go
# Multiplies each fuzz target's execution count (scripts/fuzz.sh).
FUZZSCALE ?= 1

.PHONY: run test build gen gencheck policycheck vet fmtcheck unit policytest fuzz bench chaos

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

# vet ran already, in full, as its own target. It includes the short chaos
# run (bench/chaos TestChaosShort, 12-20 s with its race-built pistrad).
unit:
	$(GO) test -race -count=1 -vet=off ./...

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

test: vet fmtcheck gencheck policycheck unit policytest fuzz

# The load benchmark, then the per-request and per-chunk costs in allocs/op.
bench:
	$(GO) run ./bench/load
	$(GO) test -run '^$$' -bench 'RelayStream|Inference|TranslatedStream' -benchmem ./runtime/proxy ./runtime/server

# The chaos run: pistrad against fake providers failing at random, a few
# thousand requests; CHAOSFLAGS passes flags, e.g. CHAOSFLAGS="-seed 42".
CHAOSFLAGS ?=
chaos:
	$(GO) run ./bench/chaos $(CHAOSFLAGS)
