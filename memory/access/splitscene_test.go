package access_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// splitChunks indexes the split-party corpus as chunks: one per canon line
// (its id "line-<session>-<n>", spanning the line), and "mixed", a chunk
// spanning the last public lines before the split and the first lines of
// scene A. It returns each line's chunk id by session and text.
func splitChunks(t *testing.T, s *postgres.Store, id string) map[string]string {
	t.Helper()
	ctx := context.Background()
	c := pgtest.Campaign(t, s, id)
	byLine := map[string]string{}
	var cs []memory.Chunk
	for _, sess := range []string{"s1", "s2"} {
		es, err := c.Sessions().Entries(ctx, sess)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range es {
			if e.NonCanon {
				continue
			}
			emb := make([]float32, 8)
			emb[len(cs)%8] = 1
			emb[(len(cs)+3)%8] = float32(len(cs)+1) / 40
			ch := memory.Chunk{ID: fmt.Sprintf("line-%s-%d", sess, i), SessionID: sess, Content: e.SpeakerName + ": " + e.Text,
				Embedding: emb, SpeakerIDs: []string{e.SpeakerID}, StartAt: e.At, EndAt: e.At.Add(time.Second)}
			cs = append(cs, ch)
			byLine[sess+"\x00"+e.Text] = ch.ID
		}
	}
	start := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	cs = append(cs, memory.Chunk{ID: "mixed", SessionID: "s1",
		Content:   "p3: I will go to the tower alone. p2: Fine, Thorin and I take the docks. dm: The docks smell of tar and fish.",
		Embedding: []float32{1, 1, 1, 1, 1, 1, 1, 1}, StartAt: start.Add(4 * time.Minute), EndAt: start.Add(7*time.Minute + time.Second)})
	if err := c.Index().IndexChunks(ctx, cs); err != nil {
		t.Fatal(err)
	}
	return byLine
}

// TestSplitSceneReachesOnlyItsPlayers reads the split-party corpus through
// every read path of lines and chunks a player reaches, as an adversary:
// "any player" (a public /recap, the console or MCP without a user), each
// player bound to their user id, and the DM. Any player reads exactly the
// lines said while the party was not split (the hand-written public:
// truth); a bound player those and the canon lines their character
// witnessed (by:); the DM everything. A chunk is read only when every line it holds
// is, so the chunk mixing public lines and scene A's is read by the DM and
// scene A's players only.
func TestSplitSceneReachesOnlyItsPlayers(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	kc, lines := loadKnowledgeCorpus(t, s, "scene", "testdata/knowledge/split-party.yaml")
	chunkOf := splitChunks(t, s, "scene")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()
	if err := pgtest.Campaign(t, s, "scene").Sessions().SaveSummary(ctx, "s1", "Lyra and Thorin see the crate; Kael meets Elara."); err != nil {
		t.Fatal(err)
	}

	type reader struct {
		name   string
		viewer memory.Viewer
		reads  func(corpusLine) bool
		mixed  bool // reads the chunk "mixed"
	}
	readers := []reader{
		{"any player", memory.PlayerViewer(), func(l corpusLine) bool { return l.public }, false},
		{"the DM", memory.DMViewer(), func(corpusLine) bool { return true }, true},
	}
	for _, u := range []string{"p1", "p2", "p3"} {
		readers = append(readers, reader{"player " + u, memory.PlayerViewerOf(u),
			func(l corpusLine) bool { return l.public || l.unrecorded || slices.Contains(l.by, u) }, u != "p3"})
	}
	var leaks, checked int
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			c, err := d.Open(ctx, "scene", r.viewer)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}      // session + text of the canon lines r reads
			wantChunk := map[string]bool{} // chunk ids r reads
			for _, l := range lines {
				if !l.noncanon && r.reads(l) {
					want[l.session+"\x00"+l.text] = true
					wantChunk[chunkOf[l.session+"\x00"+l.text]] = true
				}
			}
			if r.mixed {
				wantChunk["mixed"] = true
			}
			leak := func(format string, args ...any) {
				t.Helper()
				leaks++
				t.Errorf("LEAK to %s: "+format, append([]any{r.name}, args...)...)
			}
			// The session log: Entries (a recap's input), GetRecent, Search.
			for _, sess := range []string{"s1", "s2"} {
				es, err := c.Sessions().Entries(ctx, sess)
				if err != nil {
					t.Fatal(err)
				}
				recent, err := c.Sessions().GetRecent(ctx, sess, 24*time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				for name, got := range map[string][]memory.TranscriptEntry{"Entries": es, "GetRecent": recent} {
					seen := map[string]bool{}
					for _, e := range got {
						if e.NonCanon {
							continue
						}
						checked++
						seen[sess+"\x00"+e.Text] = true
						if !want[sess+"\x00"+e.Text] {
							leak("%s(%s) gave %q", name, sess, e.Text)
						}
					}
					for _, l := range lines {
						if k := l.session + "\x00" + l.text; l.session == sess && want[k] && !seen[k] {
							t.Errorf("%s(%s) lost %q", name, sess, l.text)
						}
					}
				}
			}
			for _, l := range lines {
				hits, err := c.Sessions().Search(ctx, l.text, memory.SearchOpts{Any: true, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, h := range hits {
					checked++
					k := h.Entry.SessionID + "\x00" + h.Entry.Text
					if !want[k] {
						leak("Search(%q) gave %q", l.text, h.Entry.Text)
					}
					found = found || k == l.session+"\x00"+l.text
				}
				if want[l.session+"\x00"+l.text] && !found {
					t.Errorf("Search(%q) did not find the line", l.text)
				}
			}
			// Session listings: a player reads no summary (written from
			// every line) and counts only the lines they may read.
			ss, err := c.Sessions().Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, sess := range ss {
				if r.viewer.Role == memory.RolePlayer && sess.Summary != "" {
					leak("session %s's summary %q", sess.ID, sess.Summary)
				}
				if r.viewer == memory.PlayerViewer() {
					n := 0
					for _, l := range lines {
						if l.session == sess.ID && l.public {
							n++
						}
					}
					if sess.Entries != n {
						t.Errorf("session %s counts %d lines for any player, want %d", sess.ID, sess.Entries, n)
					}
				}
			}
			// The facts: a player reads a fact (not secret) when a line it
			// rests on is one they may read: the fact resting on Grimjaw's
			// answer in scene A reaches scene A's players, not any player.
			facts, err := c.Graph().FindFacts(ctx, access.FactQuery{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var gotFacts, wantFacts []string
			for _, f := range facts {
				gotFacts = append(gotFacts, f.Type)
			}
			for _, f := range kc.Facts {
				revealed := false
				for _, l := range lines {
					revealed = revealed || strings.HasPrefix(l.text, f.Evidence) && r.reads(l)
				}
				if r.viewer == memory.DMViewer() || revealed && !f.Secret {
					wantFacts = append(wantFacts, f.Rel)
				}
			}
			slices.Sort(gotFacts)
			slices.Sort(wantFacts)
			checked += len(gotFacts)
			if !slices.Equal(gotFacts, wantFacts) {
				t.Errorf("facts = %v, want %v", gotFacts, wantFacts)
				for _, g := range gotFacts {
					if !slices.Contains(wantFacts, g) {
						leaks++
					}
				}
			}
			for _, f := range facts {
				ev, err := c.Graph().Evidence(ctx, f.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ev {
					checked++
					if !want[e.SessionID+"\x00"+e.Text] {
						leak("the evidence of %s %s %s is %q", f.SourceID, f.Type, f.TargetID, e.Text)
					}
				}
			}
			// The semantic index: listing, by id, by words, by vector.
			var all []string
			for _, id := range chunkOf {
				all = append(all, id)
			}
			all = append(all, "mixed")
			slices.Sort(all)
			chunkSets := map[string][]string{}
			listed, err := c.Index().Chunks(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range listed {
				chunkSets["Chunks"] = append(chunkSets["Chunks"], ch.ID)
			}
			byID, err := c.Index().ChunksByID(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range byID {
				chunkSets["ChunksByID"] = append(chunkSets["ChunksByID"], ch.ID)
			}
			near, err := c.Index().VectorSearch(ctx, []float32{1, 0, 0, 0, 0, 0, 0, 0}, 100, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range near {
				chunkSets["VectorSearch"] = append(chunkSets["VectorSearch"], h.Chunk.ID)
			}
			vs, err := c.Index().Search(ctx, []float32{0, 1, 0, 0, 0, 0, 0, 0}, 100, memory.ChunkFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range vs {
				chunkSets["Search"] = append(chunkSets["Search"], h.Chunk.ID)
			}
			visible, err := c.Index().VisibleChunks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.viewer.Role == memory.RolePlayer {
				chunkSets["VisibleChunks"] = visible
			} else if visible != nil {
				t.Errorf("VisibleChunks = %v for a reader of every chunk, want nil", visible)
			}
			for name, ids := range chunkSets {
				slices.Sort(ids)
				var wantIDs []string
				for _, id := range all {
					if wantChunk[id] {
						wantIDs = append(wantIDs, id)
					}
				}
				for _, id := range ids {
					checked++
					if !wantChunk[id] {
						leak("%s gave chunk %s", name, id)
					}
				}
				if !slices.Equal(ids, wantIDs) {
					t.Errorf("%s = %v, want %v", name, ids, wantIDs)
				}
			}
			for _, l := range lines {
				hits, err := c.Index().TextSearch(ctx, l.text, 100, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hits {
					checked++
					if !wantChunk[h.Chunk.ID] {
						leak("TextSearch(%q) gave chunk %s %q", l.text, h.Chunk.ID, h.Chunk.Content)
					}
				}
			}
		})
	}
	t.Logf("split-party corpus, %d readers: %d lines and chunks read, %d leaked", len(readers), checked, leaks)
}
