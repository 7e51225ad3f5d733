package console

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Recapper writes a session's recap: sentences, each citing the transcript
// lines it rests on. A player-safe recap reveals no secret and no
// unconfirmed fact, and is written from the lines any player may read
// (memory.PlayerViewer: no line of a split scene); the page shows only the
// sentences citing a line the signed-in player may read. Without one the
// console makes extractive recaps with bot/recap from the player's own
// lines.
type Recapper interface {
	Recap(ctx context.Context, campaign, sessionID string, playerSafe bool) (recap.Recap, error)
}

// RecapFunc adapts a function to a Recapper.
type RecapFunc func(ctx context.Context, campaign, sessionID string, playerSafe bool) (recap.Recap, error)

// Recap calls f.
func (f RecapFunc) Recap(ctx context.Context, campaign, sessionID string, playerSafe bool) (recap.Recap, error) {
	return f(ctx, campaign, sessionID, playerSafe)
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

// A session's search shows hitsPerPage matching lines at a time, up to
// maxHits by rank.
const (
	hitsPerPage = 50
	maxHits     = 500
)

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess := sessionOf(ctx)
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	id := r.PathValue("id")
	search := strings.TrimSpace(r.URL.Query().Get("q"))
	// The session, its lines and the search are independent reads.
	var (
		wg                    sync.WaitGroup
		info                  memory.Session
		all                   []memory.TranscriptEntry
		found                 []memory.EntryHit
		errInfo, errAll, errQ error
	)
	wg.Add(2)
	go func() { defer wg.Done(); info, errInfo = camp.Sessions().Session(ctx, id) }()
	go func() { defer wg.Done(); all, errAll = camp.Sessions().Entries(ctx, id) }()
	if search != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found, errQ = camp.Sessions().Search(ctx, search, memory.SearchOpts{SessionID: id, Limit: maxHits + 1})
		}()
	}
	wg.Wait()
	if err := errors.Join(errInfo, errAll, errQ); err != nil {
		s.failErr(w, r, err)
		return
	}
	entries := all
	if !sess.DM {
		entries = all[:0:0]
		for _, e := range all {
			if !e.NonCanon { // a span the DM struck from the record stays hidden
				entries = append(entries, e)
			}
		}
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
	sentences, cited := citedSentences(rc, entries, pageOf)
	var shown []lineView
	for _, e := range entries[min(pg*linesPerPage, len(entries)):min((pg+1)*linesPerPage, len(entries))] {
		shown = append(shown, lineView{TranscriptEntry: e, Cited: cited[e.ID]})
	}
	var hits []memory.EntryHit
	for _, h := range found {
		if _, ok := pageOf[h.Entry.ID]; ok {
			hits = append(hits, h)
		}
	}
	// Matches show hitsPerPage at a time; past maxHits the page says the
	// search must narrow instead of stopping silently.
	more := len(found) > maxHits
	hits = hits[:min(len(hits), maxHits)]
	hitPages := max(1, (len(hits)+hitsPerPage-1)/hitsPerPage)
	hp, _ := strconv.Atoi(q.Get("hits"))
	hp = min(max(hp, 0), hitPages-1)
	shownHits := hits[hp*hitsPerPage : min((hp+1)*hitsPerPage, len(hits))]
	var hitLinks []int
	if hitPages > 1 {
		for i := range hitPages {
			hitLinks = append(hitLinks, i)
		}
	}
	var pageLinks []int
	for i := range pages {
		pageLinks = append(pageLinks, i)
	}
	s.render(w, r, http.StatusOK, "session.html", page{Title: "Session " + id, Nav: "sessions", Data: map[string]any{
		"Session": info, "Lines": shown, "Recap": sentences, "Extractive": rc.Extractive, "PlayerSafe": !sess.DM,
		"Page": pg, "Pages": pageLinks, "Q": search, "Hits": shownHits, "HitCount": len(hits), "HitFrom": hp*hitsPerPage + 1,
		"HitTo": hp*hitsPerPage + len(shownHits), "HitPage": hp, "HitPages": hitLinks, "MoreHits": more, "MaxHits": maxHits,
		"PageOf": pageOf, "Total": len(entries), "Colours": sessionColours(entries)}})
}

// recap returns the session's recap from the Recapper, or an extractive
// one made of its key lines.
func (s *Server) recap(ctx context.Context, camp *access.Campaign, sessionID string, entries []memory.TranscriptEntry, safe bool) (recap.Recap, error) {
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
	var cursor int64
	if safe {
		var err error
		// The campaign's revision (what the avoid list is made of moves
		// with changes hidden from a player: a fact made secret).
		if cursor, err = camp.Revision(ctx); err != nil {
			return recap.Recap{}, fmt.Errorf("reading the graph's change log: %w", err)
		}
	}
	key := recapKey{campaign: camp.ID(), session: sessionID, lines: len(in.Lines), cursor: cursor, safe: safe}
	if len(in.Lines) > 0 {
		key.last = in.Lines[len(in.Lines)-1].ID
	}
	h := fnv.New64a()
	for _, l := range in.Lines {
		_ = binary.Write(h, binary.LittleEndian, l.ID)
	}
	key.ids = h.Sum64()
	if rc, ok := s.recaps.get(key); ok {
		return rc, nil
	}
	if safe {
		// What the player view withholds (the store decides), for the
		// recap's local check only: the DM's handle serves no page.
		dm, err := s.cfg.Door.Open(ctx, camp.ID(), memory.DMViewer())
		if err != nil {
			return recap.Recap{}, err
		}
		if in.Avoid, err = bot.Withheld(ctx, dm, []string{sessionID}, nil); err != nil {
			return recap.Recap{}, err
		}
	}
	rc, err := recap.Writer{}.Write(ctx, in)
	if err == nil {
		s.recaps.put(key, rc)
	}
	return rc, err
}

// citedSentences are a recap's sentences with the lines each cites (its
// time and page of the session), leaving out lines the reader may not see
// (not among entries) and a sentence that cites none; cited marks them.
func citedSentences(rc recap.Recap, entries []memory.TranscriptEntry, pageOf map[int64]int) (sentences []sentenceView, cited map[int64]bool) {
	cited = map[int64]bool{}
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
	return sentences, cited
}
