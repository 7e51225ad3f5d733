package main

import (
	"context"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
)

// rechunk returns the rebuild of one session's chunks from the lines its
// log holds now (bot.Deps.Reprocess, console.Config.Reprocess): a
// forget-me and a span or a line declared non-canon took lines out of the
// session, and the chunks that held them went with them (or, for the
// lines of others, must be built again without them); the session's
// other lines are found again once it ran.
func rechunk(door *access.Door, emb embed.Embedder) func(ctx context.Context, campaign, sessionID string) error {
	return func(ctx context.Context, campaign, sessionID string) error {
		camp, err := door.Open(ctx, campaign, memory.DMViewer())
		if err != nil {
			return err
		}
		_, err = chunk.Process(ctx, camp, emb, chunk.Options{}, sessionID)
		return err
	}
}
