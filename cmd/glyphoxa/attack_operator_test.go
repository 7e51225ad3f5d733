package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackForgetMeKilledBeforeTheRebuild: a player's /privacy forget-me
// commits (their lines go, and every chunk holding their words, with the
// other players' lines in them), and the process is killed before it
// rebuilds those chunks (or the database goes down in between). The other
// players' lines must not stay out of retrieval for good: the next start of
// serve rebuilds the chunks. The same holds for a span declared non-canon
// (SessionLog.MarkNonCanon), which deletes chunks the same way.
func TestAttackForgetMeKilledBeforeTheRebuild(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	camp := pgtest.Campaign(t, pgtest.StoreAt(t, dsn, config.Default().Memory.EmbeddingDimensions), "ironhold-saga")
	const (
		dmLine     = "You push open the door of the Rusty Tankard"
		thorinLine = "I wave to Brannoc and order three ales"
	)
	chunked := func(text string) bool {
		t.Helper()
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chunks WHERE campaign_id = 'ironhold-saga'
			AND content LIKE '%' || $1 || '%')`, text).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !chunked(dmLine) || !chunked(thorinLine) {
		t.Fatal("the sample's chunks do not hold the lines the test reads: it proves nothing")
	}
	// The forget-me commits; the process dies before its rebuild.
	if _, err := camp.ForgetSpeaker(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if chunked(dmLine) {
		t.Fatal("the forget-me left the DM's line in its chunk: the attack proves nothing")
	}
	// Something for serve's start-up work to finish, so the test knows
	// when it is done: s2's extraction, cut short.
	if _, err := conn.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage) VALUES ('ironhold-saga', 's2', 'started')`); err != nil {
		t.Fatal(err)
	}
	stderr, _ := serveUntil(t, dsn, conn, `{"entities":[],"relationships":[]}`,
		`SELECT EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga' AND session_id = 's2' AND stage = 'extract' AND done)`)
	if !chunked(dmLine) {
		t.Errorf("after serve started again, the DM's line %q is in no chunk: the forget-me's rebuild was lost with the process\n%s", dmLine, stderr)
	}
	if chunked(thorinLine) {
		t.Errorf("the rebuild put the forgotten player's line %q back into a chunk", thorinLine)
	}
	var owed int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM session_processing WHERE campaign_id = 'ironhold-saga' AND stage = 'rechunk'`).Scan(&owed); err != nil {
		t.Fatal(err)
	}
	if owed != 0 {
		t.Errorf("%d sessions still owe a rebuild after serve rebuilt them", owed)
	}
}

// TestAttackLateLinesWithoutAnLLM: without an LLM, a session's end still
// runs its processing (chunks, and the ledger's explicit forms), and lines
// replayed into it afterwards (a killed process's outage spool) must reach
// its chunks too: serve's start-up resumption processes it again, though it
// resumes no LLM extraction.
func TestAttackLateLinesWithoutAnLLM(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	ctx := context.Background()
	cfg := config.Default()
	store := pgtest.StoreAt(t, dsn, cfg.Memory.EmbeddingDimensions)
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	// s1 was processed at its end without an LLM.
	for _, stage := range []string{postsession.StageStarted, postsession.StageL2, ledger.StageLedger} {
		if err := camp.Processing().Save(ctx, "s1", stage, 1, stage != postsession.StageStarted); err != nil {
			t.Fatal(err)
		}
	}
	s1, err := camp.Sessions().Session(ctx, "s1")
	if err != nil || s1.EndedAt.IsZero() {
		t.Fatalf("s1: %+v, %v; want an ended session", s1, err)
	}
	const late = "Lyra promises to bring the Moonwell key to Grimjaw"
	if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: "s1", SpeakerID: "u2",
		SpeakerName: "Lyra", Text: late, At: s1.EndedAt.Add(-time.Minute), IdempotencyKey: "spooled:1"}}); err != nil {
		t.Fatal(err)
	}
	if cfg.Providers.LLM.Configured() {
		t.Fatal("the default configuration has an LLM: the attack proves nothing")
	}
	if err := resumeExtraction(ctx, store, cfg, []string{"ironhold-saga"}, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	chunks, err := camp.Index().Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range chunks {
		found = found || strings.Contains(c.Content, late)
	}
	if !found {
		t.Errorf("after serve's start without an LLM, s1's %d chunks miss the line replayed into it: retrieval never finds it", len(chunks))
	}
	if owed, err := camp.Processing().LateOwed(ctx); err != nil || len(owed) != 0 {
		t.Errorf("sessions still owed after the start: %v, %v", owed, err)
	}
}

// TestAttackProcessLeftTheRebuildOwed: a forget-me's process died before
// it rebuilt the session's chunks, and the operator ran `glyphoxa
// process` to rebuild them by hand. The marks stayed: serve rebuilt those
// sessions once more. process clears the marks of what it rebuilt, for
// one session or all of them.
func TestAttackProcessLeftTheRebuildOwed(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	ctx := context.Background()
	camp := pgtest.Campaign(t, pgtest.StoreAt(t, dsn, config.Default().Memory.EmbeddingDimensions), "ironhold-saga")
	owed := func() []string {
		t.Helper()
		ids, err := camp.Processing().RechunkOwed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	// The forget-me commits; the process dies before its rebuild.
	if _, err := camp.ForgetSpeaker(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	before := owed()
	if len(before) < 2 {
		t.Fatalf("the forget-me left sessions %v owing a rebuild; the test wants two", before)
	}
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	if code, out, errs := runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--session", before[0]); code != 0 {
		t.Fatalf("process --session: %d %q %q", code, out, errs)
	}
	if got := owed(); !slices.Equal(got, before[1:]) {
		t.Errorf("after process --session %s: sessions %v owe a rebuild; want %v", before[0], got, before[1:])
	}
	if code, out, errs := runCLI(t, vars, "process", "--campaign", "ironhold-saga"); code != 0 {
		t.Fatalf("process: %d %q %q", code, out, errs)
	}
	if got := owed(); len(got) != 0 {
		t.Errorf("after process rebuilt every session: %v still owe a rebuild (serve rebuilds them again)", got)
	}
}

// TestAttackImportKilledBeforeItsChunking: `glyphoxa import` committed
// the campaign's sessions and died (or its embeddings provider failed)
// before it chunked them. Only running the import again, or `process` by
// hand, recovered them: retrieval found none of their lines. The import
// owes their chunking in its transaction, and serve's sweep (rechunkOwed)
// does it.
func TestAttackImportKilledBeforeItsChunking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := migratedDB(t)
	// The embeddings provider is out of reach: the import commits, its
	// chunking fails, as if the process had died there.
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte("providers:\n  embeddings: {provider: openai, base_url: \"http://127.0.0.1:1/v1\", model: text-embedding-3-small}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, map[string]string{"GLYPHOXA_DSN": dsn}, "import", "--config", cfgPath, sample)
	if code == 0 || !strings.Contains(out, "imported") {
		t.Fatalf("import with no embeddings provider: %d %q %q; want the import done and its processing failed", code, out, errs)
	}
	store := pgtest.StoreAt(t, dsn, config.Default().Memory.EmbeddingDimensions)
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	owed, err := camp.Processing().RechunkOwed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(owed) == 0 {
		t.Fatal("the import's sessions owe no chunking after it failed: only running it again finds their lines")
	}
	emb, err := newEmbedder(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	rechunkOwed(ctx, pgtest.Door(t, store), emb, "ironhold-saga", slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, id := range owed {
		if chunks, err := camp.Index().Chunks(ctx, id); err != nil || len(chunks) == 0 {
			t.Errorf("session %s after serve's sweep: %d chunks, %v", id, len(chunks), err)
		}
	}
	if left, err := camp.Processing().RechunkOwed(ctx); err != nil || len(left) != 0 {
		t.Errorf("still owed after serve's sweep: %v, %v", left, err)
	}
}

// TestAttackRestoreKilledBeforeItsEmbedding: a bundle from a database of
// another embedding dimension is restored (its chunks' embeddings left
// out) and the process dies, or its embeddings provider fails, before it
// embedded them again. Only `glyphoxa process` recovered them; vector
// search found none of the campaign. The restore owes their rebuild in its
// transaction, and serve's sweep (rechunkOwed) does it.
func TestAttackRestoreKilledBeforeItsEmbedding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	if code, out, errs := runCLI(t, src, "import", sample); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errs)
	}
	file := filepath.Join(t.TempDir(), "ironhold.bundle.gz")
	if code, out, errs := runCLI(t, src, "export", "--campaign", "ironhold-saga", "--out", file); code != 0 {
		t.Fatalf("export: %d %q %q", code, out, errs)
	}
	const dims = 8
	dsn := pgtest.NewMigratedDatabase(t, dims)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("memory:\n  embedding_dimensions: %d\n"+
		"providers:\n  embeddings: {provider: openai, base_url: \"http://127.0.0.1:1/v1\", model: text-embedding-3-small}\n", dims)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, map[string]string{"GLYPHOXA_DSN": dsn}, "import", "--config", cfgPath, file)
	if code == 0 || !strings.Contains(out, "their embeddings were left out") {
		t.Fatalf("restore with no embeddings provider: %d %q %q; want the restore done and its embedding failed", code, out, errs)
	}
	store := pgtest.StoreAt(t, dsn, dims)
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	owed, err := camp.Processing().RechunkOwed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(owed) == 0 {
		t.Fatal("the restored sessions owe no embedding after it failed: only glyphoxa process finds their lines by vector again")
	}
	emb, err := embed.NewOffline(dims)
	if err != nil {
		t.Fatal(err)
	}
	rechunkOwed(ctx, pgtest.Door(t, store), emb, "ironhold-saga", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if left, err := camp.Index().UnembeddedChunks(ctx, 10); err != nil || len(left) != 0 {
		t.Errorf("after serve's sweep: %d chunks without an embedding, %v", len(left), err)
	}
	if left, err := camp.Processing().RechunkOwed(ctx); err != nil || len(left) != 0 {
		t.Errorf("still owed after serve's sweep: %v, %v", left, err)
	}
}
