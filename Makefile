# The README's test command is `make test`; CI runs it through .ci/run.
GO ?= go
# Packages with concurrency run under the race detector; the pure and
# compute-bound packages run without it (GoMLX under -race is ~10x slower).
RACE_PKGS := $(shell $(GO) list ./... 2>/dev/null | grep -E '/(actors|cluster|cmd|engineer|train)(/|$$)')
PLAIN_PKGS := $(shell $(GO) list ./... 2>/dev/null | grep -vE '/(actors|cluster|cmd|engineer|train)(/|$$)')

.PHONY: test vet lint build bench fmt

test:
	$(GO) vet ./...
	$(GO) test -count=1 $(PLAIN_PKGS)
	$(if $(RACE_PKGS),$(GO) test -count=1 -race $(RACE_PKGS))
	# protoactor-go itself races under -race (see cluster/provider_integration_test.go):
	# its full-cluster test runs here, without the race detector.
	$(GO) test -count=1 -run TestProviderProtoactorCluster ./cluster

vet:
	$(GO) vet ./...

lint: vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

build:
	$(GO) build -o t2t ./cmd/t2t

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1s ./env/

fmt:
	gofmt -w $$(git ls-files '*.go')
