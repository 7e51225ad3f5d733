package main

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// The sample campaign as `glyphoxa import` leaves it, processed (chunks for
// retrieval) or not (--no-process): imported once per test process and
// copied for each test that starts from it (TestMain drops them). The
// tests of import itself (TestImportAndInspect,
// TestImportProcessesAndAskAnswers, TestProcessIsIdempotent) import for
// themselves.
var (
	sampleProcessed = &pgtest.Fixture{Name: "sample", Dims: config.Default().Memory.EmbeddingDimensions,
		Build: importSample()}
	sampleUnprocessed = &pgtest.Fixture{Name: "samplenoprocess", Dims: config.Default().Memory.EmbeddingDimensions,
		Build: importSample("--no-process")}
)

// importSample imports the sample campaign with glyphoxa import and flags.
func importSample(flags ...string) func(tb testing.TB, dsn string) {
	return func(tb testing.TB, dsn string) {
		tb.Helper()
		args := append(append([]string{"import"}, flags...), sampleCampaignFile)
		if code, out, errs := runCLI(tb, map[string]string{"GLYPHOXA_DSN": dsn}, args...); code != 0 {
			tb.Fatalf("import %v: %d %q %q", flags, code, out, errs)
		}
	}
}
