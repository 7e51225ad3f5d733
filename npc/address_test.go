package npc_test

import (
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/npc"
)

// addressingTable is testdata/addressing.yaml.
type addressingTable struct {
	Names map[string][]string `yaml:"names"`
	NPCs  []string            `yaml:"npcs"`
	Cases []struct {
		Name    string   `yaml:"name"`
		Text    string   `yaml:"text"`
		Speaker string   `yaml:"speaker"`
		Present []string `yaml:"present"`
		Last    *struct {
			NPC string        `yaml:"npc"`
			To  string        `yaml:"to"`
			Ago time.Duration `yaml:"ago"`
		} `yaml:"last"`
		Directed string   `yaml:"directed"`
		Muted    []string `yaml:"muted"`
		Want     string   `yaml:"want"`
		Reason   string   `yaml:"reason"`
	} `yaml:"cases"`
}

// exactNames finds names and aliases as whole words, case-insensitively,
// longest first. (In the bot the finder is the phonetic matcher of
// transcript correction.)
type exactNames struct {
	names []struct{ id, name string }
}

func newExactNames(m map[string][]string) exactNames {
	var f exactNames
	for id, ns := range m {
		for _, n := range ns {
			f.names = append(f.names, struct{ id, name string }{id, strings.ToLower(n)})
		}
	}
	sort.Slice(f.names, func(i, j int) bool { return len(f.names[i].name) > len(f.names[j].name) })
	return f
}

func (f exactNames) FindNames(text string) []npc.Mention {
	// Byte-wise ASCII folding keeps the offsets those of text
	// (strings.ToLower may change a line's length).
	b := []byte(text)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	lower := string(b)
	taken := make([]bool, len(text))
	var out []npc.Mention
	boundary := func(i int) bool {
		if i < 0 || i >= len(lower) {
			return true
		}
		r, _ := utf8.DecodeRuneInString(lower[i:])
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	for _, n := range f.names {
		for from := 0; ; {
			k := strings.Index(lower[from:], n.name)
			if k < 0 {
				break
			}
			s, e := from+k, from+k+len(n.name)
			from = e
			if !boundary(s-1) || !boundary(e) || slices.Contains(taken[s:e], true) {
				continue
			}
			for i := s; i < e; i++ {
				taken[i] = true
			}
			out = append(out, npc.Mention{EntityID: n.id, Start: s, End: e, Score: 1})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

func TestAddressingTable(t *testing.T) {
	b, err := os.ReadFile("testdata/addressing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var table addressingTable
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&table); err != nil {
		t.Fatalf("testdata/addressing.yaml: %v", err)
	}
	if len(table.Cases) < 25 {
		t.Fatalf("only %d cases in testdata/addressing.yaml", len(table.Cases))
	}
	finder := newExactNames(table.Names)
	isNPC := func(id string) bool { return slices.Contains(table.NPCs, id) }
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	for _, c := range table.Cases {
		t.Run(c.Name, func(t *testing.T) {
			muted := func(id string) bool { return slices.Contains(c.Muted, id) }
			a := npc.NewAddresser(finder, isNPC, muted, 0)
			if c.Last != nil {
				a.NoteReply(c.Last.NPC, c.Last.To, now.Add(-c.Last.Ago))
			}
			speaker := c.Speaker
			if speaker == "" {
				speaker = "u1"
			}
			got := a.Decide(npc.AddressInput{Text: c.Text, SpeakerID: speaker, At: now, Present: c.Present, Directed: c.Directed})
			if got.NPCID != c.Want || got.Reason != c.Reason {
				t.Errorf("%q: got %q (%s), want %q (%s)", c.Text, got.NPCID, got.Reason, c.Want, c.Reason)
			}
		})
	}
}

func TestLikelyAddressee(t *testing.T) {
	finder := newExactNames(map[string][]string{"grimjaw": {"Grimjaw"}, "elara": {"Elara"}})
	isNPC := func(id string) bool { return id == "grimjaw" || id == "elara" }
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		last    string
		ago     time.Duration
		present []string
		muted   string
		want    string
	}{
		{"nobody yet, two NPCs", "", 0, []string{"grimjaw", "elara"}, "", ""},
		{"nobody yet, one NPC", "", 0, []string{"elara"}, "", "elara"},
		{"in conversation", "grimjaw", 10 * time.Second, []string{"grimjaw", "elara"}, "", "grimjaw"},
		{"conversation over", "grimjaw", 5 * time.Minute, []string{"grimjaw", "elara"}, "", ""},
		{"partner left the scene", "grimjaw", 10 * time.Second, []string{"elara"}, "", "elara"},
		{"partner muted", "grimjaw", 10 * time.Second, []string{"grimjaw", "elara"}, "grimjaw", ""},
		{"scene not set", "grimjaw", 10 * time.Second, nil, "", "grimjaw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := npc.NewAddresser(finder, isNPC, func(id string) bool { return id == tt.muted }, 0)
			if tt.last != "" {
				a.NoteReply(tt.last, "u1", now.Add(-tt.ago))
			}
			if got := a.Likely(tt.present, now); got != tt.want {
				t.Errorf("Likely = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzAddress routes arbitrary lines: no panic, and an answer comes only
// from an NPC.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{"Brannoc guild do you know two hundred gold", "do you trust Elara", "Grimjaw", ", Grimjaw?",
		"", "hey hey hey Grim", "Thorin do you have the map", "Grimjaw's", "what do you think of Brannoc Gildmane"} {
		f.Add(s)
	}
	finder := newExactNames(map[string][]string{"grimjaw": {"Grimjaw", "Grim"}, "elara": {"Elara"},
		"brannoc": {"Brannoc Gildmane", "Brannoc"}, "thorin": {"Thorin"}})
	isNPC := func(id string) bool { return id == "grimjaw" || id == "elara" || id == "brannoc" }
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		a := npc.NewAddresser(finder, isNPC, nil, 0)
		a.NoteReply("grimjaw", "u1", now.Add(-5*time.Second))
		d := a.Decide(npc.AddressInput{Text: text, SpeakerID: "u1", At: now})
		if d.NPCID != "" && !isNPC(d.NPCID) {
			t.Errorf("%q answered by %q, not an NPC", text, d.NPCID)
		}
		for _, id := range d.NPCIDs {
			if !isNPC(id) {
				t.Errorf("%q answered by %q, not an NPC", text, id)
			}
		}
		if (d.NPCID == "") != (len(d.NPCIDs) == 0) || len(d.NPCIDs) > 0 && d.NPCIDs[0] != d.NPCID {
			t.Errorf("%q: NPCID %q and NPCIDs %v disagree", text, d.NPCID, d.NPCIDs)
		}
		if d.Reason == "" {
			t.Errorf("%q: no reason", text)
		}
	})
}

func TestLoneName(t *testing.T) {
	finder := newExactNames(map[string][]string{"goryr": {"Goryr"}, "tyrul": {"Tyrul"}, "thorin": {"Thorin"}})
	isNPC := func(id string) bool { return id == "goryr" || id == "tyrul" }
	tests := []struct {
		lang, text string
		present    []string
		muted      string
		want       string
	}{
		{"en", "Goryr…", nil, "", "goryr"},
		{"en", "Hey Tyrul.", []string{"goryr", "tyrul"}, "", "tyrul"},
		{"en", "Excuse me, Goryr?", nil, "", "goryr"},
		{"en", "Goryr, what news?", nil, "", ""},
		{"en", "Thorin,", nil, "", ""},
		{"en", "Tyrul.", []string{"goryr"}, "", ""},
		{"en", "Goryr", nil, "goryr", ""},
		{"en", "", nil, "", ""},
		{"de", "Sag mal, Goryr…", nil, "", "goryr"},
		{"de", "Hallo Tyrul!", nil, "", "tyrul"},
		{"de", "Goryr ist weg.", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.lang+" "+tt.text, func(t *testing.T) {
			a := npc.NewAddresser(finder, isNPC, func(id string) bool { return id == tt.muted }, 0)
			a.UseLanguage(tt.lang)
			got, ok := a.Lone(tt.text, tt.present)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("Lone(%q) = %q, %v; want %q", tt.text, got, ok, tt.want)
			}
		})
	}
}

func TestUseLanguage(t *testing.T) {
	a := npc.NewAddresser(newExactNames(nil), func(string) bool { return false }, nil, 0)
	for code, want := range map[string]bool{"": true, "en": true, "en-GB": true, "de": true, "de-AT": true, "de_CH": true, "fr": false} {
		if got := a.UseLanguage(code); got != want {
			t.Errorf("UseLanguage(%q) = %v, want %v", code, got, want)
		}
	}
}

// TestWithdrawEndsTheFollowUp: once the DM withdraws an NPC's reply, the
// next line is not taken for a follow-up to it.
func TestWithdrawEndsTheFollowUp(t *testing.T) {
	finder := newExactNames(map[string][]string{"goryr": {"Goryr"}, "tyrul": {"Tyrul"}})
	isNPC := func(string) bool { return true }
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	a := npc.NewAddresser(finder, isNPC, nil, 0)
	a.NoteReply("goryr", "u1", now)
	in := npc.AddressInput{Text: "And how much is it?", SpeakerID: "u1", At: now.Add(2 * time.Second), Present: []string{"goryr", "tyrul"}}
	if d := a.Decide(in); d.NPCID != "goryr" {
		t.Fatalf("before the withdrawal: %+v", d)
	}
	a.Withdraw("tyrul") // not the last NPC: nothing changes
	if d := a.Decide(in); d.NPCID != "goryr" {
		t.Fatalf("after withdrawing another NPC: %+v", d)
	}
	a.Withdraw("goryr")
	if d := a.Decide(in); d.NPCID != "" || d.Reason != npc.ReasonPlayerTalk {
		t.Fatalf("after the withdrawal: %+v", d)
	}
}

// TestAddresserConcurrent routes, notes replies and withdraws from several
// goroutines at once (run with -race).
func TestAddresserConcurrent(t *testing.T) {
	finder := newExactNames(map[string][]string{"goryr": {"Goryr"}, "tyrul": {"Tyrul"}})
	a := npc.NewAddresser(finder, func(string) bool { return true }, nil, 0)
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				at := now.Add(time.Duration(i) * time.Second)
				switch (g + i) % 4 {
				case 0:
					a.Decide(npc.AddressInput{Text: "Tyrul and Goryr, what do you think?", SpeakerID: "u1", At: at})
				case 1:
					a.NoteReply("goryr", "u2", at)
				case 2:
					a.Withdraw("goryr")
				default:
					a.Lone("Goryr…", nil)
					a.UseLanguage("de")
				}
			}
		}()
	}
	wg.Wait()
}

// TestPluralYou: German "ihr" (you, several) speaks to the NPCs named in
// the line, or, in a conversation under way, to every NPC of the scene;
// "ihr" for "her" and the formal "Ihr" of one person do not.
func TestPluralYou(t *testing.T) {
	finder := newExactNames(map[string][]string{"goryr": {"Goryr"}, "tyrul": {"Tyrul"}, "sela": {"Sela"}, "lyra": {"Lyra"}})
	isNPC := func(id string) bool { return id != "lyra" }
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	scene := []string{"tyrul", "goryr", "sela"}
	for _, tc := range []struct {
		name, lang, text string
		present          []string
		last             string // the NPC that answered u1 5 s ago
		muted            string
		want             []string
		reason           string
	}{
		{"named, no commas", "de", "was wisst ihr Tyrul und Goryr über das Schiff", scene, "", "", []string{"tyrul", "goryr"}, npc.ReasonSeveral},
		{"in conversation: the scene, the last speaker first", "de", "Und was meint ihr dazu?", scene, "goryr", "", []string{"goryr", "tyrul", "sela"}, npc.ReasonSeveral},
		{"verb after ihr", "de", "Ihr habt doch sicher etwas gehört?", scene, "tyrul", "", []string{"tyrul", "goryr", "sela"}, npc.ReasonSeveral},
		{"a muted NPC stays silent", "de", "Und was meint ihr dazu?", scene, "goryr", "sela", []string{"goryr", "tyrul"}, npc.ReasonSeveral},
		{"named as an object, in conversation", "de", "Was haltet ihr von Sela?", []string{"tyrul", "goryr"}, "tyrul", "", []string{"tyrul", "goryr"}, npc.ReasonSeveral},
		{"ihr beide", "de", "Ihr beide, was sagt ihr?", scene, "sela", "", []string{"sela", "tyrul", "goryr"}, npc.ReasonSeveral},
		{"no conversation, no name: the players among themselves", "de", "Habt ihr noch Heiltränke?", scene, "", "", nil, npc.ReasonPlayerTalk},
		{"no scene set: the usual follow-up", "de", "Und was meint ihr dazu?", nil, "goryr", "", []string{"goryr"}, npc.ReasonFollowUp},
		{"a player named: an exchange between players", "de", "Lyra, habt ihr das gehört?", scene, "goryr", "", nil, npc.ReasonPlayerTalk},
		{"ihr for her", "de", "Gib ihr das Gold, Tyrul.", scene, "", "", []string{"tyrul"}, npc.ReasonNamed},
		{"her sword", "de", "ihr Schwert ist zerbrochen", scene, "goryr", "", nil, npc.ReasonPlayerTalk},
		{"formal Ihr of one person", "de", "Goryr, habt Ihr das Schiff gesehen?", scene, "", "", []string{"goryr"}, npc.ReasonNamed},
		{"English: you both", "en", "And what do you both think?", scene, "tyrul", "", []string{"tyrul", "goryr", "sela"}, npc.ReasonSeveral},
	} {
		t.Run(tc.name, func(t *testing.T) {
			muted := func(id string) bool { return id == tc.muted }
			a := npc.NewAddresser(finder, isNPC, muted, 0)
			a.UseLanguage(tc.lang)
			if tc.last != "" {
				a.NoteReply(tc.last, "u1", now.Add(-5*time.Second))
			}
			got := a.Decide(npc.AddressInput{Text: tc.text, SpeakerID: "u1", At: now, Present: tc.present})
			if !slices.Equal(got.NPCIDs, tc.want) || got.Reason != tc.reason {
				t.Errorf("%q: got %v (%s), want %v (%s)", tc.text, got.NPCIDs, got.Reason, tc.want, tc.reason)
			}
		})
	}
}
