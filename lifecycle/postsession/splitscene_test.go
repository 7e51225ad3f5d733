package postsession_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// quotingExtractor answers with one fact per line naming a place, its
// evidence the line quoted after its speaker's name, as models do.
type quotingExtractor struct{}

func (quotingExtractor) Extract(_ context.Context, _ []memory.Entity, es []memory.TranscriptEntry) (postsession.Extraction, error) {
	return (&readingExtractor{held: make(chan struct{}), release: closed()}).Extract(context.Background(), nil, es)
}

func closed() chan struct{} { c := make(chan struct{}); close(c); return c }

// TestExtractedFactsRestOnTheirLines: extraction links each fact to the
// line its evidence quotes (fact_evidence), so the store shows a fact told
// in a split scene to the scene's players only: Thorin's watch at the
// north gate, said while the DM had split the party (Thorin alone in the
// scene), is a fact the DM and Thorin read and any player does not; Lyra's
// visit to the mill, said with the party together, every player reads
// when the model read it apart from the scene (a window of one line).
// Read in one window with the scene's line, it rests on the scene's line:
// what the model drew from a window holding a split scene reaches the
// scene's players only (the conservative rule of postsession's apply).
func TestExtractedFactsRestOnTheirLines(t *testing.T) {
	t.Parallel()
	both := []string{"lyra>mill", "thorin>north-gate"}
	for _, tc := range []struct {
		name    string
		window  int
		outside []string // what Lyra and any player read
	}{
		{"a window per line", 1, []string{"lyra>mill"}},
		{"one window", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			extractedFactsRestOnTheirLines(t, tc.window, both, tc.outside)
		})
	}
}

// extractedFactsRestOnTheirLines runs TestExtractedFactsRestOnTheirLines
// with extraction windows of window lines (0: the default).
func extractedFactsRestOnTheirLines(t *testing.T, window int, both, outside []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "split")
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	sl := camp.Sessions()
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"lyra", "thorin"}, false}, {2 * time.Minute, []string{"thorin"}, true}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range []struct{ id, who, text string }{
		{"lyra", "Lyra", "We should ask the miller about the grain."},
		{"thorin", "Thorin", "I will stand watch at the north gate tonight."},
	} {
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: l.id, SpeakerName: l.who,
			Text: l.text, At: t0.Add(time.Duration(1+2*i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sl.EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p, err := postsession.New(postsession.Config{Transcript: sl, Graph: camp.Graph(), Extractor: quotingExtractor{}, Window: window,
		Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	facts := func(v memory.Viewer) []string {
		t.Helper()
		c, err := camp.As(v)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := c.Graph().FindFacts(ctx, postgres.FactQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fs {
			ev, err := c.Graph().Evidence(ctx, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(ev) != 1 {
				t.Errorf("%s reads fact %s %s %s resting on %d lines, want 1", v, f.SourceID, f.Type, f.TargetID, len(ev))
			}
			out = append(out, f.SourceID+">"+f.TargetID)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		v    memory.Viewer
		want []string
	}{
		{memory.DMViewer(), both},
		{memory.PlayerViewerOf("thorin"), both},
		{memory.PlayerViewerOf("lyra"), outside},
		{memory.PlayerViewer(), outside},
	} {
		if got := facts(tc.v); !slices.Equal(got, tc.want) {
			t.Errorf("%s reads facts %v, want %v", tc.v, got, tc.want)
		}
	}
}
