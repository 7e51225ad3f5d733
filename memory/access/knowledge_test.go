package access_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// knowledgeCorpus is a file of testdata/knowledge (see split-party.yaml).
type knowledgeCorpus struct {
	Players  map[string]string `yaml:"players"`
	Sessions []struct {
		ID    string    `yaml:"id"`
		Start time.Time `yaml:"start"`
		Steps []struct {
			At       string   `yaml:"at"`
			Present  []string `yaml:"present"`
			Split    bool     `yaml:"split"`
			Speaker  string   `yaml:"speaker"`
			NPC      string   `yaml:"npc"`
			Text     string   `yaml:"text"`
			By       []string `yaml:"by"`
			NonCanon bool     `yaml:"noncanon"`
			Public   bool     `yaml:"public"`
			Unrecord bool     `yaml:"unrecorded"`
		} `yaml:"steps"`
	} `yaml:"sessions"`
	Facts []struct {
		Source   string   `yaml:"source"`
		Rel      string   `yaml:"rel"`
		Target   string   `yaml:"target"`
		Evidence string   `yaml:"evidence"`
		Secret   bool     `yaml:"secret"`
		Known    []string `yaml:"known"`
	} `yaml:"facts"`
}

// corpusLine is a line of the corpus with its hand-written truth.
type corpusLine struct {
	session, text string
	by            []string
	// public: any player may read it (said while the party was not split).
	public   bool
	noncanon bool
	// unrecorded: said before any presence was recorded.
	unrecorded bool
}

// loadKnowledgeCorpus writes a corpus into campaign id and returns its
// lines with their truth.
func loadKnowledgeCorpus(t *testing.T, s *postgres.Store, id, path string) (knowledgeCorpus, []corpusLine) {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kc knowledgeCorpus
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&kc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := pgtest.Campaign(t, s, id)
	ents := []memory.Entity{
		{ID: "grimjaw", Type: memory.EntityNPC, Name: "Grimjaw"},
		{ID: "elara", Type: memory.EntityNPC, Name: "Elara"},
		{ID: "circle", Type: memory.EntityFaction, Name: "Ashen Circle"},
		{ID: "hammer", Type: memory.EntityItem, Name: "Dawn Hammer"},
		{ID: "tower", Type: memory.EntityLocation, Name: "Tower of Whispers"},
		{ID: "ironhold", Type: memory.EntityLocation, Name: "Ironhold"},
	}
	for _, ch := range kc.Players {
		ents = append(ents, memory.Entity{ID: ch, Type: memory.EntityPlayer, Name: strings.ToUpper(ch[:1]) + ch[1:]})
	}
	if err := c.Graph().UpsertEntities(ctx, ents); err != nil {
		t.Fatal(err)
	}
	for u, ch := range kc.Players {
		if _, err := c.SetPlayerCharacter(ctx, u, ch); err != nil {
			t.Fatal(err)
		}
	}
	var lines []corpusLine
	entryIDs := map[string]int64{}
	for _, sess := range kc.Sessions {
		for i, st := range sess.Steps {
			d, err := time.ParseDuration(st.At)
			if err != nil {
				t.Fatalf("%s step %d: %v", sess.ID, i, err)
			}
			at := sess.Start.Add(d)
			if st.Present != nil {
				if err := c.Sessions().RecordPresence(ctx, sess.ID, at, st.Present, st.Split); err != nil {
					t.Fatal(err)
				}
				continue
			}
			e := memory.TranscriptEntry{SessionID: sess.ID, SpeakerID: st.Speaker, SpeakerName: st.Speaker,
				NPCID: st.NPC, Text: st.Text, At: at, IdempotencyKey: fmt.Sprintf("%s-%d", sess.ID, i)}
			if st.NPC != "" {
				e.SpeakerID = st.NPC
			}
			if _, err := c.Sessions().WriteEntry(ctx, e); err != nil {
				t.Fatal(err)
			}
			if st.NonCanon {
				if _, err := c.Sessions().MarkNonCanon(ctx, sess.ID, at, at); err != nil {
					t.Fatal(err)
				}
			}
			lines = append(lines, corpusLine{session: sess.ID, text: st.Text, by: st.By, public: st.Public, noncanon: st.NonCanon,
				unrecorded: st.Unrecord})
		}
	}
	for _, sess := range kc.Sessions {
		es, err := c.Sessions().Entries(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			entryIDs[e.Text] = e.ID
		}
	}
	for _, f := range kc.Facts {
		attrs := map[string]any{}
		if f.Secret {
			attrs["secret"] = true
		}
		r, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: f.Source, TargetID: f.Target, Type: f.Rel,
			Attributes: attrs, Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated}})
		if err != nil {
			t.Fatal(err)
		}
		var ev []int64
		for text, id := range entryIDs {
			if strings.HasPrefix(text, f.Evidence) {
				ev = append(ev, id)
			}
		}
		if len(ev) != 1 {
			t.Fatalf("fact %s %s %s: evidence %q matches %d lines", f.Source, f.Rel, f.Target, f.Evidence, len(ev))
		}
		if err := c.Graph().AddEvidence(ctx, r.ID, ev); err != nil {
			t.Fatal(err)
		}
	}
	return kc, lines
}

// TestKnowledgeSplitParty measures, over every line of the split-party
// corpus and for every player, the lines a character is said to know
// that it did not witness (leaks: must be 0) and the share of those it
// witnessed that come back (recall), for "what you missed" (from the last
// session the player was present at) and for the whole campaign.
func TestKnowledgeSplitParty(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	kc, lines := loadKnowledgeCorpus(t, s, "split", "testdata/knowledge/split-party.yaml")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()
	dm, err := d.Open(ctx, "split", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	players := slices.Sorted(func(yield func(string) bool) {
		for u := range kc.Players {
			if !yield(u) {
				return
			}
		}
	})
	var leaked, missed, wanted int
	for _, u := range players {
		// Read as the player themself (their own handle), as the bot does.
		me, err := d.Open(ctx, "split", memory.PlayerViewerOf(u))
		if err != nil {
			t.Fatal(err)
		}
		last, err := me.LastPresentSession(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []string{"", last} {
			k, err := me.KnowledgeOf(ctx, u, from)
			if err != nil {
				t.Fatal(err)
			}
			if k.Character.EntityID != kc.Players[u] {
				t.Errorf("%s plays %q, want %q", u, k.Character.EntityID, kc.Players[u])
			}
			inWindow := map[string]bool{}
			for _, s := range k.Sessions {
				inWindow[s] = true
			}
			got := map[string]bool{}
			for _, l := range k.Lines {
				got[l.SessionID+"\x00"+l.Text] = true
			}
			for _, l := range lines {
				key := l.session + "\x00" + l.text
				truth := slices.Contains(l.by, u)
				switch {
				case got[key] && !truth:
					leaked++
					t.Errorf("LEAK: %s (from %q) knows %s %q", u, from, l.session, l.text)
				case truth && inWindow[l.session]:
					wanted++
					if !got[key] {
						missed++
						t.Errorf("%s (from %q) lost %s %q", u, from, l.session, l.text)
					}
				}
			}
			// The DM reads the same.
			kdm, err := dm.KnowledgeOf(ctx, u, from)
			if err != nil {
				t.Fatal(err)
			}
			if len(kdm.Lines) != len(k.Lines) || kdm.Withheld != k.Withheld {
				t.Errorf("%s: the DM reads %d lines (%d withheld), the player %d (%d)", u, len(kdm.Lines), kdm.Withheld,
					len(k.Lines), k.Withheld)
			}
			// Facts: exactly those revealed in the character's presence.
			var gotFacts, wantFacts []string
			for _, f := range k.Facts {
				gotFacts = append(gotFacts, f.Rel)
			}
			for _, f := range kc.Facts {
				var evSession string
				for _, l := range lines {
					if strings.HasPrefix(l.text, f.Evidence) {
						evSession = l.session
					}
				}
				if slices.Contains(f.Known, u) && inWindow[evSession] {
					wantFacts = append(wantFacts, f.Rel)
				}
			}
			slices.Sort(gotFacts)
			slices.Sort(wantFacts)
			if !slices.Equal(gotFacts, wantFacts) {
				t.Errorf("%s (from %q) knows facts %v, want %v", u, from, gotFacts, wantFacts)
			}
		}
	}
	recall := 1.0
	if wanted > 0 {
		recall = float64(wanted-missed) / float64(wanted)
	}
	t.Logf("split-party corpus: %d lines, %d players: %d leaked lines, recall %.2f (%d of %d witnessed lines)",
		len(lines), len(players), leaked, recall, wanted-missed, wanted)
	if leaked != 0 {
		t.Fatalf("%d leaked lines", leaked)
	}

	// p3 missed s2 entirely: their last session is s1, and s2 brings them nothing.
	me3, _ := d.Open(ctx, "split", memory.PlayerViewerOf("p3"))
	if last, _ := me3.LastPresentSession(ctx, "p3"); last != "s1" {
		t.Errorf("p3's last session = %q, want s1", last)
	}
	if last, _ := dm.LastPresentSession(ctx, "p1"); last != "s2" {
		t.Errorf("p1's last session = %q, want s2", last)
	}
}

// TestKnowledgeIsEachPlayersOwn: a player reads only their own knowledge
// and grants; another player's, "any player", an NPC are refused; a
// grant to one player is never read by another; a forgotten player
// leaves no character, grant or presence behind.
func TestKnowledgeIsEachPlayersOwn(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	loadKnowledgeCorpus(t, s, "own", "testdata/knowledge/split-party.yaml")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()
	open := func(v memory.Viewer) *access.Campaign {
		t.Helper()
		c, err := d.Open(ctx, "own", v)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dm, p1, p3 := open(memory.DMViewer()), open(memory.PlayerViewerOf("p1")), open(memory.PlayerViewerOf("p3"))

	// Only the DM grants.
	if _, err := p1.Grant(ctx, "p1", "I give myself the crown", 0, ""); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player granting: %v, want ErrForbidden", err)
	}
	g, err := dm.Grant(ctx, "p3", "WHISPER-MARKER: Elara's mother still lives.", 0, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if g.ID == 0 || g.UserID != "p3" {
		t.Errorf("grant = %+v", g)
	}
	for _, bad := range []struct {
		user, text string
		fact       int64
	}{{"p3", "", 0}, {"", "x", 0}, {"p3", "nul\x00byte", 0}, {"p3", strings.Repeat("x", 4001), 0}, {"p3", "", 999999}} {
		if _, err := dm.Grant(ctx, bad.user, bad.text, bad.fact, ""); err == nil {
			t.Errorf("Grant(%q, %.20q, %d) succeeded", bad.user, bad.text, bad.fact)
		}
	}

	reads := []struct {
		name string
		c    *access.Campaign
		user string
		ok   bool
	}{
		{"p3 reads p3", p3, "p3", true},
		{"DM reads p3", dm, "p3", true},
		{"p1 reads p3", p1, "p3", false},
		{"any player reads p3", open(memory.PlayerViewer()), "p3", false},
		{"an NPC reads p3", open(memory.NPCViewer("elara")), "p3", false},
	}
	for _, r := range reads {
		gs, gerr := r.c.Grants(ctx, r.user, time.Time{})
		k, kerr := r.c.KnowledgeOf(ctx, r.user, "")
		_, lerr := r.c.LastPresentSession(ctx, r.user)
		if r.ok {
			if gerr != nil || kerr != nil || lerr != nil {
				t.Errorf("%s: %v, %v, %v", r.name, gerr, kerr, lerr)
			}
			if len(gs) != 1 || !strings.Contains(gs[0].Text, "WHISPER-MARKER") || len(k.Grants) != 1 {
				t.Errorf("%s: grants %+v, knowledge grants %+v", r.name, gs, k.Grants)
			}
			continue
		}
		for _, err := range []error{gerr, kerr, lerr} {
			if !errors.Is(err, memory.ErrForbidden) {
				t.Errorf("%s: %v, want ErrForbidden", r.name, err)
			}
		}
		if len(gs) != 0 || len(k.Lines) != 0 || len(k.Grants) != 0 {
			t.Errorf("%s got data with its refusal: %v %v", r.name, gs, k)
		}
	}
	// p1's own grants do not hold p3's.
	if gs, err := p1.Grants(ctx, "p1", time.Time{}); err != nil || len(gs) != 0 {
		t.Errorf("p1's grants: %v, %v", gs, err)
	}
	// A player's handle does not re-bind to another player.
	if _, err := p1.As(memory.PlayerViewerOf("p3")); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("p1.As(p3) = %v, want ErrForbidden", err)
	}
	// Only the DM sets characters and reads presence.
	if _, err := p1.SetPlayerCharacter(ctx, "p1", "elara"); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player setting a character: %v", err)
	}
	if _, err := p1.Presence(ctx, "s1"); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player reading presence: %v", err)
	}
	if _, err := dm.SetPlayerCharacter(ctx, "p1", "nobody"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("a character that does not exist: %v", err)
	}

	// p3 asks to be forgotten: their character, grants and presence go.
	if _, err := dm.ForgetSpeaker(ctx, "p3"); err != nil {
		t.Fatal(err)
	}
	if gs, err := dm.Grants(ctx, "p3", time.Time{}); err != nil || len(gs) != 0 {
		t.Errorf("a forgotten player's grants: %v, %v", gs, err)
	}
	pcs, err := dm.PlayerCharacters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range pcs {
		if pc.UserID == "p3" {
			t.Errorf("a forgotten player keeps a character: %+v", pc)
		}
	}
	ps, err := dm.Presence(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if slices.Contains(p.Players, "p3") {
			t.Errorf("a forgotten player is still present at %v", p.At)
		}
	}
	if k, err := dm.KnowledgeOf(ctx, "p3", ""); err != nil || len(k.Lines) != 0 || len(k.Facts) != 0 {
		t.Errorf("a forgotten player still knows %d lines, %d facts (%v)", len(k.Lines), len(k.Facts), err)
	}
}

// TestImportedPlayers: a campaign file's players key reaches the store.
func TestImportedPlayers(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	path := t.TempDir() + "/players.yaml"
	doc := "campaign: imported\nplayers:\n  \"311111111111111111\": thorin\nentities:\n  - {id: thorin, type: player, name: Thorin}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	pgtest.Import(t, s, path)
	c := pgtest.Open(t, s, "imported", memory.DMViewer())
	pcs, err := c.PlayerCharacters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pcs) != 1 || pcs[0].UserID != "311111111111111111" || pcs[0].EntityID != "thorin" || pcs[0].Name != "Thorin" {
		t.Errorf("imported players = %+v", pcs)
	}
}
