package bot_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackRateLimitedAnswer: Discord answering the bot's answer to a
// member with 429 (rate limited) is waited out as asked, a few times at
// most: a short limit once costs the member nothing, a limit that never
// lifts ends the attempts (the handler returns, an Error names the
// interaction), and a limit of an hour is not slept through by the answer
// (discordgo's own handling sleeps and retries without end).
func TestAttackRateLimitedAnswer(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	logs := &logRecords{}
	h := newHarnessLogged(t, bot.Deps{}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}}, store, slog.New(logs))
	for _, tc := range []struct {
		name     string
		fault    discordtest.Fault
		times    int
		answered bool
	}{
		{"once, briefly", discordtest.RateLimited, 1, true},
		{"without end", discordtest.RateLimited, 1 << 20, false},
		{"for an hour", discordtest.RateLimitedLong, 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search",
				discordtest.Str("query", "Grimjaw"), discordtest.Str("mode", "text")))
			before := len(h.fake.Faulted())
			h.fake.FailNext(tc.times, tc.fault, patchOriginal(h)(i))
			r := h.send(i) // returns once the handler did
			faulted := len(h.fake.Faulted()) - before
			if faulted == 0 || faulted > 5 {
				t.Fatalf("%d edits were rate limited, want 1 to 5 (the attempts are bounded)", faulted)
			}
			edits := len(h.callsTo("PATCH", i.OriginalPath(h.fake.AppID)))
			lv := levelsAbout(logs, i.ID)
			if tc.answered {
				if edits != 1 || !strings.Contains(r.Data.Content, "Grimjaw") {
					t.Fatalf("%d edits taken, answer %q; want the answer once after the limit", edits, r.Data.Content)
				}
				if lv[slog.LevelError] != 0 {
					t.Errorf("log levels %v; a brief limit is no error", lv)
				}
				return
			}
			if edits != 0 || lv[slog.LevelError] == 0 {
				t.Errorf("%d edits taken, log levels %v; want none and an Error naming the interaction", edits, lv)
			}
		})
	}
}

// TestAttackRateLimitHeadersOfADay: an answer from Discord whose headers
// say every route is out of calls for a day (a broken edge or proxy) does
// not stop the bot's calls for a day: discordgo waits out such headers
// uninterruptibly before each call, so the bot caps what it takes from
// them (maxRateLimitReset), and the member's answer is sent once that
// shorter wait is over.
func TestAttackRateLimitHeadersOfADay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search",
		discordtest.Str("query", "Grimjaw"), discordtest.Str("mode", "text")))
	h.fake.FailNext(1, discordtest.GlobalLimitDay, postCallback(i))
	r := h.send(i) // returns once the handler did, the edit included
	if n := len(h.fake.Faulted()); n != 1 {
		t.Fatalf("the fault applied to %d calls, want 1", n)
	}
	if !strings.Contains(r.Data.Content, "Grimjaw") {
		t.Fatalf("the answer after a day's rate-limit headers: %q", r.Data.Content)
	}
}
