package postsession_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackSceneEdgesHold attacks timing edges of split scenes through
// the real extraction: a name said at the exact instant the DM splits the
// party (the scene's: the split span holds the line), a name heard in two
// scenes of the same session with different players (each scene's players
// see it, the player in neither and any player do not), and a name of the
// scene said again, later, in cross-talk by the player outside it (their
// own line at the table during the split is no trace). (Holds.)
func TestAttackSceneEdgesHold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "edges")
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{
		{0, []string{"lyra", "thorin", "kael"}, false},
		{time.Minute, []string{"thorin"}, true},   // scene A: Thorin
		{3 * time.Minute, []string{"lyra"}, true}, // scene B: Lyra
		{5 * time.Minute, []string{"lyra", "thorin", "kael"}, false},
	} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []struct {
		who, text string
		at        time.Duration
	}{
		{"dm", "At this very instant the Ember Gate opens for Thorin.", time.Minute},
		{"marla", "The Salt Crown was stolen, Thorin.", 2 * time.Minute},
		{"kael", "I hum about an ember gate while I wait.", 150 * time.Second},
		{"marla", "Lyra, the Salt Crown lies in the well.", 4 * time.Minute},
	} {
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: l.who, SpeakerName: l.who, Text: l.text,
			At: t0.Add(l.at)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sl.EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: scriptedExtractor{postsession.Extraction{Entities: []postsession.ExtractedEntity{
			{Name: "Ember Gate", Type: "location"}, {Name: "Salt Crown", Type: "item"}}}},
		Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	sees := func(v memory.Viewer, name string) bool {
		t.Helper()
		c, err := camp.As(v)
		if err != nil {
			t.Fatal(err)
		}
		es, err := c.Graph().FindEntities(ctx, memory.EntityFilter{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return len(es) == 1
	}
	lyra, thorin, kael, anyone := memory.PlayerViewerOf("lyra"), memory.PlayerViewerOf("thorin"), memory.PlayerViewerOf("kael"), memory.PlayerViewer()
	for name, want := range map[string]map[memory.Viewer]bool{
		"Ember Gate": {thorin: true, lyra: false, kael: false, anyone: false},
		"Salt Crown": {thorin: true, lyra: true, kael: false, anyone: false},
	} {
		for v, ok := range want {
			if got := sees(v, name); got != ok {
				if !ok {
					t.Errorf("LEAK to %s: sees %q", v, name)
				} else {
					t.Errorf("%s does not see %q", v, name)
				}
			}
		}
	}
}
