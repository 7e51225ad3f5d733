package chunk

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/mention"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

// line makes an entry sec seconds into the session.
func line(id int64, sec int, speaker, text string) memory.TranscriptEntry {
	return memory.TranscriptEntry{ID: id, SessionID: "s1", SpeakerID: strings.ToLower(speaker), SpeakerName: speaker,
		Text: text, At: t0.Add(time.Duration(sec) * time.Second), Duration: 2 * time.Second}
}

var world = []memory.Entity{
	{ID: "grimjaw", Name: "Grimjaw", Type: memory.EntityNPC},
	{ID: "ironhold", Name: "Ironhold", Type: memory.EntityLocation},
	{ID: "elara", Name: "Elara", Type: memory.EntityNPC},
}

func TestSplit(t *testing.T) {
	m := mention.NewMatcher(world)
	cases := []struct {
		name    string
		entries []memory.TranscriptEntry
		opts    Options
		// want lists each chunk's line ids.
		want [][]int64
	}{
		{"scene gap", []memory.TranscriptEntry{
			line(1, 0, "Thorin", "Grimjaw, is the forge hot?"),
			line(2, 5, "Grimjaw", "Hot as ever in Ironhold."),
			line(3, 600, "Mira", "We ride out at dawn."),
			line(4, 610, "Thorin", "To the pass then."),
		}, Options{}, [][]int64{{1, 2}, {3, 4}}},
		{"scene marker", []memory.TranscriptEntry{
			line(1, 0, "DM", "You stand in the forge."),
			line(2, 5, "DM", "--- Scene: the road north"),
			line(3, 10, "Mira", "Wagons ahead."),
		}, Options{}, [][]int64{{1}, {2, 3}}},
		{"fixed window with overlap", func() []memory.TranscriptEntry {
			var es []memory.TranscriptEntry
			for i := 1; i <= 7; i++ {
				es = append(es, line(int64(i), i*10, "Thorin", "the forge the forge the hammer"))
			}
			return es
		}(), Options{MaxLines: 3, Overlap: 1}, [][]int64{{1, 2, 3}, {3, 4, 5}, {5, 6, 7}}},
		{"topic shift", []memory.TranscriptEntry{
			line(1, 0, "Thorin", "The forge needs more coal."),
			line(2, 10, "Grimjaw", "Coal from the forge cellar."),
			line(3, 20, "Thorin", "I carry coal to the forge."),
			line(4, 30, "Grimjaw", "The forge thanks you, coal bearer."),
			line(5, 40, "Mira", "Elara sings ballads about dragons."),
			line(6, 50, "Elara", "Dragons and ballads, yes."),
			line(7, 60, "Mira", "Sing the dragon ballad."),
		}, Options{}, [][]int64{{1, 2, 3, 4}, {5, 6, 7}}},
		{"non-canon left out", []memory.TranscriptEntry{
			line(1, 0, "Thorin", "Hello."),
			{ID: 2, SessionID: "s1", Text: "That never happened.", At: t0.Add(time.Second), NonCanon: true},
			line(3, 4, "Mira", "Hi."),
		}, Options{}, [][]int64{{1, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Split(c.entries, m, c.opts)
			if len(got) != len(c.want) {
				t.Fatalf("%d chunks, want %d: %+v", len(got), len(c.want), got)
			}
			byID := map[int64]memory.TranscriptEntry{}
			for _, e := range c.entries {
				byID[e.ID] = e
			}
			for i, ids := range c.want {
				var want []string
				for _, id := range ids {
					want = append(want, byID[id].SpeakerName+": "+byID[id].Text)
				}
				if got[i].Content != strings.Join(want, "\n") {
					t.Errorf("chunk %d = %q, want lines %v", i, got[i].Content, ids)
				}
			}
		})
	}
}

func TestSplitKeepsMetadata(t *testing.T) {
	m := mention.NewMatcher(world)
	es := []memory.TranscriptEntry{
		line(1, 0, "Thorin", "Grimjaw, is the forge hot?"),
		{ID: 2, SessionID: "s1", SpeakerID: "grimjaw", SpeakerName: "Grimjaw", NPCID: "grimjaw",
			Text: "Hot as anything in Ironhold.", At: t0.Add(5 * time.Second), Duration: 3 * time.Second},
	}
	cs := Split(es, m, Options{})
	if len(cs) != 1 {
		t.Fatalf("%d chunks", len(cs))
	}
	c := cs[0]
	if c.SessionID != "s1" || !c.StartAt.Equal(t0) || !c.EndAt.Equal(t0.Add(8*time.Second)) {
		t.Errorf("span: %+v", c)
	}
	if fmt.Sprint(c.SpeakerIDs) != "[thorin grimjaw]" || fmt.Sprint(c.EntityIDs) != "[grimjaw ironhold]" {
		t.Errorf("speakers %v entities %v", c.SpeakerIDs, c.EntityIDs)
	}
	again := Split(es, m, Options{})
	if again[0].ID != c.ID {
		t.Errorf("ids differ between runs: %s vs %s", c.ID, again[0].ID)
	}
}

func TestProcessIdempotent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	store, _ := pgtest.NewStore(t, 64)
	camp, err := store.Campaign(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := camp.Graph().UpsertEntities(ctx, world); err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	var es []memory.TranscriptEntry
	for i := range 25 {
		e := line(0, i*20, "Thorin", fmt.Sprintf("Line %d about Grimjaw and the forge in Ironhold.", i))
		e.IdempotencyKey = fmt.Sprint("k", i)
		es = append(es, e)
	}
	if _, err := camp.Sessions().WriteEntries(ctx, es); err != nil {
		t.Fatal(err)
	}
	e, _ := embed.NewOffline(64)
	rep, err := Process(ctx, camp, e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := camp.Index().Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Chunks != len(first) || len(first) < 3 {
		t.Fatalf("report %+v, %d chunks stored", rep, len(first))
	}
	if fmt.Sprint(first[0].EntityIDs) != "[grimjaw ironhold]" {
		t.Errorf("entity links %v", first[0].EntityIDs)
	}
	rep2, err := Process(ctx, camp, e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	second, _ := camp.Index().Chunks(ctx, "s1")
	if rep2.Removed != 0 || fmt.Sprint(second) != fmt.Sprint(first) {
		t.Errorf("second run changed chunks: removed %d\n%v\n%v", rep2.Removed, first, second)
	}
	// Other options cut other chunks; the old ones go.
	rep3, err := Process(ctx, camp, e, Options{MaxLines: 4})
	if err != nil {
		t.Fatal(err)
	}
	third, _ := camp.Index().Chunks(ctx, "s1")
	if rep3.Removed != int64(len(first)) || len(third) != rep3.Chunks {
		t.Errorf("re-chunking: %+v, %d stored, %d before", rep3, len(third), len(first))
	}
	if n, err := EmbedPending(ctx, camp, e); err != nil || n != 0 {
		t.Errorf("EmbedPending after Process = %d, %v", n, err)
	}
	wrong, _ := embed.NewOffline(32)
	if _, err := Process(ctx, camp, wrong, Options{}); err == nil || !strings.Contains(err.Error(), "32") {
		t.Errorf("dimension mismatch: %v", err)
	}
}

// A speaker's lines are linked to the speaker's entity, found by name
// through the same matcher; an NPC's line keeps its NPC id only.
func TestSplitLinksSpeakers(t *testing.T) {
	m := mention.NewMatcher(append([]memory.Entity{{ID: "pc-nadia", Name: "Nadia Osei", Aliases: []string{"Nadia"}, Type: memory.EntityPlayer}}, world...))
	cases := []struct {
		name  string
		entry memory.TranscriptEntry
		want  string
	}{
		{"player by alias", line(1, 0, "Nadia", "We adopted a greyhound."), "[pc-nadia]"},
		{"player and a named NPC", line(1, 0, "Nadia", "Grimjaw waved."), "[pc-nadia grimjaw]"},
		{"unknown speaker", line(1, 0, "DM", "Rain falls."), "[]"},
		{"NPC line", memory.TranscriptEntry{ID: 1, SessionID: "s1", SpeakerID: "elara", SpeakerName: "Nadia", NPCID: "elara",
			Text: "Hello.", At: t0}, "[elara]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := Split([]memory.TranscriptEntry{c.entry}, m, Options{})
			if len(cs) != 1 || fmt.Sprint(cs[0].EntityIDs) != c.want {
				t.Fatalf("chunks %+v, want entities %s", cs, c.want)
			}
		})
	}
}
