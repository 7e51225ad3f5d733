package voicesession_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
)

// closingVoice is an idle voice connection that counts its closes.
type closingVoice struct {
	idleVoice
	link *handoverLink
}

func (v closingVoice) Close() error {
	v.link.mu.Lock()
	defer v.link.mu.Unlock()
	v.link.closes++
	return nil
}

// handoverLink joins any channel and counts joins, leaves, drops and
// closes of its connections.
type handoverLink struct {
	mu                           sync.Mutex
	joins, leaves, drops, closes int
}

func (l *handoverLink) Join(context.Context, string, string) (table.Voice, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.joins++
	return closingVoice{link: l}, nil
}

func (l *handoverLink) Leave(string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaves++
	return nil
}

func (l *handoverLink) Drop(string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drops++
}

func (l *handoverLink) counts() [4]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return [4]int{l.joins, l.leaves, l.drops, l.closes}
}

// processingRows counts the post-session processing rows of a session
// that record work: not the marker a session writes when it starts, that
// its processing is owed (postsession.Processor.Owe; stage started, not
// done), which processing itself writes again first.
func processingRows(t *testing.T, store *postgres.Store, sessionID string) int {
	t.Helper()
	var n int
	if err := store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM session_processing
		WHERE campaign_id = 'ironhold-saga' AND session_id = $1 AND (stage <> $2 OR done)`,
		sessionID, postsession.StageStarted).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func sessionRow(t *testing.T, camp *postgres.Campaign, id string) memory.Session {
	t.Helper()
	ss, err := camp.Sessions().Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found []memory.Session
	for _, s := range ss {
		if s.ID == id {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("session %s appears %d times in %+v", id, len(found), ss)
	}
	return found[0]
}

// A process that lost its guild's claim hands the session over: it stops
// recording, every line it acknowledged is in the session log, it neither
// leaves the voice channel (that would disconnect the new owner, the same
// bot user) nor marks the session ended nor processes it; the new owner
// resumes the same session id, and only its end processes the session.
func TestReleaseHandsTheSessionOver(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	fake := llmtest.New(llmtest.Script(llmtest.Reply{Text: `{"entities":[],"relationships":[]}`}))
	t.Cleanup(fake.Close)
	client, err := llm.New(llm.Config{BaseURL: fake.URL(), Model: "fake", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewOffline(16)
	if err != nil {
		t.Fatal(err)
	}
	manager := func(link *handoverLink) *voicesession.Manager {
		m, err := voicesession.New(voicesession.Config{Door: pgtest.Door(t, store), Link: link,
			Providers: table.Providers{STT: &scriptedSTT{}, Embedder: emb, LLM: client,
				Extractor: postsession.NewOpenAIExtractor(client, "fake")},
			Settings: table.Settings{StateDir: t.TempDir(), LeaveWhenEmpty: time.Hour},
			Logger:   quiet()})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	closeManager := func(m *voicesession.Manager) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("closing a manager: %v", err)
		}
	}
	ctx := ctxFor(t)
	req := bot.StartRequest{GuildID: guildID, VoiceChannelID: channel, Campaign: "ironhold-saga",
		Controls: live.NewControls(), Announce: func(string) {},
		Ended: func(reason string) { t.Errorf("the session's Ended callback ran: %s", reason) }}

	oldLink := &handoverLink{}
	old := manager(oldLink)
	if err := old.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	st, ok := old.Status(guildID)
	if !ok {
		t.Fatal("no status for the running session")
	}
	id := st.SessionID
	said := []string{"Welcome to the forge.", "Mind the anvil.", "Steel does not lie."}
	for _, line := range said {
		if err := old.Say(ctx, guildID, "grimjaw", line); err != nil {
			t.Fatal(err)
		}
	}

	if err := old.Release(ctx, guildID); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := oldLink.counts(); got != [4]int{1, 0, 1, 1} {
		t.Errorf("joins, leaves, drops, closes of the old owner's link = %v, want [1 0 1 1]: no leave", got)
	}
	if _, ok := old.Status(guildID); ok {
		t.Error("the released session still reports a status")
	}
	if err := old.Say(ctx, guildID, "grimjaw", "Still here?"); err == nil {
		t.Error("Say after Release succeeded")
	}
	if err := old.Release(ctx, guildID); err == nil {
		t.Error("releasing twice succeeded")
	}
	if err := old.End(ctx, guildID); err == nil {
		t.Error("End after Release succeeded")
	}
	// Close waits for the old owner's background work: had it started
	// post-session processing, it would be done (or recorded) by now.
	closeManager(old)

	texts := func() []string {
		var out []string
		for _, e := range entries(t, camp, id) {
			out = append(out, e.Text)
		}
		return out
	}
	if got := texts(); !slices.Equal(got, said) {
		t.Errorf("session log after the release %q, want %q", got, said)
	}
	if s := sessionRow(t, camp, id); !s.EndedAt.IsZero() {
		t.Errorf("the released session is marked ended: %+v", s)
	}
	if n := processingRows(t, store, id); n != 0 {
		t.Errorf("%d post-session processing rows for the released session, want none", n)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("the LLM was asked %d times after the release (fact extraction ran?)", n)
	}

	// The new owner resumes the session under the same id.
	newLink := &handoverLink{}
	resumed := manager(newLink)
	defer closeManager(resumed)
	req.SessionID = id
	req.Ended = nil
	if err := resumed.Start(ctx, req); err != nil {
		t.Fatalf("resuming: %v", err)
	}
	if st, _ := resumed.Status(guildID); st.SessionID != id {
		t.Fatalf("resumed as session %q, want %q", st.SessionID, id)
	}
	if err := resumed.Say(ctx, guildID, "grimjaw", "Where were we?"); err != nil {
		t.Fatal(err)
	}
	if got, want := texts(), append(slices.Clone(said), "Where were we?"); !slices.Equal(got, want) {
		t.Errorf("session log after the resume %q, want %q", got, want)
	}
	if err := resumed.End(ctx, guildID); err != nil {
		t.Fatal(err)
	}
	if got := newLink.counts(); got[1] != 1 {
		t.Errorf("the new owner's End left the channel %d times, want 1", got[1])
	}
	if s := sessionRow(t, camp, id); s.EndedAt.IsZero() {
		t.Errorf("the resumed session is not marked ended after its End: %+v", s)
	}
	// Its post-session processing, in the background, leaves its rows.
	if err := waitFor(ctx, func() bool { return processingRows(t, store, id) > 0 }); err != nil {
		t.Errorf("no post-session processing of the resumed session after its End: %v", err)
	}
}

// waitFor polls cond until it holds or ctx ends (a hang guard).
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// A session that stops by itself (here its channel stayed empty; after a
// stall, its voice connection taken by the new owner) is confirmed against
// the guild's claim first: lost to another process, it is handed over, not
// ended, and the channel is not left.
func TestSessionStoppingByItselfIsHandedOverWhenTheGuildWasLost(t *testing.T) {
	t.Parallel()
	store, camp, emb := sagaStore(t)
	for _, tc := range []struct {
		name      string
		owned     bool
		wantEnded bool
		want      [4]int // joins, leaves, drops, closes
	}{
		{"the guild is still ours: ended", true, true, [4]int{1, 1, 0, 1}},
		{"another process took the guild: handed over", false, false, [4]int{1, 0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := &handoverLink{}
			confirmed := make(chan string, 1)
			m, err := voicesession.New(voicesession.Config{Door: pgtest.Door(t, store), Link: link,
				Providers: table.Providers{STT: &scriptedSTT{}, Embedder: emb},
				Settings:  table.Settings{StateDir: t.TempDir(), LeaveWhenEmpty: 200 * time.Millisecond},
				Owns:      func(string) bool { return true }, // the heartbeat has not noticed yet
				Confirm: func(_ context.Context, g string) (bool, error) {
					confirmed <- g
					return tc.owned, nil
				},
				Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			ended := make(chan string, 1)
			ctx := ctxFor(t)
			if err := m.Start(ctx, bot.StartRequest{GuildID: guildID, VoiceChannelID: channel, Campaign: "ironhold-saga",
				Controls: live.NewControls(), Announce: func(string) {}, Ended: func(r string) { ended <- r }}); err != nil {
				t.Fatal(err)
			}
			st, _ := m.Status(guildID)
			select {
			case g := <-confirmed:
				if g != guildID {
					t.Errorf("confirmed guild %s", g)
				}
			case <-ctx.Done():
				t.Fatal("the empty channel's session did not stop")
			}
			// The counts settle when the session has stopped (a leave or a
			// drop is the last step of either path).
			if err := waitFor(ctx, func() bool { _, ok := m.Status(guildID); return !ok && link.counts() == tc.want }); err != nil {
				t.Fatalf("joins, leaves, drops, closes = %v, want %v: %v", link.counts(), tc.want, err)
			}
			if tc.wantEnded {
				select {
				case <-ended:
				case <-ctx.Done():
					t.Fatal("the Ended callback did not run")
				}
			}
			if s := sessionRow(t, camp, st.SessionID); s.EndedAt.IsZero() == tc.wantEnded {
				t.Errorf("session %+v: ended %v, want %v", s, !s.EndedAt.IsZero(), tc.wantEnded)
			}
			if !tc.wantEnded {
				select {
				case r := <-ended:
					t.Errorf("the Ended callback ran for a session handed over: %s", r)
				default:
				}
			}
		})
	}
}
