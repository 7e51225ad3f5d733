package session_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestAttackKilledDuringOutageThenTakenOver: process A runs session s1 and
// records lines while PostgreSQL is down (they are acknowledged: in A's
// fsynced outage spool); A is killed (SIGKILL); the database comes back and
// process B, with its own state directory (as README advises and the Helm
// chart does), takes the guild over, goes on with s1, ends it (/session
// end) and processes it: chunks and facts, without A's spooled lines,
// which B cannot read. Then A's replica starts again on its state
// directory: serve replays its spool (the lines reach s1's log) and
// resumes the processing an earlier run left owed.
//
// README: "a line that was acknowledged is stored once". Once A's replica
// is back, every acknowledged line must be in s1's log, its chunks and the
// windows its facts were extracted from; a second start must not process
// s1 again, and nothing B made may be duplicated.
func TestAttackKilledDuringOutageThenTakenOver(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	store, camp := outageCampaign(t, cl)

	// Process A.
	dirA := t.TempDir()
	a := startChild(t, cl.DSN(), dirA)
	a.waitRecorded(t, 100)
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	// A keeps recording through the outage: its lines go to its spool.
	stoppedAt := a.acked + 1
	a.waitRecorded(t, stoppedAt+200)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	for l := range a.lines {
		a.note(l)
	}
	acked := a.acked + 1
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}

	// The model names Grimjaw and Ayla in every window, and the bell in a
	// window holding a line only A's spool held.
	var mu sync.Mutex
	seen := map[int]bool{}    // lines some extraction request held
	spooled := map[int]bool{} // lines missing from the log B processed
	calls := 0
	lineNo := regexp.MustCompile(`line (\d{6}) of the evening`)
	fake := llmtest.New(func(n int, req llmtest.Request) llmtest.Reply {
		user := req.Messages[len(req.Messages)-1].Content
		if !strings.Contains(req.Messages[0].Content, "knowledge graph") {
			return llmtest.Reply{Text: "Summary."}
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		bell := false
		for _, m := range lineNo.FindAllStringSubmatch(user, -1) {
			i, _ := strconv.Atoi(m[1])
			seen[i] = true
			bell = bell || spooled[i]
		}
		reply := `{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Ayla","type":"pc"}],
			"relationships":[{"source":"Grimjaw","target":"Ayla","type":"KNOWS","confidence":0.9,"basis":"stated"}]}`
		if bell {
			reply = `{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Ayla","type":"pc"},{"name":"Outage Bell","type":"item"}],
				"relationships":[{"source":"Grimjaw","target":"Ayla","type":"KNOWS","confidence":0.9,"basis":"stated"},
				{"source":"Grimjaw","target":"Outage Bell","type":"RINGS","confidence":0.9,"basis":"stated"}]}`
		}
		return llmtest.Reply{Text: reply}
	})
	defer fake.Close()
	emb, err := embed.NewOffline(camp.Index().Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	// The processor serve's sessions and its start-up resumption use:
	// chunks (L2), then facts.
	proc, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
		L2: postsession.L2Func(func(ctx context.Context, id string) error {
			_, err := chunk.Process(ctx, camp, emb, chunk.Options{}, id)
			return err
		}),
		Extractor: postsession.NewOpenAIExtractor(client(fake), "m"),
		Progress:  postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}

	// Process B takes s1 over with its own state directory and ends it.
	b, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping, StateDir: t.TempDir(),
		Summarizer: noSummary, MaxTokens: 1 << 30, ConsolidateEvery: time.Hour, PostSession: proc, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// B's lines start one past A's last reported line: A may have
	// acknowledged (spooled) one more that it was killed before reporting.
	const more = 5
	first := acked + 1
	for i := first; i < first+more; i++ {
		if err := b.Record(ctx, line(i)); err != nil {
			t.Fatalf("B records line %d: %v", i, err)
		}
	}
	if err := b.End(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	b.Close(ctx)
	logged, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) >= acked+more {
		t.Fatalf("B processed s1 with all %d lines: A's spool held none, the attack proves nothing", len(logged))
	}
	mu.Lock()
	for i := range acked + 1 { // and the line A may not have reported
		spooled[i] = true
	}
	for _, e := range logged {
		if m := lineNo.FindStringSubmatch(e.Text); m != nil {
			i, _ := strconv.Atoi(m[1])
			delete(spooled, i)
		}
	}
	mu.Unlock()

	// A's replica starts again on its state directory: serve replays the
	// spool (table.ReplaySpool), then resumes owed processing
	// (postsession.ResumePending), each start once.
	restart := func() {
		t.Helper()
		g, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: store.Ping, SpoolDir: dirA + "/spool", Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		g.Start(ctx)
		if err := g.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		g.Close()
		if err := postsession.ResumePending(ctx, quiet(), map[string]*postsession.Processor{"c": proc}); err != nil {
			t.Fatal(err)
		}
	}
	restart()
	// Every line A acknowledged (its reported ones, and the one it may
	// not have reported), then B's, each once, in order.
	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i := range acked {
		want = append(want, i)
	}
	if len(got) == acked+1+more {
		want = append(want, acked)
	}
	for i := first; i < first+more; i++ {
		want = append(want, i)
	}
	keys := map[string]bool{}
	for i, e := range got {
		if i >= len(want) {
			t.Fatalf("s1 holds %d lines after the replay, want %d (A acknowledged %d or %d, B %d): %q is one too many",
				len(got), len(want), acked, acked+1, more, e.Text)
		}
		if w := line(want[i]).Text; e.Text != w || keys[e.IdempotencyKey] {
			t.Fatalf("entry %d is %q (key %q), want %q once: lost, duplicated or out of order", i, e.Text, e.IdempotencyKey, w)
		}
		keys[e.IdempotencyKey] = true
	}
	if len(got) != len(want) {
		t.Fatalf("s1 holds %d lines after the replay, want %d", len(got), len(want))
	}

	var missing []int
	mu.Lock()
	for _, i := range want {
		if !seen[i] {
			missing = append(missing, i)
		}
	}
	callsAfter := calls
	mu.Unlock()
	if len(missing) > 0 {
		t.Errorf("after A's replica restarted, %d of s1's %d lines were never read by fact extraction (A spooled %d "+
			"during the outage; first missing: line %d)", len(missing), len(want), acked-stoppedAt, missing[0])
	}
	chunks, err := camp.Index().Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, c := range chunks {
		text.WriteString(c.Content)
	}
	for _, i := range want {
		if s := line(i).Text; !strings.Contains(text.String(), s) {
			t.Errorf("after A's replica restarted, s1's chunks miss line %d %q (%d chunks): retrieval never finds it", i, s, len(chunks))
			break
		}
	}
	facts := func() map[string]int {
		t.Helper()
		fs, err := camp.Graph().FindFacts(ctx, postgres.FactQuery{Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending}})
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, f := range fs {
			n[f.SourceName+" "+f.Type+" "+f.TargetName]++
		}
		return n
	}
	made := facts()
	if made["Grimjaw KNOWS Ayla"] != 1 || made["Grimjaw RINGS Outage Bell"] != 1 {
		t.Errorf("facts after the restart: %v; want Grimjaw KNOWS Ayla and Grimjaw RINGS Outage Bell once each", made)
	}

	// Another start: nothing is owed, nothing is processed again.
	restart()
	mu.Lock()
	again := calls - callsAfter
	mu.Unlock()
	if again != 0 {
		t.Errorf("a second start sent %d extraction requests for s1: its processing ran again", again)
	}
	if second := facts(); len(second) != len(made) || second["Grimjaw KNOWS Ayla"] != 1 {
		t.Errorf("facts after a second start: %v, after the first: %v", second, made)
	}
	if n, err := camp.Index().Chunks(ctx, "s1"); err != nil || len(n) != len(chunks) {
		t.Errorf("a second start left %d chunks (%v), the first %d", len(n), err, len(chunks))
	}
}
