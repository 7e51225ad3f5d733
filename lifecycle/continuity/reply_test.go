package continuity

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

// TestCheckReplyIsScopedToTheNPC: an NPC's sentence is checked against
// what it may know: a secret fact it is not told does not make its words
// a contradiction; one it knows does; it speaks of itself as "I".
func TestCheckReplyIsScopedToTheNPC(t *testing.T) {
	ents := []Entity{
		{Entity: memory.Entity{ID: "grimjaw", Type: "npc", Name: "Grimjaw"}},
		{Entity: memory.Entity{ID: "mara", Type: "npc", Name: "Mara"}},
		{Entity: memory.Entity{ID: "vexa", Type: "npc", Name: "Vexa"}},
		{Entity: memory.Entity{ID: "ironhold", Type: "location", Name: "Ironhold"}},
		{Entity: memory.Entity{ID: "vault", Type: "location", Name: "Sunken Vault"}},
		{Entity: memory.Entity{ID: "duskwood", Type: "location", Name: "Duskwood"}},
	}
	facts := []memory.Relationship{
		{ID: 1, SourceID: "vexa", Type: RelLocatedAt, TargetID: "vault", Status: memory.StatusActive,
			Attributes: map[string]any{memory.AttrSecret: true, memory.AttrKnownBy: []any{"mara"}}},
		{ID: 2, SourceID: "grimjaw", Type: RelLocatedAt, TargetID: "ironhold", Status: memory.StatusActive},
	}
	c := NewCanon(ents, facts)
	cases := []struct {
		npc, sentence string
		want          int
	}{
		{"grimjaw", "Vexa is in Duskwood.", 0}, // the secret is not Grimjaw's
		{"mara", "Vexa is in Duskwood.", 1},    // Mara knows it
		{"vexa", "Vexa is in Duskwood.", 1},    // her own whereabouts
		{"grimjaw", "I am in Duskwood.", 1},
		{"grimjaw", "I am in Ironhold.", 0},
		{"grimjaw", "Maybe I am in Duskwood.", 0},
	}
	for _, tc := range cases {
		if got := c.CheckReply(tc.npc, tc.sentence); len(got) != tc.want {
			t.Errorf("%s says %q: %+v; want %d findings", tc.npc, tc.sentence, got, tc.want)
		}
	}
}

// BenchmarkCheckReply is the cost the draft-reply check adds to each
// sentence of an NPC's reply that contradicts nothing (the common case),
// on the corpus's canon.
func BenchmarkCheckReply(b *testing.B) {
	c := corpusCanon()
	const sentence = "Aye, the docks are busy today, and Grimjaw is in Ironhold working his forge with Stormbrand on the wall."
	b.ReportAllocs()
	for b.Loop() {
		if got := c.CheckReply("mara", sentence); len(got) != 0 {
			b.Fatalf("findings %+v", got)
		}
	}
}
