package bot

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// CommandSpecs exposes the registered commands to the golden-file test.
var CommandSpecs = commandSpecs

// CampaignFor opens the campaign of guildID as member m reads it, as a
// command m runs does.
func (b *Bot) CampaignFor(ctx context.Context, guildID string, m *discordgo.Member) (*memaccess.Campaign, error) {
	g, _ := b.guild(guildID)
	return b.campaignFor(ctx, g, &discordgo.Interaction{GuildID: guildID, Member: m})
}

// WithClock times the watch on deferred replies by c.
func WithClock(c clock.Clock) Option { return func(b *Bot) { b.clock = c } }

// WatchAfter is how long after its start a deferred reply still
// unanswered is answered by the bot.
const WatchAfter = interactionTimeout + watchGrace

// WithHandled tells f each interaction's id once its handler returned.
func WithHandled(f func(id string)) Option { return func(b *Bot) { b.handled = f } }

// MaxRateLimitReset is the longest wait the bot takes from Discord's
// rate-limit headers and 429s.
const MaxRateLimitReset = maxRateLimitReset

// RateLimitAttempts is how many times a REST call is sent while rate
// limited.
const RateLimitAttempts = rateLimitAttempts
