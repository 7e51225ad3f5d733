package table

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// fetchAgent is a Responder that notes the contexts it is asked to
// prefetch.
type fetchAgent struct {
	mu      sync.Mutex
	fetched []string
}

func (a *fetchAgent) Turn(context.Context, npc.TurnInput, func(string)) (npc.TurnResult, error) {
	return npc.TurnResult{}, nil
}

func (a *fetchAgent) Prefetch(_ context.Context, npcID, _ string) {
	a.mu.Lock()
	a.fetched = append(a.fetched, npcID)
	a.mu.Unlock()
}

func (a *fetchAgent) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.fetched)
}

type oneNPC struct{ noControls }

func (oneNPC) PresentNPCs() []string { return []string{"grimjaw"} }

type noNames struct{}

func (noNames) FindNames(string) []npc.Mention { return nil }

// TestPrefetchWhenSpeechStarts: the context of the NPC likely to answer
// starts being read when a player starts speaking, so the database's
// reads overlap the speech and its transcription; when the player stops it
// is not read again, unless they spoke for longer than restartFetch (the
// context would be old).
func TestPrefetchWhenSpeechStarts(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC))
	agent := &fetchAgent{}
	s := &Session{cfg: Config{Clock: clk, Controls: oneNPC{}}, agent: agent, id: "s",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), talking: map[string]bool{},
		startedAt: map[string]time.Time{}, listening: map[string]*listening{}, fetchedAtStart: map[string]startFetch{}}
	s.addr = npc.NewAddresser(noNames{}, func(id string) bool { return id == "grimjaw" }, nil, 0)
	speak := func(user string, d time.Duration) {
		n := len(agent.calls())
		s.onSpeech(audio.Event{Kind: audio.SpeechStarted, UserID: user})
		if got := agent.calls()[n:]; !slices.Equal(got, []string{"grimjaw"}) {
			t.Errorf("when the player started speaking: prefetched %v, want [grimjaw]", got)
		}
		clk.Advance(d)
		s.onSpeech(audio.Event{Kind: audio.SpeechEnded, UserID: user})
	}
	for _, c := range []struct {
		name string
		long time.Duration
		want []string
	}{
		{"a short line: read once, when it starts", 2 * time.Second, []string{"grimjaw"}},
		{"a long monologue: read again when it ends", restartFetch + time.Second, []string{"grimjaw", "grimjaw"}},
	} {
		before := len(agent.calls())
		speak("211111111111111111", c.long)
		if got := agent.calls()[before:]; !slices.Equal(got, c.want) {
			t.Errorf("%s: prefetched %v, want %v", c.name, got, c.want)
		}
	}
	// Two players speaking over each other: each has their own start.
	before := len(agent.calls())
	s.onSpeech(audio.Event{Kind: audio.SpeechStarted, UserID: "a"})
	s.onSpeech(audio.Event{Kind: audio.SpeechStarted, UserID: "b"})
	s.onSpeech(audio.Event{Kind: audio.SpeechEnded, UserID: "a"})
	s.onSpeech(audio.Event{Kind: audio.SpeechEnded, UserID: "b"})
	if got := agent.calls()[before:]; len(got) != 2 {
		t.Errorf("two players speaking at once: prefetched %v, want one read each when they started", got)
	}
	s.mu.Lock()
	left := len(s.fetchedAtStart)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d prefetches started at speech start are still remembered after the speech ended", left)
	}
}

// splitControls is oneNPC with the party split: only "in" is in the
// scene, set by "dm".
type splitControls struct{ oneNPC }

func (splitControls) SplitAt(time.Time) ([]string, string) { return []string{"in"}, "dm" }

// TestNoPrefetchForSpeakersNoNPCHears: a player outside a split scene, or
// one who opted out, starting to speak does not make the table read a
// scene NPC's context (the reads would be for a line no NPC of the scene
// hears); a player in the scene, and the DM who split it, do.
func TestNoPrefetchForSpeakersNoNPCHears(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC))
	agent := &fetchAgent{}
	s := &Session{cfg: Config{Clock: clk, Controls: splitControls{}}, agent: agent, id: "s",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), talking: map[string]bool{},
		startedAt: map[string]time.Time{}, listening: map[string]*listening{}, fetchedAtStart: map[string]startFetch{}}
	s.optedOut.Store(&map[string]bool{"shy": true})
	s.addr = npc.NewAddresser(noNames{}, func(id string) bool { return id == "grimjaw" }, nil, 0)
	for _, c := range []struct {
		user string
		want int
	}{
		{"out", 0},
		{"shy", 0},
		{"in", 1},
		{"dm", 1},
	} {
		before := len(agent.calls())
		s.onSpeech(audio.Event{Kind: audio.SpeechStarted, UserID: c.user})
		clk.Advance(time.Second)
		s.onSpeech(audio.Event{Kind: audio.SpeechEnded, UserID: c.user})
		if got := len(agent.calls()) - before; got != c.want {
			t.Errorf("%s spoke: %d prefetches, want %d", c.user, got, c.want)
		}
	}
}

// TestNoInterruptionFromOutsideTheScene: a player outside the split scene
// talking at the table does not cut off the NPC speaking in the scene; a
// player in the scene does.
func TestNoInterruptionFromOutsideTheScene(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC))
	s := &Session{cfg: Config{Clock: clk, Controls: splitControls{}}, agent: &fetchAgent{}, id: "s",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), talking: map[string]bool{},
		startedAt: map[string]time.Time{}, listening: map[string]*listening{}, fetchedAtStart: map[string]startFetch{}}
	s.optedOut.Store(&map[string]bool{})
	for _, c := range []struct {
		user string
		stop bool
	}{{"out", false}, {"in", true}, {"dm", true}} {
		stopped := false
		s.mu.Lock()
		s.speaking = func() { stopped = true }
		s.mu.Unlock()
		s.onSpeech(audio.Event{Kind: audio.SpeechHeld, UserID: c.user})
		if stopped != c.stop {
			t.Errorf("%s talked over the scene's NPC: interrupted %v, want %v", c.user, stopped, c.stop)
		}
	}
}
