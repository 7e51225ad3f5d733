package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// provision makes sure the campaigns the configuration binds to guilds
// exist, so that a player's first command (an opt-out before any session)
// finds its campaign: only the DM's handle creates one.
func provision(ctx context.Context, door *access.Door, campaigns []string) error {
	var done []string
	for _, c := range campaigns {
		if slices.Contains(done, c) {
			continue
		}
		done = append(done, c)
		if _, err := door.Open(ctx, c, memory.DMViewer()); err != nil {
			return fmt.Errorf("opening campaign %q (discord.guilds): %w", c, err)
		}
	}
	return nil
}
