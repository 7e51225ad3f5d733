package voicesession_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
)

// idleVoice is a voice connection nobody speaks on.
type idleVoice struct{}

func (idleVoice) Packets() <-chan audio.Packet { return nil }
func (idleVoice) Events() <-chan conn.Event    { return nil }
func (idleVoice) WriteOpus([]byte) error       { return nil }
func (idleVoice) SetSpeaking(bool) error       { return nil }
func (idleVoice) Users() []string              { return nil }
func (idleVoice) Close() error                 { return nil }

// countingLink joins any channel and counts the leaves.
type countingLink struct {
	mu     sync.Mutex
	leaves int
}

func (*countingLink) Join(context.Context, string, string) (table.Voice, error) {
	return idleVoice{}, nil
}
func (l *countingLink) Leave(string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaves++
	return nil
}

// A failed start leaves the voice channel only when this process owns the
// guild: the bot user is one for every process, and leaving would
// disconnect the session of the process that owns it.
func TestFailedStartLeavesOnlyOwnedGuilds(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	for _, tc := range []struct {
		name       string
		owns       func(string) bool
		wantLeaves int
	}{
		{"no claims (one process)", nil, 1},
		{"the guild is ours", func(string) bool { return true }, 1},
		{"another process owns the guild", func(string) bool { return false }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := &countingLink{}
			// No embedder: the table refuses to open after the join.
			m, err := voicesession.New(voicesession.Config{Door: pgtest.Door(t, store), Link: link,
				Providers: table.Providers{STT: &scriptedSTT{}}, Settings: table.Settings{StateDir: t.TempDir()},
				Owns: tc.owns, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			err = m.Start(ctxFor(t), bot.StartRequest{GuildID: guildID, VoiceChannelID: channel, Campaign: "ironhold-saga"})
			if err == nil || !strings.Contains(err.Error(), "starting the session") {
				t.Fatalf("start: %v, want the table's refusal", err)
			}
			if link.leaves != tc.wantLeaves {
				t.Errorf("left the channel %d times, want %d", link.leaves, tc.wantLeaves)
			}
		})
	}
}
