package table_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

// gatedClock is the system clock whose timers start only once gate is
// closed: the audio lanes, which end an utterance on their ticks, keep it
// open until then.
type gatedClock struct{ gate chan struct{} }

func (gatedClock) Now() time.Time { return time.Now() }

func (g gatedClock) NewTimer(d time.Duration) clock.Timer {
	t := &gatedTimer{c: make(chan time.Time, 1), stop: make(chan struct{})}
	go func() {
		select {
		case <-g.gate:
		case <-t.stop:
			return
		}
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case now := <-tm.C:
			t.c <- now
		case <-t.stop:
		}
	}()
	return t
}

type gatedTimer struct {
	c    chan time.Time
	stop chan struct{}
	once sync.Once
}

func (t *gatedTimer) C() <-chan time.Time { return t.c }
func (t *gatedTimer) Stop() bool          { t.once.Do(func() { close(t.stop) }); return true }

// openSpy is the rig's Deepgram, telling when a stream is opened.
type openSpy struct {
	*stt.Deepgram
	opened chan struct{}
}

func (o openSpy) OpenStream(ctx context.Context, h stt.Hints) (stt.Stream, error) {
	st, err := o.Deepgram.OpenStream(ctx, h)
	select {
	case o.opened <- struct{}{}:
	default:
	}
	return st, err
}

// TestWholeUtteranceStreamOpensEarly: without streaming, Deepgram still
// gets the utterance through its live endpoint, whole after it ended; the
// stream is opened while the player speaks (the utterance is still open:
// the lanes' ticks, which end it, have not started), so the end of speech
// waits for no connection. The line is transcribed from the one stream,
// recorded and answered, and nothing is addressed early.
func TestWholeUtteranceStreamOpensEarly(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	gate := make(chan struct{})
	var spy openSpy
	r := newRigWith(t, 0, nil, func(c *table.Config) {
		spy = openSpy{Deepgram: c.Providers.STT.(*stt.Deepgram), opened: make(chan struct{}, 1)}
		c.Providers.STT, c.Clock = spy, gatedClock{gate: gate}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard only
	defer cancel()
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-spy.opened:
	case <-ctx.Done():
		close(gate)
		t.Fatal("no speech-to-text stream was opened while the utterance was open")
	}
	if n := len(r.dg.Calls()); n != 0 {
		t.Fatalf("%d transcriptions before the utterance ended", n)
	}
	close(gate)
	var l table.LineReport
	select {
	case l = <-r.reports:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if l.Error != "" || l.Addressee != "grimjaw" || !strings.Contains(l.Corrected, "Grimjaw") {
		t.Fatalf("line %q answered by %q (error %q), want Grimjaw's answer", l.Corrected, l.Addressee, l.Error)
	}
	if got, want := len(strings.Fields(l.Heard)), len(strings.Fields(heard))+1; got != want {
		t.Fatalf("heard %q, want the final transcript", l.Heard)
	}
	if streamed, batch := streamCalls(r.dg.Calls()); streamed != 1 || batch != 0 {
		t.Fatalf("%d streamed and %d batch requests, want 1 stream", streamed, batch)
	}
	if l.Timing.Addressed != 0 {
		t.Fatalf("addressed early (at %v) without streaming", l.Timing.Addressed)
	}
}

// TestWholeUtteranceStreamRefused: when the stream opened ahead is
// refused, the utterance goes to Transcribe as before (its own stream,
// refused too, then the batch endpoint): recorded and answered.
func TestWholeUtteranceStreamRefused(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	r := newRig(t, 0)
	r.dg.SetFailure(stttest.RefuseStream)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard only
	defer cancel()
	l, err := r.turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Dropped != "" || !strings.Contains(l.Corrected, "Grimjaw") || l.Addressee != "grimjaw" {
		t.Fatalf("line %q (dropped %q) answered by %q, want it recorded and answered", l.Corrected, l.Dropped, l.Addressee)
	}
	if streamed, batch := streamCalls(r.dg.Calls()); streamed != 0 || batch != 1 {
		t.Fatalf("%d streamed and %d batch requests, want the batch fallback alone", streamed, batch)
	}
}
