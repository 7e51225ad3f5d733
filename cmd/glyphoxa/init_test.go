//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const (
	goodToken = "OTAwMDAwMDAwMDAwMDAwMDAx.GdQx1a.fake-signature"
	testGuild = "111111111111111111"
	// wantInvite has exactly the scopes and permissions the bot needs:
	// View Channels (1024) + Send Messages (2048) + Connect (1048576) +
	// Speak (2097152) = 3148800.
	wantInvite = "https://discord.com/oauth2/authorize?client_id=900000000000000002&permissions=3148800&scope=bot+applications.commands"
)

// openPTY opens a pseudo-terminal pair with the Linux ioctls, as a terminal
// emulator does.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("numbering the pseudo-terminal: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// screen is what the terminal shows, read from the master side.
type screen struct {
	t    *testing.T
	m    *os.File
	got  chan []byte
	text bytes.Buffer
}

func newScreen(t *testing.T, m *os.File) *screen {
	s := &screen{t: t, m: m, got: make(chan []byte, 64)}
	go func() { // ends when the master is closed
		defer close(s.got)
		for {
			b := make([]byte, 4096)
			n, err := m.Read(b)
			if n > 0 {
				s.got <- b[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// expect waits until the screen shows want after what was already
// expected. The minute is a guard against a hang, not a time budget.
func (s *screen) expect(want string) {
	s.t.Helper()
	guard := time.After(time.Minute)
	for !strings.Contains(s.text.String(), want) {
		select {
		case b, ok := <-s.got:
			if !ok {
				s.t.Fatalf("the terminal closed before showing %q; it showed:\n%s", want, s.text.String())
			}
			s.text.Write(bytes.ReplaceAll(b, []byte("\r"), nil))
		case <-guard:
			s.t.Fatalf("the terminal never showed %q; it showed:\n%s", want, s.text.String())
		}
	}
	// Later expectations look after this point.
	rest := s.text.String()[strings.Index(s.text.String(), want)+len(want):]
	s.text.Reset()
	s.text.WriteString(rest)
}

func (s *screen) typeLine(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.m, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

func fakeDiscord(t *testing.T) (*discordtest.Server, *discordgo.Session) {
	t.Helper()
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.Token = goodToken
	fake.AddGuild(&discordgo.Guild{ID: testGuild, Name: "The Table"})
	sess, err := discordgo.New("Bot unused")
	if err != nil {
		t.Fatal(err)
	}
	fake.Attach(sess)
	return fake, sess
}

func TestInitInteractiveOnATerminal(t *testing.T) {
	t.Parallel()
	fake, sess := fakeDiscord(t)
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	m, s := openPTY(t)
	defer m.Close()
	e := &env{stdin: s, stdout: s, stderr: s, discord: sess,
		getenv: func(k string) string { return map[string]string{"GLYPHOXA_DSN": dsn}[k] }}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"init", "--config", path}, e)
		s.Close()
	}()
	scr := newScreen(t, m)

	scr.expect("Discord bot token")
	scr.typeLine("not-a-token")
	scr.expect("Discord refused the token (401 Unauthorized)")
	scr.expect("Discord bot token")
	scr.typeLine(goodToken)
	scr.expect(`token accepted: bot "glyphoxa", application 900000000000000002`)
	scr.expect(wantInvite)
	scr.expect("1. The Table (" + testGuild + ")")
	scr.expect("Server (guild) to play in")
	scr.typeLine("7")
	scr.expect(`"7" is neither a number from the list nor a server id`)
	scr.expect("Server (guild) to play in")
	scr.typeLine("1")
	scr.expect("Campaign file to import")
	scr.typeLine("../../testdata/campaigns/ironhold-saga.yaml")
	scr.expect(`campaign "ironhold-saga", 19 entities (5 NPCs), 22 relationships, 2 sessions`)
	scr.expect("Campaign id this server plays [ironhold-saga]: ")
	scr.typeLine("")
	scr.expect("wrote " + path)
	scr.expect(`imported "../../testdata/campaigns/ironhold-saga.yaml" into campaign "ironhold-saga"`)
	scr.expect("configuration OK: 1 guild(s), NPCs from the campaigns' memory (no personas under npcs:)")
	scr.expect("Done.")
	if code := <-done; code != 0 {
		t.Fatalf("init exited %d", code)
	}
	for b := range scr.got {
		scr.text.Write(b)
	}
	if strings.Contains(scr.text.String(), goodToken) {
		t.Error("the token was echoed on the terminal")
	}

	cfg, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatalf("the written configuration: %v", err)
	}
	if cfg.Discord.Token != goodToken || len(cfg.Discord.Guilds) != 1 || cfg.Discord.Guilds[0].GuildID != testGuild ||
		cfg.Discord.Guilds[0].Campaign != "ironhold-saga" {
		t.Errorf("configuration %+v", cfg.Discord)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v; it holds the token, want 0600", path, err, fi.Mode().Perm())
	}
	// The token was checked against the REST API.
	if len(fake.Calls()) == 0 {
		t.Error("no call reached the fake Discord")
	}
	code, out, errs := runCLI(t, map[string]string{"GLYPHOXA_DSN": dsn}, "inspect", "--campaign", "ironhold-saga")
	if code != 0 || !strings.Contains(out, "s2") {
		t.Errorf("the campaign was not imported: %d %s %s", code, out, errs)
	}
}

func TestInitNonInteractive(t *testing.T) {
	t.Parallel()
	_, sess := fakeDiscord(t)
	dsn := pgtest.NewDatabase(t)
	unreachable, _ := fakeDiscord(t)
	unreachableSess, _ := discordgo.New("Bot unused")
	unreachable.Attach(unreachableSess)
	unreachable.Close()

	tests := []struct {
		name    string
		args    []string
		vars    map[string]string
		discord *discordgo.Session
		exists  bool
		code    int
		want    []string
		token   string // discord.token written, "" for no file
	}{
		{name: "everything from flags", args: []string{"--token", goodToken, "--guild", testGuild, "--import", "../../testdata/campaigns/ironhold-saga.yaml"},
			vars: map[string]string{"GLYPHOXA_DSN": dsn}, discord: sess,
			want: []string{"token accepted", wantInvite, "configuration OK"}, token: goodToken},
		{name: "token from the environment stays out of the file", args: []string{"--guild", testGuild, "--campaign", "new-one"},
			vars: map[string]string{"GLYPHOXA_DSN": dsn, "DISCORD_TOKEN": goodToken}, discord: sess,
			want: []string{"token accepted", "configuration OK"}, token: "${DISCORD_TOKEN:-}"},
		{name: "the bot is not in the server yet", args: []string{"--token", goodToken, "--guild", "222222222222222222", "--campaign", "c"},
			vars: map[string]string{"GLYPHOXA_DSN": dsn}, discord: sess,
			want: []string{"the bot is not in server 222222222222222222 yet"}, token: goodToken},
		{name: "Discord unreachable", args: []string{"--token", goodToken, "--guild", testGuild, "--campaign", "c"},
			vars: map[string]string{"GLYPHOXA_DSN": dsn}, discord: unreachableSess,
			// The invite names the bot's id, read from the token.
			want:  []string{"could not reach Discord", strings.Replace(wantInvite, "900000000000000002", "900000000000000001", 1), "configuration OK"},
			token: goodToken},
		{name: "refused token", args: []string{"--token", "wrong", "--guild", testGuild, "--campaign", "c"},
			vars: map[string]string{"GLYPHOXA_DSN": dsn}, discord: sess, code: 1, want: []string{"Discord refused the token"}},
		{name: "no token", args: []string{"--guild", testGuild}, discord: sess, code: 2, want: []string{"--token is required"}},
		{name: "no guild", args: []string{"--token", goodToken}, discord: sess, code: 2, want: []string{"--guild is required"}},
		{name: "bad guild", args: []string{"--token", goodToken, "--guild", "my server"}, discord: sess, code: 2, want: []string{`--guild "my server" is not a Discord server id`}},
		{name: "no campaign", args: []string{"--token", goodToken, "--guild", testGuild}, discord: sess, code: 2, want: []string{"--campaign is required"}},
		{name: "campaign and file disagree", args: []string{"--token", goodToken, "--guild", testGuild, "--campaign", "other", "--import", "../../testdata/campaigns/ironhold-saga.yaml"},
			discord: sess, code: 2, want: []string{`campaign "other" does not match the campaign "ironhold-saga"`}},
		{name: "bad campaign id", args: []string{"--token", goodToken, "--guild", testGuild, "--campaign", "My Campaign"}, discord: sess, code: 2, want: []string{"lower-case letters"}},
		{name: "existing file", args: []string{"--token", goodToken, "--guild", testGuild, "--campaign", "c"}, exists: true, discord: sess,
			code: 1, want: []string{"exists; pass --force"}},
		{name: "existing file, forced", args: []string{"--force", "--token", goodToken, "--guild", testGuild, "--campaign", "c"}, exists: true,
			vars: map[string]string{"GLYPHOXA_DSN": dsn}, discord: sess, want: []string{"configuration OK"}, token: goodToken},
		{name: "no database", args: []string{"--token", goodToken, "--guild", testGuild, "--campaign", "c"}, discord: sess,
			code: 1, want: []string{"config check", "memory.postgres_dsn"}, token: goodToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if tt.exists {
				if err := os.WriteFile(path, []byte("# mine\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out, discord: tt.discord,
				getenv: func(k string) string { return tt.vars[k] }}
			code := run(context.Background(), append([]string{"init", "--non-interactive", "--config", path}, tt.args...), e)
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			b, err := os.ReadFile(path)
			if tt.token == "" {
				if err == nil && !tt.exists {
					t.Errorf("a failed init wrote %s:\n%s", path, b)
				}
				if tt.exists && string(b) != "# mine\n" {
					t.Errorf("the existing file was changed:\n%s", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "token: "+tt.token) && !strings.Contains(string(b), "token: '"+tt.token+"'") {
				t.Errorf("token not written as %q:\n%s", tt.token, b)
			}
		})
	}
}

func TestAppIDFromToken(t *testing.T) {
	t.Parallel()
	tests := []struct{ token, want string }{
		{goodToken, "900000000000000001"},
		{"not-a-token", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := appIDFromToken(tt.token); got != tt.want {
			t.Errorf("appIDFromToken(%q) = %q, want %q", tt.token, got, tt.want)
		}
	}
}
