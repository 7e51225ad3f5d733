# glyphoxa developer targets. `make demo` and `make test` are the two a newcomer needs.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/glyphoxa

.PHONY: all build test db vet

all: build

build:
	$(GO) build -o $(BIN) ./cmd/glyphoxa

## db: bring up the development PostgreSQL with pgvector; the last line is GLYPHOXA_DSN=<dsn>.
db:
	@scripts/devdb.sh

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

## test: everything, against a real PostgreSQL (started here unless GLYPHOXA_TEST_DSN is set).
test: vet
	@scripts/testdeps.sh
	@dsn=$$(scripts/devdb.sh | tail -1); dsn=$${dsn#GLYPHOXA_DSN=}; \
	  GLYPHOXA_TEST_DSN="$$dsn" $(GO) test -race -count=1 -timeout 20m ./...
