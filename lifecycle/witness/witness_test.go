package witness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/witness"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
)

var t0 = time.Date(2026, 3, 22, 19, 0, 0, 0, time.UTC)

type fixture struct {
	log *witness.Log
	n   int
}

func newFixture(t *testing.T, cfg witness.Config) *fixture {
	t.Helper()
	if cfg.Embedder == nil {
		emb, err := embed.NewOffline(64)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Embedder = emb
	}
	if cfg.Names == nil {
		cfg.Names = func(text string) []string {
			var out []string
			for _, n := range []string{"Brannoc", "Grimjaw", "Old Mill", "Ember Blade"} {
				if strings.Contains(strings.ToLower(text), strings.ToLower(n)) {
					out = append(out, n)
				}
			}
			return out
		}
	}
	l := witness.New(cfg)
	t.Cleanup(l.Close)
	return &fixture{log: l}
}

// say records a line at minute min; npcID marks an NPC's own line.
func (f *fixture) say(min int, speaker, npcID, text string, present ...string) string {
	f.n++
	key := fmt.Sprintf("k%d", f.n)
	f.log.Heard(memory.TranscriptEntry{SpeakerID: strings.ToLower(speaker), SpeakerName: speaker, NPCID: npcID, Text: text,
		At: t0.Add(time.Duration(min) * time.Minute), IdempotencyKey: key}, present)
	return key
}

func texts(es []memory.TranscriptEntry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Text + "\n")
	}
	return b.String()
}

func TestWitnessRules(t *testing.T) {
	f := newFixture(t, witness.Config{})
	before := f.say(1, "Lyra", "", "Before Korrin arrived: the bridge is out.", "brannoc")
	present := f.say(2, "Kael", "", "The harbour master owes us ten silver.", "brannoc", "korrin")
	own := f.say(3, "Brannoc", "brannoc", "Aye, I keep the ledger of debts.", "brannoc", "korrin")
	away := f.say(4, "Thorin", "", "Korrin must not hear this: the gold is in the well.", "brannoc")
	followUp := f.say(5, "Thorin", "", "and the boat is called the Gull.", "brannoc")
	f.log.SaidTo(followUp, "korrin") // a follow-up to Korrin, who had left the scene

	for _, tc := range []struct {
		name, npc, key string
		want           bool
	}{
		{"present at the time of the line", "korrin", present, true},
		{"before it arrived", "korrin", before, false},
		{"while it was away", "korrin", away, false},
		{"a follow-up said to it counts as said to it", "korrin", followUp, true},
		{"its own line", "brannoc", own, true},
		{"another NPC's line said in its presence", "korrin", own, true},
		{"present all along", "brannoc", away, true},
		{"never in the scene", "grimjaw", present, false},
		{"a key the log does not know", "grimjaw", "unknown", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.log.Witnessed(tc.npc, tc.key); got != tc.want {
				t.Errorf("Witnessed(%s, %s) = %v, want %v", tc.npc, tc.key, got, tc.want)
			}
		})
	}
	lines := texts(f.log.Lines("korrin"))
	if strings.Contains(lines, "bridge") || strings.Contains(lines, "well") || !strings.Contains(lines, "Gull") {
		t.Errorf("Korrin's lines:\n%s", lines)
	}
	// A question that asks for a place, a person or a means ("where is
	// the gold?") recalls no line said while the NPC was away, however
	// well its shape fits.
	for _, q := range []string{"Where is the gold?", "Who has the gold?", "How do we get the gold?", "Wo ist das Gold?"} {
		for _, r := range f.log.Recall(context.Background(), witness.Query{NPCID: "korrin", Text: q}) {
			if strings.Contains(r.Entry.Text, "well") || strings.Contains(r.Entry.Text, "bridge") {
				t.Errorf("Recall(korrin, %q) = %q, said while it was away", q, r.Entry.Text)
			}
		}
	}
}

func TestRecallNeverReturnsOwnReplies(t *testing.T) {
	f := newFixture(t, witness.Config{})
	f.say(1, "Brannoc", "brannoc", "The boat? I know nothing of any boat, friend.", "brannoc")
	f.say(2, "Brannoc", "brannoc", "Boats, boats, always boats with you lot.", "brannoc")
	key := f.say(3, "Lyra", "", "My boat, the Gull, is moored at the north pier.", "brannoc")
	f.log.SaidTo(key, "brannoc")
	got := f.log.Recall(context.Background(), witness.Query{NPCID: "brannoc", Text: "Which boat did Lyra tell us about?"})
	if len(got) == 0 || !strings.Contains(got[0].Entry.Text, "Gull") || !got[0].To {
		t.Fatalf("recall: %+v", got)
	}
	for _, r := range got {
		if r.Entry.NPCID == "brannoc" {
			t.Errorf("recall returned the NPC's own reply %q", r.Entry.Text)
		}
	}
}

func TestRecallByMeaningEntityAndSpeaker(t *testing.T) {
	f := newFixture(t, witness.Config{})
	all := []string{"brannoc"}
	f.say(1, "Kael", "", "Grimjaw forged the Ember Blade for the duke.", all...)
	f.say(2, "Thorin", "", "The stew here tastes like old socks.", all...)
	f.say(3, "Lyra", "", "The vault key is hidden under the third stone of the Old Mill.", all...)
	f.say(4, "Mira", "", "I am hungry enough to eat a boar.", all...)
	for _, tc := range []struct{ q, want string }{
		{"Who made that famous sword, the Ember Blade?", "Ember Blade"},
		{"Where did Lyra say the key was?", "vault key"},
		{"What was that about the mill?", "Old Mill"},
	} {
		got := f.log.Recall(context.Background(), witness.Query{NPCID: "brannoc", Text: tc.q, Limit: 1})
		if len(got) == 0 || !strings.Contains(got[0].Entry.Text, tc.want) {
			t.Errorf("Recall(%q) = %+v, want the line with %q", tc.q, got, tc.want)
		}
	}
	if got := f.log.Recall(context.Background(), witness.Query{NPCID: "brannoc", Text: "Where did Lyra say the key was?",
		Before: t0.Add(3 * time.Minute)}); len(got) > 0 && strings.Contains(got[0].Entry.Text, "vault") {
		t.Errorf("Before did not leave out the recent line: %+v", got)
	}
}

// TestRecallCompoundsAndFocus: a compound shares its parts' meaning
// ("dockmaster" and "docks", "Waffenschmied" and "Schmied"), and "how
// much…?" asks for money whatever the line calls it. Lines said to the NPC,
// without an embedder.
func TestRecallCompoundsAndFocus(t *testing.T) {
	for _, tc := range []struct{ line, other, q, want string }{
		{"The dockmaster says the ferry is late.", "The stew tastes of old socks.",
			"What did the man at the docks say?", "dockmaster"},
		{"Der Schmied hat uns ein Schwert versprochen.", "Die Suppe ist kalt.",
			"Was bekommen wir vom Waffenschmied?", "Schwert"},
		{"She wants forty crowns, not a copper less.", "The stew tastes of old socks.",
			"How much will it set us back?", "forty crowns"},
		// Question words ask for what a line shows by its shape: a
		// place, a person, a means.
		{"The twins sleep in the hayloft tonight.", "I am so hungry I could eat a boar.",
			"Where did they hide out?", "hayloft"},
		{"Das Pferd steht am Nordtor.", "Die Suppe ist kalt.",
			"Wo ist das Tier?", "Nordtor"},
		{"The merchant Benedek sold us rotten rope.", "The stew tastes of old socks.",
			"Who cheated us?", "Benedek"},
		{"They escaped through the sewer last night.", "The stew tastes of old socks.",
			"How did they get out?", "sewer"},
	} {
		f := newFixture(t, witness.Config{Embedder: noEmbedder{}})
		f.log.SaidTo(f.say(1, "Kael", "", tc.line, "brannoc"), "brannoc")
		f.log.SaidTo(f.say(2, "Mira", "", tc.other, "brannoc"), "brannoc")
		got := f.log.Recall(context.Background(), witness.Query{NPCID: "brannoc", Text: tc.q, Limit: 1})
		if len(got) == 0 || !strings.Contains(got[0].Entry.Text, tc.want) {
			t.Errorf("Recall(%q) = %+v, want the line with %q", tc.q, got, tc.want)
		}
	}
	// A short word inside a longer one is no part of it.
	f := newFixture(t, witness.Config{Embedder: noEmbedder{}})
	f.log.SaidTo(f.say(1, "Kael", "", "During the storm we stayed inside.", "brannoc"), "brannoc")
	if got := f.log.Recall(context.Background(), witness.Query{NPCID: "brannoc", Text: "Where is the ring?"}); len(got) > 0 {
		t.Errorf("Recall(ring) = %+v, want nothing", got)
	}
	// "I am" puts nothing in a place; "how much" asks for money, not a
	// means.
	f = newFixture(t, witness.Config{Embedder: noEmbedder{}})
	f.log.SaidTo(f.say(1, "Kael", "", "I am so hungry I could eat a boar.", "brannoc"), "brannoc")
	f.log.SaidTo(f.say(2, "Kael", "", "We crossed the river with the mule.", "brannoc"), "brannoc")
	if got := f.log.Recall(context.Background(), witness.Query{NPCID: "brannoc", Text: "Where did they go?"}); len(got) > 0 {
		t.Errorf("Recall(where) = %+v, want nothing", got)
	}
	if got := f.log.Recall(context.Background(), witness.Query{NPCID: "brannoc", Text: "How much is left?"}); len(got) > 0 {
		t.Errorf("Recall(how much) = %+v, want nothing", got)
	}
}

// noEmbedder fails every embedding: recall by words and names alone.
type noEmbedder struct{}

func (noEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("no embedder")
}

func (noEmbedder) Dimensions() int { return 64 }

func TestExtractiveDigest(t *testing.T) {
	now := t0
	f := newFixture(t, witness.Config{DigestLines: 2, Now: func() time.Time { return now }})
	k := f.say(1, "Kael", "", "and I promise to bring you the Ember Blade tomorrow.", "grimjaw")
	f.log.SaidTo(k, "grimjaw")
	f.say(2, "Thorin", "", "We sail with Captain Vessa at dawn.", "grimjaw")
	f.say(3, "Grimjaw", "grimjaw", "Aye, I will wait for it.", "grimjaw")
	d := f.log.Digest("grimjaw")
	for _, want := range []string{"Said to you:", "Kael: and I promise", "Ember Blade", "Vessa", "Promises and plans"} {
		if !strings.Contains(d, want) {
			t.Errorf("the digest lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "I will wait") {
		t.Errorf("the digest holds the NPC's own line:\n%s", d)
	}
	if got := f.log.Digest("korrin"); got != "" {
		t.Errorf("an NPC that witnessed nothing has a digest: %q", got)
	}
}

func TestDigestCadence(t *testing.T) {
	now := t0
	f := newFixture(t, witness.Config{DigestLines: 100, DigestEvery: 3 * time.Minute, Now: func() time.Time { return now }})
	f.say(0, "Kael", "", "The Silver Gate is closed.", "grimjaw")
	first := f.log.Digest("grimjaw")
	now = now.Add(time.Minute)
	f.say(1, "Kael", "", "Captain Vessa sails at dawn.", "grimjaw")
	if got := f.log.Digest("grimjaw"); got != first || strings.Contains(got, "Vessa") {
		t.Errorf("the digest changed before its cadence: %q", got)
	}
	now = now.Add(3 * time.Minute)
	f.say(4, "Kael", "", "The well is dry.", "grimjaw")
	if got := f.log.Digest("grimjaw"); !strings.Contains(got, "Vessa") {
		t.Errorf("the digest was not refreshed after DigestEvery: %q", got)
	}
}

// summarizer is a fake LLM summariser that echoes its lines and can be
// held, to check that a summary started before Forget is discarded.
type summarizer struct {
	mu    sync.Mutex
	calls int
	hold  chan struct{}
	start chan struct{}
}

func (s *summarizer) Summarize(ctx context.Context, msgs []contextmgr.Message) (string, error) {
	s.mu.Lock()
	s.calls++
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		s.start <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	var b strings.Builder
	b.WriteString("LLM digest:")
	for _, m := range msgs {
		b.WriteString(" " + m.Content)
	}
	return b.String(), nil
}

func TestSummaryDigestAndForget(t *testing.T) {
	sum := &summarizer{}
	f := newFixture(t, witness.Config{Summarizer: sum, DigestLines: 1})
	f.say(1, "Mira", "", "My sister Seraphine hides in the crypt.", "brannoc")
	waitDigest(t, f.log, "brannoc", "LLM digest:")
	if d := f.log.Digest("brannoc"); !strings.Contains(d, "Seraphine") {
		t.Fatalf("summary digest: %q", d)
	}
	// A summary under way when Mira is forgotten never becomes a digest.
	sum.mu.Lock()
	sum.hold, sum.start = make(chan struct{}), make(chan struct{}, 4)
	sum.mu.Unlock()
	f.say(2, "Kael", "", "The ferry leaves at noon.", "brannoc")
	<-sum.start
	if n := f.log.Forget("mira"); n != 1 {
		t.Errorf("Forget removed %d lines, want 1", n)
	}
	close(sum.hold)
	waitDigest(t, f.log, "brannoc", "ferry")
	for _, npc := range []string{"brannoc"} {
		d := f.log.Digest(npc)
		if strings.Contains(d, "Seraphine") || strings.Contains(d, "Mira") {
			t.Errorf("the digest after forget-me holds Mira's words: %q", d)
		}
		if got := f.log.Recall(context.Background(), witness.Query{NPCID: npc, Text: "Where does Seraphine hide?"}); len(got) > 0 {
			t.Errorf("recall after forget-me: %+v", got)
		}
		if strings.Contains(texts(f.log.Lines(npc)), "Seraphine") {
			t.Error("the lines after forget-me hold Mira's words")
		}
	}
}

// waitDigest waits until npc's digest contains want (a summary is written
// in the background); the deadline only guards against a hang.
func waitDigest(t *testing.T, l *witness.Log, npc, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(l.Digest(npc), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the digest of %s never held %q: %q", npc, want, l.Digest(npc))
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkRecallMinute45 is the witness part of a live turn at minute
// 45: the lines said to the NPC that bear on the question, among 540 it
// witnessed (a quarter said to it), and its digest.
func BenchmarkRecallMinute45(b *testing.B) {
	emb, err := embed.NewOffline(384)
	if err != nil {
		b.Fatal(err)
	}
	now := t0.Add(45 * time.Minute)
	l := witness.New(witness.Config{Embedder: emb, Now: func() time.Time { return now }})
	defer l.Close()
	words := []string{"hammer", "tower", "secret", "gold", "dragon", "guild", "map", "debt"}
	for i := range 540 {
		key := fmt.Sprintf("k%d", i)
		l.Heard(memory.TranscriptEntry{SpeakerID: fmt.Sprintf("p%d", i%4), SpeakerName: fmt.Sprintf("Player %d", i%4),
			Text: fmt.Sprintf("the %s of Entity %d is kept near the %s, we will bring it back tomorrow", words[i%len(words)], i*37,
				words[(i/3)%len(words)]), At: t0.Add(time.Duration(i) * 5 * time.Second), IdempotencyKey: key}, []string{"npc"})
		if i%4 == 0 {
			l.SaidTo(key, "npc")
		}
	}
	ctx := context.Background()
	l.Recall(ctx, witness.Query{NPCID: "npc", Text: "warm-up"}) // embeds the lines once, as the first turn does
	i := 0
	for b.Loop() {
		i++
		q := "what do you know about the " + words[i%len(words)] + " and the " + words[(i*3)%len(words)] + "?"
		l.Recall(ctx, witness.Query{NPCID: "npc", Text: q, Before: now.Add(-5 * time.Minute)})
		l.Digest("npc")
	}
}

func TestAmendAndWithdraw(t *testing.T) {
	f := newFixture(t, witness.Config{DigestLines: 1})
	k := f.say(1, "Kael", "", "Where did the grim jaw hide the ember blade?", "grimjaw")
	f.log.SaidTo(k, "grimjaw")
	if !f.log.Amend(k, "Where did Grimjaw hide the Ember Blade?") {
		t.Fatal("Amend did not find the line")
	}
	if f.log.Amend("unknown", "text") || f.log.Amend(k, "  ") {
		t.Error("Amend accepted an unknown key or an empty text")
	}
	if got := texts(f.log.Lines("grimjaw")); !strings.Contains(got, "Where did Grimjaw hide") || strings.Contains(got, "grim jaw") {
		t.Errorf("the witnessed line was not amended:\n%s", got)
	}
	if d := f.log.Digest("grimjaw"); strings.Contains(d, "grim jaw") {
		t.Errorf("the digest keeps the text before the amendment:\n%s", d)
	}
	reply := f.say(2, "Grimjaw", "grimjaw", "Under the anvil, where the Ember Blade sleeps.", "grimjaw")
	k2 := f.say(3, "Thorin", "", "Then we dig under the anvil tonight.", "grimjaw")
	f.log.SaidTo(k2, "grimjaw")
	if !f.log.Withdraw(reply) {
		t.Fatal("Withdraw did not find the reply")
	}
	if f.log.Withdraw(reply) || f.log.Withdraw("") {
		t.Error("Withdraw removed a line twice or an empty key")
	}
	if got := texts(f.log.Lines("grimjaw")); strings.Contains(got, "where the Ember Blade sleeps") {
		t.Errorf("the withdrawn reply is still witnessed:\n%s", got)
	}
	if !strings.Contains(texts(f.log.Lines("grimjaw")), "dig under the anvil") {
		t.Error("Withdraw removed other lines")
	}
}
