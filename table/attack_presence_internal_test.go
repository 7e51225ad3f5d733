package table

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table/live"
)

// usersVoice is a voice channel holding users (only Users is used).
type usersVoice struct {
	Voice
	users []string
}

func (v usersVoice) Users() []string { return v.users }

// TestSplitLineTranscribedLateStaysInItsScene (a leak an adversarial review found, fixed
// since; the test keeps it fixed): a line is
// timed at the start of its utterance (u.Start) but its presence is noted
// when its speech-to-text is done, and notePresence writes a span only
// when the set differs from the last one it wrote. After the DM splits the
// party (Lyra alone in the scene), the DM narrates a long line to the
// scene (started 1 s after the split) while Lyra answers briefly (started
// 2 s after it): Lyra's short line is transcribed first and opens the
// split span at its own start; the DM's longer line, transcribed second,
// finds the set unchanged and writes no span. It was said before the
// first split span, so the store places it in the span of the party
// together: a public recap and Thorin, who was not in the scene, read it.
func TestSplitLineTranscribedLateStaysInItsScene(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "late")
	mem, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping,
		StateDir: t.TempDir(), MaxTokens: 1 << 30, ConsolidateEvery: time.Hour,
		Summarizer: contextmgr.SummarizerFunc(func(context.Context, []contextmgr.Message) (string, error) { return "", nil }),
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mem.Close(context.Background()); err != nil {
			t.Errorf("closing the session: %v", err)
		}
	})
	controls := live.NewControls()
	s := &Session{cfg: Config{Controls: controls, Settings: Settings{TranscribeTimeout: time.Minute}},
		mem: mem, voice: usersVoice{users: []string{"dm", "lyra", "thorin"}}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		work: ctx, id: "s1"}
	t0 := time.Now().UTC().Add(-time.Second)
	record := func(at time.Time, speaker, text string) {
		t.Helper()
		_, written := s.notePresence(at, speaker)
		awaitPresence(ctx, written)
		if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: speaker,
			SpeakerName: speaker, Text: text, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	record(t0, "thorin", "We all walk into the temple together.")
	controls.SetScene(live.Scene{Players: []string{"lyra"}, By: "dm"})
	split := time.Now().UTC()
	// Transcribed in this order: Lyra's short answer, then the DM's long
	// narration, which started first.
	record(split.Add(2*time.Second), "lyra", "I take it.")
	record(split.Add(time.Second), "dm", "Behind the altar you alone find the sapphire key.")
	s.wg.Wait()

	for _, v := range []memory.Viewer{memory.PlayerViewer(), memory.PlayerViewerOf("thorin")} {
		c, err := camp.As(v)
		if err != nil {
			t.Fatal(err)
		}
		es, err := c.Sessions().Entries(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if strings.Contains(e.Text, "sapphire") {
				t.Errorf("LEAK: %s, not in Lyra's scene, reads the DM's narration to it: %q", v, e.Text)
			}
		}
	}
	ps, err := camp.Presence(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("presence rows: %+v", ps)
}
