package conn

import (
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Probe 4 (issue 29), the reorder lane in shapes of its own: a stream that
// starts reordered across the sequence wrap, a loss across the wrap,
// reordering inside the window after a restart, a long silence with the
// numbering going on, and a restart while packets wait for a missing one.
// Arrival times are given, never read from the clock.
func TestProbe29LaneShapes(t *testing.T) {
	type in struct {
		seq uint16
		at  time.Duration
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name       string
		in         []in
		want       string
		lost, late int
	}{
		{"reordered across the wrap at the start",
			[]in{{65535, 0}, {65534, ms(1)}, {0, ms(2)}, {1, ms(20)}, {2, ms(40)}},
			"[65534 65535 0 1 2]", 0, 0},
		{"a loss across the wrap",
			[]in{{65533, 0}, {65534, ms(20)}, {65535, ms(40)}, {1, ms(80)}, {2, ms(100)}, {3, ms(120)}, {4, ms(200)}},
			"[65533 65534 65535 1 2 3 4]", 1, 0},
		{"a long silence, the numbering going on",
			[]in{{100, 0}, {101, ms(20)}, {102, ms(40)}, {103, ms(30040)}, {104, ms(30060)}, {105, ms(30080)}},
			"[100 101 102 103 104 105]", 0, 0},
		{"a jump of -5000 with the first packets after it reordered",
			[]in{{9000, 0}, {9001, ms(20)}, {9002, ms(40)}, {4001, ms(60)}, {4000, ms(61)}, {4002, ms(80)}, {4003, ms(100)}},
			"[9000 9001 9002 4000 4001 4002 4003]", 0, 0},
		{"a jump of +40000 while a packet waits for a missing one",
			[]in{{100, 0}, {101, ms(20)}, {102, ms(40)}, {104, ms(60)}, {40105, ms(70)}, {40106, ms(90)}, {40107, ms(110)}},
			"[100 101 102 104 40105 40106 40107]", 1, 0},
		{"a duplicate at the very start",
			[]in{{500, 0}, {500, ms(1)}, {501, ms(20)}, {502, ms(40)}, {503, ms(60)}},
			"[500 501 502 503]", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Unix(1_800_000_000, 0)
			var l lane
			late, lost := 0, 0
			var got []uint16
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
