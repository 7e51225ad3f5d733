package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// serveUntil runs serve on dsn with a fake LLM (answering reply to every
// request) and a fake Discord guild until cond holds (checked on conn, a
// liveness bound of hangGuard), then stops it; it returns serve's
// standard error and the LLM's requests.
func serveUntil(t *testing.T, dsn string, conn *pgx.Conn, reply, cond string) (string, []llmtest.Request) {
	t.Helper()
	s := startServe(t, dsn, conn, reply, nil)
	s.until(cond)
	return s.stop()
}

// servedT is serve running in a test (startServe).
type servedT struct {
	t      *testing.T
	conn   *pgx.Conn
	stderr *syncBuffer
	srv    *llmtest.Server
	cancel context.CancelFunc
	done   chan int
}

// startServe runs serve on dsn with a fake LLM (answering reply to every
// request), a fake Discord guild, and clk as the clock of its background
// work (nil: the system's); conn is what until checks conditions on.
func startServe(t *testing.T, dsn string, conn *pgx.Conn, reply string, clk clock.Clock) *servedT {
	t.Helper()
	const guildID = "100000000000000001"
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	srv := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply { return llmtest.Reply{Text: reply} })
	t.Cleanup(srv.Close)
	vars["GLYPHOXA_LLM_BASE_URL"], vars["GLYPHOXA_LLM_MODEL"] = srv.URL(), "fake"

	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("discord:\n  token: fake-token\n  guilds:\n    - {guild_id: %q, campaign: ironhold-saga}\nlifecycle:\n  shutdown_timeout: 5s\n  spool_dir: %q\nconsole: {listen: \"\"}\n",
		guildID, t.TempDir())), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.AddGuild(&discordgo.Guild{ID: guildID, Name: "The Table"})
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	fake.Attach(sess)
	t.Cleanup(func() { sess.Close() })
	s := &servedT{t: t, conn: conn, stderr: &syncBuffer{}, srv: srv, done: make(chan int, 1)}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: s.stderr, getenv: func(k string) string { return vars[k] }, discord: sess, clock: clk}
	var sctx context.Context
	sctx, s.cancel = context.WithCancel(context.Background())
	t.Cleanup(s.cancel)
	go func() { s.done <- run(sctx, []string{"serve", "--config", cfgPath, "--listen", anyPort}, e) }()
	return s
}

// until waits for cond (a query returning one boolean) to hold; a
// liveness bound of hangGuard, not a timing target.
func (s *servedT) until(cond string) {
	s.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		var finished bool
		if err := s.conn.QueryRow(context.Background(), cond).Scan(&finished); err != nil {
			s.t.Fatal(err)
		}
		if finished {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("serve did not get to %s:\n%s", cond, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops serve and returns its standard error and the LLM's requests.
func (s *servedT) stop() (string, []llmtest.Request) {
	s.t.Helper()
	s.cancel()
	if code := <-s.done; code != 0 {
		s.t.Fatalf("serve exited %d:\n%s", code, s.stderr.String())
	}
	return s.stderr.String(), s.srv.Requests()
}

// TestServeProcessesLateLinesAgain: session s1 was ended and processed
// (chunks and facts), then lines reached its log: a killed process's
// outage spool, replayed when its replica started again. serve's start-up
// resumption processes s1 again: its chunks hold the late line, and its
// facts were extracted from a window holding it.
// unprocessedSample is a copy of the sample campaign with nothing processed:
// its DSN, a connection for the test's own queries (closed with the test)
// and the campaign.
func unprocessedSample(t *testing.T) (string, *pgx.Conn, *postgres.Campaign) {
	t.Helper()
	dsn := sampleUnprocessed.Copy(t)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	store := pgtest.StoreAt(t, dsn, config.Default().Memory.EmbeddingDimensions)
	return dsn, conn, pgtest.Campaign(t, store, "ironhold-saga")
}

// processS1 processes session s1 of camp: chunked, extracted.
func processS1(t *testing.T, camp *postgres.Campaign) {
	t.Helper()
	ctx := context.Background()
	emb, err := embed.NewOffline(camp.Index().Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chunk.Process(ctx, camp, emb, chunk.Options{}, "s1"); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{postsession.StageStarted, postsession.StageL2, postsession.StageExtract} {
		if err := camp.Processing().Save(ctx, "s1", stage, 1, stage != postsession.StageStarted); err != nil {
			t.Fatal(err)
		}
	}
}

func TestServeProcessesLateLinesAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, conn, camp := unprocessedSample(t)
	processS1(t, camp)
	s1, err := camp.Sessions().Session(ctx, "s1")
	if err != nil || s1.EndedAt.IsZero() {
		t.Fatalf("s1: %+v, %v; want an ended session", s1, err)
	}
	const late = "Grimjaw hid the Moonwell key under the anvil"
	if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: "s1", SpeakerID: "grimjaw",
		SpeakerName: "Grimjaw", NPCID: "grimjaw", Text: late, At: s1.EndedAt.Add(-time.Minute), IdempotencyKey: "spooled:1"}}); err != nil {
		t.Fatal(err)
	}

	stderr, reqs := serveUntil(t, dsn, conn, `{"entities":[{"name":"Moonwell","type":"location"}],"relationships":[]}`,
		`SELECT EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga' AND session_id = 's1' AND stage = 'extract' AND done)
		   AND NOT EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga' AND session_id = 's1' AND stage = 'late_lines')`)
	read := false
	for _, r := range reqs {
		read = read || strings.Contains(r.Messages[len(r.Messages)-1].Content, late)
	}
	if !read {
		t.Errorf("serve did not extract s1's late line (%d requests):\n%s", len(reqs), stderr)
	}
	var chunked bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chunks WHERE campaign_id = 'ironhold-saga' AND session_id = 's1'
		AND content LIKE '%' || $1 || '%')`, late).Scan(&chunked); err != nil {
		t.Fatal(err)
	}
	if !chunked {
		t.Errorf("serve processed s1 again without chunking its late line: retrieval never finds it\n%s", stderr)
	}
}

// serve finishes, by itself, the processing a crash cut short (session s1
// here, killed before its chunking: the L2 stage), and leaves sessions
// never processed (s2) to process --extract.
func TestServeResumesInterruptedExtraction(t *testing.T) {
	t.Parallel()
	dsn := sampleUnprocessed.Copy(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The crash: s1's processing began and never finished.
	if _, err := conn.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage) VALUES ('ironhold-saga', 's1', 'started')`); err != nil {
		t.Fatal(err)
	}
	stderr, reqs := serveUntil(t, dsn, conn, `{"entities":[{"name":"Moonwell","type":"location"}],"relationships":[]}`,
		`SELECT EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga'
			AND session_id = 's1' AND stage = 'extract' AND done)`)
	var moonwell int
	var s2 bool
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM entities WHERE campaign_id = 'ironhold-saga' AND name = 'Moonwell'),
		EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga' AND session_id = 's2')`).Scan(&moonwell, &s2); err != nil {
		t.Fatal(err)
	}
	if moonwell != 1 || s2 {
		t.Errorf("after the resume: %d Moonwell entities (want 1), s2 touched: %v", moonwell, s2)
	}
	var chunks int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE campaign_id = 'ironhold-saga' AND session_id = 's1'`).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	if chunks == 0 {
		t.Errorf("serve resumed s1's processing without its chunking: s1 has no chunks, retrieval finds none of its lines")
	}
	if len(reqs) == 0 || !strings.Contains(stderr, "interrupted session processing resumed") {
		t.Errorf("serve did not say it resumed s1 (%d requests):\n%s", len(reqs), stderr)
	}
	for _, r := range reqs {
		if strings.Contains(r.Messages[1].Content, "Previously: the stolen steel") {
			t.Errorf("serve extracted s2, which was never started: %.200s", r.Messages[1].Content)
		}
	}
}

// TestAttackOwedWorkWaitedForARestart: serve runs; session s1 was ended
// and processed, then lines reached its log (another process replayed its
// outage spool), and a forget-me in a process that died before its rebuild
// left s2's chunks owed. The running serve takes both at its next sweep;
// they waited for its next start.
func TestAttackOwedWorkWaitedForARestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard) // a liveness bound
	defer cancel()
	dsn, conn, camp := unprocessedSample(t)
	processS1(t, camp)
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC))
	s := startServe(t, dsn, conn, `{"entities":[{"name":"Moonwell","type":"location"}],"relationships":[]}`, clk)
	// serve's start-up work is done when it waits for its next sweep.
	if !clk.WaitTimers(ctx, 1) || !slices.Contains(clk.Pending(), owedSweepEvery) {
		stderr, _ := s.stop()
		t.Fatalf("serve waits for no next sweep of owed work (timers %v): what is owed after its start waits for a restart\n%s", clk.Pending(), stderr)
	}
	s1, err := camp.Sessions().Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	const late = "Grimjaw hid the Moonwell key under the anvil"
	if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: "s1", SpeakerID: "grimjaw",
		SpeakerName: "Grimjaw", NPCID: "grimjaw", Text: late, At: s1.EndedAt.Add(-time.Minute), IdempotencyKey: "spooled:1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage) VALUES ('ironhold-saga', 's2', 'rechunk')`); err != nil {
		t.Fatal(err)
	}
	clk.Advance(owedSweepEvery)
	s.until(`SELECT EXISTS (SELECT 1 FROM chunks WHERE campaign_id = 'ironhold-saga' AND session_id = 's1' AND content LIKE '%Moonwell key under the anvil%')
		AND EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga' AND session_id = 's1' AND stage = 'extract' AND done)
		AND EXISTS (SELECT 1 FROM chunks WHERE campaign_id = 'ironhold-saga' AND session_id = 's2')
		AND NOT EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga' AND stage IN ('late_lines', 'rechunk'))`)
	stderr, reqs := s.stop()
	read := false
	for _, r := range reqs {
		read = read || strings.Contains(r.Messages[len(r.Messages)-1].Content, late)
	}
	if !read {
		t.Errorf("serve's sweep did not extract s1's late line (%d requests):\n%s", len(reqs), stderr)
	}
}

// TestAttackSweepPaysForAFailingExtractionEveryMinute: the process holding
// a campaign's claim sweeps its owed work every minute. A session whose
// extraction fails every time (a model whose answer to one window is never
// the schema, at temperature 0 the same answer each time) was sent to the
// model again on every sweep: 61 billed requests an hour, 1,440 a day, for
// nothing. A failing extraction is tried again after a wait that doubles,
// up to owedRetryMax.
func TestAttackSweepPaysForAFailingExtractionEveryMinute(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*hangGuard) // a liveness bound
	defer cancel()
	dsn, conn, camp := unprocessedSample(t)
	// s1's processing was cut short before its extraction.
	if err := camp.Processing().Save(ctx, "s1", postsession.StageStarted, 0, false); err != nil {
		t.Fatal(err)
	}
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC))
	s := startServe(t, dsn, conn, `I am sorry, I cannot help with that.`, clk)
	swept := func() {
		t.Helper()
		for !slices.Contains(clk.Pending(), owedSweepEvery) {
			if !clk.WaitTimers(ctx, len(clk.Pending())+1) {
				stderr, _ := s.stop()
				t.Fatalf("serve waits for no next sweep of owed work (timers %v)\n%s", clk.Pending(), stderr)
			}
		}
	}
	swept()
	first := len(s.srv.Requests())
	if first == 0 {
		stderr, _ := s.stop()
		t.Fatalf("serve's start-up sweep asked the model nothing for s1:\n%s", stderr)
	}
	const hour = 60
	for range hour {
		clk.Advance(owedSweepEvery)
		swept()
	}
	stderr, reqs := s.stop()
	attempts := len(reqs) / first
	t.Logf("%d requests in an hour of sweeps, %d a try: %d tries", len(reqs), first, attempts)
	// Doubling from a minute: tries at 0, 1, 3, 7, 15, 31 minutes.
	if attempts > 8 {
		t.Errorf("a session whose extraction always fails was sent to the model %d times in an hour of sweeps (%d requests):\n%.2000s",
			attempts, len(reqs), stderr)
	}
}
