package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Recapper writes a session's recap: sentences, each citing the transcript
// lines it rests on. A player-safe recap reveals no secret and no
// unconfirmed fact. Without one the console makes extractive recaps with
// bot/recap.
type Recapper interface {
	Recap(ctx context.Context, campaign, sessionID string, playerSafe bool) (recap.Recap, error)
}

// linesPerPage is how many transcript lines one page of a session shows.
const linesPerPage = 400

type lineView struct {
	memory.TranscriptEntry
	Cited bool
}

type sentenceView struct {
	Text  string
	Lines []citation
}

type citation struct {
	ID   int64
	At   string
	Page int
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionOf(ctx)
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	id := r.PathValue("id")
	info, err := camp.Sessions().Session(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	all, err := camp.Sessions().Entries(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	entries := all[:0:0]
	for _, e := range all {
		if e.NonCanon && !sess.DM {
			continue // a span the DM struck from the record
		}
		entries = append(entries, e)
	}
	pageOf := map[int64]int{}
	for i, e := range entries {
		pageOf[e.ID] = i / linesPerPage
	}
	pages := max(1, (len(entries)+linesPerPage-1)/linesPerPage)
	q := r.URL.Query()
	pg, _ := strconv.Atoi(q.Get("page"))
	if l, err := strconv.ParseInt(q.Get("line"), 10, 64); err == nil {
		if p, ok := pageOf[l]; ok {
			pg = p
		}
	}
	pg = min(max(pg, 0), pages-1)

	rc, err := s.recap(ctx, camp, id, entries, !sess.DM)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	cited := map[int64]bool{}
	var sentences []sentenceView
	at := map[int64]string{}
	for _, e := range entries {
		at[e.ID] = e.At.UTC().Format("15:04:05")
	}
	for _, st := range rc.Sentences {
		sv := sentenceView{Text: st.Text}
		for _, l := range st.Lines {
			if _, ok := pageOf[l]; !ok {
				continue // a line the reader may not see
			}
			cited[l] = true
			sv.Lines = append(sv.Lines, citation{ID: l, At: at[l], Page: pageOf[l]})
		}
		if len(sv.Lines) > 0 {
			sentences = append(sentences, sv)
		}
	}
	var shown []lineView
	for _, e := range entries[min(pg*linesPerPage, len(entries)):min((pg+1)*linesPerPage, len(entries))] {
		shown = append(shown, lineView{TranscriptEntry: e, Cited: cited[e.ID]})
	}
	var hits []memory.EntryHit
	search := strings.TrimSpace(q.Get("q"))
	if search != "" {
		found, err := camp.Sessions().Search(ctx, search, memory.SearchOpts{SessionID: id, Limit: 50})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		for _, h := range found {
			if _, ok := pageOf[h.Entry.ID]; ok {
				hits = append(hits, h)
			}
		}
	}
	var pageLinks []int
	for i := range pages {
		pageLinks = append(pageLinks, i)
	}
	s.render(w, r, http.StatusOK, "session.html", page{Title: "Session " + id, Nav: "sessions", Data: map[string]any{
		"Session": info, "Lines": shown, "Recap": sentences, "Extractive": rc.Extractive, "PlayerSafe": !sess.DM,
		"Page": pg, "Pages": pageLinks, "Q": search, "Hits": hits, "PageOf": pageOf, "Total": len(entries)}})
}

// recap returns the session's recap from the Recapper, or an extractive
// one made of its key lines.
func (s *Server) recap(ctx context.Context, camp *postgres.Campaign, sessionID string, entries []memory.TranscriptEntry, safe bool) (recap.Recap, error) {
	if s.cfg.Recaps != nil {
		return s.cfg.Recaps.Recap(ctx, camp.ID(), sessionID, safe)
	}
	var in recap.Input
	for _, e := range entries {
		if e.NonCanon {
			continue
		}
		in.Lines = append(in.Lines, recap.Line{ID: e.ID, SessionID: e.SessionID, At: e.At, Speaker: e.SpeakerName,
			NPC: e.NPCID != "", Text: e.Text})
	}
	if safe {
		avoid, err := secrets(ctx, camp.Graph())
		if err != nil {
			return recap.Recap{}, err
		}
		in.Avoid = avoid
	}
	return recap.Writer{}.Write(ctx, in)
}

// secrets lists what a player-safe text must not reveal: secret knowledge,
// secret facts and facts waiting for review, as sentences.
func secrets(ctx context.Context, g *postgres.Graph) ([]string, error) {
	var out []string
	ents, err := g.FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		for k, v := range e.Attributes {
			if secretKey(k) && k != memory.AttrKnownBy && k != memory.AttrSecret {
				out = append(out, valueText(v))
			}
		}
	}
	facts, err := g.FindFacts(ctx, postgres.FactQuery{Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending}, Limit: maxGraphFacts})
	if err != nil {
		return nil, err
	}
	for _, f := range facts {
		if isSecretFact(f.Relationship) || f.Status == memory.StatusPending {
			out = append(out, fmt.Sprintf("%s %s %s", f.SourceName, strings.ToLower(strings.ReplaceAll(f.Type, "_", " ")), f.TargetName))
		}
	}
	return out, nil
}
