package dave

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// Ratchet and replay constants (from the reference implementation).
const (
	// ExporterLabel is the MLS exporter label of sender base secrets.
	ExporterLabel = "Discord Secure Frames v0"
	// KeySize is the AES-128 media key size.
	KeySize = 16
	// KeyExpiry is how long superseded keys and ratchets stay usable.
	KeyExpiry = 10 * time.Second
	// MaxGenerationGap is how far ahead of the newest generation a frame
	// may jump.
	MaxGenerationGap = 250
	// MaxMissingNonces bounds the out-of-order window.
	MaxMissingNonces = 1000
)

var (
	// ErrReplay is returned for a frame whose nonce was already accepted.
	ErrReplay = errors.New("dave: replayed frame")
	// ErrGeneration is returned for a frame whose key generation is no
	// longer or not yet available.
	ErrGeneration = errors.New("dave: key generation unavailable")
)

// SenderBaseSecret derives a sender's 16-byte base secret from the MLS
// exporter: context is the sender's user id, little-endian.
func SenderBaseSecret(g *mls.Group, userID uint64) []byte {
	return g.Export(ExporterLabel, binary.LittleEndian.AppendUint64(nil, userID), KeySize)
}

// keyRatchet hands out media keys by generation from the MLS hash
// ratchet, caching ciphers and erasing superseded generations after
// KeyExpiry.
type keyRatchet struct {
	r       *mls.HashRatchet
	keys    map[uint32]*frameCipher
	expires map[uint32]time.Time
	newest  uint32
	oldest  uint32 // lowest generation still derivable
}

func newKeyRatchet(base []byte) *keyRatchet {
	return &keyRatchet{r: mls.NewHashRatchet(base, KeySize), keys: map[uint32]*frameCipher{}, expires: map[uint32]time.Time{}}
}

// get returns the cipher of generation g.
func (k *keyRatchet) get(g uint32, now time.Time) (*frameCipher, error) {
	for gen, exp := range k.expires {
		if now.After(exp) {
			delete(k.keys, gen)
			delete(k.expires, gen)
			if gen >= k.oldest {
				k.oldest = gen + 1
			}
		}
	}
	if c, ok := k.keys[g]; ok {
		return c, nil
	}
	if g < k.r.Generation() {
		return nil, fmt.Errorf("%w: generation %d was erased", ErrGeneration, g)
	}
	for k.r.Generation() <= g {
		gen, key, _ := k.r.Next()
		c, err := newFrameCipher(key)
		if err != nil {
			return nil, err
		}
		k.keys[gen] = c
	}
	return k.keys[g], nil
}

// used records that generation g protected a frame (sent, or received
// and authenticated): it becomes the newest, and older generations expire
// KeyExpiry later. Only an authenticated frame may move it: a forged
// frame naming a later generation would otherwise have the sender's real
// generation erased.
func (k *keyRatchet) used(g uint32, now time.Time) {
	if g <= k.newest {
		return
	}
	for gen := range k.keys {
		if gen < g {
			if _, ok := k.expires[gen]; !ok {
				k.expires[gen] = now.Add(KeyExpiry)
			}
		}
	}
	k.newest = g
}

// sendState encrypts one sender's frames for one epoch.
type sendState struct {
	keys    *keyRatchet
	counter uint64 // frames sent; the truncated nonce is its low 32 bits
}

// encrypt protects an Opus frame.
func (s *sendState) encrypt(frame []byte, now time.Time) ([]byte, error) {
	s.counter++
	if s.counter>>24 > 0xFFFFFFFF {
		return nil, fmt.Errorf("dave: sender nonce space exhausted")
	}
	g := uint32(s.counter >> 24)
	c, err := s.keys.get(g, now)
	if err != nil {
		return nil, err
	}
	s.keys.used(g, now)
	return encryptFrame(make([]byte, 0, len(frame)+minSupplemental+6), c, uint32(s.counter), frame, nil)
}

// recvState decrypts one sender's frames for one epoch, rejecting
// replays.
type recvState struct {
	keys     *keyRatchet
	expiry   time.Time // zero while current
	newest   uint64    // highest big nonce accepted
	started  bool
	missing  map[uint64]struct{}
	missingQ []uint64
}

func newRecvState(base []byte) *recvState {
	return &recvState{keys: newKeyRatchet(base), missing: map[uint64]struct{}{}}
}

// decrypt opens a parsed frame, checking and recording its nonce.
func (r *recvState) decrypt(p *parsedFrame, now time.Time) ([]byte, error) {
	g8 := uint64(p.nonce >> 24)
	oldest := uint64(r.keys.oldest)
	gen := (oldest/256)*256 + g8
	if g8 < oldest%256 {
		gen += 256
	}
	if gen > 0xFFFFFFFF {
		return nil, fmt.Errorf("%w: generation %d", ErrGeneration, gen)
	}
	big := gen<<24 | uint64(p.nonce&0xFFFFFF)
	if r.started {
		if big <= r.newest {
			if _, ok := r.missing[big]; !ok {
				return nil, fmt.Errorf("%w: nonce %d", ErrReplay, p.nonce)
			}
		}
		if gen > r.newest>>24+MaxGenerationGap {
			return nil, fmt.Errorf("%w: generation %d jumps more than %d ahead", ErrGeneration, gen, MaxGenerationGap)
		}
	} else if gen > MaxGenerationGap {
		return nil, fmt.Errorf("%w: first frame at generation %d", ErrGeneration, gen)
	}
	c, err := r.keys.get(uint32(gen), now)
	if err != nil {
		return nil, err
	}
	out, err := decryptFrame(nil, c, p)
	if err != nil {
		return nil, err
	}
	r.keys.used(uint32(gen), now)
	r.accept(big)
	return out, nil
}

func (r *recvState) accept(big uint64) {
	if r.started && big <= r.newest {
		delete(r.missing, big)
		return
	}
	if r.started {
		from := r.newest + 1
		if big-from > MaxMissingNonces {
			from = big - MaxMissingNonces
		}
		for n := from; n < big; n++ {
			r.missing[n] = struct{}{}
			r.missingQ = append(r.missingQ, n)
		}
		for len(r.missingQ) > MaxMissingNonces {
			delete(r.missing, r.missingQ[0])
			r.missingQ = r.missingQ[1:]
		}
	}
	r.newest = big
	r.started = true
}
