package postgres_test

import (
	"errors"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSecretMarkersThatWouldLeakAreRefused: only "secret": true hides a
// fact or a value from players; a DM (or the DM's MCP agent) who writes
// "secret": "true", "yes" or 1, or spells the marker "Secret", meant it
// hidden and would have it public (ATTACK3: the write was accepted and
// players read the fact). Such writes are refused with an error naming
// the attribute, on facts and entities, at any depth; a boolean marker
// is taken and hides the fact.
func TestSecretMarkersThatWouldLeakAreRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()
	player := mustAs(t, c, memory.PlayerViewer()).Graph()
	for _, tc := range []struct {
		name  string
		attrs map[string]any
	}{
		{"a string", map[string]any{"secret": "true"}},
		{"yes", map[string]any{"secret": "yes"}},
		{"a number", map[string]any{"secret": 1.0}},
		{"another case", map[string]any{"Secret": true}},
		{"another case, a word", map[string]any{"SECRET": "yes"}},
		{"nested in an object", map[string]any{"plan": map[string]any{"secret": "true", "text": "poison the well"}}},
		{"nested in a list", map[string]any{"plans": []any{map[string]any{"secret": "yes", "text": "poison the well"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := g.WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "grimjaw", TargetID: "vault",
				Type: "PLOTS_AGAINST", Attributes: tc.attrs}, "")
			if !errors.Is(err, memory.ErrInvalid) {
				leak := ""
				if err == nil {
					if f, ferr := player.Fact(ctx, w.Fact.ID); ferr == nil {
						leak = "; a player reads it: " + f.Type + " " + f.TargetID
					}
				}
				t.Fatalf("writing a fact with %v: %v, want ErrInvalid%s", tc.attrs, err, leak)
			}
			if err := g.UpsertEntity(ctx, memory.Entity{ID: "plotter", Type: "npc", Name: "Plotter", Attributes: tc.attrs}); !errors.Is(err, memory.ErrInvalid) {
				t.Errorf("saving an entity with %v: %v, want ErrInvalid", tc.attrs, err)
			}
		})
	}
	// A secret-named value in another case is a note, hidden itself (the
	// hostile campaign's SECRET: key): taken, and a player reads the fact
	// without it.
	note := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "grimjaw", TargetID: "vault",
		Type: "GUARDS", Attributes: map[string]any{"SECRET": "the vault is empty", "since": "spring"}}, ""))
	if f, err := player.Fact(ctx, note.Fact.ID); err != nil {
		t.Errorf("a player reading a fact with a SECRET note: %v", err)
	} else if _, ok := f.Attributes["SECRET"]; ok || f.Attributes["since"] != "spring" {
		t.Errorf("a player reads the fact's attributes as %v, want since only", f.Attributes)
	}
	w := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "grimjaw", TargetID: "vault",
		Type: "PLOTS_AGAINST", Attributes: map[string]any{"secret": true}}, ""))
	if _, err := player.Fact(ctx, w.Fact.ID); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("a player reading a fact marked secret: %v, want ErrNotFound", err)
	}
}
