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

// presence is the session's presence spans as this process wrote them,
// so that a line is compared with the span in force at its own time, not
// with the last span written: lines are timed at the start of their
// utterance but noted when their speech-to-text is done, out of order (a
// long narration started first is transcribed after a short answer).
type presence struct {
	mu sync.Mutex
	// spans are the rows written, sorted by time (each at a microsecond,
	// the store's resolution).
	spans []span
	// tail is closed when the last write queued is done (nil before the
	// first): writes go one after the other, in the order they were
	// decided.
	tail chan struct{}
}

// span is one presence row: the players present from at on, whether the
// party was split, and written, closed when its row is written.
type span struct {
	at      time.Time
	players []string
	split   bool
	written chan struct{}
	// last is the time of the latest line noted in the span (at most: a
	// span split by a later row keeps it); zero when none was.
	last time.Time
}

// covering is the index of the span in force at t (-1: none).
func (p *presence) covering(t time.Time) int {
	i, found := slices.BinarySearchFunc(p.spans, t, func(s span, t time.Time) int { return s.at.Compare(t) })
	if found {
		return i
	}
	return i - 1
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

// notePresence records who is present at at and whether the party is
// split (the time of the line of speaker about to be recorded; speaker is
// empty for an NPC's line), when that differs from the span in force at
// at. The write goes through the session's memory guard (spooled during
// an outage) on a goroutine the session owns, off the turn's path. It
// reports whether the line was said outside a split scene (see present):
// then the scene's NPCs did not hear it either.
//
// Lines are noted out of order (timed at their start, noted when
// transcribed), so the span a line falls in may be older than the last
// one written: a span written at at then splits it, and, when a line
// later than at was already noted in it, the span it split is written
// again a microsecond after at (first, before the span at at), so that
// the lines after at keep the presence they were recorded with. Two lines
// in the same microsecond with different presences share the span: its
// players are those both lines had, and it is split if either was (a
// line then reaches fewer readers, never more).
//
// written is closed when the span the line falls in is written (nil when
// none was written yet): the line must be recorded after it (see
// awaitPresence). A line of a split scene written before the span saying
// the party was split would read, until the span arrived (or for good,
// were the process killed between the two), as said with the party
// together: a public recap would tell it.
func (s *Session) notePresence(at time.Time, speaker string) (outside bool, written <-chan struct{}) {
	now, outside, split := s.present(at, speaker)
	key := at.UTC().Truncate(time.Microsecond)
	p := &s.pres
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.covering(key)
	if i >= 0 {
		cur := &p.spans[i]
		if cur.at.Equal(key) {
			now = slices.DeleteFunc(now, func(u string) bool { return !slices.Contains(cur.players, u) })
			split = split || cur.split
		}
		if slices.Equal(cur.players, now) && cur.split == split {
			if key.After(cur.last) {
				cur.last = key
			}
			return outside, cur.written
		}
	}
	var rows []span
	if i >= 0 && p.spans[i].last.After(key) {
		// Lines after at were recorded in span i: they keep it.
		next := key.Add(time.Microsecond)
		if i+1 == len(p.spans) || p.spans[i+1].at.After(next) {
			rows = append(rows, span{at: next, players: p.spans[i].players, split: p.spans[i].split, last: p.spans[i].last})
		}
	}
	rows = append(rows, span{at: key, players: now, split: split, last: key})
	done := make(chan struct{})
	for _, r := range rows {
		r.written = done
		j, found := slices.BinarySearchFunc(p.spans, r.at, func(s span, t time.Time) int { return s.at.Compare(t) })
		if found {
			p.spans[j] = r
		} else {
			p.spans = slices.Insert(p.spans, j, r)
		}
	}
	prev := p.tail
	p.tail = done
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		awaitPresence(s.work, prev) // in the order decided
		ctx, cancel := context.WithTimeout(s.work, s.cfg.Settings.TranscribeTimeout)
		defer cancel()
		for _, r := range rows {
			if err := s.mem.RecordPresence(ctx, r.at, r.players, r.split); err != nil {
				// An outage is spooled by the guard; this is a refusal (a
				// store without presence, the session ended).
				s.log.Error("recording who is present failed", "at", r.at, "players", r.players, "split", r.split, "err", err)
			}
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
