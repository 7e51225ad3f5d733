package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Write([]byte("ok"))
		case "/readyz":
			http.Error(w, "not ready: discord", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("server:\n  listen: 0.0.0.0:"+port+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"alive", []string{"--url", srv.URL + "/healthz"}, 0, "200 OK ok"},
		{"alive, address from the configuration", []string{"--config", cfg}, 0, "http://127.0.0.1:" + port + "/healthz: 200 OK"},
		{"not ready", []string{"--config", cfg, "--ready"}, 1, "answered 503 Service Unavailable: not ready: discord"},
		{"nothing listening", []string{"--url", closed.URL + "/healthz"}, 1, "nothing answers at " + closed.URL},
		{"not a URL", []string{"--url", "localhost:9464"}, 2, `--url "localhost:9464" is not an http(s) URL`},
		{"bad timeout", []string{"--timeout", "0s"}, 2, "--timeout must be positive"},
		{"stray argument", []string{"now"}, 2, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, append([]string{"health"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out+errs, tt.want) {
				t.Errorf("exit %d (want %d), output %q (want %q)", code, tt.code, out+errs, tt.want)
			}
		})
	}
}
