package table

import (
	"context"

	"github.com/glyphoxa/glyphoxa/correction"
)

// maxRefines is how many recorded lines may wait for the LLM correction;
// a line beyond them keeps its phonetic correction (and the log says so).
const maxRefines = 64

// refineJob is a recorded line waiting for the LLM correction.
type refineJob struct {
	u       correction.Utterance
	res     correction.Result // the phonetic correction, as recorded
	key     string            // the line's idempotency key
	speaker string
}

// refineLater queues a recorded line for the LLM correction, when one is
// configured. It never waits: the table answers on the phonetic
// correction.
func (s *Session) refineLater(j refineJob) {
	if !s.cast.Pipeline().HasLLM() {
		return
	}
	select {
	case s.refines <- j:
	default:
		s.log.Warn("the LLM name correction is behind; a line keeps its phonetic correction", "user", j.speaker)
	}
}

// refineLoop runs the LLM correction of recorded lines in the background,
// in the order they were said, and amends the lines it corrects in the
// session's memory (conversation and session log; the raw text stays) and
// in the log. It ends when the transcription loop closes s.refines; once
// the session is ending it skips the lines still queued.
func (s *Session) refineLoop() {
	for j := range s.refines {
		s.refine(j)
	}
}

func (s *Session) refine(j refineJob) {
	if s.ended.Load() {
		// Ending: the lines still queued keep their phonetic correction,
		// so that the LLM does not hold the end of the session up.
		s.log.Info("the session is ending; a line keeps its phonetic correction", "user", j.speaker)
		return
	}
	ctx := s.work
	res, err := s.cast.Pipeline().Refine(ctx, j.u, j.res)
	if err != nil {
		s.log.Warn("LLM name correction failed; the line keeps its phonetic correction", "user", j.speaker, "err", err)
		return
	}
	if res.Text == j.res.Text {
		return
	}
	changed, err := s.mem.Amend(context.WithoutCancel(ctx), j.key, res.Text)
	if err != nil {
		s.log.Warn("amending a line with the LLM name correction failed", "user", j.speaker,
			"heard", j.u.Text, "was", j.res.Text, "corrected", res.Text, "err", err)
		return
	}
	s.wit.Amend(j.key, res.Text)
	s.log.Info("the LLM name correction amended a recorded line", "user", j.speaker,
		"heard", j.u.Text, "was", j.res.Text, "corrected", res.Text, "stored", changed)
	if s.cfg.OnAmend != nil {
		s.cfg.OnAmend(Amendment{Key: j.key, SpeakerID: j.speaker, Heard: j.u.Text, Was: j.res.Text, Text: res.Text})
	}
}

// Amendment is a recorded line corrected after it was answered.
type Amendment struct {
	// Key is the line's idempotency key; SpeakerID who said it.
	Key, SpeakerID string
	// Heard is what speech-to-text heard, Was the recorded (phonetic)
	// correction, Text the LLM's.
	Heard, Was, Text string
}
