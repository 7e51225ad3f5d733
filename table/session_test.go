package table_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestLossReachesTheLanes: a packet the transport gave up on is reported
// with the next one (Packet.Lost); the table hands that on to the lanes,
// which conceal it at once, and counts it.
func TestLossReachesTheLanes(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	r := newRig(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const gone = 20
	if err := r.send(ctx, func(i int, p *audio.Packet) bool {
		if i == gone+1 {
			p.Lost = 1
		}
		return i != gone
	}); err != nil {
		t.Fatal(err)
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

// dropCounter is an Observer that also counts dropped voice packets.
type dropCounter struct {
	table.Observer
	mu    sync.Mutex
	drops map[string]int
}

func (d *dropCounter) VoicePacketDropped(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drops[reason]++
}

func (d *dropCounter) count(reason string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.drops[reason]
}

// TestRateDropsReachTheObserver: packets beyond the per-speaker rate limit
// are counted by the table's Observer (the /metrics counter
// glyphoxa_voice_packets_dropped_total{reason="rate"}). The clock stands
// still, so a whole line of packets arrives at one instant: all but the
// burst allowance (1 s of audio) is dropped.
func TestRateDropsReachTheObserver(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	obs := &dropCounter{Observer: nopObs{}, drops: map[string]int{}}
	clk := clocktest.NewFake(time.Now())
	r := newRigWith(t, 0, nil, func(c *table.Config) { c.Observer = obs; c.Clock = clk })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// At most 1 s of the line (50 packets) passes, and a few packets of
	// the silence before it.
	want := len(r.packets) - 60
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for obs.count("rate") < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d packets dropped for rate of %d sent at one instant, want at least %d", obs.count("rate"), len(r.packets), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type nopObs struct{}

func (nopObs) ObserveStage(string, time.Duration) {}
func (nopObs) CountTurn(string)                   {}
func (nopObs) SessionStarted()                    {}
func (nopObs) SessionEnded()                      {}

// TestNoReplyToALineNotRecorded: the NPC's turn starts while its line is
// being recorded, but it speaks only once the line is recorded: a line the
// session log and the spool both refuse (here: the session's memory is
// fenced) is reported dropped, and no NPC audio is sent.
func TestNoReplyToALineNotRecorded(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	r := newRig(t, 0)
	r.s.Memory().Fence()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-r.reports:
		if !strings.HasPrefix(l.Dropped, "recording failed") || l.Reply != "" || l.Addressee != "" {
			t.Fatalf("a line not recorded: dropped %q, reply %q, addressee %q; want it dropped, unanswered", l.Dropped, l.Reply, l.Addressee)
		}
	case <-ctx.Done():
		t.Fatal("no report")
	}
	r.voice.mu.Lock()
	frames := r.voice.frames
	r.voice.mu.Unlock()
	if frames != 0 {
		t.Fatalf("%d NPC frames were sent for a line that was not recorded", frames)
	}
}
