package console

import (
	"net/http"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
)

// recapPart is one session of the campaign recap: the session (its
// in-world date in the calendar's form) and its recap's sentences.
type recapPart struct {
	Session    memory.Session
	Recap      []sentenceView
	Extractive bool
}

// campaignRecap is the campaign's recap: each session with lines, in the
// order of their in-world dates (recap.InWorldOrder, as Discord's
// /recap scope:campaign orders them), each with its recap as the reader
// may see it (player-safe for a player).
func (s *Server) campaignRecap(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	dm := sessionOf(ctx).DM
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	all, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	cal, _, err := camp.Sessions().Calendar(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	var played []memory.Session
	for _, ss := range all {
		if ss.Entries > 0 {
			played = append(played, ss)
		}
	}
	var parts []recapPart
	for _, ss := range recap.InWorldOrder(cal, played) {
		es, err := camp.Sessions().Entries(ctx, ss.ID)
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		entries := es[:0:0]
		for _, e := range es {
			if dm || !e.NonCanon { // a span the DM struck from the record stays hidden
				entries = append(entries, e)
			}
		}
		pageOf := map[int64]int{}
		for i, e := range entries {
			pageOf[e.ID] = i / linesPerPage
		}
		rc, err := s.recap(ctx, camp, ss.ID, entries, !dm)
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		sentences, _ := citedSentences(rc, entries, pageOf)
		parts = append(parts, recapPart{Session: ss, Recap: sentences, Extractive: rc.Extractive})
	}
	s.render(w, r, http.StatusOK, "recap.html", page{Title: "Campaign recap", Nav: "sessions",
		Data: map[string]any{"Parts": parts, "PlayerSafe": !dm}})
}
