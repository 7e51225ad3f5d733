package retrieve

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestExpandedText checks the query expansion by a followed relation's far
// end: the related one's line, which shares no word with the question and
// which the plain full-text ranking does not find, is in the expanded
// ranking (by the resolved name, its speaker label); with nothing followed
// there is no expanded ranking, and NPC-scoped hybrid retrieval does not
// use it.
func TestExpandedText(t *testing.T) {
	at := time.Date(2026, 2, 1, 19, 0, 0, 0, time.UTC)
	f := &campaignfile.File{Campaign: "expand-test",
		Entities: []campaignfile.Entity{
			{ID: "brenna", Type: "npc", Name: "Brenna Varga", Aliases: []string{"Brenna"}},
			{ID: "holt", Type: "npc", Name: "Holt Ashby", Aliases: []string{"Holt"}},
			{ID: "cade", Type: "npc", Name: "Cade Rook", Aliases: []string{"Cade"}},
		},
		Relationships: []campaignfile.Relationship{{Source: "holt", Target: "brenna", Type: "EMPLOYS",
			Provenance: campaignfile.Provenance{Session: "s1"}}},
	}
	lines := [][2]string{{"brenna", "I never laid a finger on the tithe, I swear it."},
		{"cade", "Everyone is asking about the tithe. Ask at the mill."},
		{"holt", "The coins went south with a drover, and that is all I will say."}}
	for i, l := range lines {
		sid := fmt.Sprintf("s%d", i+1)
		start := at.AddDate(0, 0, 7*i)
		f.Sessions = append(f.Sessions, campaignfile.Session{ID: sid, StartedAt: start, EndedAt: start.Add(time.Minute),
			Entries: []campaignfile.Entry{{ID: sid + "-1", SpeakerID: l[0], SpeakerName: l[0], NPCID: l[0], Text: l[1],
				At: start.Add(10 * time.Second), DurationMS: 3000}}})
	}
	c, e := evalCampaign(t, f)
	r, err := New(c, e, Config{})
	check(t, err)
	ctx := context.Background()
	m, err := r.prepare(ctx)
	check(t, err)
	for _, tc := range []struct {
		q, want string // want: a phrase of a chunk of the expanded ranking, "" for no ranking
	}{
		{"What does Brenna's employer say became of the tithe?", "went south with a drover"},
		{"What became of the tithe?", ""},
		{"What does Cade say about the tithe?", ""},
	} {
		named := m.Seeds(tc.q)
		_, facts, err := r.expandSeeds(ctx, tc.q, r.seeds(named))
		check(t, err)
		got, err := r.expandedText(ctx, tc.q, named, facts, 10)
		check(t, err)
		plain, err := c.Index().TextSearch(ctx, textQuery(tc.q), 10, nil)
		check(t, err)
		has := func(hs []postgres.ChunkHit) bool {
			for _, h := range hs {
				if strings.Contains(h.Chunk.Content, tc.want) {
					return true
				}
			}
			return false
		}
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%q: expanded ranking %d chunks, want none", tc.q, len(got))
		case tc.want != "" && (!has(got) || has(plain)):
			t.Errorf("%q: %q in the expanded ranking %v, in the plain one %v; want only in the expanded", tc.q, tc.want, has(got), has(plain))
		}
	}
	// An NPC's own view: Brenna's scoped retrieval never holds Holt's line.
	rs, err := r.Search(ctx, Query{Text: "What does Brenna's employer say became of the tithe?", NPCID: "brenna", K: 5})
	check(t, err)
	for _, x := range rs {
		if strings.Contains(x.Content, "drover") {
			t.Errorf("Brenna's scoped retrieval holds Holt's line: %+v", x)
		}
	}
}
