package bot_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
)

// outageEndVoice is a voice session whose End behaves as the real one
// (voicesession.Manager.End → table.Session.End → lifecycle/session.End)
// does when PostgreSQL is down at /session end: the session stops, the
// bot leaves the channel, and End returns an error wrapping a
// *guard.PendingError (lines and the end wait in the outage spool;
// TestAttackEndDuringOutageIsProcessedLater in lifecycle/session shows
// the real stack returns it).
type outageEndVoice struct {
	bot.VoiceSessions
	mu      sync.Mutex
	running bool
}

func (v *outageEndVoice) Start(context.Context, bot.StartRequest) error {
	v.mu.Lock()
	v.running = true
	v.mu.Unlock()
	return nil
}

func (v *outageEndVoice) End(context.Context, string) error {
	v.mu.Lock()
	v.running = false
	v.mu.Unlock()
	return fmt.Errorf("ending the session's memory: %w",
		fmt.Errorf("ending session %q: %w", "live", &guard.PendingError{Records: 4, Lines: 3, Dir: "spool/c/spool"}))
}

func (v *outageEndVoice) Status(string) (bot.SessionStatus, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return bot.SessionStatus{SessionID: "live"}, v.running
}

// recordingClaims owns every guild and keeps the session each guild's
// claim carries, as lifecycle/lease stores it for the process that takes
// the guild over should this one die.
type recordingClaims struct {
	mu    sync.Mutex
	state map[string]*bot.ClaimedSession
}

func (c *recordingClaims) Claim(context.Context, string) (bool, error) { return true, nil }

func (c *recordingClaims) Running(_ context.Context, guildID string, s *bot.ClaimedSession) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state[guildID] = s
	return nil
}

func (c *recordingClaims) carried(guildID string) *bot.ClaimedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state[guildID]
}

// TestAttackEndDuringOutageClearsTheClaim: the DM types /session end while
// PostgreSQL is down. The voice session stops and the bot leaves the
// channel; the lines and the end wait in the outage spool. The guild's
// claim must stop carrying the session: otherwise, once this process's
// claim expires (an outage longer than the lease time, a crash, a
// restart), whichever process takes the guild over resumes the session the
// DM ended: it rejoins the voice channel and records into it.
func TestAttackEndDuringOutageClearsTheClaim(t *testing.T) {
	t.Parallel()
	voice := &outageEndVoice{}
	claims := &recordingClaims{state: map[string]*bot.ClaimedSession{}}
	h := newHarness(t, bot.Deps{Voice: voice, Claims: claims})
	ctx := context.Background()
	if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "live"}); err != nil {
		t.Fatal(err)
	}
	if claims.carried(guildID) == nil {
		t.Fatal("the running session is not in the guild's claim")
	}
	r := h.send(h.fake.Command(guildID, channelID, theDM, "session", discordtest.Sub("end")))
	t.Logf("/session end answered: %q", r.Data.Content)
	if s := claims.carried(guildID); s != nil {
		t.Errorf("after /session end the guild's claim still carries session %q (voice channel %s): a process taking the "+
			"guild over resumes the session the DM ended", s.SessionID, s.VoiceChannelID)
	}
}

// TestAttackResumeOfAnEndedSession: the guild's claim still carries a
// session whose end is recorded in the session log (the claim's state
// could not be cleared: /session end or a SIGTERM came while PostgreSQL
// was down, so SetState failed, and the end reached the log from the
// outage spool). The process that takes the guild over must not resume
// it: the DM ended it.
func TestAttackResumeOfAnEndedSession(t *testing.T) {
	t.Parallel()
	voice := &outageEndVoice{}
	h := newHarness(t, bot.Deps{Voice: voice})
	ctx := context.Background()
	sl := h.camp.Sessions()
	start := time.Now().UTC().Add(-time.Hour)
	if err := sl.StartSession(ctx, "live", start); err != nil {
		t.Fatal(err)
	}
	if err := sl.EndSession(ctx, "live", start.Add(50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	claimed := bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID, TextChannelID: channelID, SessionID: "live"}
	if err := h.bot.Resumable(ctx, guildID, claimed); !errors.Is(err, bot.ErrSessionEnded) {
		t.Errorf("Resumable of session %q, which the DM ended: %v, want ErrSessionEnded (a takeover would rejoin the channel and record into it)", "live", err)
	}
	// A session still running, and one whose start the log does not hold
	// yet (it waits in the stopped process's spool), are resumable.
	if err := sl.StartSession(ctx, "running", start); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"running", "not-yet-in-the-log"} {
		claimed.SessionID = id
		if err := h.bot.Resumable(ctx, guildID, claimed); err != nil {
			t.Errorf("Resumable of session %q: %v, want nil", id, err)
		}
	}
	if _, running := voice.Status(guildID); running {
		t.Error("Resumable started a voice session")
	}
}
