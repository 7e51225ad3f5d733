package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/memory"
)

// The DM's entity pages: a list with an add form, and a page per entity
// with forms to edit, merge and retire it. The forms call the same
// operations as `/memory entity add|edit|merge|retire` in Discord
// (bot.AddEntity, EditEntity, MergeEntity, RetireEntity).

// entitiesShown bounds the entities the list shows at once.
const entitiesShown = 200

func entityPath(id string) string { return "/entities/" + url.PathEscape(id) }

func (s *Server) entityList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	kind := strings.TrimSpace(r.URL.Query().Get("kind"))
	retired := r.URL.Query().Get("retired") != ""
	if err := memory.CheckQuery(q); err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	es, err := camp.Graph().FindEntities(ctx, memory.EntityFilter{Name: q, Type: kind, IncludeRetired: retired, Limit: entitiesShown + 1})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	more := len(es) > entitiesShown
	es = es[:min(len(es), entitiesShown)]
	kinds, err := s.kinds(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "entities.html", page{Title: "Entities", Nav: "entities", Data: map[string]any{
		"Entities": es, "More": more, "Q": q, "Kind": kind, "Retired": retired, "Kinds": kinds, "Message": s.takeFlash(r)}})
}

// kinds lists the campaign's entity kinds, then the well-known ones.
func (s *Server) kinds(r *http.Request) ([]string, error) {
	camp, err := s.openCampaign(r.Context())
	if err != nil {
		return nil, err
	}
	ks, err := camp.Graph().EntityKinds(r.Context())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range ks {
		out = append(out, k.Type)
	}
	for _, k := range bot.EntityKinds() {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (s *Server) addEntity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	e, err := bot.AddEntity(ctx, camp, bot.EntityInput{Name: r.PostFormValue("name"), Kind: r.PostFormValue("kind"),
		Aliases: r.PostFormValue("aliases"), Description: r.PostFormValue("description"), DMNotes: r.PostFormValue("dm_notes")},
		sessionOf(ctx).UserID)
	if err != nil {
		s.back(w, r, "/entities", "⚠ Nothing was added: "+flashErr(err))
		return
	}
	s.log.Info("entity added", "entity", e.ID, "by", sessionOf(ctx).UserID)
	s.back(w, r, entityPath(e.ID), fmt.Sprintf("Added %s (%s).", e.Name, e.Type))
}

func (s *Server) entityPage(w http.ResponseWriter, r *http.Request) {
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
	ret, retired, err := g.RetiredEntity(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	scene, err := g.SceneOnly(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	rels, err := g.Relationships(ctx, id, memory.TraversalOpts{Limit: 50})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	facts, err := s.factViews(ctx, g, rels)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	attrs := ""
	if len(e.Attributes) > 0 {
		out, err := yaml.Marshal(e.Attributes)
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		attrs = string(out)
	}
	kinds, err := s.kinds(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	// The merge field suggests, at first, the entities named like this
	// one (a duplicate shares a word of its name), and as the DM types,
	// the entities named like that (app.js, /api/names).
	var others []memory.Entity
	if word := longestWord(e.Name); word != "" {
		if others, err = g.FindEntities(ctx, memory.EntityFilter{Name: word, Limit: maxSuggestions + 1}); err != nil {
			s.failErr(w, r, err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "entity.html", page{Title: e.Name, Nav: "entities", Data: map[string]any{
		"Entity": e, "Aliases": strings.Join(e.Aliases, ", "), "Attributes": attrs, "Facts": facts,
		"Retired": retired, "Retirement": ret, "SceneOnly": scene, "Kinds": kinds, "Others": others, "Message": s.takeFlash(r)}})
}

func (s *Server) editEntity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	e, err := bot.EditEntity(ctx, camp, id, r.PostFormValue("name"), r.PostFormValue("kind"), r.PostFormValue("aliases"),
		r.PostFormValue("attributes"), sessionOf(ctx).UserID)
	if err != nil {
		s.back(w, r, entityPath(id), "⚠ Nothing was changed: "+flashErr(err))
		return
	}
	s.back(w, r, entityPath(id), fmt.Sprintf("Saved %s.", e.Name))
}

func (s *Server) mergeEntity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	m, err := bot.MergeEntity(ctx, camp, id, r.PostFormValue("into"), "", sessionOf(ctx).UserID)
	if err != nil {
		s.back(w, r, entityPath(id), "⚠ Nothing was merged: "+flashErr(err))
		return
	}
	s.log.Info("entity merged", "entity", id, "into", m.Into.ID, "by", sessionOf(ctx).UserID)
	msg := fmt.Sprintf("Merged %s into %s: %d facts, %d chunk mentions and %d NPC lines moved; its names are aliases now.",
		id, m.Into.Name, m.FactsMoved, m.Mentions, m.Lines)
	if len(m.FactsRetired) > 0 {
		msg += fmt.Sprintf(" %d facts repeated one of %s's and were retired.", len(m.FactsRetired), m.Into.Name)
	}
	s.back(w, r, entityPath(m.Into.ID), msg)
}

func (s *Server) retireEntity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	e, ret, err := bot.RetireEntity(ctx, camp, id, "", r.PostFormValue("reason"), sessionOf(ctx).UserID)
	if err != nil {
		s.back(w, r, entityPath(id), "⚠ Nothing was retired: "+flashErr(err))
		return
	}
	s.log.Info("entity retired", "entity", id, "by", sessionOf(ctx).UserID)
	s.back(w, r, entityPath(id), fmt.Sprintf("Retired %s: %d canon facts stopped holding (kept for \"as of\").", e.Name, len(ret.Facts)))
}

func (s *Server) revealEntity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	e, _, err := bot.RevealEntity(ctx, camp, id, sessionOf(ctx).UserID)
	if err != nil {
		s.back(w, r, entityPath(id), "⚠ Nothing was revealed: "+flashErr(err))
		return
	}
	s.log.Info("entity revealed", "entity", id, "by", sessionOf(ctx).UserID)
	s.back(w, r, entityPath(id), fmt.Sprintf("Every player now sees %s.", e.Name))
}

// longestWord is the longest word of name (the first of equal length):
// what a duplicate of the entity most likely shares.
func longestWord(name string) string {
	best := ""
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) > len([]rune(best)) {
			best = w
		}
	}
	return best
}
