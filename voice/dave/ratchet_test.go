package dave

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func fixedNow() time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) }

func TestReceiveOrderAndReplay(t *testing.T) {
	base := bytes.Repeat([]byte{1}, 16)
	s := &sendState{keys: newKeyRatchet(base)}
	r := newRecvState(base)
	now := fixedNow()
	var frames [][]byte
	for i := 0; i < 5; i++ {
		f, err := s.encrypt([]byte{byte(i), 1, 2, 3}, now)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	open := func(f []byte) error {
		p, err := parseFrame(f)
		if err != nil {
			return err
		}
		_, err = r.decrypt(p, now)
		return err
	}
	for _, i := range []int{0, 3, 1, 4, 2} { // out of order is fine
		if err := open(frames[i]); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	for i := range frames {
		if err := open(frames[i]); !errors.Is(err, ErrReplay) {
			t.Fatalf("replayed frame %d: %v", i, err)
		}
	}
}

func TestGenerations(t *testing.T) {
	base := bytes.Repeat([]byte{2}, 16)
	now := fixedNow()
	s := &sendState{keys: newKeyRatchet(base), counter: 3<<24 - 3}
	r := newRecvState(base)
	var frames [][]byte
	for i := 0; i < 4; i++ { // crosses from generation 2 to 3
		f, err := s.encrypt([]byte("x"), now)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	open := func(f []byte, at time.Time) error {
		p, _ := parseFrame(f)
		_, err := r.decrypt(p, at)
		return err
	}
	for _, i := range []int{0, 2, 3} {
		if err := open(frames[i], now); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	// Frame 1 (generation 2) arrives late: its key was erased KeyExpiry
	// after generation 3 took over.
	if err := open(frames[1], now.Add(KeyExpiry+time.Second)); !errors.Is(err, ErrGeneration) {
		t.Fatalf("expired generation: %v", err)
	}
	// Jumps within MaxGenerationGap are fine, farther ones are refused.
	far, _ := (&sendState{keys: newKeyRatchet(base), counter: 200<<24 + 10}).encrypt([]byte("z"), now)
	p, _ := parseFrame(far)
	if _, err := newRecvStateAt(base, 3).decrypt(p, now); err != nil {
		t.Fatalf("in-window jump: %v", err)
	}
	tooFar, _ := (&sendState{keys: newKeyRatchet(base), counter: 255<<24 + 10}).encrypt([]byte("z"), now)
	p, _ = parseFrame(tooFar)
	if _, err := newRecvStateAt(base, 1).decrypt(p, now); !errors.Is(err, ErrGeneration) {
		t.Fatalf("jump of 254 generations: %v", err)
	}
}

func newRecvStateAt(base []byte, gen uint64) *recvState {
	r := newRecvState(base)
	r.newest = gen << 24
	r.started = true
	return r
}

func TestGenerationWrap(t *testing.T) {
	base := bytes.Repeat([]byte{4}, 16)
	now := fixedNow()
	// The sender passes generation 255 → 256; the truncated nonce's top
	// byte wraps to 0.
	s := &sendState{keys: newKeyRatchet(base), counter: 256<<24 - 1}
	r := newRecvStateAt(base, 255)
	r.keys.oldest = 255
	f, err := s.encrypt([]byte("w"), now) // counter 256<<24: nonce32 top byte 0
	if err != nil {
		t.Fatal(err)
	}
	p, _ := parseFrame(f)
	if p.nonce>>24 != 0 {
		t.Fatalf("nonce %#x", p.nonce)
	}
	if _, err := r.decrypt(p, now); err != nil {
		t.Fatalf("wrapped generation: %v", err)
	}
}
