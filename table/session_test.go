package table_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestLossReachesTheLanes: a packet the transport gave up on is reported
// with the next one (Packet.Lost); the table hands that on to the lanes,
// which conceal it at once, and counts it.
func TestLossReachesTheLanes(t *testing.T) {
	audiotest.Need(t, "espeak-ng")
	r := newRig(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const gone = 20
	for i, p := range r.packets {
		if i != gone {
			lost := 0
			if i == gone+1 {
				lost = 1
			}
			r.voice.packets <- audio.Packet{UserID: player, SSRC: 1, Sequence: r.seq, Timestamp: r.ts, Opus: p.Opus, Lost: lost}
		}
		r.seq++
		r.ts += 960
	}
	select {
	case l := <-r.reports:
		if l.Corrected == "" || l.Dropped != "" {
			t.Fatalf("the line with a lost packet was not recorded: %+v", l)
		}
	case <-ctx.Done():
		t.Fatal("no report")
	}
	if st := r.s.Status(); st.LostPackets != 1 {
		t.Fatalf("lost packets %d, want 1", st.LostPackets)
	}
}
