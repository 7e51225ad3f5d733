package voicesession_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
)

// cutSpeaker speaks each sentence as one frame; while cut is set, it then
// holds the line until its context ends (the session stops it), as a line
// still being spoken when the claim is lost. spokenFirst says whether the
// sentence counts as heard when it is cut (the words were out) or not.
type cutSpeaker struct {
	cut, spokenFirst bool
	speaking         chan struct{} // closed when the first frame is out
	once             sync.Once
}

func (c *cutSpeaker) Speak(ctx context.Context, _ npc.Voice, sentences <-chan string, send func([]byte) error) ([]string, error) {
	var heard []string
	for s := range sentences {
		if err := send([]byte{0xf8, 0xff, 0xfe}); err != nil {
			return heard, err
		}
		c.once.Do(func() { close(c.speaking) })
		if c.cut {
			if c.spokenFirst {
				heard = append(heard, s)
			}
			<-ctx.Done()
			return heard, ctx.Err()
		}
		heard = append(heard, s)
	}
	return heard, nil
}

// An NPC line the DM puts in an NPC's mouth (/npc say) is acknowledged
// only when it is in the session log. When the process loses the guild's
// claim while the NPC speaks (the claim's heartbeat hands the session
// over: Manager.Release), the line is not recorded here any more (the old
// owner no longer writes) and Say must not report success: before the fix
// it returned nil, the bot answered "Grimjaw says: Round 2.", and the line
// was in no session log (issue 29, TestServeProcessesShareGuilds under
// load).
func TestSayCutByAHandOverIsNotAcknowledged(t *testing.T) {
	t.Parallel()
	store, camp, emb := sagaStore(t)
	for _, tc := range []struct {
		name string
		// cut: the claim is lost while the NPC speaks; spokenFirst: its
		// words were out by then.
		cut, spokenFirst bool
	}{
		{name: "not cut"},
		{name: "cut after the words were spoken", cut: true, spokenFirst: true},
		{name: "cut before a word was spoken", cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			speaker := &cutSpeaker{cut: tc.cut, spokenFirst: tc.spokenFirst, speaking: make(chan struct{})}
			m, err := voicesession.New(voicesession.Config{Door: pgtest.Door(t, store), Link: &handoverLink{},
				Providers: table.Providers{STT: &scriptedSTT{}, Embedder: emb, Speaker: speaker},
				Settings:  table.Settings{StateDir: t.TempDir(), LeaveWhenEmpty: time.Hour},
				Logger:    quiet()})
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxFor(t)
			defer func() {
				if err := m.Close(ctx); err != nil {
					t.Errorf("closing the manager: %v", err)
				}
			}()
			if err := m.Start(ctx, bot.StartRequest{GuildID: guildID, VoiceChannelID: channel, Campaign: "ironhold-saga",
				Controls: live.NewControls(), Announce: func(string) {}}); err != nil {
				t.Fatal(err)
			}
			st, _ := m.Status(guildID)
			const line = "Round 2."
			said := make(chan error, 1)
			go func() { said <- m.Say(ctx, guildID, "grimjaw", line) }()
			if tc.cut {
				// The heartbeat finds the claim taken while the NPC speaks.
				select {
				case <-speaker.speaking:
				case <-ctx.Done():
					t.Fatal("the NPC never started speaking")
				}
				if err := m.Release(ctx, guildID); err != nil {
					t.Fatalf("Release: %v", err)
				}
			}
			var sayErr error
			select {
			case sayErr = <-said:
			case <-ctx.Done():
				t.Fatal("Say never returned")
			}
			stored := 0
			for _, e := range entries(t, camp, st.SessionID) {
				if e.Text == line {
					stored++
				}
			}
			switch {
			case sayErr == nil && stored != 1:
				t.Errorf("Say acknowledged %q, stored %d times; an acknowledged line is stored once", line, stored)
			case sayErr != nil && stored != 0:
				t.Errorf("Say failed (%v), yet %q is stored %d times", sayErr, line, stored)
			case tc.cut && !errors.Is(sayErr, session.ErrReleased):
				t.Errorf("Say cut by a hand-over returned %v, want an error saying the session was handed over", sayErr)
			case !tc.cut && sayErr != nil:
				t.Errorf("Say: %v", sayErr)
			}
		})
	}
}

// A process whose claim on the guild is gone, as far as it knows without
// asking the database (its lease expired with no renewal: it stalled past
// the lease time and woke up, before its heartbeat noticed), records
// nothing more in the session, which another process may be writing now:
// the DM's line is refused, not acknowledged, and not stored.
func TestNoLineIsRecordedOnceTheClaimIsGone(t *testing.T) {
	t.Parallel()
	store, camp, emb := sagaStore(t)
	var held atomic.Bool
	held.Store(true)
	var asked atomic.Int32
	m, err := voicesession.New(voicesession.Config{Door: pgtest.Door(t, store), Link: &handoverLink{},
		Providers: table.Providers{STT: &scriptedSTT{}, Embedder: emb},
		Settings:  table.Settings{StateDir: t.TempDir(), LeaveWhenEmpty: time.Hour},
		Holder: func(g string) func() bool {
			if g != guildID {
				t.Errorf("the claim of guild %s was asked for, want %s", g, guildID)
			}
			return func() bool { asked.Add(1); return held.Load() }
		},
		Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	if err := m.Start(ctx, bot.StartRequest{GuildID: guildID, VoiceChannelID: channel, Campaign: "ironhold-saga",
		Controls: live.NewControls(), Announce: func(string) {}}); err != nil {
		t.Fatal(err)
	}
	st, _ := m.Status(guildID)
	if err := m.Say(ctx, guildID, "grimjaw", "Round 1."); err != nil {
		t.Fatalf("Say while the claim is held: %v", err)
	}
	if asked.Load() == 0 {
		t.Fatal("the line was recorded without asking whether the claim is held")
	}
	held.Store(false)
	err = m.Say(ctx, guildID, "grimjaw", "Round 2.")
	if !errors.Is(err, session.ErrReleased) {
		t.Errorf("Say once the claim is gone = %v, want an error saying the session was handed over", err)
	}
	var texts []string
	for _, e := range entries(t, camp, st.SessionID) {
		texts = append(texts, e.Text)
	}
	if len(texts) != 1 || texts[0] != "Round 1." {
		t.Errorf("session log %q, want only the line said while the claim was held", texts)
	}

	// Nor does it end the session (the other process runs it): /session
	// end or shutdown hands it over instead; nothing is processed here.
	if err := m.End(ctx, guildID); !errors.Is(err, session.ErrReleased) {
		t.Errorf("End once the claim is gone = %v, want an error saying the session was handed over", err)
	}
	if err := m.Close(ctx); err != nil {
		t.Errorf("closing the manager: %v", err)
	}
	if s := sessionRow(t, camp, st.SessionID); !s.EndedAt.IsZero() {
		t.Errorf("a process that lost the claim marked the session ended: %+v", s)
	}
	if n := processingRows(t, store, st.SessionID); n != 0 {
		t.Errorf("%d post-session processing rows written by a process that lost the claim", n)
	}
}
