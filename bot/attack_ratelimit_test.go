package bot_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

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

// TestAttackRateLimitedCall: Discord answering 429 to a REST call of the
// bot's that is not an answer to a member (a message to a channel, as the
// claim notices and undo offers are) is handled by the bot's session as
// answers are: sent again after a short limit, given up after a few
// attempts of a limit that never lifts, and at once for a limit of an hour,
// with discordgo's RateLimitError. discordgo's own handling sleeps the
// hour, uninterruptibly, and retries without end; it signals each of its
// sleeps with a RateLimit event, which must never come.
func TestAttackRateLimitedCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	sess := h.bot.Session()
	slept := make(chan *discordgo.RateLimit, 1)
	sess.AddHandler(func(_ *discordgo.Session, r *discordgo.RateLimit) {
		select {
		case slept <- r:
		default:
		}
	})
	for _, tc := range []struct {
		name  string
		fault discordtest.Fault
		times int
		sent  bool
	}{
		{"once, briefly", discordtest.RateLimited, 1, true},
		{"without end", discordtest.RateLimited, 1 << 20, false},
		{"for an hour", discordtest.RateLimitedLong, 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := h.fake.NewID() // a channel of its own: a fault left pending stays there
			path := "/channels/" + ch + "/messages"
			h.fake.FailNext(tc.times, tc.fault, discordtest.PathIs("POST", path))
			before, posted := len(h.fake.Faulted()), len(h.callsTo("POST", path))
			done := make(chan error, 1)
			go func() {
				_, err := sess.ChannelMessageSend(ch, tc.name)
				done <- err
			}()
			var err error
			select {
			case r := <-slept:
				t.Fatalf("discordgo handles the 429 itself: it sleeps %v, uninterruptibly, and sends the call again without end", r.RetryAfter)
			case err = <-done:
			}
			faulted := len(h.fake.Faulted()) - before
			if faulted < 1 || faulted > bot.RateLimitAttempts {
				t.Fatalf("%d calls were rate limited, want 1 to %d (the attempts are bounded)", faulted, bot.RateLimitAttempts)
			}
			sent := len(h.callsTo("POST", path)) - posted
			if tc.sent {
				if err != nil || sent != 1 {
					t.Fatalf("after a brief limit: %d messages sent, err %v; want the message once", sent, err)
				}
				return
			}
			var rl *discordgo.RateLimitError
			if !errors.As(err, &rl) || sent != 0 {
				t.Fatalf("%d messages sent, err %v; want none and discordgo's RateLimitError", sent, err)
			}
		})
	}
}

// TestAttackRateLimitResetOfADayAbsolute: an answer from Discord whose
// rate-limit headers give only the absolute X-RateLimit-Reset (epoch
// seconds), a day ahead, with no calls left on the route, does not stop
// the route's calls for a day: discordgo would sleep, holding the route,
// until that reset before the next call. The bot caps it as it caps
// X-RateLimit-Reset-After, and the route's next call is made.
func TestAttackRateLimitResetOfADayAbsolute(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	sess := h.bot.Session()
	h.fake.FailNext(1, discordtest.RouteLimitDayAbsolute, discordtest.PathIs("POST", "/channels/"+channelID+"/messages"))
	if _, err := sess.ChannelMessageSend(channelID, "first"); err != nil {
		t.Fatal(err)
	}
	if n := len(h.fake.Faulted()); n != 1 {
		t.Fatalf("the fault applied to %d calls, want 1", n)
	}
	rl := sess.Ratelimiter
	if wait := rl.GetWaitTime(rl.GetBucket(discordgo.EndpointChannelMessages(channelID)), 1); wait > bot.MaxRateLimitReset {
		t.Fatalf("the route's next call waits %v, want at most %v", wait.Round(time.Second), bot.MaxRateLimitReset)
	}
	if _, err := sess.ChannelMessageSend(channelID, "second"); err != nil {
		t.Fatal(err)
	}
}
