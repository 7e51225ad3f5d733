package discordtest

import "time"

// unknownInteraction is Discord's answer to the initial response of an
// interaction it no longer accepts (more than 3 s after the click).
const unknownInteraction = `{"message": "Unknown interaction", "code": 10062}`

// token is what the fake knows of one interaction it built.
type token struct {
	born    time.Duration // on the fake's clock
	expired bool
	acked   bool
}

type callbackResult int

const (
	callbackAccepted callbackResult = iota
	callbackExpired
	callbackRepeated
)

// Expire makes Discord refuse the interaction's initial response, as it
// does once its 3 s have passed: the callback is answered 404 with code
// 10062 "Unknown interaction", and its webhook (edits, follow-ups) 404
// with code 10015.
func (s *Server) Expire(i Interaction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[i.Token]; ok {
		t.expired = true
	}
}

// SetAckWindow makes interactions expire by age: a callback arriving when
// the fake's clock (moved by Advance, never by the wall clock) is more
// than d past the interaction's building is refused as Expire refuses
// it. 0, the default, expires nothing by age.
func (s *Server) SetAckWindow(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackWindow = d
}

// Advance moves the fake's clock forward by d.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock += d
}

func (s *Server) born(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[tok] = &token{born: s.clock}
}

// callback decides an initial response for the interaction with token
// tok. Interactions the fake did not build are accepted.
func (s *Server) callback(tok string) callbackResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok {
		return callbackAccepted
	}
	switch {
	case t.acked:
		return callbackRepeated
	case t.expired || (s.ackWindow > 0 && s.clock-t.born > s.ackWindow):
		t.expired = true
		return callbackExpired
	}
	t.acked = true
	return callbackAccepted
}

// unusable reports whether tok is an interaction that was never
// acknowledged and is refused now: its webhook does not exist.
func (s *Server) unusable(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	return ok && t.expired && !t.acked
}
