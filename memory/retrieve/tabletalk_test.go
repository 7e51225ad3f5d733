package retrieve

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// genTable writes the table-talk corpus: the shapes that defeated
// retrieval on real tabletop transcripts (issue 27), none copied from one.
//
//   - A DM who speaks in long single turns: every session after the first
//     opens with a "previously on" recap (2 to 5 thousand characters) that
//     retells the last session's events with the same names and objects
//     in other words, and one session holds a long ritual narration that
//     names half the campaign's objects. These monologues share many of
//     every question's words and must not crowd out the lines that answer.
//   - Players who speak in short interjections ("nat twenty!", "wait,
//     what?") between the lines that matter.
//   - Events told over several lines: the player declares ("I grab the
//     silver chain off the altar"), the DM resolves ("Grog, you rip the
//     silver chain free"), another player reacts.
//   - Objects that share a head noun (a silver chain, an iron chain), so a
//     question must be answered by its other words too.
//
// Each event is asked four ways (the question kinds): as a question
// ("When did Grog grab the silver chain?"), as a statement ("Grog grabbed
// the silver chain in the Sunken Chapel."), paraphrased (other words for
// the act and the place, the object by its head noun alone),
// and as an event whose every line is evidence. The gold answer is the DM's
// resolution line (with the event kind: the declaration too); a recap that
// retells the event is not an answer, since it says neither when nor how it
// happened in the words of the table.
func genTable(seed uint64) (*campaignfile.File, []question) { return genTableSessions(seed, 16) }

// genTableSessions is genTable with the given number of sessions (the
// latency measurement of `glyphoxa ask` uses a campaign of 16k lines).
func genTableSessions(seed uint64, sessions int) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	type pc struct{ id, user, name string }
	pcs := []pc{{"grog", "u-grog", "Grog"}, {"vex", "u-vex", "Vex"}, {"pike", "u-pike", "Pike"},
		{"scanlan", "u-scanlan", "Scanlan"}, {"keyleth", "u-keyleth", "Keyleth"}, {"percy", "u-percy", "Percy"}}
	f := &campaignfile.File{Campaign: "table-eval"}
	for _, p := range pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name,
			Attributes: map[string]any{"player": p.user}})
	}
	type place struct{ id, name, other string }
	places := []place{
		{"chapel", "the Sunken Chapel", "the drowned church"}, {"vault", "the Gilded Vault", "the treasury"},
		{"market", "the Ember Market", "the bazaar"}, {"tower", "the Glass Tower", "the crystal spire"},
		{"crypt", "the Ashen Crypt", "the tomb"}, {"docks", "the Tar Docks", "the wharf"},
		{"garden", "the Thorn Garden", "the hedge maze"}, {"forge", "the Cinder Forge", "the smithy"},
	}
	for _, p := range places {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "location", Name: strings.TrimPrefix(p.name, "the ")})
	}
	// Objects: modifier + head noun; heads repeat so that the head alone
	// does not decide.
	mods := []string{"silver", "iron", "obsidian", "bone", "brass", "crimson", "jade", "rusted", "gilded", "frozen"}
	heads := []string{"chain", "key", "flute", "astrolabe", "mirror", "chalice", "dagger", "lantern", "crown", "tome"}
	// Acts: a player's declaration (first person), the DM's resolution
	// (second person), the past tense, the base form and a paraphrase.
	type act struct{ declare, resolve, past, base, para string }
	acts := []act{
		{"grab", "rip %s free", "grabbed", "grab", "get hold of"},
		{"steal", "slip %s into your pack unseen", "stole", "steal", "pocket"},
		{"smash", "shatter %s against the flagstones", "smashed", "smash", "break"},
		{"hide", "tuck %s under a loose board", "hid", "hide", "stash"},
		{"bless", "lay your holy symbol on %s and it glows", "blessed", "bless", "sanctify"},
		{"pawn", "trade %s to a fence for forty gold", "pawned", "pawn", "sell off"},
		{"bury", "dig a shallow pit and lay %s in it", "buried", "bury", "put in the ground"},
		{"polish", "scrub %s until it shines", "polished", "polish", "clean up"},
	}
	consequences := []string{"the candles gutter all at once", "somewhere below, a bell tolls", "the air goes cold",
		"a rat skitters away into the dark", "nobody seems to notice", "a low hum fills the room",
		"dust sifts down from the ceiling", "the floor shudders once"}
	reactions := []string{"Dude, %s just %s the %s!", "Wait, %s %s the %s? Why?", "I can't believe %s %s the %s.",
		"Okay, so %s %s the %s. Noted."}
	interjections := []string{"Nat twenty!", "Wait, what?", "lol", "Can I roll perception?", "I rage.",
		"Does that provoke?", "Hold on, I need a snack.", "Okay okay okay.", "I'm at eight hit points.",
		"Is it my turn?", "Sure, why not.", "I cast guidance on myself.", "Can we take a short rest?",
		"That's a nineteen.", "Oh no.", "Yes! Finally.", "I inspect the walls.", "Who has the map?",
		"I keep watch.", "How far away is it?", "Scanlan, stop singing.", "Do I know anything about this?"}
	narration := []string{
		"The wind drags rain across the rooftops, and the lamps along the street sway on their chains.",
		"Far off, the harbour bells ring the hour, and the smell of tar and salt hangs over everything.",
		"The stones underfoot are slick and old, worn smooth by a thousand years of pilgrims and thieves.",
		"Shadows gather in the corners, and the torches burn a sickly green that makes every face look drowned.",
		"You hear the creak of timber and the slow drip of water somewhere deeper in the dark.",
		"A crowd of hooded figures parts around you without a word, and closes again behind you.",
		"The moon is a thin white scar above the city, and the clouds race past it as if fleeing.",
		"Everything here smells of smoke and old coins, and the silence feels like someone holding their breath.",
	}
	const perSession = 6
	start := time.Date(2025, 9, 6, 19, 0, 0, 0, time.UTC)
	type event struct {
		s                  int
		who                pc
		a                  act
		obj, mod, head     string
		pl                 place
		declare, resolve   string
		reaction, recapped string
	}
	used := map[string]bool{}
	var events []event
	for s := range sessions {
		for range perSession {
			var mod, head string
			for range 200 { // a fresh object while there are any
				mod, head = pick(mods), pick(heads)
				if !used[mod+head] {
					used[mod+head] = true
					break
				}
			}
			who, a, pl := pcs[rng.IntN(len(pcs))], acts[rng.IntN(len(acts))], places[rng.IntN(len(places))]
			obj := mod + " " + head
			other := pcs[rng.IntN(len(pcs))]
			for other == who {
				other = pcs[rng.IntN(len(pcs))]
			}
			e := event{s: s, who: who, a: a, obj: obj, mod: mod, head: head, pl: pl}
			e.declare = fmt.Sprintf("Okay, while we're in %s I %s the %s.", pl.name, a.declare, obj)
			e.resolve = fmt.Sprintf("%s, you %s; %s.", who.name, fmt.Sprintf(a.resolve, "the "+obj), pick(consequences))
			e.reaction = other.name + ": " + fmt.Sprintf(pick(reactions), who.name, a.past, obj)
			// The recap names the actor, the object and the place, in the
			// DM's retelling voice.
			e.recapped = fmt.Sprintf("In %s, %s laid hands on the %s, and nothing about that went quietly.", pl.name, who.name, obj)
			events = append(events, e)
		}
	}
	var qs []question
	for _, e := range events {
		qs = append(qs,
			question{Kind: "question", Q: fmt.Sprintf("When did %s %s the %s?", e.who.name, e.a.base, e.obj), Expect: e.resolve},
			question{Kind: "statement", Q: fmt.Sprintf("%s %s the %s in %s.", e.who.name, e.a.past, e.obj, e.pl.name), Expect: e.resolve},
			question{Kind: "paraphrase", Q: fmt.Sprintf("Didn't %s %s some %s back in %s?", e.who.name, e.a.para, e.head, e.pl.other), Expect: e.resolve},
			question{Kind: "event", Q: fmt.Sprintf("What happened with the %s in %s?", e.obj, e.pl.name), Evidence: []string{e.declare, e.resolve}},
		)
	}
	monologue := func(intro string, body []string, minChars int) string {
		var b strings.Builder
		b.WriteString(intro)
		i := 0
		for b.Len() < minChars || i < len(body) {
			if i < len(body) {
				b.WriteString(" " + body[i])
			} else {
				b.WriteString(" " + pick(narration))
			}
			if i%2 == 1 {
				b.WriteString(" " + pick(narration))
			}
			i++
		}
		return b.String()
	}
	for s := range sessions {
		sid := fmt.Sprintf("t%02d", s+1)
		at := start.AddDate(0, 0, 7*s)
		sess := campaignfile.Session{ID: sid, StartedAt: at}
		type line struct{ user, name, text string }
		var ls []line
		dm := func(t string) line { return line{"u-dm", "DM", t} }
		if s > 0 {
			var body []string
			for _, e := range events {
				if e.s == s-1 {
					body = append(body, e.recapped)
				}
			}
			ls = append(ls, dm(monologue("Previously on our adventure: you gathered at the inn and set out into the city once more.",
				body, 2000+rng.IntN(3000))))
		}
		if s == sessions/2 {
			// The ritual narration: names half of the campaign's objects.
			var body []string
			for i, e := range events {
				if i%2 == 0 {
					body = append(body, fmt.Sprintf("The %s rises from the altar and turns slowly in the air.", e.obj))
				}
			}
			ls = append(ls, dm(monologue("The ritual begins. The cultists chant, and one by one the relics you have carried answer.",
				body, 4000)))
		}
		// Table chatter that names the campaign's objects and places
		// without telling what happened to them.
		chatter := func() string {
			e := events[rng.IntN(len(events))]
			switch rng.IntN(4) {
			case 0:
				return fmt.Sprintf("Who's carrying the %s right now?", e.obj)
			case 1:
				return fmt.Sprintf("I check the %s for traps.", e.head)
			case 2:
				return fmt.Sprintf("Should we go back to %s?", e.pl.name)
			default:
				return fmt.Sprintf("%s, do you still have the %s?", e.who.name, e.head)
			}
		}
		for _, e := range events {
			if e.s != s {
				continue
			}
			for range 3 + rng.IntN(6) {
				p := pcs[rng.IntN(len(pcs))]
				if rng.IntN(3) == 0 {
					ls = append(ls, line{p.user, p.name, chatter()})
				} else {
					ls = append(ls, line{p.user, p.name, pick(interjections)})
				}
			}
			if rng.IntN(2) == 0 {
				ls = append(ls, dm(pick(narration)+" "+pick(narration)))
			}
			ls = append(ls, line{e.who.user, e.who.name, e.declare}, dm(e.resolve))
			name, text, _ := strings.Cut(e.reaction, ": ")
			for _, p := range pcs {
				if p.name == name {
					ls = append(ls, line{p.user, p.name, text})
				}
			}
		}
		for range 3 {
			p := pcs[rng.IntN(len(pcs))]
			ls = append(ls, line{p.user, p.name, pick(interjections)})
		}
		for i, l := range ls {
			sess.Entries = append(sess.Entries, campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1),
				SpeakerID: l.user, SpeakerName: l.name, Text: l.text, At: at.Add(time.Duration(15*i) * time.Second),
				DurationMS: 3000})
		}
		sess.EndedAt = at.Add(time.Duration(15*len(ls)+10) * time.Second)
		f.Sessions = append(f.Sessions, sess)
	}
	return f, qs
}

// TestWriteTableCorpus writes the table-talk corpus with
// GLYPHOXA_TABLE_SESSIONS sessions to the file GLYPHOXA_TABLE_CORPUS, for
// measuring `glyphoxa ask` on a campaign of realistic size (250 sessions
// are about 16k lines). Without the variables it only checks that the
// corpus is a valid campaign file.
func TestWriteTableCorpus(t *testing.T) {
	sessions := 16
	if v := os.Getenv("GLYPHOXA_TABLE_SESSIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("GLYPHOXA_TABLE_SESSIONS=%q: want a positive number", v)
		}
		sessions = n
	}
	f, _ := genTableSessions(evalSeed, sessions)
	b, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := campaignfile.Parse(bytes.NewReader(b), "table corpus")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, s := range parsed.Sessions {
		lines += len(s.Entries)
	}
	if len(parsed.Sessions) != sessions || lines == 0 {
		t.Fatalf("%d sessions, %d lines; want %d sessions", len(parsed.Sessions), lines, sessions)
	}
	if out := os.Getenv("GLYPHOXA_TABLE_CORPUS"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d sessions, %d lines", out, sessions, lines)
	}
}
