package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// BenchmarkRecord measures recording one utterance: journaling it (one
// fsync) and adding it to the conversation. It runs on the voice path.
func BenchmarkRecord(b *testing.B) {
	store, _ := pgtest.NewStore(b, 8)
	camp := pgtest.Campaign(b, store, "c")
	ctx := context.Background()
	s, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping, StateDir: b.TempDir(),
		Summarizer: noSummary, MaxTokens: 1 << 30, ConsolidateEvery: time.Hour, MaxSpoolBytes: 1 << 30, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.Record(ctx, line(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
