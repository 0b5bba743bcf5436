GO ?= go

.PHONY: build test vet fmtcheck
build:
	$(GO) build ./...

vet:
	$(GO) vet ./...

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: vet fmtcheck
	$(GO) test ./...
