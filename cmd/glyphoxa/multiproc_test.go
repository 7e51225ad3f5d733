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
	"sync/atomic"
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
// command is answered once. One process is killed (SIGKILL) right after a
// line was acknowledged: another takes its sessions over within the lease
// time and goes on writing the same sessions. Then another is stopped
// (SIGSTOP) past its lease time, as a stalled process: the last one takes
// its sessions over, though the stalled process still holds their outage
// spools open, and goes on; woken up (SIGCONT), the stalled process answers
// nothing, writes nothing and hands its sessions over. Every acknowledged
// NPC line is stored once, in its guild's one session.
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
# Off: these processes do not serve it, and its default address is one
# port for the whole machine, which other tests' processes may hold.
console: {listen: ""}
`, bindings.String(), deepgram.URL, filepath.Join(dir, "spool"), leaseTime)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// The processes.
	type proc struct {
		cmd  *exec.Cmd
		log  string
		done chan error
		// exited is set when the process has ended (done then holds
		// how): a wait for every process to connect stops there.
		exited atomic.Bool
	}
	var ps []*proc
	for i := range procs {
		logPath := filepath.Join(dir, fmt.Sprintf("serve-%d.log", i))
		logf, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envServeHelper+"=serve --config "+cfgPath+" --listen "+anyPort,
			envServeHelperDiscord+"="+fake.URL(), "GLYPHOXA_DSN="+dsn, "GOTRACEBACK=all")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, log: logPath, done: make(chan error, 1)}
		go func() { err := cmd.Wait(); p.exited.Store(true); p.done <- err; logf.Close() }()
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
			if t.Failed() {
				// A process still running is asked for every goroutine's
				// stack (SIGQUIT, into its log) before it is killed: a
				// wait that gave up then shows where the process sat.
				_ = p.cmd.Process.Signal(syscall.SIGQUIT)
				select {
				case <-p.done:
					continue
				case <-time.After(10 * time.Second):
				}
			}
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Log(logs())
		}
	}()

	// Every process registers its commands in every guild.
	waitFor(t, hangGuard, "every process connected", func() bool {
		for i, p := range ps {
			if p.exited.Load() {
				t.Fatalf("serve %d ended before every process connected", i)
			}
		}
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

	// stopped picks, among the running processes, the one that owns the
	// most guilds, and stops it with sig; it returns the process, its
	// owner id and its guilds.
	stopped := func(sig syscall.Signal, running []*proc) (*proc, string, []guild) {
		t.Helper()
		count := map[string]int{}
		for _, g := range gs {
			var owner string
			if err := db.QueryRow(ctx, "SELECT owner FROM leases WHERE name = $1", "guild/"+g.id).Scan(&owner); err != nil {
				t.Fatal(err)
			}
			owners[g.id] = owner
			count[owner]++
		}
		var p *proc
		owner := ""
		for _, q := range running {
			for o, c := range count {
				if strings.Contains(o, fmt.Sprintf("/%d/", q.cmd.Process.Pid)) &&
					(p == nil || c > count[owner] || c == count[owner] && o < owner) {
					p, owner = q, o
				}
			}
		}
		if p == nil {
			t.Fatalf("no running process owns a guild: %v", owners)
		}
		var its []guild
		for _, g := range gs {
			if owners[g.id] == owner {
				its = append(its, g)
			}
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		return p, owner, its
	}
	// tookOver counts the takeovers announced in a guild's channel.
	tookOver := func(g guild) int {
		n := 0
		for _, c := range fake.Calls() {
			if c.Method == "POST" && c.Path == "/channels/"+g.text+"/messages" && strings.Contains(string(c.Body), "took it over") {
				n++
			}
		}
		return n
	}
	// takenOver waits for the sessions of guilds whose owner stopped at
	// since to be taken over (announced in their channels once more than
	// before): the claim changes hands (to another process than owner's,
	// when owner is not empty) and still carries the session. It returns
	// how long the last took.
	takenOver := func(its []guild, before map[string]int, owner string, since time.Time) time.Duration {
		t.Helper()
		var took time.Duration
		for _, g := range its {
			waitFor(t, hangGuard, "the session of guild "+g.id+" taken over", func() bool { return tookOver(g) > before[g.id] })
			if d := time.Since(since); d > took {
				took = d
			}
			var now, state string
			var token int64
			if err := db.QueryRow(ctx, "SELECT owner, token, state FROM leases WHERE name = $1", "guild/"+g.id).Scan(&now, &token, &state); err != nil {
				t.Fatal(err)
			}
			s, err := parseState(state)
			if now == owner || token < 2 || err != nil || s != sessions[g.id] {
				t.Errorf("guild %s after the takeover: owner %s (was %s) token %d session %q (%v), want another owner, a new token, session %s",
					g.id, now, owner, token, s, err, sessions[g.id])
			}
		}
		return took
	}
	announced := func() map[string]int {
		m := map[string]int{}
		for _, g := range gs {
			m[g.id] = tookOver(g)
		}
		return m
	}

	// Kill the process that owns the most guilds, right after it
	// acknowledged a line.
	before := announced()
	killedAt := time.Now()
	victim, victimOwner, orphaned := stopped(syscall.SIGKILL, ps)
	<-victim.done
	victim.done <- nil // for the deferred clean-up

	// Its sessions are taken over: the claim changes hands, and the new
	// owner says so in the session's channel.
	takeover := takenOver(orphaned, before, victimOwner, killedAt)
	t.Logf("%d of %d sessions taken over %s after SIGKILL (lease time %s)", len(orphaned), guilds, takeover.Round(time.Millisecond), leaseTime)

	// The sessions go on: a second line in each.
	say(2)

	// Stop (SIGSTOP) the surviving process that owns the most guilds, past
	// its lease time: it stalls, holding its sessions' outage spools open
	// (the processes share lifecycle.spool_dir).
	var survivors []*proc
	for _, p := range ps {
		if p != victim {
			survivors = append(survivors, p)
		}
	}
	before = announced()
	stoppedAt := time.Now()
	sleeper, sleeperOwner, stalled := stopped(syscall.SIGSTOP, survivors)
	waitFor(t, hangGuard, "the stalled process's claims taken", func() bool {
		for _, g := range stalled {
			var owner string
			if err := db.QueryRow(ctx, "SELECT owner FROM leases WHERE name = $1", "guild/"+g.id).Scan(&owner); err != nil || owner == sleeperOwner {
				return false
			}
		}
		return true
	})
	// While it sleeps, the DM puts a line in an NPC's mouth in one of its
	// guilds: the stalled process gets the interaction only when it wakes,
	// and the last process cannot resume the session yet (the spool is
	// open in the stalled one): it is answered at most once, maybe never.
	late := stalled[0]
	lateLine := "Round 2b."
	lateSay := fake.Command(late.id, late.text, dm, "npc", discordtest.Sub("say", discordtest.Str("npc", "grimjaw"), discordtest.Str("text", lateLine)))
	if err := fake.Send(lateSay); err != nil {
		t.Fatal(err)
	}

	// It wakes up (SIGCONT): it answers nothing (its claims expired),
	// records nothing, and hands each of its sessions over, closing their
	// spools; then one of the two processes (the woken one too, once it
	// handed them over) takes each over, under a new token.
	if err := sleeper.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	takeover = takenOver(stalled, before, "", stoppedAt)
	t.Logf("%d of %d sessions taken over %s after SIGSTOP and SIGCONT (lease time %s)", len(stalled), guilds, takeover.Round(time.Millisecond), leaseTime)
	waitFor(t, hangGuard, "the woken process handing its sessions over", func() bool {
		text, _ := os.ReadFile(sleeper.log)
		return strings.Count(string(text), "handed the session over to another glyphoxa process") >= len(stalled)
	})
	// The sessions go on in the last process: a third line in each.
	say(3)
	// The line sent while the process slept is stored once if it was
	// acknowledged, not at all otherwise.
	acked := false
	for _, c := range fake.Calls() {
		if c.Method == "PATCH" && c.Path == lateSay.OriginalPath(fake.AppID) && strings.Contains(string(c.Body), "says") {
			acked = true
		}
	}
	if n := answers(lateSay); n > 1 {
		t.Errorf("the line sent while a process slept was answered %d times, want at most once", n)
	}
	if acked {
		said[late.id] = append(said[late.id], lateLine)
	} else {
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM transcript_entries WHERE campaign_id = $1 AND text = $2", campaigns[late.id], lateLine).Scan(&n); err != nil || n != 0 {
			t.Errorf("%q was not acknowledged, yet it is stored %d times (%v)", lateLine, n, err)
		}
	}

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
	if state == "" {
		// What serve leaves when a session ended, or when it could not
		// resume one it took over (it logs why): not JSON to decode.
		return "", fmt.Errorf("the claim carries no session (it ended, or its resumption failed: see the serve logs)")
	}
	s, err := bot.ParseClaimedSession(state)
	return s.SessionID, err
}
