package table

import (
	"context"
	"slices"
	"sync"
	"time"
)

// scenePlayers is the optional capability of Controls that says which
// players were in the scene when the DM split the party (a
// *live.Controls).
type scenePlayers interface {
	// PlayersAt are the user ids of the players in the scene at time t;
	// empty when the party was not split.
	PlayersAt(t time.Time) []string
}

// presence remembers the last set of present players recorded, so that
// a span is written only when the set changes.
type presence struct {
	mu   sync.Mutex
	last []string
	set  bool
}

// present are the players present for a line said at: those in the voice
// channel now (not opted out) and, if the DM had split the party when it
// was said, in that scene; sorted. The scene is the one in force at the
// line's time, not when the line is processed: the last line of a split
// scene, transcribed after the DM rejoined the party, was not heard by
// the others' characters.
func (s *Session) present(at time.Time) []string {
	users := s.voice.Users()
	var scene []string
	if sp, ok := s.cfg.Controls.(scenePlayers); ok {
		scene = sp.PlayersAt(at)
	}
	var opted map[string]bool
	if m := s.optedOut.Load(); m != nil {
		opted = *m
	}
	out := []string{}
	for _, u := range users {
		if opted[u] || (len(scene) > 0 && !slices.Contains(scene, u)) {
			continue
		}
		out = append(out, u)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// notePresence records, when it changed, who is present from at on (the
// time of the line about to be recorded). The write goes through the
// session's memory guard (spooled during an outage) on a goroutine the
// session owns, off the turn's path.
func (s *Session) notePresence(at time.Time) {
	now := s.present(at)
	s.pres.mu.Lock()
	if s.pres.set && slices.Equal(s.pres.last, now) {
		s.pres.mu.Unlock()
		return
	}
	s.pres.last, s.pres.set = now, true
	s.pres.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.work, s.cfg.Settings.TranscribeTimeout)
		defer cancel()
		if err := s.mem.RecordPresence(ctx, at, now); err != nil {
			// An outage is spooled by the guard; this is a refusal (a
			// store without presence, the session ended).
			s.log.Error("recording who is present failed", "players", now, "err", err)
		}
	}()
}
