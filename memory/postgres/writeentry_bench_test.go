package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// BenchmarkWriteEntry measures appending one line to a session's log (the
// live path of every utterance: the session's row, the line, its count).
// Keeping the count (migration 0037) took it from 218-246 to 273-295 µs a
// line on a 2-core machine (3 runs of 3,000 each):
//
//	go test ./memory/postgres -run '^$' -bench WriteEntry -benchtime 2000x
func BenchmarkWriteEntry(b *testing.B) {
	s, _ := pgtest.NewStore(b, 8)
	l := pgtest.Campaign(b, s, "bench").Sessions()
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	i := 0
	for b.Loop() {
		i++
		if _, err := l.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "ana", SpeakerName: "Ana",
			Text: fmt.Sprintf("line %d of the evening", i), At: at.Add(time.Duration(i) * time.Second)}); err != nil {
			b.Fatal(err)
		}
	}
}
