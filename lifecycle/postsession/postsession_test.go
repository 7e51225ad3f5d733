package postsession_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

const session = "s1"

// replies are the fake model's answers, by window: the transcript lines of
// window w start with "w<w>:".
var replies = []string{
	`{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Sunstone","type":"item","aliases":["the stone"]}],
	  "relationships":[{"source":"Grimjaw","target":"Sunstone","type":"owns","confidence":0.9,"basis":"stated","evidence":"Grimjaw: the Sunstone is mine"}]}`,
	`{"entities":[{"name":"Grimjah","type":"npc"},{"name":"Ironhold","type":"location"}],
	  "relationships":[{"source":"Grimjah","target":"Ironhold","type":"LOCATED_AT","confidence":0.8,"basis":"stated"},
	                   {"source":"Sunstone","target":"Ironhold","type":"HIDDEN_IN","confidence":0.5,"basis":"inferred"}]}`,
	`{"entities":[{"name":"Queen Mirabel","type":"npc"}],
	  "relationships":[{"source":"Queen Mirabel","target":"the stone","type":"WANTS","confidence":0.7,"basis":"inferred"},
	                   {"source":"Queen Mirabel","target":"Nobody Known","type":"KNOWS","confidence":0.9,"basis":"stated"},
	                   {"source":"Grimjaw","target":"Ironhold","type":"RULES","confidence":1.5,"basis":"stated"}]}`,
}

// handler answers each extraction request with the reply of its window.
func handler(n int, req llmtest.Request) llmtest.Reply {
	user := req.Messages[len(req.Messages)-1].Content
	for w := len(replies) - 1; w >= 0; w-- {
		if strings.Contains(user, fmt.Sprintf("w%d:", w)) {
			return llmtest.Reply{Text: replies[w]}
		}
	}
	return llmtest.Reply{Status: http.StatusBadRequest}
}

// seed creates the campaign's known entities and a 12-line session.
func seed(t *testing.T, camp *postgres.Campaign) {
	t.Helper()
	ctx := context.Background()
	if err := camp.Graph().UpsertEntities(ctx, []memory.Entity{
		{ID: "grimjaw", Type: "npc", Name: "Grimjaw", Aliases: []string{"Grim"}},
		{ID: "ironhold", Type: "location", Name: "Ironhold"},
	}); err != nil {
		t.Fatal(err)
	}
	var es []memory.TranscriptEntry
	for i := range 12 {
		es = append(es, memory.TranscriptEntry{SessionID: session, SpeakerID: "p1", SpeakerName: "Ayla",
			Text: fmt.Sprintf("w%d: line %d", i/4, i), At: t0.Add(time.Duration(i) * time.Minute),
			IdempotencyKey: fmt.Sprintf("%s/%d", session, i)})
	}
	if _, err := camp.Sessions().WriteEntries(ctx, es); err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().EndSession(ctx, session, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func extractor(srv *llmtest.Server) *postsession.OpenAIExtractor {
	// No retries: the tests count the requests their failures send.
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "extract-model", Retries: -1})
	if err != nil {
		panic(err)
	}
	return postsession.NewOpenAIExtractor(c, "extract-model")
}

func newProcessor(t *testing.T, store *postgres.Store, camp *postgres.Campaign, x postsession.Extractor, l2 postsession.L2) *postsession.Processor {
	t.Helper()
	p, err := postsession.New(postsession.Config{L2: l2, Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: x,
		Progress: postsession.NewStoredProgress(camp.Processing()), Window: 4, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// graphState summarises the campaign's graph for comparisons.
type graphState struct {
	entities []string
	facts    []string // "SRC -TYPE-> DST status conf source session"
}

func state(t *testing.T, store *postgres.Store, camp string) graphState {
	t.Helper()
	ctx := context.Background()
	var g graphState
	rows, err := store.Pool().Query(ctx, `SELECT id FROM entities WHERE campaign_id = $1 ORDER BY id`, camp)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		rows.Scan(&id)
		g.entities = append(g.entities, id)
	}
	rows, err = store.Pool().Query(ctx, `SELECT source_id, rel_type, target_id, status, confidence, source, session_id, established_at
		FROM relationships WHERE campaign_id = $1 ORDER BY source_id, rel_type, target_id, id`, camp)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s, ty, d, st, src, sess string
		var c float64
		var at time.Time
		rows.Scan(&s, &ty, &d, &st, &c, &src, &sess, &at)
		g.facts = append(g.facts, fmt.Sprintf("%s -%s-> %s %s %.2f %s %s %s", s, ty, d, st, c, src, sess, at.UTC().Format("15:04")))
	}
	return g
}

var wantState = graphState{
	entities: []string{"grimjaw", "ironhold", "queen-mirabel", "sunstone"},
	facts: []string{
		"grimjaw -LOCATED_AT-> ironhold active 0.80 stated s1 19:07",
		"grimjaw -OWNS-> sunstone active 0.90 stated s1 19:03",
		"queen-mirabel -WANTS-> sunstone active 0.70 inferred s1 19:11",
		"sunstone -HIDDEN_IN-> ironhold pending 0.50 inferred s1 19:07",
	},
}

func checkState(t *testing.T, got graphState) {
	t.Helper()
	if fmt.Sprint(got.entities) != fmt.Sprint(wantState.entities) {
		t.Errorf("entities %q, want %q", got.entities, wantState.entities)
	}
	if strings.Join(got.facts, "\n") != strings.Join(wantState.facts, "\n") {
		t.Errorf("facts:\n%s\nwant:\n%s", strings.Join(got.facts, "\n"), strings.Join(wantState.facts, "\n"))
	}
}

func TestProcessExtractsResolvesAndReviews(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	seed(t, camp)
	srv := llmtest.New(handler)
	defer srv.Close()
	var l2calls atomic.Int32
	l2 := postsession.L2Func(func(_ context.Context, id string) error {
		if id != session {
			return fmt.Errorf("L2 asked for session %q", id)
		}
		l2calls.Add(1)
		return nil
	})
	p := newProcessor(t, store, camp, extractor(srv), l2)
	if p.Threshold() != 0.7 {
		t.Errorf("threshold %v, want the graph's 0.7", p.Threshold())
	}
	ctx := context.Background()
	rep, err := p.Run(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	want := postsession.Report{SessionID: session, L2Done: true, Windows: 3, EntitiesCreated: 2, EntitiesResolved: 3,
		Phonetic: 1, Accepted: 3, Pending: 1, Rejected: 2}
	if rep != want {
		t.Errorf("report %+v\n  want %+v", rep, want)
	}
	checkState(t, state(t, store, "c"))

	// The requests were JSON-mode extraction requests carrying the known
	// entities and the window's lines only.
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d extraction requests, want 3", len(reqs))
	}
	r1 := reqs[1]
	if !llmtest.AsksJSON(r1) ||
		!strings.Contains(r1.Messages[1].Content, "- Sunstone (item), also called the stone") ||
		!strings.Contains(r1.Messages[1].Content, "Ayla: w1: line 4") || strings.Contains(r1.Messages[1].Content, "w0:") {
		t.Errorf("second request: %+v", r1)
	}

	// Running again does nothing; processing again from scratch duplicates
	// nothing.
	if rep, err := p.Run(ctx, session); err != nil || rep.Windows != 0 || rep.L2Done {
		t.Errorf("second run: %+v, %v", rep, err)
	}
	if err := postsession.NewStoredProgress(pgtest.Campaign(t, store, "c").Processing()).Reset(ctx, session); err != nil {
		t.Fatal(err)
	}
	rep, err = p.Run(ctx, session)
	if err != nil || rep.EntitiesCreated != 0 || rep.Windows != 3 {
		t.Errorf("reprocessing: %+v, %v; want 3 windows and no new entity", rep, err)
	}
	checkState(t, state(t, store, "c"))
	if n := l2calls.Load(); n != 2 {
		t.Errorf("L2 ran %d times, want once per processing", n)
	}
	if ids, err := postsession.NewStoredProgress(pgtest.Campaign(t, store, "c").Processing()).Unfinished(ctx); err != nil || len(ids) != 0 {
		t.Errorf("unfinished after processing: %v, %v", ids, err)
	}
}

func TestFailingAndSlowExtractionResumes(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	seed(t, camp)
	// The second window's request fails.
	srv := llmtest.New(func(n int, req llmtest.Request) llmtest.Reply {
		if strings.Contains(req.Messages[1].Content, "w1:") {
			return llmtest.Reply{Status: http.StatusInternalServerError}
		}
		return handler(n, req)
	})
	defer srv.Close()
	p := newProcessor(t, store, camp, extractor(srv), nil)
	ctx := context.Background()
	if _, err := p.Run(ctx, session); err == nil || !strings.Contains(err.Error(), "window 2 of 3") {
		t.Fatalf("Run with a failing model = %v, want an error naming window 2", err)
	}
	if ids, _ := postsession.NewStoredProgress(pgtest.Campaign(t, store, "c").Processing()).Unfinished(ctx); fmt.Sprint(ids) != "[s1]" {
		t.Fatalf("unfinished %v, want [s1]", ids)
	}

	// A slow reply runs into the caller's deadline.
	srv.SetHandler(func(n int, req llmtest.Request) llmtest.Reply {
		r := handler(n, req)
		r.Delay = 5 * time.Second
		return r
	})
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := p.Run(tctx, session)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run with a slow model = %v, want the deadline", err)
	}

	// Healthy again: processing resumes at window 2.
	srv.SetHandler(handler)
	reps, err := p.RunUnfinished(ctx)
	if err != nil || len(reps) != 1 || reps[0].Resumed != 1 || reps[0].Windows != 2 {
		t.Fatalf("RunUnfinished = %+v, %v; want one run resuming at window 2", reps, err)
	}
	checkState(t, state(t, store, "c"))
}

func TestNewNeedsItsParts(t *testing.T) {
	if _, err := postsession.New(postsession.Config{}); err == nil {
		t.Fatal("New without parts succeeded")
	}
}

// A fact extracted from a later session that conflicts with canon does not
// overwrite it: Grimjaw moved, so the old location is retired as of the new
// session, still holds for the old one, and the pair waits for the DM.
func TestExtractedFactsKeepTheirHistory(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "moves")
	ctx := context.Background()
	g := camp.Graph()
	if err := g.UpsertEntities(ctx, []memory.Entity{
		{ID: "grimjaw", Type: "npc", Name: "Grimjaw"},
		{ID: "ironhold", Type: "location", Name: "Ironhold"},
		{ID: "duskwood", Type: "location", Name: "Duskwood"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	old, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "ironhold", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 0.95, Source: memory.SourceStated}})
	if err != nil || old.Status != memory.StatusActive {
		t.Fatalf("canon fact: %+v %v", old, err)
	}
	const later = "s2"
	if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: later, SpeakerID: "p1", SpeakerName: "Ayla",
		Text: "Grimjaw has moved his forge to Duskwood.", At: t0.Add(7 * 24 * time.Hour), IdempotencyKey: "s2/0"}}); err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().EndSession(ctx, later, t0.Add(7*24*time.Hour+time.Hour)); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(func(int, llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: `{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Duskwood","type":"location"}],
		  "relationships":[{"source":"Grimjaw","target":"Duskwood","type":"LOCATED_AT","confidence":0.9,"basis":"stated"}]}`}
	})
	defer srv.Close()
	rep, err := newProcessor(t, store, camp, extractor(srv), nil).Run(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Conflicts != 1 || rep.Accepted != 1 {
		t.Fatalf("report %+v, want 1 accepted fact and 1 conflict", rep)
	}
	conflicts, err := g.Conflicts(ctx)
	if err != nil || len(conflicts) != 1 || conflicts[0].OldFact.ID != old.ID || conflicts[0].NewFact.TargetID != "duskwood" {
		t.Fatalf("conflicts %+v %v", conflicts, err)
	}
	asOf := func(session string) []string {
		fs, err := g.FactsAsOf(ctx, "grimjaw", session)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fs {
			out = append(out, f.Type+" "+f.TargetID)
		}
		return out
	}
	if got := asOf("s1"); fmt.Sprint(got) != "[LOCATED_AT ironhold]" {
		t.Errorf("as of s1: %v", got)
	}
	if got := asOf(later); fmt.Sprint(got) != "[LOCATED_AT duskwood]" {
		t.Errorf("as of %s: %v", later, got)
	}
}

// TestLiveExtractionThenTheTail: while the session is played, the windows
// its lines fill are extracted; at the end Run extracts only the rest. The
// graph ends the same as with one run at the end.
func TestLiveExtractionThenTheTail(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	seed(t, camp)
	srv := llmtest.New(handler)
	defer srv.Close()
	p := newProcessor(t, store, camp, extractor(srv), nil)
	ctx := context.Background()
	// 12 lines of windows of 4: three full windows, all extracted live.
	rep, err := p.ExtractLive(ctx, session)
	if err != nil || rep.Windows != 3 {
		t.Fatalf("live extraction: %+v, %v", rep, err)
	}
	before := len(srv.Requests())
	// Nothing new: a second live pass asks the model nothing.
	if rep, err := p.ExtractLive(ctx, session); err != nil || rep.Windows != 0 || len(srv.Requests()) != before {
		t.Fatalf("second live pass: %+v, %v, %d requests", rep, err, len(srv.Requests())-before)
	}
	// The end of the session has no window left to extract, and is done.
	rep, err = p.Run(ctx, session)
	if err != nil || rep.Windows != 0 || len(srv.Requests()) != before {
		t.Fatalf("run after live extraction: %+v, %v", rep, err)
	}
	if rep, err := p.Run(ctx, session); err != nil || rep.Windows != 0 {
		t.Fatalf("a finished session was extracted again: %+v, %v", rep, err)
	}
	checkState(t, state(t, store, camp.ID()))
}
