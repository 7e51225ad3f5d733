package bot

import (
	"context"

	"github.com/bwmarrin/discordgo"

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

// WithHandled tells f each interaction's id once its handler returned.
func WithHandled(f func(id string)) Option { return func(b *Bot) { b.handled = f } }
