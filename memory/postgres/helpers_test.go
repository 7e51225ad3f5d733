package postgres_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const testDims = 8

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

// sessionLine writes a line of session "s1" said by speaker at at, and
// returns its id.
func sessionLine(t *testing.T, sl *postgres.SessionLog, speaker, text string, at time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: speaker, SpeakerName: speaker, Text: text, At: at}); err != nil {
		t.Fatal(err)
	}
	for _, e := range must[[]memory.TranscriptEntry](t)(sl.Entries(ctx, "s1")) {
		if e.Text == text {
			return e.ID
		}
	}
	t.Fatalf("line %q not written", text)
	return 0
}

// hangGuard bounds a test that hangs; it is no budget for a slow one.
const hangGuard = 10 * time.Minute

func ctxT(t *testing.T) context.Context {
	t.Helper()
	// A hang guard, not a budget: a loaded machine may take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// unit returns a normalised testDims-dimensional vector pointing mostly along
// axis i, tilted towards axis j by w.
func unit(i, j int, w float64) []float32 {
	v := make([]float64, testDims)
	v[i%testDims] = 1
	v[j%testDims] += w
	var n float64
	for _, x := range v {
		n += x * x
	}
	out := make([]float32, testDims)
	for k, x := range v {
		out[k] = float32(x / math.Sqrt(n))
	}
	return out
}

// seedWorld writes a small campaign: Grimjaw the blacksmith in Ironhold,
// member of the Smiths' Guild, who knows Elara; Elara has a secret.
func seedWorld(t *testing.T, c *postgres.Campaign) {
	t.Helper()
	ctx := ctxT(t)
	g := c.Graph()
	check(t, g.UpsertEntities(ctx, []memory.Entity{
		{ID: "grimjaw", Type: memory.EntityNPC, Name: "Grimjaw", Aliases: []string{"Grim"},
			Attributes: map[string]any{"occupation": "blacksmith", memory.AttrSecretKnowledge: "owes the guild 300 gold"}},
		{ID: "elara", Type: memory.EntityNPC, Name: "Elara", Attributes: map[string]any{"occupation": "mage",
			memory.AttrSecretKnowledge: "is the lost heir of Ironhold"}},
		{ID: "ironhold", Type: memory.EntityLocation, Name: "Ironhold"},
		{ID: "guild", Type: memory.EntityFaction, Name: "Smiths' Guild"},
		{ID: "tower", Type: memory.EntityLocation, Name: "Tower of Whispers"},
		{ID: "vault", Type: memory.EntityLocation, Name: "Sunken Vault"},
		{ID: "hammer", Type: memory.EntityItem, Name: "Dawn Hammer"},
	}))
	facts := []memory.Relationship{
		{SourceID: "grimjaw", TargetID: "ironhold", Type: "LOCATED_AT"},
		{SourceID: "grimjaw", TargetID: "guild", Type: "MEMBER_OF"},
		{SourceID: "grimjaw", TargetID: "elara", Type: "KNOWS"},
		{SourceID: "grimjaw", TargetID: "hammer", Type: "OWNS"},
		{SourceID: "guild", TargetID: "ironhold", Type: "LOCATED_AT"},
		{SourceID: "elara", TargetID: "tower", Type: "LOCATED_AT"},
		{SourceID: "tower", TargetID: "vault", Type: "CONNECTED_TO"},
		// A secret between Elara and the vault that Grimjaw must not see.
		{SourceID: "elara", TargetID: "vault", Type: "KNOWS", Attributes: map[string]any{memory.AttrSecret: true}},
	}
	for _, f := range facts {
		f.Provenance = memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 0.95, Source: memory.SourceStated}
		must[memory.Relationship](t)(g.UpsertRelationship(ctx, f))
	}
}

func newStore(t *testing.T, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, _ := pgtest.NewStore(t, testDims, opts...)
	return s
}

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func entityID(e memory.Entity) string     { return e.ID }
func neighborID(n memory.Neighbor) string { return n.Entity.ID }

// madeUpNames makes the name-search tests' names from rng: words of one
// to three syllables, and parts of them.
type madeUpNames struct{ rng *rand.Rand }

var nameSyllables = [...]string{"ka", "vor", "ith", "mel", "dra", "un", "es", "tor", "gal", "rim"}

// word is a made-up word.
func (n madeUpNames) word() string {
	var b strings.Builder
	for range 1 + n.rng.IntN(3) {
		b.WriteString(nameSyllables[n.rng.IntN(len(nameSyllables))])
	}
	return b.String()
}

// part is a run of one or more letters of a new word.
func (n madeUpNames) part() string {
	w := n.word()
	start := n.rng.IntN(len(w))
	return w[start : start+1+n.rng.IntN(len(w)-start)]
}
