package scene_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/scene"
)

// outageHarness is a harness on the sample campaign in a private cluster
// the test can stop.
func outageHarness(t *testing.T) (*pgcluster.Cluster, *harness) {
	t.Helper()
	cl := pgcluster.Start(t)
	store, err := postgres.NewStore(context.Background(), cl.DSN(), dims, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	pgtest.Import(t, store, sampleCampaign)
	h := newHarnessOn(t, store)
	h.opts.Settings.Probe = reconnect.Backoff{Initial: time.Second, Max: 4 * time.Second}
	return cl, h
}

// sceneOf builds a scene: a DM command bringing two NPCs in, then steps.
func sceneOf(t *testing.T, session string, steps ...string) *scene.File {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "session: %s\nlines:\n  - {command: \"/npc scene brannoc grimjaw\", by: DM}\n", session)
	for _, s := range steps {
		fmt.Fprintf(&b, "  - %s\n", s)
	}
	sc, err := scene.Parse(strings.NewReader(b.String()), session+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// said is the step of a player asking an NPC about line i.
func said(speaker string, i int) string {
	npc := []string{"brannoc", "grimjaw"}[i%2]
	return fmt.Sprintf("{speaker: %s, say: \"x\", heard: \"%s, tell me about line %d?\", after: 5s}", speaker, npc, i)
}

// playerLines counts, by text, the player lines a session's log holds.
func playerLines(t *testing.T, camp *postgres.Campaign, session string) map[string]int {
	t.Helper()
	es, err := camp.Sessions().Entries(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range es {
		if e.NPCID == "" {
			out[strings.ToLower(e.SpeakerName+": "+e.Text)]++ // name correction capitalises names
		}
	}
	return out
}

// TestOutageForgetMidScene stops PostgreSQL for 20 s of scene time while two
// players speak, and Lyra asks to be forgotten during the outage: after
// the database is back every line of Thorin's is in the session log exactly
// once, none of what Lyra said before forget-me is (neither the lines the
// database held before the outage nor those spooled during it), and what
// she says after it is kept.
func TestOutageForgetMidScene(t *testing.T) {
	t.Parallel()
	cl, h := outageHarness(t)
	ctx := context.Background()
	speakers := []string{"Thorin", "Lyra"}
	var steps []string
	for i := range 16 {
		steps = append(steps, said(speakers[i%2], i))
		if i == 7 {
			steps = append(steps, `{command: "/privacy forget-me", by: Lyra}`)
		}
	}
	sc := sceneOf(t, "outage-forget", steps...)
	var down, up time.Time
	h.opts.OnEvent = func(ev scene.Event) {
		if ev.Line == nil {
			return
		}
		switch {
		case strings.Contains(ev.Line.Heard, "line 3?") && down.IsZero():
			if err := cl.StopImmediate(); err != nil {
				t.Error(err)
			}
			down = ev.Line.At
		case strings.Contains(ev.Line.Heard, "line 9?") && up.IsZero():
			if err := cl.Restart(); err != nil {
				t.Error(err)
			}
			up = ev.Line.At
		}
	}
	res, err := scene.Play(ctx, sc, h.opts)
	if err != nil {
		t.Fatal(err)
	}
	if d := up.Sub(down); d < 20*time.Second {
		t.Fatalf("the outage lasted %s of scene time, want 20 s", d)
	}
	degraded := 0
	for _, l := range res.Lines {
		if l.Dropped != "" {
			t.Errorf("line %q dropped: %s", l.Heard, l.Dropped)
		}
		if l.Degraded {
			degraded++
		}
	}
	if degraded == 0 {
		t.Error("no turn ran degraded: the outage was not felt")
	}
	var forget *scene.CommandEvent
	for i := range res.Commands {
		if res.Commands[i].Command == "/privacy forget-me" {
			forget = &res.Commands[i]
		}
	}
	if forget == nil || forget.Error != "" {
		t.Fatalf("forget-me during the outage failed: %+v", forget)
	}
	// Lyra said lines 5 and 7 during the outage, before forget-me: they
	// were in the spool.
	if !strings.Contains(forget.Result, "2 lines taken out of the outage spool") || !strings.Contains(forget.Result, "queued") {
		t.Errorf("forget-me's result does not count the spooled lines or say the erase is queued: %q", forget.Result)
	}

	got := playerLines(t, h.camp, sc.Session)
	for i := range 16 {
		key := strings.ToLower(fmt.Sprintf("%s: %s, tell me about line %d?", speakers[i%2], []string{"brannoc", "grimjaw"}[i%2], i))
		want := 1
		if speakers[i%2] == "Lyra" && i < 8 {
			want = 0 // said before forget-me
		}
		if got[key] != want {
			t.Errorf("%q is in the session log %d times, want %d", key, got[key], want)
		}
		delete(got, key)
	}
	for k, n := range got {
		t.Errorf("an unexpected line in the session log (%d times): %q", n, k)
	}
}

// TestSceneEndsWithTheDatabaseDown plays a scene whose database goes down
// and stays down: Play fails with a *guard.PendingError counting the lines
// that wait, the spool stays on disk, and the next scene on the same state
// directory, with the database back, replays them into the first
// session's log, each once.
func TestSceneEndsWithTheDatabaseDown(t *testing.T) {
	t.Parallel()
	cl, h := outageHarness(t)
	ctx := context.Background()
	// The database never comes back during the wait: its length decides
	// nothing.
	h.opts.Settings.DrainTimeout = 500 * time.Millisecond
	var steps []string
	for i := range 6 {
		steps = append(steps, said("Thorin", i))
	}
	sc := sceneOf(t, "ends-down", steps...)
	h.opts.OnEvent = func(ev scene.Event) {
		if ev.Line != nil && strings.Contains(ev.Line.Heard, "line 2?") {
			if err := cl.StopImmediate(); err != nil {
				t.Error(err)
			}
		}
	}
	_, err := scene.Play(ctx, sc, h.opts)
	var pe *guard.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("a scene ending with the database down returned %v, want a *guard.PendingError", err)
	}
	// Lines 3, 4 and 5 and the answers to them wait.
	if pe.Lines != 6 {
		t.Errorf("%d lines wait, want 6 (three lines and three answers): %v", pe.Lines, pe)
	}
	if want := table.SpoolDir(h.opts.Settings.StateDir, h.camp.ID()); pe.Dir != want {
		t.Errorf("the spool is in %s, want %s", pe.Dir, want)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%d lines", pe.Lines)) || !strings.Contains(err.Error(), pe.Dir) {
		t.Errorf("the error does not say how many lines wait and where: %v", err)
	}
	if st, err := os.Stat(filepath.Join(pe.Dir, "spool.log")); err != nil || st.Size() == 0 {
		t.Fatalf("the spool is not on disk: %v", err)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	h.opts.OnEvent = nil
	next := sceneOf(t, "after", said("Thorin", 100))
	if _, err := scene.Play(ctx, next, h.opts); err != nil {
		t.Fatalf("the next scene: %v", err)
	}
	got := playerLines(t, h.camp, sc.Session)
	if len(got) != 6 {
		t.Errorf("the first session's log holds %d distinct player lines, want 6: %v", len(got), got)
	}
	for k, n := range got {
		if n != 1 {
			t.Errorf("%q is in the log %d times", k, n)
		}
	}
	if st, err := os.Stat(filepath.Join(pe.Dir, "spool.log")); err != nil || st.Size() != 0 {
		t.Errorf("the spool was not drained: %v, %d bytes", err, st.Size())
	}
}
