package httpcheck_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/httpcheck"
)

func TestHandler(t *testing.T) {
	var reached int
	h := httptest.NewServer(httpcheck.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
	})))
	defer h.Close()
	for _, tc := range []struct {
		name, target string
		status       int
		want         string
	}{
		{"plain", "/a/b?q=grimjaw+forge&x=%C3%A9", http.StatusOK, ""},
		{"NUL in a query value", "/a?q=gate%00keeper", http.StatusBadRequest, `the query parameter "q" holds a NUL byte`},
		{"invalid UTF-8 in a query value", "/a?q=%FF", http.StatusBadRequest, `the query parameter "q" is not valid UTF-8`},
		{"NUL in a query name", "/a?%00=1", http.StatusBadRequest, "a query parameter name holds a NUL byte"},
		{"NUL in the path", "/a/%00b", http.StatusBadRequest, "the request path holds a NUL byte"},
		{"invalid UTF-8 in the path", "/a/%C3%28", http.StatusBadRequest, "the request path is not valid UTF-8"},
		{"bad escape", "/a?q=%zz", http.StatusBadRequest, "the query string does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(h.URL + tc.target)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
				t.Errorf("GET %s: %d %q, want %d saying %q", tc.target, resp.StatusCode, body, tc.status, tc.want)
			}
		})
	}
	if reached != 1 {
		t.Errorf("the handler was reached %d times, want once (the plain request)", reached)
	}
}
