package stt_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

// TestAttackStreamSizes: a streaming provider that answers an utterance
// with one message of megabytes, or with results that never end, fails the
// stream with an error that names the limit, at once: the bot neither holds
// what such a peer sends nor waits for its time-out, and the batch endpoint
// then transcribes the utterance, so the line is not lost.
func TestAttackStreamSizes(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	dgFake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer dgFake.Close()
	oaFake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer oaFake.Close()
	type fake interface{ SetFailure(stttest.Failure) }
	type streamBatcher interface {
		stt.StreamRecognizer
		TranscribeBatch(ctx context.Context, pcm audio.PCM, h stt.Hints) (stt.Transcript, error)
	}
	for _, p := range []struct {
		name string
		fake fake
		rec  streamBatcher
	}{
		{"deepgram", dgFake, &stt.Deepgram{BaseURL: dgFake.URL, NoFallback: true}},
		{"openai-realtime", oaFake, &stt.OpenAIRealtime{BaseURL: oaFake.URL()}},
	} {
		for _, f := range []struct {
			name    string
			failure stttest.Failure
		}{{"oversized", stttest.Oversized}, {"flood", stttest.Flood}} {
			t.Run(p.name+"/"+f.name, func(t *testing.T) {
				p.fake.SetFailure(f.failure)
				defer p.fake.SetFailure(stttest.OK)
				// The deadline is a safety net only: a bounded stream fails
				// long before it, by the size of what it received.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				s, err := p.rec.OpenStream(ctx, stt.Hints{})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if err := s.Send(u.Audio.Samples); err != nil {
					t.Fatal(err)
				}
				tr, err := s.Finish(ctx)
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Timeout() || !errors.Is(err, stt.ErrTooLarge) {
					t.Fatalf("a %d-byte transcript, error %v; want a provider error for a stream too large (not a time-out)", len(tr.Text), err)
				}
				t.Log(err)
				if len(err.Error()) > 1000 {
					t.Errorf("the error is %d bytes long", len(err.Error()))
				}
				if tr, err := p.rec.TranscribeBatch(ctx, u.Audio, stt.Hints{}); err != nil || tr.Text != said {
					t.Fatalf("batch after the stream failed: %q, %v", tr.Text, err)
				}
			})
		}
	}
}

// TestAttackBatchOversized: a batch endpoint that answers an utterance
// with megabytes of text gets an error naming the limit; its text never
// becomes a player's line.
func TestAttackBatchOversized(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	dgFake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer dgFake.Close()
	dgFake.SetFailure(stttest.OversizedBatch)
	oaFake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer oaFake.Close()
	oaFake.SetFailure(stttest.OversizedBatch)
	for name, rec := range map[string]stt.Recognizer{
		"deepgram": &stt.Deepgram{BaseURL: dgFake.URL, Dialer: brokenDialer()},
		"openai":   &stt.OpenAI{BaseURL: oaFake.URL()},
	} {
		t.Run(name, func(t *testing.T) {
			tr, err := rec.Transcribe(context.Background(), u.Audio, stt.Hints{})
			var pe *provider.Error
			if !errors.As(err, &pe) || !errors.Is(err, stt.ErrTooLarge) {
				t.Fatalf("a %d-byte transcript, error %v; want a provider error for a transcript too large", len(tr.Text), err)
			}
			t.Log(err)
		})
	}
}

// stallingConn is a connection whose writes stop being taken once stalled
// is closed, as a provider that stops reading leaves a TCP connection:
// a write then blocks until its deadline passes or the connection closes.
type stallingConn struct {
	net.Conn
	stalled chan struct{}
	closed  chan struct{}
	once    sync.Once
	mu      sync.Mutex
	dl      time.Time
	undated bool // a write came while stalled with no deadline set
}

// errUndatedWrite fails a write to a stalled connection that has no
// deadline: without the stall's end it would never return.
var errUndatedWrite = errors.New("a write with no deadline to a peer that reads nothing")

// stallAfterHandshake is a stallingConn that stalls once the websocket
// handshake (its first write) was sent: the peer accepts the stream and
// reads nothing more.
type stallAfterHandshake struct {
	*stallingConn
	writes int
}

func (c *stallAfterHandshake) Write(b []byte) (int, error) {
	c.writes++
	if c.writes == 2 {
		close(c.stalled)
	}
	return c.stallingConn.Write(b)
}

func (c *stallingConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.dl = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallingConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.dl = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stallingConn) Write(b []byte) (int, error) {
	select {
	case <-c.stalled:
	default:
		return c.Conn.Write(b)
	}
	c.mu.Lock()
	dl := c.dl
	if dl.IsZero() {
		c.undated = true
	}
	c.mu.Unlock()
	if dl.IsZero() {
		// It would block for ever: fail it, and let the test say so.
		return 0, errUndatedWrite
	}
	expired := time.NewTimer(time.Until(dl))
	defer expired.Stop()
	select {
	case <-expired.C:
		return 0, os.ErrDeadlineExceeded
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

func (c *stallingConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestAttackStreamStopsReading: a streaming provider that stops reading
// the audio (its connection takes no more bytes) fails the stream's Send
// with an error once the write has waited the provider's time-out,
// instead of blocking the utterance's goroutine for ever.
func TestAttackStreamStopsReading(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	fake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer fake.Close()
	stalled := make(chan struct{})
	dialer := &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallingConn{Conn: c, stalled: stalled, closed: make(chan struct{})}, nil
	}}
	dg := &stt.Deepgram{BaseURL: fake.URL, NoFallback: true, Dialer: dialer, Timeout: time.Second}
	s, err := dg.Stream(context.Background(), stt.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(u.Audio.Samples[:1600]); err != nil {
		t.Fatal(err)
	}
	close(stalled)
	var pe *provider.Error
	for i := 0; ; i++ {
		err = s.Send(u.Audio.Samples[:1600])
		if err != nil {
			break
		}
		if i > 1000 {
			t.Fatal("a thousand sends were taken by a connection that takes nothing")
		}
	}
	if !errors.As(err, &pe) || !pe.Timeout() {
		t.Fatalf("Send on a stalled stream: %v; want a provider error that timed out", err)
	}
	t.Log(err)
}

// TestAttackRealtimeStreamNeverReads: a realtime speech-to-text server that
// accepts the stream and then reads nothing (not even the session.update
// that configures it) fails the stream's opening with a provider error
// that timed out, within the stream's write time-out or the context's end,
// instead of blocking the utterance's goroutine for ever.
func TestAttackRealtimeStreamNeverReads(t *testing.T) {
	audiotest.CheckLeaks(t)
	fake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer fake.Close()
	var conn *stallAfterHandshake
	dialer := &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn = &stallAfterHandshake{stallingConn: &stallingConn{Conn: c, stalled: make(chan struct{}), closed: make(chan struct{})}}
		return conn, nil
	}}
	rt := &stt.OpenAIRealtime{BaseURL: fake.URL(), Dialer: dialer}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := rt.Stream(ctx, stt.Hints{})
	if err == nil {
		s.Close()
		t.Fatal("a stream opened on a server that reads nothing")
	}
	conn.mu.Lock()
	undated := conn.undated
	conn.mu.Unlock()
	if undated {
		t.Fatalf("the session.update was written with no deadline (it would block for ever): %v", err)
	}
	var pe *provider.Error
	if !errors.As(err, &pe) || !pe.Timeout() {
		t.Fatalf("opening a stream on a server that reads nothing: %v; want a provider error that timed out", err)
	}
	t.Log(err)
}
