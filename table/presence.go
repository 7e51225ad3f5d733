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

// sceneSplit is scenePlayers with the DM who split the party (a
// *live.Controls).
type sceneSplit interface {
	SplitAt(t time.Time) (players []string, by string)
}

// presence remembers the last set of present players recorded, and
// whether the party was split, so that a span is written only when either
// changes.
type presence struct {
	mu    sync.Mutex
	last  []string
	split bool
	set   bool
	// written is closed when the last span's write is done (nil before
	// the first).
	written chan struct{}
}

// present are the players present for a line speaker said at: those in
// the voice channel now (not opted out) and, if the DM had split the
// party when it was said, in that scene; sorted. The scene is the one in
// force at the line's time, not when the line is processed: the last line
// of a split scene, transcribed after the DM rejoined the party, was not
// heard by the others' characters. outside reports a line said across a
// split party by someone outside the scene other than the DM who split it
// (a player at the table, with a character or not): nobody in the scene
// heard it, so present is empty.
//
// split reports that the party was split at at: the span the line opens
// or continues is one only part of the party witnessed, which the store
// keeps from every reader but the scene's players and the DM (a public
// recap, "any player"); a line said outside the scene is in it too.
func (s *Session) present(at time.Time, speaker string) (present []string, outside, split bool) {
	scene, by := s.splitAt(at)
	var opted map[string]bool
	if m := s.optedOut.Load(); m != nil {
		opted = *m
	}
	present, outside = witnesses(s.voice.Users(), scene, by, opted, speaker)
	return present, outside, len(scene) > 0
}

// splitAt is the scene's players if the DM had split the party at at
// (empty: not split), and the DM who split it when the controls know.
func (s *Session) splitAt(at time.Time) (scene []string, by string) {
	switch sp := s.cfg.Controls.(type) {
	case sceneSplit:
		return sp.SplitAt(at)
	case scenePlayers:
		return sp.PlayersAt(at), ""
	}
	return nil, ""
}

// witnesses are the users (not opted out) who hear a line of speaker
// when the party is split into scene (set by DM by; empty: not split):
// everyone when not split; the scene's players when the speaker is in it,
// is the DM who split it, or is no one (an NPC's line, speaker empty or
// an NPC id passed as ""); nobody when the speaker is at the table
// outside the scene (outside).
func witnesses(users, scene []string, by string, opted map[string]bool, speaker string) (present []string, outside bool) {
	if len(scene) > 0 && speaker != "" && speaker != by && !slices.Contains(scene, speaker) {
		return []string{}, true
	}
	out := []string{}
	for _, u := range users {
		if opted[u] || (len(scene) > 0 && !slices.Contains(scene, u)) {
			continue
		}
		out = append(out, u)
	}
	slices.Sort(out)
	return slices.Compact(out), false
}

// notePresence records, when it changed, who is present from at on and
// whether the party is split (the time of the line of speaker about to be
// recorded; speaker is empty for an NPC's line). The write goes through the session's memory guard
// (spooled during an outage) on a goroutine the session owns, off the
// turn's path. It reports whether the line was said outside a split scene
// (see present): then the scene's NPCs did not hear it either.
//
// written is closed when the last span's write is done (nil when none was
// written yet): the line must be recorded after it (see
// awaitPresence). A line of a split scene written before the span saying
// the party was split would read, until the span arrived (or for good,
// were the process killed between the two), as said with the party
// together: a public recap would tell it.
func (s *Session) notePresence(at time.Time, speaker string) (outside bool, written <-chan struct{}) {
	now, outside, split := s.present(at, speaker)
	s.pres.mu.Lock()
	if s.pres.set && slices.Equal(s.pres.last, now) && s.pres.split == split {
		written = s.pres.written
		s.pres.mu.Unlock()
		return outside, written
	}
	done := make(chan struct{})
	s.pres.last, s.pres.split, s.pres.set, s.pres.written = now, split, true, done
	s.pres.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		ctx, cancel := context.WithTimeout(s.work, s.cfg.Settings.TranscribeTimeout)
		defer cancel()
		if err := s.mem.RecordPresence(ctx, at, now, split); err != nil {
			// An outage is spooled by the guard; this is a refusal (a
			// store without presence, the session ended).
			s.log.Error("recording who is present failed", "players", now, "split", split, "err", err)
		}
	}()
	return outside, done
}

// awaitPresence waits until the presence span written (from notePresence)
// is recorded, or ctx ends.
func awaitPresence(ctx context.Context, written <-chan struct{}) {
	if written == nil {
		return
	}
	select {
	case <-written:
	case <-ctx.Done():
	}
}

// mayAddress reports whether a line user says at may reach an NPC: they
// did not opt out, and they are not at the table outside a split scene
// (see present). Reading an NPC's context ahead of a line (prefetch) is
// for such speakers only.
func (s *Session) mayAddress(user string, at time.Time) bool {
	if m := s.optedOut.Load(); m != nil && (*m)[user] {
		return false
	}
	scene, by := s.splitAt(at)
	_, outside := witnesses(nil, scene, by, nil, user)
	return !outside
}
