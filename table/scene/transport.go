package scene

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"layeh.com/gopus"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
)

// transport is the table's voice channel in a scene: the players' Opus
// frames go in as Discord would deliver them, the NPCs' frames are kept.
// It implements table.Voice.
type transport struct {
	packets chan audio.Packet
	events  chan conn.Event
	done    chan struct{}

	mu     sync.Mutex
	users  []string
	frames [][]byte
	closed bool
}

func newTransport(users []string) *transport {
	return &transport{packets: make(chan audio.Packet), events: make(chan conn.Event, 16), done: make(chan struct{}),
		users: slices.Clone(users)}
}

func (t *transport) Packets() <-chan audio.Packet { return t.packets }
func (t *transport) Events() <-chan conn.Event    { return t.events }

func (t *transport) WriteOpus(frame []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return conn.ErrClosed
	}
	t.frames = append(t.frames, slices.Clone(frame))
	return nil
}

func (t *transport) SetSpeaking(bool) error { return nil }

func (t *transport) Users() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.users)
}

func (t *transport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.done)
	}
	return nil
}

// send delivers one packet; it returns when the table has taken it.
func (t *transport) send(ctx context.Context, p audio.Packet) error {
	select {
	case t.packets <- p:
		return nil
	case <-t.done:
		return conn.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// take returns the NPC frames sent since the last take.
func (t *transport) take() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.frames
	t.frames = nil
	return f
}

// decodeFrames decodes Opus frames (48 kHz stereo, as the table sends
// them) into mono PCM.
func decodeFrames(frames [][]byte) (audio.PCM, error) {
	dec, err := gopus.NewDecoder(48000, 2)
	if err != nil {
		return audio.PCM{}, fmt.Errorf("opus decoder: %w", err)
	}
	out := audio.PCM{Rate: 48000}
	for i, f := range frames {
		pcm, err := dec.Decode(f, 960, false)
		if err != nil {
			return audio.PCM{}, fmt.Errorf("decoding frame %d of the reply: %w", i, err)
		}
		for k := 0; k+1 < len(pcm); k += 2 {
			out.Samples = append(out.Samples, int16((int32(pcm[k])+int32(pcm[k+1]))/2))
		}
	}
	if len(out.Samples) == 0 {
		return out, errors.New("the reply has no audio")
	}
	return out, nil
}
