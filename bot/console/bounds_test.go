package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// zeros is an endless body that costs no memory. The client's transport
// reads it on its own goroutine, so what is left is counted atomically.
type zeros struct{ left atomic.Int64 }

func (z *zeros) Read(p []byte) (int, error) {
	left := z.left.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), left)
	clear(p[:n])
	z.left.Add(-n)
	return int(n), nil
}

// TestLargeBodiesAreRefusedBeforeParsing sends a signed-in player's huge
// posts: none is read past the console's bound, none is spooled to disk,
// and the CSRF check never gets to read them.
func TestLargeBodiesAreRefusedBeforeParsing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where multipart parsing would spool files
	f := newFixture(t)
	b, resp, _ := f.signInDiscord(t, player)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	const huge = 300 << 20
	for _, tc := range []struct {
		name, contentType string
		length            int64 // -1: chunked, no declared length
		status            int
		want              string
	}{
		{"declared 300 MB multipart", "multipart/form-data; boundary=x", huge, http.StatusRequestEntityTooLarge, "larger than the 256 KiB"},
		{"chunked 300 MB multipart", "multipart/form-data; boundary=x", -1, http.StatusUnsupportedMediaType, "takes no uploads"},
		{"chunked 300 MB form", "application/x-www-form-urlencoded", -1, http.StatusRequestEntityTooLarge, "larger than the 256 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &zeros{}
			body.left.Store(huge)
			req, _ := http.NewRequest(http.MethodPost, b.base+"/signout", body)
			req.ContentLength = tc.length
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := b.c.Do(req)
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(got), tc.want) {
				t.Fatalf("got %d %.300s, want %d saying %q", resp.StatusCode, got, tc.status, tc.want)
			}
			if sent := huge - body.left.Load(); sent > 64<<20 {
				t.Errorf("the console read %d MB of the body before refusing it", sent>>20)
			}
			if es, _ := os.ReadDir(tmp); len(es) != 0 {
				t.Errorf("the body was spooled to disk: %v", es)
			}
		})
	}
	// The player is still signed in: nothing was half-done.
	if resp, _ := b.get("/graph"); resp.StatusCode != http.StatusOK {
		t.Errorf("after the refused posts /graph answers %d", resp.StatusCode)
	}
}

// TestBadTextIsRefusedWith400 sends NUL bytes, invalid UTF-8 and a
// 100,000-word search: each is a 400 that says what is wrong, never a 500.
func TestBadTextIsRefusedWith400(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	csrf := b.csrf()
	for _, tc := range []struct {
		name, path string
		form       url.Values // nil: GET
		want       string
	}{
		{"NUL in a search", "/sessions/s1?q=forge%00hammer", nil, `the query parameter &#34;q&#34; holds a NUL byte`},
		{"invalid UTF-8 in a search", "/sessions/s1?q=%C3%28", nil, `the query parameter &#34;q&#34; is not valid UTF-8`},
		{"NUL in the path", "/sessions/s1%00", nil, "the request path holds a NUL byte"},
		{"NUL in an API parameter", "/api/graph?session=s1%00", nil, `the query parameter "session" holds a NUL byte`},
		{"100k-word search", "/sessions/s1?q=" + strings.Repeat("word+", 100_000), nil, "longer than the 8192 bytes allowed"},
		{"NUL in a name suggestion", "/api/names?q=grim%00jaw", nil, `the query parameter "q" holds a NUL byte`},
		{"100k-word name suggestion", "/api/names?q=" + strings.Repeat("word+", 100_000), nil, "longer than the 8192 bytes allowed"},
		{"NUL in a form field", "/npc/grimjaw/ask", url.Values{"csrf": {csrf}, "question": {"who\x00are you"}},
			`the form field &#34;question&#34; holds a NUL byte`},
		{"invalid UTF-8 in a form field", "/review/fact/1/edit", url.Values{"csrf": {csrf}, "subject": {"gr\xffimjaw"}},
			`the form field &#34;subject&#34; is not valid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &browser{t: t, c: b.c, base: b.base} // fails this subtest, not its parent
			var resp *http.Response
			var body string
			if tc.form == nil {
				resp, body = b.get(tc.path)
			} else {
				resp, body = b.post(tc.path, tc.form, nil)
			}
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Fatalf("got %d %.400s, want 400 saying %q", resp.StatusCode, body, tc.want)
			}
			if len(body) > 20_000 {
				t.Errorf("the error page is %d bytes: it repeats the input", len(body))
			}
		})
	}
}

// TestOAuthStatesAreBounded starts more Discord sign-ins than the console
// keeps: the count stays at the bound, the oldest is forgotten first, and
// a sign-in started last still completes.
func TestOAuthStatesAreBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	noFollow := func(b *browser) *browser {
		b.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return b
	}
	start := func(b *browser) string {
		t.Helper()
		resp, _ := b.get("/signin/discord?campaign=" + campaign)
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("starting a sign-in: %d", resp.StatusCode)
		}
		return resp.Header.Get("Location")
	}
	f.discord.SetOAuthUser(guildID, player)
	first := noFollow(f.browser(t))
	firstAuth := start(first)
	// The stranger's 1,500 sign-ins go to the console's handler in this
	// process, one after another, as the server would serve them (the same
	// handler, the same lock): over loopback HTTP each was a round trip
	// through the scheduler, 40 s of waiting for 1,500 of them on a loaded
	// machine.
	for i := range 1500 {
		rec := httptest.NewRecorder()
		f.console.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/signin/discord?campaign="+campaign, nil))
		if rec.Code != http.StatusFound {
			t.Fatalf("the stranger's sign-in %d: %d %.300s", i+1, rec.Code, rec.Body)
		}
	}
	if n := f.console.OAuthStates(); n != 1024 {
		t.Fatalf("%d sign-ins kept after 1501 started, want the bound 1024", n)
	}
	// The first browser's state was the oldest: it was forgotten.
	first.c.CheckRedirect = nil
	resp, err := first.c.Get(firstAuth) // Discord sends the browser back to the callback
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "did not start here") {
		t.Errorf("the oldest sign-in: %d at %s: %.300s, want it refused", resp.StatusCode, resp.Request.URL.Path, body)
	}
	if _, resp, body := f.signInDiscord(t, player); resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/graph" {
		t.Errorf("a new sign-in after the flood: %d at %s: %.300s", resp.StatusCode, resp.Request.URL.Path, body)
	}
}
