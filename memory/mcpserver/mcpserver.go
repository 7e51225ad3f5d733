// Package mcpserver serves a campaign's memory over the Model Context
// Protocol, so desktop assistants and other agents can read the knowledge
// graph, propose or make changes, search what was said, ask questions, and
// keep in sync.
//
// Agents with the DM token (and local stdio use) change canon directly;
// agents with a player token make proposals the DM reviews: new facts
// become pending facts, other changes become proposals.
//
// Every read runs on the campaign bound to the caller's role
// (a handle from the door, memory/access): the store filters secrets out in SQL, so a
// player-token agent never receives one, whichever tool it calls (ask
// included: the [Asker] is handed the caller's viewer). Tokens are per
// campaign: a handler knows only its own campaign's tokens.
//
// # The memory-tool API (kg_*)
//
// The kg_* tools answer in the shapes of the design
// (shared/specs/kg-memory-api.md). Its two levels map onto glyphoxa's, and
// a level argument takes either name:
//
//   - the design's "project" level (shared) is the campaign ("campaign"):
//     entities are its nodes, canon facts between two entities its edges,
//     and edges with an artifact end (a path, path:line) are kept beside
//     the facts; a player token reads it without secret facts, secret
//     attributes or DM-only keys, however deeply they sit in an attribute;
//   - the design's "user" level (private) is the DM's ("dm"): the DM's
//     private notes, which only the DM token reads or writes.
//
// kg_read answers {"campaign": graph, "dm": graph} (no "dm" for a player),
// each graph {"nodes", "edges", "traces", "tokens"}; a node is {"id",
// "gist", "touches", "notes"} with notes a list; an edge {"from", "to",
// "rel", "notes"} with rel kebab-case (stored as LOCATED_AT for
// located-at); kg_sync answers {"session_id", "since_ts" (Unix seconds),
// "changes" per level, "total_changes"}; kg_recall {"recalled": true,
// "node"}. The richer tools (read_graph, put_node, put_edge, delete_edge,
// recall_node, sync, search_sessions, ask, resolve_proposal) stay beside
// them.
package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/httpcheck"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
)

// Role is what an agent may do.
type Role string

// Roles.
const (
	RolePlayer Role = "player"
	RoleDM     Role = "dm"
)

// AskResult is one answer of hybrid retrieval.
type AskResult = retrieve.Result

// Asker answers questions from a campaign's memory (hybrid retrieval).
// It must answer from what v may see: the server passes the caller's
// viewer, and an implementation binds its retrieval to it
// (a handle from the door, memory/access).
type Asker interface {
	Ask(ctx context.Context, campaign string, v memory.Viewer, question string, k int) ([]AskResult, error)
}

var _ Asker = (*retrieve.Asker)(nil)

// Viewer is the store viewer of a role: the DM's, or any player's (which
// reads no line of a split scene; a player's own token binds to the
// player instead, see [Server.viewer]).
func (r Role) Viewer() memory.Viewer {
	if r == RoleDM {
		return memory.DMViewer()
	}
	return memory.PlayerViewer()
}

// Config configures a Server.
type Config struct {
	// Door opens the campaign for each caller's role (memory/access).
	Door     *access.Door
	Campaign string
	// Asker backs the ask tool; without it ask says it is unavailable.
	Asker Asker
	// StdioRole is the role of a local stdio client (default DM: whoever
	// runs glyphoxa on the server can reach the database anyway).
	StdioRole Role
	Logger    *slog.Logger
	Version   string
	// Clock dates kg_* writes and sessions (default the real clock).
	Clock clock.Clock
}

// Server is the MCP server of one campaign.
type Server struct {
	cfg   Config
	mcp   *mcp.Server
	clock clock.Clock
}

// New returns a server with every tool registered.
func New(cfg Config) (*Server, error) {
	if cfg.Door == nil || strings.TrimSpace(cfg.Campaign) == "" {
		return nil, errors.New("mcp server: the memory door and a campaign are required")
	}
	if cfg.StdioRole == "" {
		cfg.StdioRole = RoleDM
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, clock: clock.OrReal(cfg.Clock)}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "glyphoxa", Title: "glyphoxa campaign memory", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: "The memory of the tabletop campaign " + cfg.Campaign +
			": a knowledge graph of people, places and things with facts between them, and the transcripts of the sessions played."})
	s.mcp.AddReceivingMiddleware(checkArguments)
	s.register()
	return s, nil
}

// MCP returns the underlying MCP server (to run it on stdio).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// RunStdio serves one client on standard input and output until ctx ends
// or the client disconnects (see [Server.RunIO]).
func (s *Server) RunStdio(ctx context.Context) error {
	return s.RunIO(ctx, os.Stdin, nopCloser{os.Stdout})
}

// Tokens are the bearer tokens of one campaign's endpoint. Empty tokens
// are ignored.
type Tokens struct {
	// DM tokens give DM rights.
	DM []string
	// Player tokens give player rights, shared by the group.
	Player []string
	// Players maps a player's own token to the player's name: player
	// rights, and the player's writes are signed with the name. A name
	// that is a player's Discord user id, or the name of exactly one
	// player's character (`/session player`, the campaign file's
	// players:), binds the token's reads to that player: the lines their
	// character witnessed, a split scene they were in included. Any other
	// name reads as any player (no line of a split scene).
	Players map[string]string
}

// Empty reports whether no token is set.
func (t Tokens) Empty() bool {
	for _, x := range append(append([]string(nil), t.DM...), t.Player...) {
		if x != "" {
			return false
		}
	}
	for x := range t.Players {
		if x != "" {
			return false
		}
	}
	return true
}

// match finds the role (and player name) of token, comparing it with every
// token in constant time.
func (t Tokens) match(token string) (Role, string, bool) {
	var role Role
	var name string
	found := false
	try := func(candidate string, r Role, n string) {
		if candidate != "" && subtle.ConstantTimeCompare([]byte(token), []byte(candidate)) == 1 && !found {
			role, name, found = r, n, true
		}
	}
	for _, x := range t.DM {
		try(x, RoleDM, "")
	}
	for _, x := range t.Player {
		try(x, RolePlayer, "")
	}
	for x, n := range t.Players {
		try(x, RolePlayer, n)
	}
	return role, name, found
}

// MinTokenLen is the shortest bearer token [Server.HTTPHandler] accepts:
// a shorter one can be guessed.
const MinTokenLen = 16

// Check reports a token shorter than MinTokenLen, naming which one (the DM
// tokens by position, a player's by name), never its value.
func (t Tokens) Check() error {
	short := func(x string) bool { return x != "" && len(x) < MinTokenLen }
	for i, x := range t.DM {
		if short(x) {
			return fmt.Errorf("mcp server: DM token %d is %d characters long; use at least %d", i+1, len(x), MinTokenLen)
		}
	}
	for i, x := range t.Player {
		if short(x) {
			return fmt.Errorf("mcp server: player token %d is %d characters long; use at least %d", i+1, len(x), MinTokenLen)
		}
	}
	for x, n := range t.Players {
		if short(x) {
			return fmt.Errorf("mcp server: the token of player %q is %d characters long; use at least %d", n, len(x), MinTokenLen)
		}
	}
	return nil
}

// HTTPHandler serves the streamable HTTP transport, requiring one of the
// campaign's bearer tokens (see [Tokens]); any other token, or none, is
// answered 401. It refuses tokens shorter than MinTokenLen. A path or
// query parameter with a NUL byte or invalid UTF-8 is answered 400. Each
// token holds at most MaxSessionsPerToken sessions (the least recently
// used is closed beyond it), and a session idle for SessionIdle ends.
func (s *Server) HTTPHandler(tokens Tokens) (http.Handler, error) {
	if err := tokens.Check(); err != nil {
		return nil, err
	}
	if tokens.Empty() {
		return nil, errors.New("mcp server: serving HTTP needs at least one token")
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		role, name, ok := tokens.match(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		user := string(role)
		if name != "" {
			user += ":" + name
		}
		return &auth.TokenInfo{Scopes: []string{string(role)}, UserID: user, Expiration: time.Now().Add(24 * time.Hour),
			Extra: map[string]any{tokenKeyExtra: tokenKey(token)}}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: SessionIdle, Logger: s.cfg.Logger})
	caps := &sessionCap{srv: s.mcp, max: MaxSessionsPerToken, ids: map[string][]string{}}
	return httpcheck.Handler(auth.RequireBearerToken(verify, nil)(caps.wrap(h))), nil
}

// caller is who is calling a tool.
type caller struct {
	role  Role
	actor string
	// player is the name of a player's own token ("" for the group's).
	player string
}

func (s *Server) caller(req *mcp.CallToolRequest) caller {
	c := caller{role: s.cfg.StdioRole}
	user := string(c.role)
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		// A token without a known role has player rights, never more.
		c.role, user = RolePlayer, string(RolePlayer)
		if sc := req.Extra.TokenInfo.Scopes; len(sc) > 0 && Role(sc[0]) == RoleDM {
			c.role = RoleDM
		}
		if u := req.Extra.TokenInfo.UserID; strings.HasPrefix(u, string(c.role)) {
			user = u
			if c.role == RolePlayer {
				c.player = strings.TrimPrefix(u, string(RolePlayer)+":")
				if c.player == u {
					c.player = ""
				}
			}
		}
	}
	name := "agent"
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			name = p.ClientInfo.Name
		}
	}
	c.actor = "mcp:" + user + ":" + name
	return c
}

// campaign is the campaign bound to the caller's viewer (see
// [Server.viewer]): every read through it is filtered by the store.
func (s *Server) campaign(ctx context.Context, who caller) (*access.Campaign, error) {
	v, err := s.viewer(ctx, who)
	if err != nil {
		return nil, err
	}
	return s.cfg.Door.Open(ctx, s.cfg.Campaign, v)
}

// viewer is who the caller reads as: the DM for the DM's token (and a
// local stdio client by default); for a player's own token whose name is a
// player's user id or the name of exactly one player's character, that
// player (memory.PlayerViewerOf: the lines their character witnessed);
// otherwise any player (memory.PlayerViewer: no line said while the party
// was split). An ambiguous name binds to no one rather than guess.
func (s *Server) viewer(ctx context.Context, who caller) (memory.Viewer, error) {
	if who.role == RoleDM || who.player == "" {
		return who.role.Viewer(), nil
	}
	pub, err := s.cfg.Door.Open(ctx, s.cfg.Campaign, memory.PlayerViewer())
	if err != nil {
		return memory.Viewer{}, err
	}
	pcs, err := pub.PlayerCharacters(ctx)
	if err != nil {
		return memory.Viewer{}, err
	}
	var users []string
	for _, pc := range pcs {
		if pc.UserID == who.player || strings.EqualFold(pc.Name, who.player) {
			users = append(users, pc.UserID)
		}
	}
	slices.Sort(users)
	if users = slices.Compact(users); len(users) == 1 {
		return memory.PlayerViewerOf(users[0]), nil
	}
	return memory.PlayerViewer(), nil
}

// Entity is an entity as agents see it.
type Entity struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Name       string         `json:"name"`
	Aliases    []string       `json:"aliases,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Fact is a relationship as agents see it.
type Fact struct {
	ID         int64          `json:"id"`
	Source     string         `json:"source"`
	Type       string         `json:"type"`
	Target     string         `json:"target"`
	Status     string         `json:"status"`
	Confidence float64        `json:"confidence"`
	Session    string         `json:"session,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Trace is an archived node: an id and a few words.
type Trace struct {
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

// toEntity converts an entity read through a role-bound campaign (which has
// already left out what the role may not see).
func toEntity(e memory.Entity) Entity {
	return Entity{ID: e.ID, Type: e.Type, Name: e.Name, Aliases: e.Aliases, Attributes: e.Attributes}
}

func toFact(r memory.Relationship) Fact {
	return Fact{ID: r.ID, Source: r.SourceID, Type: r.Type, Target: r.TargetID, Status: string(r.Status),
		Confidence: r.Provenance.Confidence, Session: r.Provenance.SessionID, Attributes: r.Attributes}
}

func archived(e memory.Entity) bool { return e.Attributes[attrArchived] == true }

// attrArchived marks an entity an agent with DM rights deleted: it stays in
// the database as a trace and can be recalled.
const attrArchived = "archived"

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(s), "#"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a fact id", s)
	}
	return id, nil
}

func unmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reading a stored proposal: %w", err)
	}
	return nil
}
