// Package mcpserver serves a campaign's memory over the Model Context
// Protocol, so desktop assistants and other agents can read the knowledge
// graph, propose or make changes, search what was said, ask questions, and
// keep in sync.
//
// Agents with the DM token (and local stdio use) change canon directly;
// agents with the player token make proposals the DM reviews: new facts
// become pending facts, other changes become proposals. Player-token agents
// never see secrets.
package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/lifecycle/clock"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Role is what an agent may do.
type Role string

// Roles.
const (
	RolePlayer Role = "player"
	RoleDM     Role = "dm"
)

// AskResult is one answer of hybrid retrieval.
type AskResult struct {
	Kind      string   `json:"kind"`
	ID        string   `json:"id"`
	Content   string   `json:"content"`
	Score     float64  `json:"score"`
	SessionID string   `json:"session_id,omitempty"`
	EntityIDs []string `json:"entity_ids,omitempty"`
}

// Asker answers questions from a campaign's memory (hybrid retrieval).
type Asker interface {
	Ask(ctx context.Context, campaign, question string, k int) ([]AskResult, error)
}

// Config configures a Server.
type Config struct {
	Store    *postgres.Store
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
	if cfg.Store == nil || strings.TrimSpace(cfg.Campaign) == "" {
		return nil, errors.New("mcp server: a store and a campaign are required")
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
	s.register()
	return s, nil
}

// MCP returns the underlying MCP server (to run it on stdio).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// RunStdio serves one client on standard input and output until ctx ends
// or the client disconnects.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.mcp.Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler serves the streamable HTTP transport, requiring one of the
// bearer tokens: playerToken gives player rights, dmToken DM rights. An
// empty token is not accepted.
func (s *Server) HTTPHandler(playerToken, dmToken string) http.Handler {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		role := Role("")
		switch {
		case dmToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(dmToken)) == 1:
			role = RoleDM
		case playerToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(playerToken)) == 1:
			role = RolePlayer
		default:
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: []string{string(role)}, UserID: string(role), Expiration: time.Now().Add(24 * time.Hour)}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: 30 * time.Minute, Logger: s.cfg.Logger})
	return auth.RequireBearerToken(verify, nil)(h)
}

// caller is who is calling a tool.
type caller struct {
	role  Role
	actor string
}

func (s *Server) caller(req *mcp.CallToolRequest) caller {
	c := caller{role: s.cfg.StdioRole}
	if req.Extra != nil && req.Extra.TokenInfo != nil && len(req.Extra.TokenInfo.Scopes) > 0 {
		c.role = Role(req.Extra.TokenInfo.Scopes[0])
	}
	name := "agent"
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			name = p.ClientInfo.Name
		}
	}
	c.actor = "mcp:" + string(c.role) + ":" + name
	return c
}

func (s *Server) campaign(ctx context.Context) (*postgres.Campaign, error) {
	return s.cfg.Store.Campaign(ctx, s.cfg.Campaign)
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

func toEntity(e memory.Entity, role Role) Entity {
	attrs := e.Attributes
	if role != RoleDM {
		attrs = map[string]any{}
		for k, v := range e.Attributes {
			if k != memory.AttrSecretKnowledge {
				attrs[k] = v
			}
		}
	}
	return Entity{ID: e.ID, Type: e.Type, Name: e.Name, Aliases: e.Aliases, Attributes: attrs}
}

func toFact(r memory.Relationship) Fact {
	return Fact{ID: r.ID, Source: r.SourceID, Type: r.Type, Target: r.TargetID, Status: string(r.Status),
		Confidence: r.Provenance.Confidence, Session: r.Provenance.SessionID, Attributes: r.Attributes}
}

func secret(r memory.Relationship) bool { return r.Attributes[memory.AttrSecret] == true }

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
