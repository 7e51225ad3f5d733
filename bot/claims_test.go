package bot_test

import (
	"context"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// fakeClaims owns the guilds the test says, and reports each claim.
type fakeClaims struct {
	mu      sync.Mutex
	owned   bool
	claimed chan string // guild id of each Claim, after it decided
}

func (c *fakeClaims) Claim(_ context.Context, guildID string) (bool, error) {
	c.mu.Lock()
	owned := c.owned
	c.mu.Unlock()
	defer func() { c.claimed <- guildID }()
	return owned, nil
}

func (c *fakeClaims) Running(context.Context, string, *bot.ClaimedSession) error { return nil }

// Among several processes, only the guild's owner answers its commands; a
// process that does not own the guild stays silent.
func TestOnlyTheGuildsOwnerAnswers(t *testing.T) {
	t.Parallel()
	claims := &fakeClaims{claimed: make(chan string, 4)}
	h := newHarness(t, bot.Deps{Claims: claims})

	silent := h.fake.Command(guildID, channelID, theDM, "session", discordtest.Sub("status"))
	if err := h.fake.Send(silent); err != nil {
		t.Fatal(err)
	}
	if g := <-claims.claimed; g != guildID {
		t.Fatalf("claimed guild %s, want %s", g, guildID)
	}

	claims.mu.Lock()
	claims.owned = true
	claims.mu.Unlock()
	answered := h.fake.Command(guildID, channelID, theDM, "session", discordtest.Sub("status"))
	if r := h.send(answered); r.Data.Content == "" {
		t.Errorf("the owner's answer is empty: %s", r.raw)
	}
	<-claims.claimed
	// The first command's handler decided before the second was sent: it
	// returned without a word.
	for _, c := range h.fake.Calls() {
		if c.Path == silent.CallbackPath() || c.Path == silent.OriginalPath(h.fake.AppID) {
			t.Errorf("a process that does not own the guild answered: %s %s %s", c.Method, c.Path, c.Body)
		}
	}
}
