package conn

import (
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// TestLaneRestartsAndStartWindow feeds a lane sequence numbers with
// arrival times and checks what it delivers, in order, and the loss it
// reports (issue 29: restarts instead of dropping the stream, no huge Lost
// on a restart, a short window at the start).
func TestLaneRestartsAndStartWindow(t *testing.T) {
	t.Parallel()
	type in struct {
		seq uint16
		at  time.Duration // arrival, from the start
	}
	run := func(first uint16, n int, from time.Duration) []in {
		var out []in
		for i := 0; i < n; i++ {
			out = append(out, in{first + uint16(i), from + time.Duration(i)*20*time.Millisecond})
		}
		return out
	}
	cat := func(parts ...[]in) []in {
		var out []in
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	seqs := func(first uint16, n int) string {
		var s []uint16
		for i := 0; i < n; i++ {
			s = append(s, first+uint16(i))
		}
		return fmt.Sprint(s)
	}
	for _, tc := range []struct {
		name       string
		in         []in
		want       string // delivered sequence numbers
		lost, late int
	}{
		{"in order", run(100, 5, 0), seqs(100, 5), 0, 0},
		{"reordered at the start", []in{{101, 0}, {100, 5 * time.Millisecond}, {102, 20 * time.Millisecond}, {103, 40 * time.Millisecond}},
			seqs(100, 4), 0, 0},
		{"two reordered at the start", []in{{102, 0}, {101, 2 * time.Millisecond}, {100, 4 * time.Millisecond}, {103, 20 * time.Millisecond}},
			seqs(100, 4), 0, 0},
		{"a real loss", cat(run(100, 5, 0), run(106, 4, 120*time.Millisecond)),
			seqs(100, 5)[:len(seqs(100, 5))-1] + " 106 107 108 109]", 1, 0},
		{"a duplicate", cat(run(100, 5, 0), []in{{103, 100 * time.Millisecond}}, run(105, 3, 110*time.Millisecond)),
			seqs(100, 8), 0, 1},
		{"jump back 5000", cat(run(10000, 10, 0), run(5000, 10, 200*time.Millisecond)),
			seqs(10000, 10)[:len(seqs(10000, 10))-1] + " " + seqs(5000, 10)[1:], 0, 0},
		{"jump ahead 40000", cat(run(100, 10, 0), run(40100, 10, 200*time.Millisecond)),
			seqs(100, 10)[:len(seqs(100, 10))-1] + " " + seqs(40100, 10)[1:], 0, 0},
		{"jump ahead 10000", cat(run(100, 10, 0), run(10100, 10, 200*time.Millisecond)),
			seqs(100, 10)[:len(seqs(100, 10))-1] + " " + seqs(10100, 10)[1:], 0, 0},
		{"SSRC reused with a lower sequence after a pause", cat(run(500, 10, 0), run(495, 10, 3*time.Second)),
			seqs(500, 10)[:len(seqs(500, 10))-1] + " " + seqs(495, 10)[1:], 0, 0},
		{"wrapping around", run(65533, 6, 0), seqs(65533, 6), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Unix(1_800_000_000, 0)
			var l lane
			late := 0
			var got []uint16
			lost := 0
			take := func(ps []audio.Packet) {
				for _, p := range ps {
					got = append(got, p.Sequence)
					lost += p.Lost
				}
			}
			for _, p := range tc.in {
				now := base.Add(p.at)
				take(l.expire(now, 60*time.Millisecond, false))
				take(l.push(audio.Packet{Sequence: p.seq, Received: now}, func() { late++ }))
			}
			take(l.expire(base.Add(time.Hour), 60*time.Millisecond, true))
			if fmt.Sprint(got) != tc.want || lost != tc.lost || late != tc.late {
				t.Fatalf("delivered %v, lost %d, late %d; want %s, lost %d, late %d", got, lost, late, tc.want, tc.lost, tc.late)
			}
		})
	}
}
