package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestConsoleCommandPrintsAOneTimeLink(t *testing.T) {
	vars := map[string]string{"GLYPHOXA_DSN": pgtest.NewDatabase(t)}
	if code, out, errs := runCLI(t, vars, "import", "../../testdata/campaigns/ironhold-saga.yaml"); code != 0 {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	if code, _, errs := runCLI(t, vars, "console"); code != 2 || !strings.Contains(errs, "--campaign is required") {
		t.Errorf("without --campaign: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, vars, "console", "--campaign", "nope", "--listen", "127.0.0.1:0"); code != 1 || !strings.Contains(errs, `campaign "nope" is not in the database`) {
		t.Errorf("unknown campaign: %d %q", code, errs)
	}

	pr, pw := io.Pipe()
	var stderr syncBuffer
	e := &env{stdin: strings.NewReader(""), stdout: pw, stderr: &stderr, getenv: func(k string) string { return vars[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"console", "--campaign", "ironhold-saga", "--listen", "127.0.0.1:0"}, e)
		pw.Close()
	}()
	var link string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.Contains(l, "/signin/once?token=") {
			link = l
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if link == "" {
		t.Fatalf("no sign-in link printed; stderr %s", stderr.String())
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	get := func(u string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get(link)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/review" || !strings.Contains(body, "Vexa Thorn") {
		t.Fatalf("the link led to %s (%d): %.300s", resp.Request.URL, resp.StatusCode, body)
	}
	base := strings.SplitN(link, "/signin", 2)[0]
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if tok == nil {
		t.Fatal("no CSRF token on the review page")
	}
	// "Ask as this NPC" runs the real retrieval with the NPC's scope.
	resp, err := c.PostForm(base+"/npc/grimjaw/ask", url.Values{"csrf": {tok[1]}, "question": {"what happened to the steel shipment?"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `<ol class="answers"`) || !strings.Contains(strings.ToLower(string(b)), "steel") {
		t.Errorf("ask as grimjaw: %d %.2000s", resp.StatusCode, b)
	}
	if resp, _ := get(link); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the link signed in twice: %d", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("console exited %d: %s", code, stderr.String())
	}
}
