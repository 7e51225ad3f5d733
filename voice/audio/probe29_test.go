package audio_test

import (
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// Probe 4 (issue 29), the table's lane with real Opus in shapes of its
// own: between two sentences the speaker's stream restarts (a new SSRC
// with lower numbers and no pause; a jump of -5000 whose first two
// packets are swapped; a jump of +40000 followed by one real loss), or
// every packet arrives twice. Both sentences are found; nothing is late
// but the copies, which do not count against the speaker's rate limit,
// and only the real loss is counted lost.
func TestProbe29LaneRestartShapes(t *testing.T) {
	sig, spans := twoSentences(t)
	second := func(ps []audio.Packet) int {
		mid := t0.Add(spans[0].End + 300*time.Millisecond)
		for i, p := range ps {
			if !p.Received.Before(mid) {
				return i
			}
		}
		t.Fatal("no packet after the first sentence")
		return 0
	}
	for _, tc := range []struct {
		name       string
		mod        func([]audio.Packet) []audio.Packet
		late, lost int
	}{
		{"a new SSRC with lower numbers, no pause", func(ps []audio.Packet) []audio.Packet {
			for i := second(ps); i < len(ps); i++ {
				ps[i].SSRC, ps[i].Sequence = 43, ps[i].Sequence-300
			}
			return ps
		}, 0, 0},
		{"a jump of -5000, its first two packets swapped", func(ps []audio.Packet) []audio.Packet {
			h := second(ps)
			for i := h; i < len(ps); i++ {
				ps[i].Sequence -= 5000
			}
			ps[h], ps[h+1] = ps[h+1], ps[h]
			ps[h].Received, ps[h+1].Received = ps[h+1].Received, ps[h].Received
			return ps
		}, 0, 0},
		{"a jump of +40000, then one packet lost", func(ps []audio.Packet) []audio.Packet {
			h := second(ps)
			for i := h; i < len(ps); i++ {
				ps[i].Sequence += 40000
			}
			return append(ps[:h+10], ps[h+11:]...)
		}, 0, 1},
		{"every packet twice", func(ps []audio.Packet) []audio.Packet {
			var out []audio.Packet
			for _, p := range ps {
				d := p
				d.Received = p.Received.Add(time.Millisecond)
				out = append(out, p, d)
			}
			return out
		}, -1, 0}, // late: one per packet, but copies of held packets are dropped uncounted
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			r := mustRouter(t, rec.config(audio.Config{}))
			ps := tc.mod(audiotest.Encode(t, sig, "111", 42, t0).Packets)
			end := ps[len(ps)-1].Received.Add(time.Second)
			if errs := audiotest.Deliver(r, ps, t0, end); len(errs) > 0 {
				t.Fatalf("push errors: %v", errs)
			}
			st, _ := r.Stats("111")
			t.Logf("%d packets; stats: %+v", len(ps), st)
			if tc.late < 0 {
				// Each copy is dropped: as late, or (a copy of a packet
				// still waiting for others) uncounted; none costs the
				// speaker's rate, so no real packet is cut.
				if n := len(ps) / 2; st.Late > n || st.Late < n-10 || st.RateDropped != 0 || st.Packets+st.Silence != n {
					t.Fatalf("late %d (want about %d), rate-dropped %d, %d of %d packets processed", st.Late, n, st.RateDropped, st.Packets+st.Silence, n)
				}
			} else if st.Late != tc.late || st.RateDropped != 0 {
				t.Fatalf("late %d, rate-dropped %d; want %d and 0", st.Late, st.RateDropped, tc.late)
			}
			if st.Lost != tc.lost {
				t.Fatalf("lost %d, want %d", st.Lost, tc.lost)
			}
			if got := rec.byUser("111"); len(got) != len(spans) {
				t.Fatalf("%d utterances, want %d", len(got), len(spans))
			}
		})
	}
}
