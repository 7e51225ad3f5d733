package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

func TestConsoleCommandPrintsAOneTimeLink(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": sampleProcessed.Copy(t)}
	if code, _, errs := runCLI(t, vars, "console"); code != 2 || !strings.Contains(errs, "--campaign is required") {
		t.Errorf("without --campaign: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, vars, "console", "--campaign", "nope", "--listen", "127.0.0.1:0"); code != 1 || !strings.Contains(errs, `campaign "nope" does not exist; known campaigns: ironhold-saga`) {
		t.Errorf("unknown campaign: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, vars, "console", "--campaign", "ironhold-sag", "--listen", "127.0.0.1:0"); code != 1 || !strings.Contains(errs, `(did you mean "ironhold-saga"?)`) {
		t.Errorf("misspelt campaign: %d %q", code, errs)
	}

	link, stop := runConsole(t, vars, "127.0.0.1:0")
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
	stop()
}

// runConsole runs `glyphoxa console` on the sample campaign at listen
// and returns the sign-in link it prints, and a stop that ends it and
// checks that it exited 0.
func runConsole(t *testing.T, vars map[string]string, listen string) (link string, stop func()) {
	t.Helper()
	pr, pw := io.Pipe()
	var stderr syncBuffer
	e := &env{stdin: strings.NewReader(""), stdout: pw, stderr: &stderr, getenv: func(k string) string { return vars[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"console", "--campaign", "ironhold-saga", "--listen", listen}, e)
		pw.Close()
	}()
	stop = func() {
		t.Helper()
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("console exited %d: %s", code, stderr.String())
		}
	}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.Contains(l, "/signin/once?token=") {
			link = l
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if link == "" {
		stop()
		t.Fatalf("no sign-in link printed; stderr %s", stderr.String())
	}
	return link, stop
}

// TestConsoleOnEveryInterfacePrintsALoopbackLink: `glyphoxa console
// --listen 0.0.0.0:PORT` (in a container, its port published) printed a
// link to http://[::]:PORT, which is no address to open; the link names
// the loopback, as the port published on the host does, and signs in.
func TestConsoleOnEveryInterfacePrintsALoopbackLink(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": sampleProcessed.Copy(t)}
	link, stop := runConsole(t, vars, "0.0.0.0:0")
	defer stop()
	if !strings.HasPrefix(link, "http://127.0.0.1:") {
		t.Fatalf("console on every interface printed the link %s, want one on http://127.0.0.1", link)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/review" {
		t.Errorf("the link led to %s (%d)", resp.Request.URL, resp.StatusCode)
	}
}

func TestServeServesTheConsole(t *testing.T) {
	t.Parallel()
	const guildID = "100000000000000001"
	dsn := migratedDB(t)
	consoleAddr := freeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf(`discord:
  token: fake-token
  guilds:
    - {guild_id: %q, campaign: ironhold-saga, dm_role_ids: ["200000000000000001"]}
lifecycle:
  shutdown_timeout: 5s
console:
  listen: %s
  public_url: https://dm.example.org
  client_id: "4242"
  client_secret: shh
`, guildID, consoleAddr)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.AddGuild(&discordgo.Guild{ID: guildID, Name: "The Table"})
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	fake.Attach(sess)
	t.Cleanup(func() { sess.Close() })
	var stderr syncBuffer
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr,
		getenv: func(k string) string { return map[string]string{"GLYPHOXA_DSN": dsn}[k] }, discord: sess}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfgPath, "--listen", anyPort}, e) }()
	// The console listens before the bot connects; the bot has connected
	// once its commands are registered.
	if _, err := fake.WaitCall(hangGuard, discordtest.PathHasPrefix("PUT", "/applications/")); err != nil {
		t.Fatalf("the bot did not start: %v\n%s", err, stderr.String())
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get("http://" + consoleAddr + "/signin")
	if err != nil {
		t.Fatalf("the console does not answer: %v\n%s", err, stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Sign in with Discord · ironhold-saga") {
		t.Fatalf("/signin: %d %.300s", resp.StatusCode, body)
	}
	resp, err = c.Get("http://" + consoleAddr + "/signin/discord?campaign=ironhold-saga")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Host != "discord.com" || loc.Query().Get("client_id") != "4242" ||
		loc.Query().Get("redirect_uri") != "https://dm.example.org/oauth/callback" {
		t.Errorf("sign-in redirect: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if cs := resp.Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("behind an https public_url the state cookie must be Secure: %+v", cs)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
	if _, err := c.Get("http://" + consoleAddr + "/signin"); err == nil {
		t.Error("the console still answers after shutdown")
	}
}
