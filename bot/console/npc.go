package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/npc"
)

// NPC page limits: the page shows this much of each list.
const (
	npcShownFacts  = 200
	npcHeardLines  = 20
	npcTraceChunks = 10
)

type npcData struct {
	Entity    memory.Entity
	Persona   npc.Persona
	Attrs     []attr
	Visible   []memory.Entity
	Facts     []factView
	FactCount int
	HeardQ    string
	Heard     []memory.EntryHit
	Traces    []memory.Chunk
	Question  string
	Answers   []AskResult
	AskError  string
	CanAsk    bool
	Message   string
}

func (s *Server) npcData(ctx context.Context, camp *access.Campaign, id, heardQ string) (npcData, error) {
	g := camp.Graph()
	e, err := g.Entity(ctx, id)
	if err != nil {
		return npcData{}, err
	}
	p := npc.PersonaFromEntity(e)
	d := npcData{Entity: e, Persona: p, Attrs: attrs(e), CanAsk: s.cfg.Asker != nil}
	// What it heard: lines near its own that match the query (by default,
	// its own names).
	d.HeardQ = strings.TrimSpace(heardQ)
	q := d.HeardQ
	if q == "" {
		q = strings.Join(append([]string{`"` + e.Name + `"`}, quoteAll(e.Aliases)...), " or ")
	}
	// The three reads are independent: run them together.
	var (
		wg                      sync.WaitGroup
		ents                    []memory.Entity
		rels                    []memory.Relationship
		errVis, errHeard, errTr error
	)
	wg.Add(3)
	go func() {
		defer wg.Done()
		ents, rels, errVis = g.VisibleSubgraph(ctx, id, memory.VisibilityScope{RelTypes: p.KnowledgeScope})
	}()
	go func() {
		defer wg.Done()
		d.Heard, errHeard = camp.Sessions().SearchHeard(ctx, id, q, npcHeardLines)
	}()
	go func() {
		defer wg.Done()
		ids, err := camp.Index().HeardChunks(ctx, id)
		if err != nil {
			errTr = err
			return
		}
		if len(ids) > npcTraceChunks {
			ids = ids[len(ids)-npcTraceChunks:]
		}
		d.Traces, errTr = camp.Index().ChunksByID(ctx, ids)
	}()
	wg.Wait()
	if err := errors.Join(errVis, errHeard, errTr); err != nil {
		return npcData{}, err
	}
	d.Visible, d.FactCount = ents, len(rels)
	// Names come from the visible entities: no extra query.
	names := map[string]string{}
	for _, x := range ents {
		names[x.ID] = x.Name
	}
	for _, r := range rels[:min(len(rels), npcShownFacts)] {
		d.Facts = append(d.Facts, factView{Relationship: r, Source: names[r.SourceID], Target: names[r.TargetID],
			Provenance: provenance(r), Secret: memory.IsSecret(r.Attributes)})
	}
	return d, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + strings.ReplaceAll(s, `"`, "") + `"`
	}
	return out
}

func (s *Server) npcPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d, err := s.npcData(ctx, camp, r.PathValue("id"), r.URL.Query().Get("heard"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d.Message = s.takeFlash(r)
	s.render(w, r, http.StatusOK, "npc.html", page{Title: d.Entity.Name, Nav: "npc", Data: d})
}

// lines splits a textarea into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// savePersona writes the persona form into the NPC's entity; the next turn
// the NPC takes uses it.
func (s *Server) savePersona(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	g := camp.Graph()
	id := r.PathValue("id")
	e, err := g.Entity(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if e.Type != memory.EntityNPC {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%s is a %s, not an NPC: it has no persona.", e.Name, e.Type))
		return
	}
	p := npc.PersonaFromEntity(e)
	p.Name = strings.TrimSpace(r.PostFormValue("name"))
	p.Personality = strings.TrimSpace(r.PostFormValue("personality"))
	p.Appearance = strings.TrimSpace(r.PostFormValue("appearance"))
	p.SpeakingStyle = strings.TrimSpace(r.PostFormValue("speaking_style"))
	p.Goals = lines(r.PostFormValue("goals"))
	p.SecretKnowledge = lines(r.PostFormValue("secret_knowledge"))
	p.KnowledgeScope = nil
	for _, t := range strings.Split(r.PostFormValue("knowledge_scope"), ",") {
		if t = strings.ToUpper(strings.TrimSpace(t)); t != "" {
			p.KnowledgeScope = append(p.KnowledgeScope, t)
		}
	}
	if err := p.Validate(); err != nil {
		s.back(w, r, "/npc/"+id, "⚠ Nothing was saved: "+err.Error())
		return
	}
	ne := p.Entity()
	var del []string
	for _, k := range []string{"personality", "appearance", "speaking_style", "goals", "knowledge_scope", memory.AttrSecretKnowledge} {
		if _, ok := ne.Attributes[k]; !ok {
			if _, had := e.Attributes[k]; had {
				del = append(del, k)
			}
		}
	}
	if _, err := g.UpdateEntity(ctx, id, memory.EntityUpdate{Name: &ne.Name, SetAttributes: ne.Attributes, DeleteAttributes: del}); err != nil {
		s.back(w, r, "/npc/"+id, "⚠ Nothing was saved: "+flashErr(err))
		return
	}
	s.log.Info("persona edited", "npc", id, "by", sessionOf(ctx).UserID)
	s.back(w, r, "/npc/"+id, "Saved "+ne.Name+"'s persona.")
}

// askAs runs retrieval as the NPC and shows the page with the answers.
func (s *Server) askAs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	id := r.PathValue("id")
	d, err := s.npcData(ctx, camp, id, "")
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d.Question = strings.TrimSpace(r.PostFormValue("question"))
	switch {
	case s.cfg.Asker == nil:
		d.AskError = "Retrieval is not configured for this console."
	case d.Question == "":
		d.AskError = "Type a question first."
	default:
		d.Answers, err = s.cfg.Asker.AskAs(ctx, camp.ID(), id, d.Question, 5)
		if err != nil {
			s.log.Warn("ask as NPC", "npc", id, "err", err)
			d.AskError = "Retrieval failed: " + flashErr(err)
		} else if len(d.Answers) == 0 {
			d.AskError = "Nothing this NPC heard answers that."
		}
	}
	s.render(w, r, http.StatusOK, "npc.html", page{Title: d.Entity.Name, Nav: "npc", Data: d})
}
