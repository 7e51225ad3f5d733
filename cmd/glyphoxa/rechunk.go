package main

import (
	"context"
	"log/slog"

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
// other lines are found again once it ran. The mark those left in the
// database (postgres.RechunkStage) is cleared once it ran.
func rechunk(door *access.Door, emb embed.Embedder) func(ctx context.Context, campaign, sessionID string) error {
	return func(ctx context.Context, campaign, sessionID string) error {
		camp, err := door.Open(ctx, campaign, memory.DMViewer())
		if err != nil {
			return err
		}
		proc, err := camp.Processing()
		if err != nil {
			return err
		}
		return proc.Rechunked(ctx, sessionID, func(ctx context.Context) error {
			_, err := chunk.Process(ctx, camp, emb, chunk.Options{}, sessionID)
			return err
		})
	}
}

// rechunkOwed rebuilds the chunks of the sessions of campaign whose lines
// a forget-me or a non-canon span took out when the process that did it
// died (or lost the database) before it rebuilt them. serve runs it at
// start. Each failure is logged; the session stays owed.
func rechunkOwed(ctx context.Context, door *access.Door, emb embed.Embedder, campaign string, log *slog.Logger) {
	camp, err := door.Open(ctx, campaign, memory.DMViewer())
	if err != nil {
		log.Error("rebuilding owed chunks", "campaign", campaign, "err", err)
		return
	}
	proc, err := camp.Processing()
	if err != nil {
		log.Error("rebuilding owed chunks", "campaign", campaign, "err", err)
		return
	}
	ids, err := proc.RechunkOwed(ctx)
	if err != nil {
		log.Error("rebuilding owed chunks", "campaign", campaign, "err", err)
		return
	}
	for _, id := range ids {
		// Skipped when another process rebuilt it meanwhile (an import's
		// chunking, a forget-me's rebuild), which this waits for.
		err := proc.RebuildOwed(ctx, id, func(ctx context.Context) error {
			_, err := chunk.Process(ctx, camp, emb, chunk.Options{}, id)
			return err
		})
		if err != nil {
			log.Error("rebuilding the chunks of a session lines were taken out of", "campaign", campaign, "session", id, "err", err)
			continue
		}
		log.Info("rebuilt the chunks of a session lines were taken out of", "campaign", campaign, "session", id)
	}
}
