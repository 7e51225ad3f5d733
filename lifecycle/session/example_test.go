package session_test

import (
	"context"
	"log"
	"os/signal"
	"syscall"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Example wires a session to a campaign's memory and runs it until SIGTERM.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	store, err := postgres.NewStore(ctx, "postgres://localhost/glyphoxa", 1536)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	camp, err := store.Campaign(ctx, "curse-of-the-sunstone")
	if err != nil {
		log.Fatal(err)
	}
	client, err := llm.New(llm.Config{BaseURL: "https://api.openai.com/v1", APIKey: "sk-...", Model: "gpt-4o-mini"})
	if err != nil {
		log.Fatal(err)
	}
	proc, err := postsession.New(postsession.Config{
		// L2: chunking and embedding, e.g. a postsession.L2Func around the
		// chunker.
		Transcript: camp.Sessions(),
		Graph:      camp.Graph(),
		Extractor:  postsession.NewOpenAIExtractor(client, "gpt-4o-mini"),
		Progress:   postsession.NewStoredProgress(camp.Processing()),
	})
	if err != nil {
		log.Fatal(err)
	}
	// Sessions a crash interrupted are finished first.
	if _, err := proc.RunUnfinished(ctx); err != nil {
		log.Print(err)
	}

	s, err := session.Start(ctx, session.Config{
		SessionID:   "2026-03-01",
		Log:         camp.Sessions(),
		Ping:        store.Ping,
		StateDir:    "/var/lib/glyphoxa/curse-of-the-sunstone",
		Summarizer:  contextmgr.NewOpenAISummarizer(client, "gpt-4o-mini"),
		PostSession: proc,
	})
	if err != nil {
		log.Fatal(err)
	}
	// The voice pipeline records every utterance…
	_ = s.Record(ctx, memory.TranscriptEntry{SpeakerID: "1234", SpeakerName: "Ayla", Text: "Grimjaw, what do you want for the stone?"})
	// …and builds each NPC turn on s.Messages().

	if err := s.Run(ctx); err != nil { // until SIGTERM, then a bounded shutdown
		log.Print(err)
	}
}
