package scene_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/witness"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/scene"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

const (
	sampleCampaign = "../../testdata/campaigns/ironhold-saga.yaml"
	longNight      = "../../testdata/scenes/long-night.yaml"
	dims           = 64
)

func quiet() *slog.Logger {
	if os.Getenv("SCENE_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func parseFile(t *testing.T, path string) *scene.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc, err := scene.Parse(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// npcName is the NPC a request is for, from its system prompt.
var npcName = regexp.MustCompile(`^You are ([A-Z][a-z]+)`)

// fakeLLM answers NPC turns with a line that names the NPC, and summary
// requests with the lines it was given, so the test can see whose words a
// summary holds.
func fakeLLM(t *testing.T) *llmtest.Server {
	srv := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		sys := req.Messages[0].Content
		if m := npcName.FindStringSubmatch(sys); m != nil {
			return llmtest.Reply{Text: fmt.Sprintf("%s here. Aye, I hear you.", m[1])}
		}
		var b strings.Builder
		for _, m := range req.Messages[1:] {
			b.WriteString(m.Content)
			b.WriteString(" ")
		}
		return llmtest.Reply{Text: "Summary: " + b.String()}
	})
	t.Cleanup(srv.Close)
	return srv
}

type harness struct {
	store *postgres.Store
	camp  *postgres.Campaign
	opts  scene.Options
}

func newHarness(t *testing.T, store *postgres.Store) *harness {
	t.Helper()
	pgtest.Import(t, store, sampleCampaign)
	return newHarnessOn(t, store)
}

// newHarnessOn plays in the sample campaign, already in store.
func newHarnessOn(t *testing.T, store *postgres.Store) *harness {
	t.Helper()
	camp, err := store.Campaign(context.Background(), "ironhold-saga")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewOffline(dims)
	if err != nil {
		t.Fatal(err)
	}
	srv := fakeLLM(t)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{store: store, camp: camp, opts: scene.Options{Campaign: pgtest.Open(t, store, camp.ID(), memory.DMViewer()),
		Providers: table.Providers{LLM: client, Embedder: emb, Summarizer: contextmgr.NewOpenAISummarizer(client, "fake")},
		Settings: table.Settings{StateDir: t.TempDir(), MaxContextTokens: 900,
			Audio: audio.Config{Endpoint: 600 * time.Millisecond, MaxUtterance: 30 * time.Second}},
		PlayerVoice: &cachedVoice{real: tts.Espeak{}}, NPCVoice: chime{},
		Logger: quiet(), LineTimeout: 3 * time.Minute}} // a hang guard: many scenes play at once on a loaded machine
}

// chime is the NPCs' voice in the scene tests: a quarter second of tone
// whatever they say. The tests read what an NPC said (its reply, the
// session log, the witness store), never how it sounds, and each 20 ms of
// an NPC's speech costs the table an Opus encoding: spoken by espeak-ng,
// the replies were a third of a scene's Go CPU besides the lanes
// (TestWitnessHarbor under -race, pprof), for audio nobody listens to.
type chime struct{}

func (chime) Synthesize(_ context.Context, text string, _ tts.Voice) (audio.PCM, error) {
	if strings.TrimSpace(text) == "" {
		return audio.PCM{}, tts.ErrNoText
	}
	const rate, n = 48000, 48000 / 4
	pcm := audio.PCM{Rate: rate, Samples: make([]int16, n)}
	for i := range pcm.Samples {
		pcm.Samples[i] = int16(4000 * math.Sin(2*math.Pi*440*float64(i)/rate))
	}
	return pcm, nil
}

// cachedVoice is espeak-ng speaking each sentence once: the fake NPCs say
// the same few lines again and again, and the table gets the same audio
// either way (espeak-ng is deterministic), without a process per reply.
type cachedVoice struct {
	real tts.Synthesizer

	mu   sync.Mutex
	said map[spoken]audio.PCM
}

type spoken struct {
	text  string
	voice tts.Voice
}

func (c *cachedVoice) Synthesize(ctx context.Context, text string, v tts.Voice) (audio.PCM, error) {
	k := spoken{text, v}
	c.mu.Lock()
	pcm, ok := c.said[k]
	c.mu.Unlock()
	if !ok {
		var err error
		if pcm, err = c.real.Synthesize(ctx, text, v); err != nil {
			return audio.PCM{}, err
		}
		c.mu.Lock()
		if c.said == nil {
			c.said = map[spoken]audio.PCM{}
		}
		c.said[k] = pcm
		c.mu.Unlock()
	}
	pcm.Samples = slices.Clone(pcm.Samples) // the caller's own
	return pcm, nil
}

// texts are the contents of a context's messages of a role ("" for all).
func texts(ctx []table.ContextMessage, role string) string {
	var b strings.Builder
	for _, m := range ctx {
		if role == "" || m.Role == role {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestLongNight plays 45 minutes of busy table talk and checks that memory
// is live: what was said long ago reaches the NPC, NPCs keep their own
// words apart, a new NPC is heard and answered within a minute, and a
// forgotten player leaves no trace.
func TestLongNight(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, dims)
	h := newHarness(t, store)
	ctx := context.Background()
	sc := parseFile(t, longNight)

	const fact = "the vault key is hidden under the third stone of the old mill"
	var (
		mu        sync.Mutex
		events    []scene.Event
		checked   int
		notInL1   []string
		unindexed bool
	)
	h.opts.OnEvent = func(ev scene.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		l := ev.Line
		if l == nil || l.Dropped != "" {
			return
		}
		// The line is in the session log as soon as the table is done
		// with it, not at a flush.
		es, err := h.camp.Sessions().Entries(ctx, sc.Session)
		if err != nil {
			t.Error(err)
			return
		}
		found := false
		for _, e := range es {
			if e.SpeakerID == l.SpeakerID && e.Text == l.Corrected {
				found = true
			}
		}
		if !found {
			notInL1 = append(notInL1, l.Corrected)
		}
		checked++
		// By the last question (minute 40), the fact of minute 3 is in
		// the semantic index: findable by recall and /memory search.
		if strings.Contains(l.Corrected, "where did Lyra say") {
			hits, err := h.camp.Index().TextSearch(ctx, "vault key hidden old mill", 5, nil)
			if err != nil {
				t.Error(err)
			}
			unindexed = true
			for _, x := range hits {
				if strings.Contains(strings.ToLower(x.Chunk.Content), fact) {
					unindexed = false
				}
			}
		}
	}
	res, err := scene.Play(ctx, sc, h.opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Took < 40*time.Minute {
		t.Fatalf("the scene took %s of scene time, want over 40 minutes", res.Took)
	}
	if len(notInL1) > 0 || checked < 80 {
		t.Fatalf("%d lines were not in the session log when the table was done with them (of %d): %q", len(notInL1), checked, notInL1)
	}
	if unindexed {
		t.Error("the fact of minute 3 was not in the semantic index by minute 40")
	}

	var lines []scene.LineEvent
	for _, ev := range res.Lines {
		lines = append(lines, ev)
	}
	last := lines[len(lines)-1]
	if last.Addressee != "brannoc" {
		t.Fatalf("the last question went to %q (%s), want brannoc", last.Addressee, last.Reason)
	}
	if !strings.Contains(strings.ToLower(texts(last.Context, "")), fact) {
		t.Errorf("the fact stated at minute 3 is not in Brannoc's context at minute 40:\n%s", texts(last.Context, ""))
	}
	if strings.Contains(texts(last.Context, ""), "Said in the last minutes") {
		t.Error("a live turn's hot context repeats the recent transcript the conversation already carries")
	}

	// NPC B reads NPC A's words as A's, never as its own.
	sawOther := false
	for _, l := range lines {
		if l.Addressee != "grimjaw" {
			continue
		}
		if strings.Contains(texts(l.Context, "assistant"), "Brannoc here") {
			t.Fatalf("Grimjaw's context has Brannoc's words as its own:\n%s", texts(l.Context, "assistant"))
		}
		if strings.Contains(texts(l.Context, "user"), "Brannoc: Brannoc here. Aye, I hear you.") {
			sawOther = true
		}
	}
	if !sawOther {
		t.Error("no Grimjaw turn saw Brannoc's reply labelled as Brannoc's")
	}

	// The NPC the DM added at minute 10 is corrected and answers at minute 11.
	var korrin *scene.LineEvent
	for i, l := range lines {
		if strings.HasPrefix(l.Heard, "corin, will you") {
			korrin = &lines[i]
		}
	}
	if korrin == nil {
		t.Fatal("the line to Korrin was not played")
	}
	if !strings.Contains(korrin.Corrected, "Korrin") || korrin.Addressee != "korrin" || korrin.Reply == "" {
		t.Errorf("the line to the new NPC: corrected %q, addressee %q (%s), reply %q", korrin.Corrected, korrin.Addressee, korrin.Reason, korrin.Reply)
	}
	var added time.Time
	for _, c := range res.Commands {
		if strings.HasPrefix(c.Command, "/memory entity add") {
			added = c.At
		}
	}
	if d := korrin.At.Sub(added); added.IsZero() || d > time.Minute {
		t.Errorf("the line to Korrin came %s after the DM added him, want within a minute", d)
	}

	// Mira asked to be forgotten at minute 20: none of her words remain.
	const secret = "Seraphine"
	mira := ""
	for _, p := range sc.Players {
		if p.Name == "Mira" {
			mira = p.ID
		}
	}
	forgotAt := time.Time{}
	for _, c := range res.Commands {
		if c.Command == "/privacy forget-me" {
			if c.Error != "" {
				t.Fatalf("forget-me failed: %s", c.Error)
			}
			forgotAt = c.At
			if !strings.Contains(c.Result, "lines left the live conversation") {
				t.Errorf("forget-me does not say what it removed from the live session: %q", c.Result)
			}
		}
	}
	for _, l := range lines {
		if !l.At.Before(forgotAt) && (strings.Contains(texts(l.Context, ""), secret) || strings.Contains(texts(l.Context, ""), "Mira:")) {
			t.Fatalf("a turn after forget-me still saw Mira's words:\n%s", texts(l.Context, ""))
		}
	}
	// Nor in what the NPCs witnessed: their lines, digests and recall.
	for _, id := range []string{"brannoc", "grimjaw", "korrin"} {
		for _, e := range res.Witness.Lines(id) {
			if e.SpeakerID == mira || strings.Contains(strings.ToLower(e.Text), strings.ToLower(secret)) {
				t.Errorf("%s's witnessed lines still hold Mira's words: %+v", id, e)
			}
		}
		if d := res.Witness.Digest(id); strings.Contains(strings.ToLower(d), strings.ToLower(secret)) || strings.Contains(d, "Mira") {
			t.Errorf("%s's digest still holds Mira's words:\n%s", id, d)
		}
		for _, r := range res.Witness.Recall(ctx, witness.Query{NPCID: id, Text: "Who is " + secret + "?"}) {
			if r.Entry.SpeakerID == mira || strings.Contains(strings.ToLower(r.Entry.Text), strings.ToLower(secret)) {
				t.Errorf("%s still recalls Mira's words: %+v", id, r.Entry)
			}
		}
	}
	es, err := h.camp.Sessions().Entries(ctx, sc.Session)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.SpeakerID == mira || strings.Contains(e.Text, secret) {
			t.Fatalf("the session log still holds Mira's words: %+v", e)
		}
	}
	chunks, err := h.camp.Index().Chunks(ctx, sc.Session)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) == 0 {
		t.Fatal("the session has no chunks")
	}
	for _, c := range chunks {
		if strings.Contains(c.Content, secret) || strings.Contains(c.Content, "Mira:") {
			t.Fatalf("a chunk still holds Mira's words: %s", c.Content)
		}
	}
	s, err := h.camp.Sessions().Session(ctx, sc.Session)
	if err != nil {
		t.Fatal(err)
	}
	if s.Summary == "" {
		t.Error("no running summary was saved")
	}
	if strings.Contains(s.Summary, secret) {
		t.Errorf("the saved summary still holds Mira's words: %s", s.Summary)
	}
	hits, err := h.camp.Sessions().Search(ctx, secret, memory.SearchOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) > 0 {
		t.Errorf("/memory search still finds Mira's words: %+v", hits)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"empty", "", "empty"},
		{"no lines", "session: x\n", "no lines"},
		{"unknown field", "lines:\n  - {speaker: A, sya: hi}\n", "line 2"},
		{"both", "lines:\n  - {speaker: A, say: hi, command: /npc next x, by: DM}\n", "line 2"},
		{"bad pause", "lines:\n  - {speaker: A, say: hi, after: soon}\n", "line 2"},
		{"command without author", "lines:\n  - {command: /npc next brannoc}\n", "needs by"},
		{"DM speaks", "lines:\n  - {speaker: DM, say: hi}\n", "DM does not speak"},
		{"silent", "lines:\n  - {speaker: A}\n", "says nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scene.Parse(strings.NewReader(tc.yaml), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
