package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// TestAttackInitTokenCheckRateLimited: `glyphoxa init` checks the token
// with a discordgo session of its own. Discord's edge (or a proxy before
// it) answers that check with a 429 asking to wait an hour. discordgo's
// own handling slept the hour, uninterruptibly, and sent the call again:
// init hung where it should say what happened. The check now goes through
// the bot's bounded REST handling: a wait past its cap is given up at once
// with discordgo's rate-limit error.
func TestAttackInitTokenCheckRateLimited(t *testing.T) {
	t.Parallel()
	fake, sess := fakeDiscord(t)
	fake.FailNext(1, discordtest.RateLimitedLong, func(c discordtest.Call) bool { return strings.Contains(c.Path, "/users/@me") })
	e := &env{discord: sess, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() {
		_, err := checkToken(context.Background(), e, goodToken)
		done <- err
	}()
	// A hang guard, not a budget: the bounded check sleeps not at all.
	select {
	case err := <-done:
		var rl *discordgo.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("the rate-limited check answered %v, want discordgo's rate-limit error", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("init's token check still waits out an hour-long 429 (discordgo's uninterruptible retry)")
	}
}
