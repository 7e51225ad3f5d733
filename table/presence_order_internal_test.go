package table

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table/live"
)

// movingVoice is a voice channel whose users change (only Users is used).
type movingVoice struct {
	Voice
	mu    sync.Mutex
	users []string
}

func (v *movingVoice) Users() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.users)
}

func (v *movingVoice) set(users []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.users = users
}

// TestPresenceOutOfOrder: lines noted out of order (timed at their start,
// noted when transcribed) each fall, in the store, in a presence span
// saying what was true when they were said; a span written inside an
// older one keeps the lines already recorded after it in that older
// presence, and no span is written that no line needs.
func TestPresenceOutOfOrder(t *testing.T) {
	t.Parallel()
	all := []string{"dm", "lyra", "thorin"}
	type step struct {
		at      time.Duration
		users   []string  // the voice channel from this step on (nil: unchanged)
		scene   *[]string // the DM sets the scene's players at at (empty: rejoined)
		speaker string    // a line said at at ("": no line)
		want    []string  // the players of the span the line falls in
		split   bool      // and whether it is split
	}
	lyra, together := &[]string{"lyra"}, &[]string{}
	tests := []struct {
		name  string
		steps []step
		rows  int
	}{
		{name: "the DM's narration to the scene, transcribed after Lyra's reply", rows: 3, steps: []step{
			{at: 0, speaker: "thorin", want: all},
			{at: 10 * time.Second, scene: lyra},
			{at: 12 * time.Second, speaker: "lyra", want: []string{"lyra"}, split: true},
			{at: 11 * time.Second, speaker: "dm", want: []string{"lyra"}, split: true},
		}},
		{name: "a late line inside a span keeps the lines after it", rows: 3, steps: []step{
			{at: 0, speaker: "lyra", want: all},
			{at: 10 * time.Second, speaker: "lyra", want: all},
			{at: 5 * time.Second, users: []string{"dm", "lyra"}, speaker: "dm", want: []string{"dm", "lyra"}},
		}},
		{name: "the scene's last line, transcribed after the rejoin", rows: 2, steps: []step{
			{at: 0, scene: lyra},
			{at: time.Second, speaker: "lyra", want: []string{"lyra"}, split: true},
			{at: 10 * time.Second, scene: together},
			{at: 12 * time.Second, speaker: "thorin", want: all},
			{at: 9 * time.Second, speaker: "dm", want: []string{"lyra"}, split: true},
		}},
		{name: "two lines in one microsecond share the narrower span", rows: 1, steps: []step{
			{at: 0, scene: lyra},
			{at: 5 * time.Second, speaker: "lyra", want: []string{}, split: true},
			{at: 5 * time.Second, speaker: "thorin", want: []string{}, split: true},
		}},
	}
	store, _ := pgtest.NewStore(t, 8)
	for n, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			camp := pgtest.Campaign(t, store, fmt.Sprintf("order%d", n))
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
			t0 := time.Date(2026, 4, 2, 19, 0, 0, 0, time.UTC)
			var clock time.Time
			controls := live.NewControls()
			controls.UseClock(func() time.Time { return clock })
			voice := &movingVoice{users: all}
			s := &Session{cfg: Config{Controls: controls, Settings: Settings{TranscribeTimeout: time.Minute}},
				mem: mem, voice: voice, log: slog.New(slog.NewTextHandler(io.Discard, nil)), work: ctx, id: "s1"}
			for _, st := range tt.steps {
				at := t0.Add(st.at)
				if st.users != nil {
					voice.set(st.users)
				}
				if st.scene != nil {
					clock = at
					controls.SetScene(live.Scene{Players: *st.scene, By: "dm"})
				}
				if st.speaker != "" {
					_, written := s.notePresence(at, st.speaker)
					awaitPresence(ctx, written)
				}
			}
			s.wg.Wait()
			rows, err := camp.Presence(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range tt.steps {
				if st.speaker == "" {
					continue
				}
				at := t0.Add(st.at)
				i := slices.IndexFunc(rows, func(p postgres.Presence) bool { return p.At.After(at) })
				if i < 0 {
					i = len(rows)
				}
				if i == 0 {
					t.Errorf("%s's line at %v falls in no span: %+v", st.speaker, st.at, rows)
					continue
				}
				if got := rows[i-1]; !slices.Equal(got.Players, st.want) || got.Split != st.split {
					t.Errorf("%s's line at %v falls in %v (split %v), want %v (split %v); rows %+v",
						st.speaker, st.at, got.Players, got.Split, st.want, st.split, rows)
				}
			}
			if len(rows) != tt.rows {
				t.Errorf("%d presence rows, want %d: %+v", len(rows), tt.rows, rows)
			}
		})
	}
}
