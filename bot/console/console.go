package console

import (
	"github.com/glyphoxa/glyphoxa/memory/retrieve"

	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/httpcheck"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

//go:embed assets
var assets embed.FS

// Asker runs retrieval over a campaign as one NPC would: only what the NPC
// may know. The console's "ask as this NPC" box calls it.
type Asker interface {
	AskAs(ctx context.Context, campaign, npcID, question string, k int) ([]AskResult, error)
}

// AskResult is one retrieved piece of memory.
type AskResult = retrieve.Result

var _ Asker = (*retrieve.Asker)(nil)

// OAuth configures sign-in with Discord. A zero ClientID disables it.
type OAuth struct {
	ClientID, ClientSecret string
	// DiscordURL is Discord's web origin; default https://discord.com. Tests
	// point it at bot/discordtest.
	DiscordURL string
}

// Config configures a console Server.
type Config struct {
	// Door opens the campaigns' memory (required). Every request reads
	// through a handle bound to the signed-in user: the DM's viewer for a
	// DM session, a player's for a player session, so the store leaves out
	// in SQL what a player may not see.
	Door *access.Door
	// Campaigns are the campaigns the console serves, with the guild whose
	// members may sign in with Discord and its DM rule. A campaign without
	// a guild id is reachable through one-time links only.
	Campaigns []bot.Guild
	OAuth     OAuth
	// PublicURL is the console's address as browsers reach it (e.g.
	// https://dm.example.org), used for the OAuth redirect; empty means the
	// request's own host over http.
	PublicURL string
	// Asker answers "ask as this NPC"; nil hides the box.
	Asker Asker
	// Live is the status of the tables this process runs; nil for none.
	// The Live page also shows tables of other processes on the database
	// (see LivePublisher).
	Live LiveSource
	// Recaps writes session recaps; nil makes extractive ones.
	Recaps Recapper
	// Export writes the campaign's bundle for the DM's download
	// (GET /export); nil answers 404.
	Export Exporter
	// Reprocess rebuilds a session's chunks after Keep canon marked one of
	// its lines non-canon (the store deleted the chunks quoting it); nil
	// leaves the rest of those chunks' lines to the session's next
	// chunking (`glyphoxa process`).
	Reprocess func(ctx context.Context, campaign, sessionID string) error
	// SessionTTL is how long a sign-in lasts; default 12h.
	SessionTTL time.Duration
	// LinkTTL is how long a one-time link stays valid; default 15m.
	LinkTTL    time.Duration
	HTTPClient *http.Client
	Clock      clock.Clock
	Logger     *slog.Logger
}

// Server is the console's HTTP handler. It is safe for concurrent use.
type Server struct {
	cfg  Config
	log  *slog.Logger
	clk  clock.Clock
	tmpl map[string]*template.Template
	mux  *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*session
	// signedOut are the sign-outs that did not reach the database (it was
	// down), by cookie id, with when the sign-in would expire: refused
	// here, and removed from the database once it answers.
	signedOut map[string]time.Time
	links     map[string]oneTime
	states    map[string]oauthState
	stateSeq  uint64

	snaps  snapshots
	recaps recaps
}

// New checks cfg and returns a console.
func New(cfg Config) (*Server, error) {
	if cfg.Door == nil {
		return nil, errors.New("console: a memory door is required (Config.Door)")
	}
	if len(cfg.Campaigns) == 0 {
		return nil, errors.New("console: no campaign to serve")
	}
	seen := map[string]bool{}
	for i, g := range cfg.Campaigns {
		if strings.TrimSpace(g.Campaign) == "" {
			return nil, fmt.Errorf("console: campaign %d has no id", i)
		}
		if seen[g.Campaign] {
			return nil, fmt.Errorf("console: campaign %q is listed twice", g.Campaign)
		}
		seen[g.Campaign] = true
	}
	if cfg.OAuth.DiscordURL == "" {
		cfg.OAuth.DiscordURL = "https://discord.com"
	}
	cfg.OAuth.DiscordURL = strings.TrimRight(cfg.OAuth.DiscordURL, "/")
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = 15 * time.Minute
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	tmpl, err := parsePages()
	if err != nil {
		return nil, fmt.Errorf("console: parsing templates: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "console"), clk: clock.OrReal(cfg.Clock), tmpl: tmpl,
		sessions: map[string]*session{}, signedOut: map[string]time.Time{}, links: map[string]oneTime{}, states: map[string]oauthState{},
		snaps: snapshots{per: map[string]*campaignSnap{}, maxFacts: maxSnapshotFacts, maxRows: maxSnapshotRows}, recaps: recaps{per: map[recapKey]recap.Recap{}}}
	s.routes()
	return s, nil
}

// ServeHTTP serves the console.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; form-action 'self' "+s.cfg.OAuth.DiscordURL+"; frame-ancestors 'none'")
	if err := httpcheck.Request(r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad request: "+err.Error()+".")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if status, msg := readForm(w, r); status != 0 {
			s.fail(w, r, status, msg)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// maxFormBytes bounds the body of a request to the console. Its largest
// form, an NPC's persona, is a few kilobytes; 256 KiB leaves room for
// long ones and keeps a stranger's upload out of memory and off the disk.
const maxFormBytes = 256 << 10

// readForm reads the form of a write before any handler (or the CSRF
// check) does, within maxFormBytes: a body declared or found longer is
// refused with 413 before it is read to the end, a multipart body (the
// console's forms are URL-encoded; it takes no uploads) with 415 before
// it is read at all, and a NUL byte or invalid UTF-8 in a field with 400.
// It returns 0 when the form is fine.
func readForm(w http.ResponseWriter, r *http.Request) (int, string) {
	tooLarge := fmt.Sprintf("The request is larger than the %d KiB the console accepts.", maxFormBytes>>10)
	if r.ContentLength > maxFormBytes {
		return http.StatusRequestEntityTooLarge, tooLarge
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); strings.HasPrefix(mt, "multipart/") {
		return http.StatusUnsupportedMediaType, "The console's forms are sent URL-encoded; it takes no uploads."
	}
	if err := r.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return http.StatusRequestEntityTooLarge, tooLarge
		}
		return http.StatusBadRequest, "The form does not parse: " + err.Error()
	}
	if err := httpcheck.Values("form field", r.PostForm); err != nil {
		return http.StatusBadRequest, "Bad request: " + err.Error() + "."
	}
	return 0, ""
}

// role is what a handler requires.
type role int

const (
	anyone role = iota // signed in, DM or player
	dmOnly
)

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	m.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	m.HandleFunc("GET /signin", s.signinPage)
	m.HandleFunc("GET /signin/once", s.signinOnce)
	m.HandleFunc("GET /signin/discord", s.signinDiscord)
	m.HandleFunc("GET /oauth/callback", s.oauthCallback)
	m.HandleFunc("POST /signout", s.need(anyone, s.signout))

	m.HandleFunc("GET /{$}", s.need(anyone, s.home))
	m.HandleFunc("GET /review", s.need(dmOnly, s.reviewPage))
	m.HandleFunc("POST /review/fact/{id}", s.need(dmOnly, s.reviewFact))
	m.HandleFunc("POST /review/fact/{id}/edit", s.need(dmOnly, s.editFact))
	m.HandleFunc("POST /review/conflict/{id}", s.need(dmOnly, s.resolveConflict))
	m.HandleFunc("POST /review/bulk", s.need(dmOnly, s.bulkReview))
	m.HandleFunc("POST /review/undo/{id}", s.need(dmOnly, s.undoReview))
	m.HandleFunc("GET /asof", s.need(anyone, s.asOfPage))
	m.HandleFunc("GET /graph", s.need(anyone, s.graphPage))
	m.HandleFunc("GET /graph/{id}", s.need(anyone, s.graphPage))
	m.HandleFunc("GET /api/graph", s.need(anyone, s.graphJSON))
	m.HandleFunc("GET /api/graph/find", s.need(anyone, s.graphFind))
	m.HandleFunc("GET /api/entity/{id}", s.need(anyone, s.entityJSON))
	m.HandleFunc("GET /api/names", s.need(dmOnly, s.namesJSON))
	m.HandleFunc("GET /entities", s.need(dmOnly, s.entityList))
	m.HandleFunc("POST /entities", s.need(dmOnly, s.addEntity))
	m.HandleFunc("GET /entities/{id}", s.need(dmOnly, s.entityPage))
	m.HandleFunc("POST /entities/{id}/edit", s.need(dmOnly, s.editEntity))
	m.HandleFunc("POST /entities/{id}/merge", s.need(dmOnly, s.mergeEntity))
	m.HandleFunc("POST /entities/{id}/retire", s.need(dmOnly, s.retireEntity))
	m.HandleFunc("POST /entities/{id}/reveal", s.need(dmOnly, s.revealEntity))
	m.HandleFunc("GET /npc", s.need(dmOnly, s.npcList))
	m.HandleFunc("GET /npc/{id}", s.need(dmOnly, s.npcPage))
	m.HandleFunc("POST /npc/{id}/persona", s.need(dmOnly, s.savePersona))
	m.HandleFunc("POST /npc/{id}/ask", s.need(dmOnly, s.askAs))
	m.HandleFunc("GET /players", s.need(anyone, s.playerList))
	m.HandleFunc("GET /players/{user}", s.need(anyone, s.playerPage))
	m.HandleFunc("GET /sessions", s.need(anyone, s.sessionList))
	m.HandleFunc("GET /sessions/{id}", s.need(anyone, s.sessionPage))
	m.HandleFunc("GET /recap", s.need(anyone, s.campaignRecap))
	m.HandleFunc("GET /ledger", s.need(anyone, s.ledgerPage))
	m.HandleFunc("GET /live", s.need(dmOnly, s.livePage))
	m.HandleFunc("GET /api/live", s.need(dmOnly, s.liveJSON))
	m.HandleFunc("POST /live/card/{id}", s.need(dmOnly, s.settleCard))
	m.HandleFunc("GET /export", s.need(dmOnly, s.exportBundle))
	s.mux = m
}

// campaign returns the configured binding of a campaign id.
func (s *Server) campaign(id string) (bot.Guild, bool) {
	for _, g := range s.cfg.Campaigns {
		if g.Campaign == id {
			return g, true
		}
	}
	return bot.Guild{}, false
}
