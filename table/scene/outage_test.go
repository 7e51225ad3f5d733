package scene_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/table/scene"
)

// TestOutageMidScene stops PostgreSQL hard for 30 s of scene time while the
// table plays: no line is lost, and every NPC addressed still answers (from
// what it has in memory).
func TestOutageMidScene(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, cl.DSN(), dims, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f, err := os.Open(sampleCampaign)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := campaignfile.Parse(f, sampleCampaign)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.InTx(ctx, cf.Campaign, func(c *postgres.Campaign) error {
		_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, store)
	h.opts.Settings.Probe = reconnect.Backoff{Initial: time.Second, Max: 4 * time.Second}

	var b strings.Builder
	b.WriteString("session: outage\nlines:\n  - {command: \"/npc scene brannoc grimjaw\", by: DM}\n")
	for i := range 12 {
		npc := []string{"brannoc", "grimjaw"}[i%2]
		fmt.Fprintf(&b, "  - {speaker: Thorin, say: \"x\", heard: \"%s, tell me about line %d?\", after: 10s}\n", npc, i)
	}
	sc, err := scene.Parse(strings.NewReader(b.String()), "outage.yaml")
	if err != nil {
		t.Fatal(err)
	}
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
		case strings.Contains(ev.Line.Heard, "line 6?") && up.IsZero():
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
	if d := up.Sub(down); d < 30*time.Second {
		t.Fatalf("the outage lasted %s of scene time, want 30 s", d)
	}
	degraded := 0
	for _, l := range res.Lines {
		if l.Dropped != "" || l.Reply == "" {
			t.Errorf("line %q: dropped %q, reply %q, error %q", l.Heard, l.Dropped, l.Reply, l.Error)
		}
		if l.Degraded {
			degraded++
		}
	}
	if degraded == 0 {
		t.Error("no turn ran degraded: the outage was not felt")
	}
	// Every line, and every reply, reached the session log once the
	// database was back.
	es, err := h.camp.Sessions().Entries(ctx, sc.Session)
	if err != nil {
		t.Fatal(err)
	}
	players, npcs := 0, 0
	for _, e := range es {
		if e.NPCID != "" {
			npcs++
		} else {
			players++
		}
	}
	if players != 12 || npcs != 12 {
		t.Fatalf("the session log holds %d player lines and %d replies, want 12 and 12", players, npcs)
	}
}
