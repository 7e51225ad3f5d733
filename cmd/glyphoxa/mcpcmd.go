package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
)

func cmdMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("mcp", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	httpAddr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio (needs server.mcp_token or server.mcp_dm_token)")
	kgLimit := fs.Int("kg-limit", 0, "set the campaign's token budget for the kg_* tools' view (default 5000, kept in the database)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := checkCampaign(ctx, store, *campaign); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	door, closeDoor, err := openDoor(ctx, store, cfg, logger)
	if err != nil {
		return err
	}
	defer closeDoor()
	asker, err := newAsker(door, cfg)
	if err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Config{Door: door, Campaign: *campaign, Logger: logger, Asker: asker})
	if err != nil {
		return err
	}
	if *kgLimit != 0 {
		camp, err := door.Open(ctx, *campaign, memory.DMViewer())
		if err != nil {
			return err
		}
		if err := camp.SetKGLimit(ctx, *kgLimit); err != nil {
			return err
		}
	}
	comp := &mcpserver.Compactor{Door: door, Campaign: *campaign, Logger: logger}
	if err := comp.Start(ctx); err != nil {
		return err
	}
	defer comp.Close()
	if *httpAddr == "" {
		// Standard output is the protocol; nothing else may be printed there.
		return srv.RunStdio(ctx)
	}
	tokens := mcpserver.Tokens{DM: []string{cfg.Server.MCPDMToken}, Player: []string{cfg.Server.MCPToken}, Players: map[string]string{}}
	eps, err := cfg.MCPEndpoints()
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if ep.Campaign == *campaign {
			tokens.DM, tokens.Player = append(tokens.DM, ep.DM...), append(tokens.Player, ep.Player...)
			for t, n := range ep.Players {
				tokens.Players[t] = n
			}
		}
	}
	if tokens.Empty() {
		return errors.New("serving MCP over HTTP needs a token: set server.mcp_token (player rights) or server.mcp_dm_token (DM rights), or GLYPHOXA_MCP_TOKEN / GLYPHOXA_MCP_DM_TOKEN, or a guild's mcp_token for this campaign")
	}
	h, err := srv.HTTPHandler(tokens)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return err
	}
	printf(e.stderr, "serving the MCP endpoint of campaign %q at http://%s/mcp\n", *campaign, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return hs.Shutdown(sctx)
	case err := <-errc:
		return err
	}
}
