package continuity

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

// corpusCanon is the canon the corpus is written against (see the head of
// testdata/corpus.tsv).
func corpusCanon() *Canon {
	ent := func(id, typ, name string, aliases ...string) Entity {
		return Entity{Entity: memory.Entity{ID: id, Type: typ, Name: name, Aliases: aliases}}
	}
	tobin := ent("tobin", "npc", "Old Tobin", "Tobin")
	tobin.Retired, tobin.RetiredReason = true, "killed by the wyvern"
	ents := []Entity{
		ent("grimjaw", "npc", "Grimjaw", "Grim"), ent("mara", "npc", "Mara"), ent("elda", "npc", "Elda"),
		ent("vell", "npc", "Sister Vell"), tobin,
		ent("kael", "player", "Kael"), ent("brin", "player", "Brin"),
		ent("ironhold", "location", "Ironhold"), ent("anchor", "location", "Rusty Anchor"),
		ent("saltmarsh", "location", "Saltmarsh"), ent("docks", "location", "Saltmarsh Docks", "docks"),
		ent("greywood", "location", "Greywood"), ent("stormbrand", "item", "Stormbrand"),
	}
	at := time.Date(2026, 11, 1, 20, 0, 0, 0, time.UTC)
	var id int64
	fact := func(src, rel, dst string, attrs map[string]any) memory.Relationship {
		id++
		return memory.Relationship{ID: id, SourceID: src, Type: rel, TargetID: dst, Attributes: attrs,
			Status: memory.StatusActive, Provenance: memory.Provenance{Timestamp: at.Add(time.Duration(id) * time.Minute)}}
	}
	facts := []memory.Relationship{
		fact("grimjaw", RelLocatedAt, "ironhold", nil), fact("anchor", RelLocatedAt, "ironhold", nil),
		fact("docks", RelPartOf, "saltmarsh", nil), fact("mara", RelLocatedAt, "anchor", nil),
		fact("mara", RelLivesIn, "saltmarsh", nil), fact("kael", RelLocatedAt, "ironhold", nil),
		fact("vell", RelDied, "greywood", nil), fact("elda", RelGave, "kael", map[string]any{"what": "the silver lantern"}),
		fact("brin", "OWNS", "stormbrand", nil),
	}
	return NewCanon(ents, facts)
}

// TestCorpus measures precision and recall on testdata/corpus.tsv: a
// finding counts as right when its kind is the line's.
func TestCorpus(t *testing.T) {
	p, r := measure(t, "testdata/corpus.tsv")
	if p < 0.95 || r < 0.7 {
		t.Errorf("precision %.2f (want >= 0.95), recall %.2f (want >= 0.70)", p, r)
	}
}

// TestHeldOut measures the lines written after tuning.
func TestHeldOut(t *testing.T) {
	p, r := measure(t, "testdata/heldout.tsv")
	if p < 0.8 || r < 0.5 {
		t.Errorf("precision %.2f (want >= 0.80), recall %.2f (want >= 0.50)", p, r)
	}
}

// measure returns the precision and recall of the checker on a corpus.
func measure(t *testing.T, path string) (float64, float64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := corpusCanon()
	var tp, fp, fn, lines int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") || strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		parts := strings.SplitN(sc.Text(), "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("malformed corpus line %q", sc.Text())
		}
		want, speaker, text := parts[0], parts[1], parts[2]
		lines++
		got := c.Check(speaker, text)
		hit := false
		for _, g := range got {
			if string(g.Kind) == want {
				hit = true
			} else {
				fp++
				t.Logf("false card %s for %q (%s): %s against %s", g.Kind, text, speaker, g.Claim, g.Canon.Text)
			}
		}
		switch {
		case want != "-" && hit:
			tp++
		case want != "-":
			fn++
			t.Logf("missed %s in %q (%s)", want, text, speaker)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	p := float64(tp) / float64(max(tp+fp, 1))
	r := float64(tp) / float64(max(tp+fn, 1))
	t.Logf("%s: %d lines, %d contradictions found, %d false cards, %d missed: precision %.2f, recall %.2f", path, lines, tp, fp, fn, p, r)
	return p, r
}
