package console

import (
	"net/http"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Players pages: what each player's character knows, beside the NPC
// knowledge view. The DM sees every player's; a player signed in sees only
// their own: the page reads through a handle bound to them
// (memory.PlayerViewerOf), and the store refuses another player's.

// playerShownLines bounds the lines the page shows (the newest).
const playerShownLines = 300

type playerData struct {
	UserID    string
	Knowledge access.Knowledge
	// Shown are the newest lines the character witnessed.
	Shown []memory.TranscriptEntry
}

// openAsMember opens the campaign for the signed-in member, a player's
// handle bound to their user id.
func (s *Server) openAsMember(r *http.Request) (*access.Campaign, error) {
	sess := sessionOf(r.Context())
	v := memory.PlayerViewerOf(sess.UserID)
	if sess.DM {
		v = memory.DMViewer()
	}
	return s.cfg.Door.Open(r.Context(), sess.Campaign, v)
}

// playerList is the DM's list of who plays whom; a player goes to their
// own page.
func (s *Server) playerList(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r.Context())
	if !sess.DM {
		http.Redirect(w, r, "/players/"+sess.UserID, http.StatusSeeOther)
		return
	}
	camp, err := s.openAsMember(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	pcs, err := camp.PlayerCharacters(r.Context())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "players.html", page{Title: "Players", Nav: "players", Data: pcs})
}

// playerPage is what one player's character knows.
func (s *Server) playerPage(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	camp, err := s.openAsMember(r)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	k, err := camp.KnowledgeOf(r.Context(), user, "")
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d := playerData{UserID: user, Knowledge: k, Shown: k.Lines}
	if len(d.Shown) > playerShownLines {
		d.Shown = d.Shown[len(d.Shown)-playerShownLines:]
	}
	title := "What " + user + "'s character knows"
	if k.Character.Name != "" {
		title = "What " + k.Character.Name + " knows"
	}
	s.render(w, r, http.StatusOK, "player.html", page{Title: title, Nav: "players", Data: d})
}
