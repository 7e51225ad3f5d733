package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cmdHealth asks a running `glyphoxa serve` whether it is alive (/healthz)
// or ready (/readyz). It is the container's health check: the image needs
// no curl or wget.
func cmdHealth(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("health", e)
	var sf storeFlags
	sf.registerConfig(fs) // it reads server.listen, never the database
	rawURL := fs.String("url", "", "the endpoint to check (default: /healthz at server.listen, 0.0.0.0 read as 127.0.0.1)")
	ready := fs.Bool("ready", false, "check /readyz (database and Discord connected) instead of /healthz")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive, got %s", *timeout)
	}
	target := *rawURL
	if target == "" {
		cfg, err := sf.loadConfig(e)
		if err != nil {
			return err
		}
		path := "/healthz"
		if *ready {
			path = "/readyz"
		}
		if target, err = localURL(cfg.Server.Listen, path); err != nil {
			return err
		}
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--url %q is not an http(s) URL", target)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("nothing answers at %s (is `glyphoxa serve` running and listening there?): %w", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s: %s", target, resp.Status, msg)
	}
	printf(e.stdout, "%s: %s %s\n", target, resp.Status, msg)
	return nil
}

// localURL is the URL of path on a listen address, as seen from the same
// machine.
func localURL(listen, path string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("server.listen %q is not host:port: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}
