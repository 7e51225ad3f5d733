package hotctx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestPercentiles(t *testing.T) {
	cases := []struct {
		in, want []float64
	}{
		{[]float64{3, 1, 2}, []float64{1, 1.0 / 3, 2.0 / 3}},
		{[]float64{5, 5, 1, 9}, []float64{0.625, 0.625, 0.25, 1}},
		{[]float64{7}, []float64{1}},
	}
	for _, c := range cases {
		if got := percentiles(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("percentiles(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

var now = time.Date(2026, 3, 20, 20, 0, 0, 0, time.UTC)

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// world: the smith Hadrik knows 30 townsfolk (t00..t29), lives on Anvil
// Row, and talked with two players a few minutes ago. Fact i was last
// updated 10+i days ago, except t28 and t29, updated yesterday. The
// townsfolk's descriptions shrink with i, so richness and recency rank the
// same way and the best old facts are those of t00, t01, ...
func world(t testing.TB) (*access.Campaign, map[string]int64) {
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	c := pgtest.Open(t, store, "hot", memory.DMViewer())
	es := []memory.Entity{
		{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik", Attributes: map[string]any{"occupation": "smith"}},
		{ID: "anvil-row", Type: memory.EntityLocation, Name: "Anvil Row"},
	}
	for i := range 30 {
		es = append(es, memory.Entity{ID: fmt.Sprintf("t%02d", i), Type: memory.EntityNPC, Name: fmt.Sprintf("Townsman %02d", i),
			Attributes: map[string]any{"description": strings.Repeat("x", 30-i)}})
	}
	check(t, c.Graph().UpsertEntities(ctx, es))
	ids := map[string]int64{}
	rel := func(src, dst, typ string) {
		r, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: dst, Type: typ,
			Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}})
		check(t, err)
		ids[dst] = r.ID
	}
	rel("hadrik", "anvil-row", "LOCATED_AT")
	for i := range 30 {
		rel("hadrik", fmt.Sprintf("t%02d", i), "KNOWS")
	}
	for i := range 30 {
		age := time.Duration(10+i) * 24 * time.Hour
		if i >= 28 {
			age = 24 * time.Hour
		}
		_, err := store.Pool().Exec(ctx, `UPDATE relationships SET updated_at = $2, public_updated_at = $2 WHERE id = $1`, ids[fmt.Sprintf("t%02d", i)], now.Add(-age))
		check(t, err)
	}
	_, err := store.Pool().Exec(ctx, `UPDATE relationships SET updated_at = $2, public_updated_at = $2 WHERE id = $1`, ids["anvil-row"], now.Add(-100*24*time.Hour))
	check(t, err)

	check(t, c.Sessions().StartSession(ctx, "s1", now.Add(-time.Hour)))
	var lines []memory.TranscriptEntry
	for i, l := range []struct {
		min          int
		who, npc, tx string
	}{
		{-9, "Mira", "", "Long ago words nobody should see."},
		{-4, "Thorin", "", "Hadrik, is the blade ready?"},
		{-3, "Hadrik", "hadrik", "Tomorrow, lad."},
		{-1, "Mira", "", "We leave at dawn."},
	} {
		id := strings.ToLower(l.who)
		lines = append(lines, memory.TranscriptEntry{SessionID: "s1", SpeakerID: id, SpeakerName: l.who, NPCID: l.npc,
			Text: l.tx, At: now.Add(time.Duration(l.min) * time.Minute), IdempotencyKey: fmt.Sprint("l", i)})
	}
	_, err = c.Sessions().WriteEntries(ctx, lines)
	check(t, err)
	return c, ids
}

func TestAssemble(t *testing.T) {
	c, ids := world(t)
	a := New(c, Config{Now: func() time.Time { return now }})
	ctx := context.Background()

	hc, err := a.Assemble(ctx, "hadrik", "s1", 150)
	check(t, err)
	if len(hc.Text) > 150*CharsPerToken {
		t.Fatalf("text is %d characters, budget %d", len(hc.Text), 150*CharsPerToken)
	}
	if hc.NPC.Name != "Hadrik" || hc.Scene.Location == nil || hc.Scene.Location.Name != "Anvil Row" {
		t.Errorf("identity %+v, location %+v", hc.NPC, hc.Scene.Location)
	}
	if fmt.Sprint(hc.Scene.Present) != "[Thorin Mira]" {
		t.Errorf("present %v", hc.Scene.Present)
	}
	if len(hc.Recent) != 3 || strings.Contains(hc.Text, "Long ago") || !strings.Contains(hc.Text, "Mira: We leave at dawn.") {
		t.Errorf("recent window: %d entries, text:\n%s", len(hc.Recent), hc.Text)
	}
	// Nothing lost: every visible fact is in the text or a trace.
	if len(hc.Facts)+len(hc.Traces) != 31 || len(hc.Traces) == 0 || len(hc.Facts) < 3 {
		t.Fatalf("%d facts, %d traces; want 31 in all, some of each", len(hc.Facts), len(hc.Traces))
	}
	// Fresh facts first, then the best ranked.
	if hc.Facts[0].Relationship.ID != ids["t28"] && hc.Facts[0].Relationship.ID != ids["t29"] || !hc.Facts[1].Fresh {
		t.Errorf("fresh facts not first: %+v", hc.Facts[:2])
	}
	for i, f := range hc.Facts[2:] {
		if want := fmt.Sprintf("t%02d", i); f.Relationship.TargetID != want {
			t.Errorf("old fact %d is about %s, want %s (best ranked first)", i, f.Relationship.TargetID, want)
		}
	}
	for _, f := range hc.Facts {
		if !strings.Contains(hc.Text, f.Text) {
			t.Errorf("kept fact %q is not in the text", f.Text)
		}
	}
	for _, tr := range hc.Traces {
		if strings.Contains(hc.Text, tr.Summary) || tr.ID != fmt.Sprintf("f%d", tr.FactID) || tr.Summary == "" {
			t.Errorf("trace %+v is in the text or malformed", tr)
		}
	}

	// A roomy budget keeps everything.
	big, err := a.Assemble(ctx, "hadrik", "s1", 5000)
	check(t, err)
	if len(big.Traces) != 0 || len(big.Facts) != 31 {
		t.Errorf("roomy budget: %d facts, %d traces", len(big.Facts), len(big.Traces))
	}
	// A tiny budget still keeps the fresh facts when they fit, and never
	// overflows.
	tiny, err := a.Assemble(ctx, "hadrik", "s1", 30)
	check(t, err)
	if len(tiny.Text) > 120 || len(tiny.Facts)+len(tiny.Traces) != 31 {
		t.Errorf("tiny budget: %d chars, %d facts, %d traces", len(tiny.Text), len(tiny.Facts), len(tiny.Traces))
	}
}

func TestAssembleErrors(t *testing.T) {
	c, _ := world(t)
	a := New(c, Config{})
	if _, err := a.Assemble(context.Background(), "nobody", "s1", 100); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("unknown NPC: %v", err)
	}
	if _, err := a.Assemble(context.Background(), "hadrik", "s1", 0); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("zero budget: %v", err)
	}
}

// BenchmarkAssemble measures one hot context (31 visible facts, a recent
// transcript) against the real database, queries included.
func BenchmarkAssemble(b *testing.B) {
	c, _ := world(b)
	a := New(c, Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Assemble(ctx, "hadrik", "s1", 1500); err != nil {
			b.Fatal(err)
		}
	}
}
