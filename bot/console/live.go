package console

import (
	"net/http"
	"time"
)

// LiveSource reports what is happening in a campaign's running session. It
// reads the same numbers as /metrics (the voice session manager and
// internal/metrics feed both); the command that runs the bot wires it.
// Implementations must be safe for concurrent use and must not block.
type LiveSource interface {
	Live(campaign string) LiveStatus
}

// LiveFunc adapts a function to a LiveSource.
type LiveFunc func(campaign string) LiveStatus

// Live calls f.
func (f LiveFunc) Live(campaign string) LiveStatus { return f(campaign) }

// LiveStatus is a snapshot of a campaign's running session.
type LiveStatus struct {
	// Running is false when no session is running; the rest is then zero.
	Running   bool      `json:"running"`
	SessionID string    `json:"session_id,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Speaking are the display names of who is speaking now.
	Speaking []string `json:"speaking"`
	// Turns are the latest NPC turns, newest first.
	Turns []Turn `json:"turns"`
	// MemoryDegraded is true while the database is unreachable: the
	// session's lines go to the spool, and the console's memory door
	// (Config.Door) refuses reads until it answers again.
	MemoryDegraded bool `json:"memory_degraded"`
	// PendingWrites are lines waiting to reach the database.
	PendingWrites int `json:"pending_writes"`
	// SpoolBytes is the size of the outage spool on disk.
	SpoolBytes int64 `json:"spool_bytes"`
}

// Turn is one NPC turn and its latency per stage, each measured from the
// end of the player's speech (as the glyphoxa_turn_stage_seconds metric).
type Turn struct {
	NPC     string    `json:"npc"`
	At      time.Time `json:"at"`
	Heard   string    `json:"heard,omitempty"`
	Outcome string    `json:"outcome,omitempty"`
	Stages  []Stage   `json:"stages"`
}

// Stage is one stage of a turn (stt, correction, llm_first_token,
// tts_first_audio, …).
type Stage struct {
	Name string `json:"name"`
	// Latency is measured from the end of the player's speech.
	Latency time.Duration `json:"latency_ns"`
	// MS is Latency in milliseconds, for the page.
	MS int64 `json:"ms"`
}

// live is the campaign's live status and whether a feed is wired; memory
// health comes from the memory door too, with or without a running session.
func (s *Server) live(campaign string) (LiveStatus, bool) {
	var st LiveStatus
	if s.cfg.Live != nil {
		st = s.cfg.Live.Live(campaign)
	}
	if s.cfg.Door.Health().Degraded {
		st.MemoryDegraded = true
	}
	if st.Speaking == nil {
		st.Speaking = []string{}
	}
	if st.Turns == nil {
		st.Turns = []Turn{}
	}
	for i := range st.Turns {
		for j := range st.Turns[i].Stages {
			st.Turns[i].Stages[j].MS = st.Turns[i].Stages[j].Latency.Milliseconds()
		}
	}
	return st, s.cfg.Live != nil
}

func (s *Server) livePage(w http.ResponseWriter, r *http.Request) {
	st, wired := s.live(sessionOf(r.Context()).Campaign)
	s.render(w, r, http.StatusOK, "live.html", page{Title: "Live", Nav: "live", Data: map[string]any{"Status": st, "Wired": wired}})
}

func (s *Server) liveJSON(w http.ResponseWriter, r *http.Request) {
	st, wired := s.live(sessionOf(r.Context()).Campaign)
	writeJSON(w, map[string]any{"wired": wired, "status": st})
}
