package main

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
)

// mountMCP serves each campaign's MCP endpoint at /mcp/<campaign>, opened
// only by that campaign's tokens (config.MCPEndpoints, which config check
// runs too). It returns the number of endpoints mounted. It never panics:
// a route the mux refuses is an error naming the campaign.
func mountMCP(mux *http.ServeMux, door *access.Door, cfg config.Config, logger *slog.Logger) (n int, err error) {
	eps, err := cfg.MCPEndpoints()
	if err != nil {
		return 0, err
	}
	if len(eps) == 0 {
		return 0, nil
	}
	asker, err := newAsker(door, cfg)
	if err != nil {
		return 0, err
	}
	for _, ep := range eps {
		srv, err := mcpserver.New(mcpserver.Config{Door: door, Campaign: ep.Campaign, Logger: logger, Asker: asker})
		if err != nil {
			return n, fmt.Errorf("the MCP endpoint of campaign %q: %w", ep.Campaign, err)
		}
		h, err := srv.HTTPHandler(mcpserver.Tokens{DM: ep.DM, Player: ep.Player, Players: ep.Players})
		if err != nil {
			return n, fmt.Errorf("the MCP endpoint of campaign %q: %w", ep.Campaign, err)
		}
		if err := handle(mux, "/mcp/"+ep.Campaign, h); err != nil {
			return n, fmt.Errorf("the MCP endpoint of campaign %q: %w", ep.Campaign, err)
		}
		n++
	}
	return n, nil
}

// handle registers h at pattern, turning the mux's panic on a bad or
// conflicting pattern into an error.
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot serve %q: %v", pattern, r)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}
