package console

import (
	"errors"
	"net/http"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/memory"
)

// asOfFact is one fact of the "As of" page.
type asOfFact struct {
	memory.Relationship
	Source, Target string
}

// asOfPage shows an entity's facts as they held at a session, a date or an in-world date
// (GET /asof?entity=…&as_of=…), read as the signed-in viewer: the
// console's side of `ask --as-of` and the Discord as_of option.
func (s *Server) asOfPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	q := r.URL.Query()
	ref, when := q.Get("entity"), q.Get("as_of")
	sessions, err := pickableSessions(ctx, camp)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	data := map[string]any{"Entity": ref, "AsOf": when, "Sessions": sessions}
	if ref != "" && when != "" {
		e, label, facts, err := bot.FactsAsOf(ctx, camp.Graph(), ref, when)
		switch {
		case errors.Is(err, memory.ErrForbidden):
			s.failErr(w, r, err)
			return
		case err != nil:
			data["Error"] = flashErr(err)
		default:
			var ids []string
			for _, f := range facts {
				ids = append(ids, f.SourceID, f.TargetID)
			}
			n, err := namesOf(ctx, camp.Graph(), ids)
			if err != nil {
				s.failErr(w, r, err)
				return
			}
			out := make([]asOfFact, len(facts))
			for i, f := range facts {
				out[i] = asOfFact{Relationship: f, Source: n[f.SourceID], Target: n[f.TargetID]}
			}
			data["Name"], data["Label"], data["Facts"] = e.Name, label, out
		}
	}
	s.render(w, r, http.StatusOK, "asof.html", page{Title: "As of", Nav: "asof", Data: data})
}
