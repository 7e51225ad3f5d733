package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// The multi-process test runs `glyphoxa serve` as real processes: this
// test binary, re-executed with GLYPHOXA_SERVE_HELPER set to serve's
// arguments, runs serve with its Discord session pointed at the fake
// Discord at GLYPHOXA_SERVE_HELPER_DISCORD.
const (
	envServeHelper        = "GLYPHOXA_SERVE_HELPER"
	envServeHelperDiscord = "GLYPHOXA_SERVE_HELPER_DISCORD"
)

func TestMain(m *testing.M) {
	if args := os.Getenv(envServeHelper); args != "" {
		os.Exit(serveHelper(strings.Fields(args)))
	}
	code := m.Run()
	sampleProcessed.Drop()
	sampleUnprocessed.Drop()
	os.Exit(code)
}

// serveHelper is the body of a serve process of the multi-process test.
func serveHelper(args []string) int {
	target, err := url.Parse(os.Getenv(envServeHelperDiscord))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sess.LogLevel = discordgo.LogError
	sess.Client = &http.Client{Timeout: 10 * time.Second, Transport: rewriteHost{target}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, discord: sess})
}

// rewriteHost sends every request to target (the fake Discord).
type rewriteHost struct{ target *url.URL }

func (r rewriteHost) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = r.target.Scheme, r.target.Host, r.target.Host
	return http.DefaultTransport.RoundTrip(req)
}

// Three serve processes on one database and one fake Discord, a session
// started in each guild: each session runs in exactly one process and each
// command is answered once. One process is killed (SIGKILL) mid-session:
// another takes its sessions over within the lease time and goes on
// writing the same sessions; every acknowledged NPC line is stored once.
func TestServeProcessesShareGuilds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three serve processes")
	}
	// GLYPHOXA_MULTIPROC_GUILDS runs it with more guilds (make test: 6).
	guilds := 6
	if v := os.Getenv("GLYPHOXA_MULTIPROC_GUILDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("GLYPHOXA_MULTIPROC_GUILDS=%q: want a number of guilds, at least 2", v)
		}
		guilds = n
	}
	const (
		procs     = 3
		leaseTime = 3 * time.Second
		dmID      = "200000000000000001"
	)
	dsn := migratedDB(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	saga, err := os.ReadFile("../../testdata/campaigns/ironhold-saga.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	campaigns := map[string]string{} // guild → campaign
	deepgram := stttest.NewDeepgram(func(stttest.Call) string { return "" })
	defer deepgram.Close()
	fake := discordtest.New()
	defer fake.Close()

	type guild struct{ id, text, voice string }
	var gs []guild
	var bindings strings.Builder
	for i := range guilds {
		g := guild{fmt.Sprintf("1000000000000%05d", i+1), fmt.Sprintf("1100000000000%05d", i+1), fmt.Sprintf("1200000000000%05d", i+1)}
		gs = append(gs, g)
		fake.AddGuild(&discordgo.Guild{ID: g.id, Name: "Table " + g.id})
		// A voice server per guild (the fake serves one guild), a campaign
		// per guild (a process keeps one outage spool per campaign).
		vs, err := voicetest.New(voicetest.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer vs.Close()
		fake.SetGuildVoiceEndpoint(g.id, vs.Endpoint())
		campaign := fmt.Sprintf("saga-%d", i+1)
		text := strings.Replace(string(saga), "campaign: ironhold-saga", "campaign: "+campaign, 1)
		path := filepath.Join(dir, campaign+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCLI(t, vars, "import", "--no-process", path); code != 0 {
			t.Fatalf("import: %s", errs)
		}
		campaigns[g.id] = campaign
		fmt.Fprintf(&bindings, "    - {guild_id: %q, campaign: %s, dm_user_ids: [%q], text_channel_id: %q}\n", g.id, campaign, dmID, g.text)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`discord:
  token: fake-token
  guilds:
%sproviders:
  stt: {provider: deepgram, base_url: %q, api_key: k}
  tts: {provider: espeak}
lifecycle:
  spool_dir: %q
  shutdown_timeout: 10s
  lease_time: %s
`, bindings.String(), deepgram.URL, filepath.Join(dir, "spool"), leaseTime)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// The processes.
	type proc struct {
		cmd  *exec.Cmd
		log  string
		done chan error
	}
	var ps []*proc
	for i := range procs {
		logPath := filepath.Join(dir, fmt.Sprintf("serve-%d.log", i))
		logf, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envServeHelper+"=serve --config "+cfgPath+" --listen "+freeAddr(t),
			envServeHelperDiscord+"="+fake.URL(), "GLYPHOXA_DSN="+dsn)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, log: logPath, done: make(chan error, 1)}
		go func() { p.done <- cmd.Wait(); logf.Close() }()
		ps = append(ps, p)
	}
	logs := func() string {
		var b strings.Builder
		for i, p := range ps {
			text, _ := os.ReadFile(p.log)
			fmt.Fprintf(&b, "--- serve %d (pid %d)\n%s", i, p.cmd.Process.Pid, text)
		}
		return b.String()
	}
	defer func() {
		for _, p := range ps {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Log(logs())
		}
	}()

	// Every process registers its commands in every guild.
	waitFor(t, hangGuard, "every process connected", func() bool {
		n := 0
		for _, c := range fake.Calls() {
			if c.Method == "PUT" && strings.HasPrefix(c.Path, "/applications/") {
				n++
			}
		}
		return n >= procs*guilds
	})

	ctx := context.Background()
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)

	dm := discordtest.Member{UserID: dmID, Name: "Dana"}
	answers := func(i discordtest.Interaction) int {
		n := 0
		for _, c := range fake.Calls() {
			if c.Method == "POST" && c.Path == i.CallbackPath() {
				n++
			}
		}
		return n
	}
	var sent []discordtest.Interaction
	// command sends the same command in every guild at once (the guilds
	// are independent: their sessions start, and their NPCs speak in real
	// time, side by side), then waits for each guild's answer.
	command := func(want string, name string, opts ...discordtest.Opt) {
		t.Helper()
		var is []discordtest.Interaction
		for _, g := range gs {
			i := fake.Command(g.id, g.text, dm, name, opts...)
			sent = append(sent, i)
			is = append(is, i)
			if err := fake.Send(i); err != nil {
				t.Fatal(err)
			}
		}
		for k, i := range is {
			c, err := fake.WaitCall(hangGuard, discordtest.PathIs("PATCH", i.OriginalPath(fake.AppID)))
			if err != nil || !strings.Contains(string(c.Body), want) {
				t.Fatalf("guild %s: %s %v: %v %s", gs[k].id, name, opts, err, c.Body)
			}
		}
	}

	// A session in each guild.
	for _, g := range gs {
		if err := fake.SetUserVoice(g.id, dmID, g.voice); err != nil {
			t.Fatal(err)
		}
	}
	command("Recording", "session", discordtest.Sub("start"))
	owners := map[string]string{} // guild → owner
	sessions := map[string]string{}
	for _, g := range gs {
		var owner, state string
		if err := db.QueryRow(ctx, "SELECT owner, state FROM leases WHERE name = $1", "guild/"+g.id).Scan(&owner, &state); err != nil {
			t.Fatalf("guild %s has no claim: %v", g.id, err)
		}
		s, err := parseState(state)
		if err != nil {
			t.Fatalf("guild %s: %v", g.id, err)
		}
		owners[g.id], sessions[g.id] = owner, s
	}
	var n int
	if err := db.QueryRow(ctx, "SELECT count(DISTINCT id) FROM sessions WHERE ended_at IS NULL AND id = ANY($1)",
		slices.Collect(maps.Values(sessions))).Scan(&n); err != nil || n != guilds {
		t.Fatalf("%d running sessions recorded (%v), want %d distinct", n, err, guilds)
	}

	// A first line in each session, acknowledged.
	said := map[string][]string{}
	say := func(round int) {
		text := fmt.Sprintf("Round %d.", round) // short: it is spoken in real time
		command("says", "npc", discordtest.Sub("say", discordtest.Str("npc", "grimjaw"), discordtest.Str("text", text)))
		for _, g := range gs {
			said[g.id] = append(said[g.id], text)
		}
	}
	say(1)

	// Kill the process that owns the most guilds.
	count := map[string]int{}
	for _, o := range owners {
		count[o]++
	}
	victimOwner := ""
	for o, c := range count {
		if victimOwner == "" || c > count[victimOwner] || c == count[victimOwner] && o < victimOwner {
			victimOwner = o
		}
	}
	var victim *proc
	for _, p := range ps {
		if strings.Contains(victimOwner, fmt.Sprintf("/%d/", p.cmd.Process.Pid)) {
			victim = p
		}
	}
	if victim == nil {
		t.Fatalf("no process has owner id %s", victimOwner)
	}
	var orphaned []guild
	for _, g := range gs {
		if owners[g.id] == victimOwner {
			orphaned = append(orphaned, g)
		}
	}
	killedAt := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done

	// Its sessions are taken over: the claim changes hands, and the new
	// owner says so in the session's channel.
	var takeover time.Duration
	for _, g := range orphaned {
		if _, err := fake.WaitCall(hangGuard, func(c discordtest.Call) bool {
			return c.Method == "POST" && c.Path == "/channels/"+g.text+"/messages" && strings.Contains(string(c.Body), "took it over")
		}); err != nil {
			t.Fatalf("guild %s: its session was not taken over: %v", g.id, err)
		}
		if d := time.Since(killedAt); d > takeover {
			takeover = d
		}
		var owner, state string
		var token int64
		if err := db.QueryRow(ctx, "SELECT owner, token, state FROM leases WHERE name = $1", "guild/"+g.id).Scan(&owner, &token, &state); err != nil {
			t.Fatal(err)
		}
		s, err := parseState(state)
		if owner == victimOwner || token < 2 || err != nil || s != sessions[g.id] {
			t.Errorf("guild %s after the takeover: owner %s token %d session %q (%v), want another owner, a new token, session %s",
				g.id, owner, token, s, err, sessions[g.id])
		}
	}
	t.Logf("%d of %d sessions taken over %s after SIGKILL (lease time %s)", len(orphaned), guilds, takeover.Round(time.Millisecond), leaseTime)

	// The sessions go on: a second line in each.
	say(2)

	// Stop the others; every acknowledged line is stored exactly once, in
	// its guild's one session; every command was answered once.
	for _, p := range ps {
		if p != victim {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range ps {
		if p != victim {
			if err := <-p.done; err != nil {
				t.Errorf("serve exited with %v", err)
			}
			p.done <- nil
		}
	}
	victim.done <- nil
	for _, g := range gs {
		for _, text := range said[g.id] {
			var n int
			var in []string
			rows, err := db.Query(ctx, "SELECT session_id FROM transcript_entries WHERE campaign_id = $1 AND text = $2", campaigns[g.id], text)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				in = append(in, s)
				n++
			}
			rows.Close()
			if n != 1 || in[0] != sessions[g.id] {
				t.Errorf("line %q is stored %d times, in sessions %v; want once, in %s", text, n, in, sessions[g.id])
			}
		}
	}
	for _, i := range sent {
		if n := answers(i); n != 1 {
			t.Errorf("interaction %s answered %d times, want once", i.ID, n)
		}
	}
}

// parseState returns the session id of a guild claim's state.
func parseState(state string) (string, error) {
	s, err := bot.ParseClaimedSession(state)
	return s.SessionID, err
}
