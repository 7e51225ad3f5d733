# glyphoxa developer targets. A newcomer needs two: `make demo` and `make test`.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/glyphoxa

# gopus's bundled Opus 1.1.2 trips GCC 12's -Wstringop-overread (a false
# positive: silk_NSQ reads its 64-byte argument through a 32-byte array
# type), about 450 lines on a first build. Go hands CGO_CFLAGS to every cgo
# package; in glyphoxa those are gopus and the standard library's
# runtime/cgo, net and os/user, which raise no such warning, so the flag
# silences gopus alone. Your own CGO_CFLAGS are kept.
CGO_CFLAGS ?= -O2 -g
export CGO_CFLAGS += -Wno-stringop-overread

# DSN of the development database (started by scripts/devdb.sh if needed).
DEVDSN = $$(scripts/devdb.sh | tail -1 | sed 's/^GLYPHOXA_DSN=//')

.PHONY: all build run demo test bench bench-voice soak eval fuzz db lint vet clean

all: build

## build: compile bin/glyphoxa
build:
	$(GO) build -o $(BIN) ./cmd/glyphoxa

## bench-voice: whole voice turns through the production table (bot/voicesession and the demo run the same code) against local fake providers and the development database; p50/p95 of the bot's own overhead, end of speech → first NPC audio with speech-to-text whole or streamed while the player speaks, line → session log, line → findable by recall
bench-voice:
	@export GLYPHOXA_TEST_DSN="$(DEVDSN)" && \
	  $(GO) test -run '^$$' -bench 'Turn' -benchtime 50x ./table/ -args -stt-delay=150ms -llm-delay=300ms -tts-delay=100ms && \
	  $(GO) test -run '^$$' -bench 'Listen' -benchtime 5x ./table/ -args -stt-delay=150ms -stt-finalize=50ms -llm-delay=300ms -tts-delay=100ms && \
	  $(GO) test -run '^$$' -bench 'LiveRecall' -benchtime 12x ./table/

## soak: two five-hour sessions of a five-player table a week apart, through the production table at virtual time against local fake providers and the development database; logs the NPC prompt size by quarter of the session, the heap and goroutines every 100 lines, the running summary (about 15 minutes; `go test ./table/scene/` plays 15 minutes of each)
soak:
	@export GLYPHOXA_TEST_DSN="$(DEVDSN)" && \
	  $(GO) test -count=1 -run '^TestSoak$$' -v -timeout 60m ./table/scene/ -args -soak=5h

## run: the bot (glyphoxa serve) with ./config.yaml against the development database
run: build
	@export GLYPHOXA_DSN="$${GLYPHOXA_DSN:-$(DEVDSN)}" && $(BIN) serve

## db: bring up the development PostgreSQL with pgvector; the last line is GLYPHOXA_DSN=<dsn>
db:
	@scripts/devdb.sh

## demo: the main job on local defaults, without Discord or API keys: a scripted
## scene of synthesised speech through the voice pipeline into memory, in a fresh
## copy of the sample campaign each run (ironhold-saga-demo-N)
demo: build
	@scripts/testdeps.sh --voice-only
	@export GLYPHOXA_DSN="$(DEVDSN)" && $(BIN) demo

# Tests marked parallel: more of them run at once than there are cores (go
# test's default is GOMAXPROCS), as much of a test's time goes to other
# processes (the database server, Chromium, speech programs) that go test
# does not count.
TESTPARALLEL ?= 8
# Test packages run at once (go test -p; its default is the number of
# cores), for the same reason. Measured on 2 cores (/proc/stat, process
# accounting), the whole target keeps both busy from start to end: 942
# core-seconds in 484 s, 44% of it in PostgreSQL backends.
TESTPACKAGES ?= 4

# Evaluation tests: recall and ranking measured over generated corpora
# (memory/retrieve's TestRecall, whose epic corpus also holds the
# determinism check, TestRecall/epic/SameFileSameRanking). Each is one
# goroutine's loop of searches and Go-side scoring (BM25, recall@k) over
# thousands of chunks: the race detector has no second goroutine to catch
# there. The retriever still runs under -race in the package's other
# tests and inside the table (the NPCs' recall tool) in table's, table/
# scene's and cmd/glyphoxa's. They run once, without -race, beside the race
# pass, which skips them by name (no other test in the tree has this
# name). Their sixteen databases (one per corpus; the determinism check
# imports its second copy into the table corpus's) are built and searched
# side by side, EVALPARALLEL at a time: most of their CPU is the database
# server's (about 100 core-seconds on 2 cores, of which the test process
# used about 18).
EVALTESTS := ^TestRecall$$
EVALPKGS  := ./memory/retrieve/
EVALPARALLEL ?= 10

# Equivalence tests of one goroutine's computation, run with the
# evaluation tests (without -race) for the same reason:
# memory/mention's TestSeedIndexMatchesScan compares the indexed fuzzy
# name lookup with a scan of the whole vocabulary for 900 words (13 s of
# CPU under -race, 2.5 s without). The matcher still runs under -race in
# the package's other tests and in the table's (table/cast).
SOLOTESTS := ^TestSeedIndexMatchesScan$$
SOLOPKGS  := ./memory/mention/

# Packages whose tests take longest (wall time, most of it waiting on
# real-time streams, fake servers and the database): named first, so that
# go test starts them first instead of in import-path order, where some
# came last and ran alone at the end of the pass.
TESTFIRST ?= ./cmd/glyphoxa ./bot/console ./table/scene ./table ./voice/conn ./memory/postgres \
	./lifecycle/session ./voice/stt ./voice/tts ./voice/audio ./lifecycle/spool

## test: everything, against a real PostgreSQL (started here unless GLYPHOXA_TEST_DSN is set)
# The evaluation tests need only the database: they start at once and run
# (mostly waiting on PostgreSQL) beside everything else. The test programs
# install (apt, npm: mostly waiting on the network and the dpkg lock) while
# the race-enabled compile of every package and its tests runs (go list
# -export compiles without linking: the test run then only links the test
# binaries; `go build ./...` also linked the two commands no test runs: on
# a warm cache 8-10 s of CPU against 1-9 s, and in this target, beside the
# evaluation tests, 38 s before the race pass could start against 4 s). `go vet ./...` and gofmt run beside the
# build and the race pass, their output held back and printed at the end;
# their checks (all of them, test files included) are a superset of the
# few go test runs on each package before testing it: -vet=off skips that
# second look. Any of the four failing fails the target. Test binaries are
# linked without symbol table and DWARF already (go test passes -s -w to
# the linker unless asked for a binary with -c), so -ldflags=-s/-w would
# change nothing.
test:
	@export GLYPHOXA_TEST_DSN="$(DEVDSN)"; out=$$(mktemp); vetout=$$(mktemp); \
	  $(GO) test -count=1 -parallel $(EVALPARALLEL) -timeout 25m -run '$(EVALTESTS)|$(SOLOTESTS)' $(EVALPKGS) $(SOLOPKGS) >"$$out" 2>&1 & evaluation=$$!; \
	  scripts/testdeps.sh & deps=$$!; \
	  $(MAKE) --no-print-directory vet >"$$vetout" 2>&1 & vet=$$!; \
	  setup=0; $(GO) list -export -race -deps -test ./... >/dev/null || setup=1; \
	  wait $$deps || setup=1; \
	  race=1; if (( ! setup )); then \
	    $(GO) test -race -vet=off -count=1 -p $(TESTPACKAGES) -parallel $(TESTPARALLEL) -timeout 25m -skip '$(EVALTESTS)|$(SOLOTESTS)' \
	      $(TESTFIRST) ./...; race=$$?; \
	  fi; \
	  wait $$vet; vetted=$$?; \
	  echo "go vet and gofmt:"; cat "$$vetout"; rm -f "$$vetout"; (( vetted )) || echo ok; \
	  wait $$evaluation; evaluated=$$?; \
	  echo "evaluation tests (without the race detector):"; cat "$$out"; rm -f "$$out"; \
	  exit $$(( setup || vetted || race || evaluated ))

## bench: memory-store latency at 1k and 100k entities (generated once, then reused)
bench: build
	@export GLYPHOXA_DSN="$(DEVDSN)" && $(BIN) bench --scale 1k,100k

## eval: quality reports: transcript correction (recall, precision, entity-free altered) and retrieval (recall@5 and @10 per corpus, mode and question kind, beside a plain BM25 baseline)
eval:
	$(GO) run ./correction/cmd/eval
	@set -o pipefail; export GLYPHOXA_TEST_DSN="$(DEVDSN)" && \
	  $(GO) test -count=1 -parallel $(EVALPARALLEL) -run '^TestRecall$$' -v ./memory/retrieve/ | grep -v '^=== RUN'

## fuzz: every fuzz target for FUZZTIME each (default 60s)
fuzz:
	@scripts/fuzz.sh

## lint: go vet and gofmt
lint: vet

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

clean:
	rm -rf bin
