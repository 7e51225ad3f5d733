package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestServeRebuildsTheChunksOfWhatWasTakenOut (ATTACK4): in `glyphoxa
// serve`, a span the DM declared non-canon (/memory forget span) left the
// session's chunks as they were, so the retconned line was still found by
// search and recalled by the NPCs ("NPCs, recaps and search leave them
// out", the command said); and a forget-me deleted every chunk holding the
// player's words, with the other players' lines in them, and nothing built
// them again (bot.Deps.Reprocess was never set). Both now rebuild the
// chunks of the sessions they touched: the retconned and the forgotten
// lines are in no chunk, the others' lines are.
func TestServeRebuildsTheChunksOfWhatWasTakenOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		guildID  = "100000000000000004"
		campaign = "ironhold-saga"
		lyra     = "300000000000000001"
		thorin   = "300000000000000002"
	)
	dm := discordtest.Member{UserID: "200000000000000009", Name: "Dana"}
	dsn := pgtest.NewDatabase(t)
	cfg := config.Default()
	store, err := postgres.NewStore(ctx, dsn, cfg.Memory.EmbeddingDimensions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	camp := pgtest.Campaign(t, store, campaign)
	start := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := camp.Sessions().StartSession(ctx, "s1", start); err != nil {
		t.Fatal(err)
	}
	lines := []struct {
		min          int
		id, who, txt string
	}{
		{0, lyra, "Lyra", "We should ask the miller about the missing grain shipments."},
		{1, thorin, "Thorin", "The dragon Vermithrax is the queen's own mother in disguise."},
		{2, lyra, "Lyra", "Tilda told us the bridge at Ashford washed out last spring."},
		{3, thorin, "Thorin", "I will stand watch at the north gate of Ashford tonight."},
	}
	for _, l := range lines {
		if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: l.id,
			SpeakerName: l.who, Text: l.txt, At: start.Add(time.Duration(l.min) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := camp.Sessions().EndSession(ctx, "s1", start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := processSessions(ctx, store, cfg, campaign); err != nil {
		t.Fatal(err)
	}
	chunks := func() string {
		t.Helper()
		rows, err := store.Pool().Query(ctx, `SELECT content FROM chunks WHERE campaign_id = $1 ORDER BY start_at`, campaign)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var all []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			all = append(all, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(all, "\n---\n")
	}
	if c := chunks(); !strings.Contains(c, "Vermithrax") || !strings.Contains(c, "miller") {
		t.Fatalf("the session was not chunked as the test expects:\n%s", c)
	}

	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`discord:
  token: fake-token
  guilds:
    - guild_id: %q
      campaign: %s
      dm_user_ids: [%q]
lifecycle:
  shutdown_timeout: 5s
console: {listen: ""}
`, guildID, campaign, dm.UserID)), 0o600); err != nil {
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
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() { done <- run(sctx, []string{"serve", "--config", cfgPath, "--listen", anyPort}, e) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(hangGuard):
			t.Error("serve did not stop")
		}
	})
	if _, err := fake.WaitCall(hangGuard, discordtest.PathHasPrefix("PUT", "/applications/")); err != nil {
		t.Fatalf("commands were not registered: %v\n%s", err, stderr.String())
	}
	send := func(i discordtest.Interaction, answer func(discordtest.Interaction) func(discordtest.Call) bool) string {
		t.Helper()
		if err := fake.Send(i); err != nil {
			t.Fatal(err)
		}
		c, err := fake.WaitCall(hangGuard, answer(i))
		if err != nil {
			t.Fatalf("no answer: %v\n%s", err, stderr.String())
		}
		var m struct {
			Content string `json:"content"`
			Data    struct {
				Content string `json:"content"`
			} `json:"data"`
		}
		if err := json.Unmarshal(c.Body, &m); err != nil {
			t.Fatal(err)
		}
		return m.Content + m.Data.Content
	}
	edited := func(i discordtest.Interaction) func(discordtest.Call) bool {
		return discordtest.PathIs("PATCH", i.OriginalPath(fake.AppID))
	}

	// The DM declares Thorin's line about Vermithrax non-canon.
	got := send(fake.Command(guildID, "c1", dm, "memory", discordtest.Group("forget", discordtest.Sub("span",
		discordtest.Str("session", "s1"), discordtest.Str("from", "19:01"), discordtest.Str("to", "19:01")))), edited)
	if !strings.Contains(got, "Marked 1 lines") || strings.Contains(got, "⚠️") {
		t.Fatalf("/memory forget span: %q\n%s", got, stderr.String())
	}
	c := chunks()
	if strings.Contains(c, "Vermithrax") {
		t.Errorf("a line declared non-canon is still in the chunks search and the NPCs read:\n%s", c)
	}
	for _, want := range []string{"miller", "bridge at Ashford", "north gate"} {
		if !strings.Contains(c, want) {
			t.Errorf("the canon line with %q is missing from the chunks:\n%s", want, c)
		}
	}

	// Thorin asks to be forgotten: his words leave the chunks, Lyra's stay.
	player := discordtest.Member{UserID: thorin, Name: "Thorin"}
	// The press is acknowledged first (a deferred update) and the result
	// edits the message.
	got = send(fake.Button(guildID, "c1", player, "forgetme:yes:"+thorin), edited)
	if !strings.Contains(got, "Deleted 2 lines") || strings.Contains(got, "⚠️") {
		t.Fatalf("forget-me: %q\n%s", got, stderr.String())
	}
	c = chunks()
	if strings.Contains(c, "north gate") || strings.Contains(c, "Vermithrax") {
		t.Errorf("the forgotten player's words are still in the chunks:\n%s", c)
	}
	for _, want := range []string{"miller", "bridge at Ashford"} {
		if !strings.Contains(c, want) {
			t.Errorf("another player's line with %q left the chunks with the forgotten player's:\n%s", want, c)
		}
	}
}

// TestImportKilledMidTransactionLeavesNothing (ATTACK4): an operator
// SIGKILLs `glyphoxa import` (a real process) while its transaction is
// writing; the campaign holds nothing afterwards, not half a campaign, and
// importing the file again gives the whole of it.
//
// The import is held mid-transaction, not caught there: the test locks
// transcript_entries against writes first, so the import writes the
// campaign, its entity and its sessions, then waits for the lock with its
// transaction open until it is killed. (The test once polled every
// millisecond for a 10,000-line import's window of writing: thousands of
// probes, and a file that big only to make the window wide enough.)
func TestImportKilledMidTransactionLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	const campaign, sessions, lines = "big-saga", 4, 25
	var b strings.Builder
	fmt.Fprintf(&b, "campaign: %s\nentities:\n  - {id: grimjaw, type: npc, name: Grimjaw}\nsessions:\n", campaign)
	start := time.Date(2026, 1, 1, 19, 0, 0, 0, time.UTC)
	for s := range sessions {
		day := start.AddDate(0, 0, 7*s)
		fmt.Fprintf(&b, "  - id: s%d\n    started_at: %s\n    ended_at: %s\n    entries:\n", s+1,
			day.Format(time.RFC3339), day.Add(4*time.Hour).Format(time.RFC3339))
		for l := range lines {
			fmt.Fprintf(&b, "      - {speaker_id: u%d, speaker_name: P%d, text: \"Line %d of session %d: we ask Grimjaw about the road.\", at: %s}\n",
				l%4, l%4, l, s+1, day.Add(time.Duration(l)*10*time.Second).Format(time.RFC3339))
		}
	}
	file := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	pool, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close(ctx)
	count := func() (campaigns, entities, entries int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM campaigns WHERE id = $1),
			(SELECT count(*) FROM entities WHERE campaign_id = $1),
			(SELECT count(*) FROM transcript_entries WHERE campaign_id = $1)`, campaign).Scan(&campaigns, &entities, &entries); err != nil {
			t.Fatal(err)
		}
		return
	}
	// The schema first (an import into an empty database migrates it,
	// outside the import's transaction).
	if code, out, errs := runCLI(t, map[string]string{"GLYPHOXA_DSN": dsn}, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %q %q", code, out, errs)
	}

	// The lock is held from a connection of its own: pool watches
	// pg_stat_activity outside any transaction, so each look is fresh.
	release := pgtest.LockTable(t, dsn, "transcript_entries", "EXCLUSIVE")

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeHelper+"=import --no-process "+file, "GLYPHOXA_DSN="+dsn)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Kill it once its transaction has written rows (it holds a
	// transaction id) and waits for the lock, before it could commit.
	deadline := time.Now().Add(hangGuard)
	for {
		var held, early bool
		if err := pool.QueryRow(ctx, `SELECT
			coalesce(bool_or(backend_xid IS NOT NULL), false), coalesce(bool_or(backend_xid IS NULL), false)
			FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
			  AND backend_type = 'client backend' AND wait_event_type = 'Lock'`).Scan(&held, &early); err != nil {
			t.Fatal(err)
		}
		if held {
			break
		}
		if early {
			// It waits before writing anything: killing it now would
			// prove nothing about a half-written import.
			t.Fatalf("the import waits for transcript_entries before writing anything; lock a table it writes later\n%s", stderr.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("the import ended (%v) while transcript_entries was locked against it\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the import was never seen writing and waiting for the lock\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	// Its backend, waiting for the lock, notices the dead client only
	// once it gets the lock: release it.
	release()
	// The server ends the dead client's backend (at its next read of the
	// socket); until then its rows are uncommitted and invisible anyway.
	for {
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
			  AND backend_xid IS NOT NULL`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed import's backend never ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c, e, n := count(); c != 0 || e != 0 || n != 0 {
		t.Fatalf("the killed import left %d campaign rows, %d entities, %d lines", c, e, n)
	}
	if code, out, errs := runCLI(t, map[string]string{"GLYPHOXA_DSN": dsn}, "import", "--no-process", file); code != 0 {
		t.Fatalf("import again: %d %q %q", code, out, errs)
	}
	if c, e, n := count(); c != 1 || e != 1 || n != sessions*lines {
		t.Fatalf("import after the kill: %d campaign rows, %d entities, %d lines; want 1, 1, %d", c, e, n, sessions*lines)
	}
}
