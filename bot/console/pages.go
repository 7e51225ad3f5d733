package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// openCampaign opens the signed-in session's campaign bound to its viewer:
// the DM's for a DM session, otherwise the signed-in player's, bound to
// their user id (memory.PlayerViewerOf). Every page reads through it, so
// what a player may not see is left out in SQL: secrets, and of the lines
// said at the table those their character did not witness (a split scene
// they were not in). A session without a user id (none is made today)
// would read as any player: no line of a split scene.
func (s *Server) openCampaign(ctx context.Context) (*access.Campaign, error) {
	sess := sessionOf(ctx)
	v := memory.PlayerViewer()
	switch {
	case sess.DM:
		v = memory.DMViewer()
	case sess.UserID != "":
		v = memory.PlayerViewerOf(sess.UserID)
	}
	c, err := s.cfg.Door.Open(ctx, sess.Campaign, v)
	switch {
	case err == nil:
		return c, nil
	}
	return nil, err
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if sessionOf(r.Context()).DM {
		http.Redirect(w, r, "/review", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/graph", http.StatusSeeOther)
}

// back redirects to path (post/redirect/get) with a message for the next
// page. The message is kept in the server-side session, not in the URL, so
// nobody can craft a link that shows the DM a message of their choosing.
func (s *Server) back(w http.ResponseWriter, r *http.Request, path, msg string) {
	if msg != "" {
		s.setFlash(r, msg)
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// namesOf returns display names for entity ids.
func namesOf(ctx context.Context, g *access.Graph, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	es, err := g.FindEntities(ctx, memory.EntityFilter{IDs: ids, IncludeRetired: true})
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		out[e.ID] = e.Name
	}
	for _, id := range ids {
		if out[id] == "" {
			out[id] = id
		}
	}
	return out, nil
}

// factView is a fact with names, provenance and evidence, for the review.
type factView struct {
	memory.Relationship
	Source, Target string
	Provenance     string
	Secret         bool
	EvidenceQuote  string
	Evidence       []memory.TranscriptEntry
	// EvidenceMore counts the lines beyond those shown.
	EvidenceMore int
	// Conflicts are the open conflicts the fact is in (pending cards say
	// so: reviewing it settles them).
	Conflicts []int64
}

// evidenceShown is how many transcript lines a fact shows.
const evidenceShown = 3

func (s *Server) factViews(ctx context.Context, g *access.Graph, fs []memory.Relationship) ([]factView, error) {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.SourceID, f.TargetID)
	}
	n, err := namesOf(ctx, g, ids)
	if err != nil {
		return nil, err
	}
	out := make([]factView, len(fs))
	for i, f := range fs {
		ev, err := g.Evidence(ctx, f.ID)
		if err != nil {
			return nil, err
		}
		q, _ := f.Attributes["evidence"].(string)
		out[i] = factView{Relationship: f, Source: n[f.SourceID], Target: n[f.TargetID], Provenance: provenance(f),
			Secret: memory.IsSecret(f.Attributes), EvidenceQuote: q, Evidence: ev[:min(len(ev), evidenceShown)],
			EvidenceMore: max(0, len(ev)-evidenceShown)}
	}
	return out, nil
}

// reviewPageSize bounds the pending facts shown at once.
const reviewPageSize = 50

func (s *Server) reviewPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	g := camp.Graph()
	session := r.URL.Query().Get("session")
	pending, err := g.PendingFacts(ctx, memory.FactFilter{SessionID: session, Limit: reviewPageSize + 1})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	more := len(pending) > reviewPageSize
	pending = pending[:min(len(pending), reviewPageSize)]
	pv, err := s.factViews(ctx, g, pending)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	ids := make([]int64, len(pending))
	for i, f := range pending {
		ids[i] = f.ID
	}
	inConflict, err := g.OpenConflictsOf(ctx, ids)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	for i := range pv {
		pv[i].Conflicts = inConflict[pv[i].ID]
	}
	lastBatch, hasBatch, err := g.LastReviewBatch(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	conflicts, err := g.Conflicts(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	type conflictView struct {
		memory.Conflict
		Old, New factView
		// Standing says where each fact stands now, from its status.
		Standing string
	}
	cv := make([]conflictView, 0, len(conflicts))
	for _, c := range conflicts {
		fv, err := s.factViews(ctx, g, []memory.Relationship{c.OldFact, c.NewFact})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		cv = append(cv, conflictView{Conflict: c, Old: fv[0], New: fv[1], Standing: conflictStanding(c)})
	}
	sessions, err := pickableSessions(ctx, camp)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	// The edit forms suggest the names of the waiting facts' ends at
	// first, and as the DM types, the entities named like it (app.js,
	// /api/names).
	var names []string
	for _, f := range pv {
		names = append(names, f.Source, f.Target)
	}
	slices.Sort(names)
	data := map[string]any{
		"Pending": pv, "More": more, "Conflicts": cv, "Session": session, "Sessions": sessions, "Names": slices.Compact(names),
		"Message": s.takeFlash(r)}
	if hasBatch {
		data["Batch"] = lastBatch
	}
	s.render(w, r, http.StatusOK, "review.html", page{Title: "Review", Nav: "review", Data: data})
}

func pathID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: %q is not a fact or conflict number", memory.ErrInvalid, r.PathValue("id"))
	}
	return id, nil
}

// reviewFact confirms or rejects a fact: the store operations the Discord
// Confirm and Reject buttons call.
func (s *Server) reviewFact(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	var f memory.Relationship
	verb := ""
	switch r.PostFormValue("action") {
	case "confirm":
		f, err = camp.Graph().ConfirmFact(ctx, id)
		verb = "Confirmed"
	case "reject":
		f, err = camp.Graph().RejectFact(ctx, id)
		verb = "Rejected"
	default:
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown review action %q: want confirm or reject.", r.PostFormValue("action")))
		return
	}
	to := "/review"
	if r.PostFormValue("back") == "/ledger" { // the Ledger page's buttons
		to = "/ledger"
	}
	if err != nil {
		s.back(w, r, to, "⚠ "+flashErr(err))
		return
	}
	s.log.Info("fact reviewed", "fact", f.ID, "action", verb, "by", sessionOf(ctx).UserID)
	s.back(w, r, to, fmt.Sprintf("%s fact #%d (%s %s %s).", verb, f.ID, f.SourceID, f.Type, f.TargetID))
}

// editFact applies the DM's correction with bot.EditFact, as the Discord
// Edit button's form does.
func (s *Server) editFact(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	f, err := bot.EditFact(ctx, camp.Graph(), id, r.PostFormValue("subject"), r.PostFormValue("relation"),
		r.PostFormValue("object"), sessionOf(ctx).UserID)
	if err != nil {
		s.back(w, r, "/review", fmt.Sprintf("⚠ Fact #%d is unchanged: %s", id, flashErr(err)))
		return
	}
	s.back(w, r, "/review", fmt.Sprintf("Corrected fact #%d and confirmed it as #%d (%s %s %s).", id, f.ID, f.SourceID, f.Type, f.TargetID))
}

// conflictStanding says what a conflict is and where its pair stands now
// (bot.ConflictStanding, the Discord card's text).
func conflictStanding(c memory.Conflict) string {
	kind := "Contradicts: both cannot hold. "
	if c.Kind == memory.LinkSupersedes {
		kind = "Supersedes: a later session says otherwise. "
	}
	return kind + bot.ConflictStanding(c)
}

// bulkReview confirms or rejects many facts in one batch: the ticked ones
// (fact=ID, repeated) or, with all=1, every pending fact of the session
// filter (any session when empty). The review page then offers Undo.
func (s *Server) bulkReview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	action := access.ReviewAction(r.PostFormValue("action"))
	if action != access.ReviewConfirm && action != access.ReviewReject {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown review action %q: want confirm or reject.", action))
		return
	}
	g := camp.Graph()
	session := r.PostFormValue("session")
	back := "/review"
	if session != "" {
		back += "?session=" + url.QueryEscape(session)
	}
	var ids []int64
	if r.PostFormValue("all") == "1" {
		pending, err := g.PendingFacts(ctx, memory.FactFilter{SessionID: session, Limit: maxBulk})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		for _, f := range pending {
			ids = append(ids, f.ID)
		}
	} else {
		for _, v := range r.PostForm["fact"] {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%q is not a fact number.", v))
				return
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		s.back(w, r, back, "⚠ Nothing was selected: tick the facts to review, or use the buttons for the whole session.")
		return
	}
	batch, err := g.ReviewFacts(ctx, action, ids, sessionOf(ctx).UserID)
	if err != nil {
		s.back(w, r, back, "⚠ Nothing was changed: "+flashErr(err))
		return
	}
	s.log.Info("facts reviewed in bulk", "batch", batch.ID, "action", action, "facts", len(ids), "by", sessionOf(ctx).UserID)
	verb := "Confirmed"
	if action == access.ReviewReject {
		verb = "Rejected"
	}
	s.back(w, r, back, fmt.Sprintf("%s %s in batch #%d; their conflicts were settled with them.", verb, nFacts(len(batch.Done)), batch.ID))
}

// maxBulk bounds one bulk review (the store's batch limit).
const maxBulk = 1000

// undoReview undoes a bulk review batch.
func (s *Server) undoReview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	batch, err := camp.Graph().UndoReview(ctx, id)
	if err != nil {
		s.back(w, r, "/review", "⚠ "+flashErr(err))
		return
	}
	s.log.Info("review batch undone", "batch", batch.ID, "by", sessionOf(ctx).UserID)
	s.back(w, r, "/review", fmt.Sprintf("Undid batch #%d: %s back as they were.", batch.ID, nFacts(len(batch.Facts))))
}

// nFacts is "1 fact" or "n facts".
func nFacts(n int) string {
	if n == 1 {
		return "1 fact"
	}
	return fmt.Sprintf("%d facts", n)
}

// resolveConflict keeps the new or the old fact: the store operation of
// the Discord Keep new / Keep old buttons.
func (s *Server) resolveConflict(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	keep := r.PostFormValue("keep")
	if keep != "new" && keep != "old" {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown choice %q: keep new or old.", keep))
		return
	}
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	c, err := camp.Graph().ResolveConflict(ctx, id, keep == "new")
	if err != nil {
		s.back(w, r, "/review", "⚠ "+flashErr(err))
		return
	}
	s.back(w, r, "/review", fmt.Sprintf("Conflict %d settled: kept the %s fact (#%d is now %s, #%d is %s).", c.ID, keep,
		c.NewFact.ID, c.NewFact.Status, c.OldFact.ID, c.OldFact.Status))
}

// maxSuggestions bounds the names /api/names suggests, as many as a
// Discord autocomplete offers.
const maxSuggestions = 25

// suggestion is an entity a name field may be filled with.
type suggestion struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// namesJSON suggests the entities whose name or alias holds q (the store's
// name search, as the Discord commands' autocomplete asks it), for the
// name fields of the review and entity pages: a large campaign's names
// are too many to ship with each page (100,000 at the bench's 100k scale).
func (s *Server) namesJSON(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	out := []suggestion{}
	if q != "" {
		es, err := camp.Graph().FindEntities(ctx, memory.EntityFilter{Name: q, Limit: maxSuggestions})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		for _, e := range es {
			out = append(out, suggestion{ID: e.ID, Name: e.Name, Type: e.Type})
		}
	}
	writeJSON(w, out)
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

func (s *Server) npcList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	npcs, err := camp.Graph().FindEntities(ctx, memory.EntityFilter{Type: memory.EntityNPC})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "npcs.html", page{Title: "NPCs", Nav: "npc", Data: npcs})
}

func (s *Server) sessionList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	ss, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	slices.Reverse(ss)
	s.render(w, r, http.StatusOK, "sessions.html", page{Title: "Sessions", Nav: "sessions", Data: ss})
}
