package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/dave/davetest"
	"github.com/glyphoxa/glyphoxa/voice/realtime/realtimetest"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// TestVoiceSessionThroughServe runs a whole game session through `glyphoxa
// serve`: a fake Discord (slash commands, voice state), a fake voice server
// speaking DAVE, fake Deepgram and LLM servers, espeak-ng for the players'
// voices and the NPC's. The DM starts the session, a player speaks to an
// NPC, the NPC answers in voice, the DM ends the session, and the session
// ends up in memory: transcript, chunks and extracted facts.
// TestVoiceSessionThroughServe plays a voice session through serve, the fake
// Discord and the DAVE voice server, with Grimjaw on each engine: cascaded
// (speech-to-text, LLM, speech synthesis) and speech-to-speech (a fake
// Realtime model that calls his recall tool and speaks the answer).
func TestVoiceSessionThroughServe(t *testing.T) {
	t.Parallel()
	for _, s2s := range []bool{false, true} {
		name := "cascaded"
		if s2s {
			name = "speech-to-speech"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testVoiceSessionThroughServe(t, s2s)
		})
	}
}

func testVoiceSessionThroughServe(t *testing.T, s2s bool) {
	audiotest.Need(t, "espeak-ng")
	const (
		guildID = "100000000000000001"
		textID  = "100000000000000002"
		voiceID = "100000000000000003"
		dmID    = "200000000000000001"
		thorin  = "200000000000000002"
	)
	quiet := slog.New(slog.DiscardHandler)
	dsn := sampleProcessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}

	// Speech-to-text hears the player's line with the NPC's name mangled.
	deepgram := stttest.NewDeepgram(func(stttest.Call) string { return "grim jaw, what news of the shipment?" })
	defer deepgram.Close()
	// The LLM answers as the NPC, and extracts facts after the session.
	llm := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		if strings.Contains(req.Messages[0].Content, "extract a knowledge graph") {
			return llmtest.Reply{Text: `{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Duskwood","type":"location"}],
"relationships":[{"source":"Grimjaw","target":"Duskwood","type":"SUSPECTS","confidence":0.55,"basis":"inferred","evidence":"Find my steel in Duskwood"}]}`}
		}
		return llmtest.Reply{Text: "Stolen, not lost. Find my steel in Duskwood."}
	})
	defer llm.Close()
	// The speech-to-speech model looks the shipment up, then says the same.
	rt := realtimetest.NewServer(t, realtimetest.Options{Replies: []realtimetest.Reply{{
		Call: &realtimetest.Call{Name: npc.ToolRecall, Arguments: `{"query":"shipment"}`},
		Text: "Stolen, not lost. Find my steel in Duskwood."}}})
	realtimeCfg := ""
	if s2s {
		// The model's recall runs against the database on a machine that
		// may be loaded: the product's 5 s bound on one function call and
		// its 2 s bound on a reply's tool calls (memory.tool_time, below)
		// become hang guards.
		realtimeCfg = fmt.Sprintf("  realtime: {url: %q, api_key: k, tool_timeout: %s}\n", rt.URL(), hangGuard)
		db, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(context.Background(), `UPDATE entities SET attributes = attributes || '{"engine": "s2s"}'
			WHERE campaign_id = 'ironhold-saga' AND id = 'grimjaw'`); err != nil {
			t.Fatal(err)
		}
		db.Close(context.Background())
	}

	gw, err := davetest.New(mustID(t, voiceID))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := voicetest.New(voicetest.Config{DAVEVersion: 1, DAVE: gw, RequireDAVE: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	fake := discordtest.New()
	defer fake.Close()
	fake.AddGuild(&discordgo.Guild{ID: guildID, Name: "The Table"})
	fake.SetVoiceEndpoint(vs.Endpoint())

	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf(`discord:
  token: fake-token
  guilds:
    - {guild_id: %q, campaign: ironhold-saga, dm_user_ids: [%q]}
providers:
  llm: {base_url: %q, model: fake}
  stt: {provider: deepgram, base_url: %q, api_key: k}
  tts: {provider: espeak}
%svoice:
  # The player below speaks in real time: on a loaded machine its frames
  # may pause for longer than the default 600 ms, which would end the
  # utterance in the middle. The line is one utterance however slow the
  # machine: only seconds of silence end it.
  end_of_turn: 3s
memory:
  tool_time: %s
lifecycle:
  spool_dir: %q
  shutdown_timeout: 10s
console: {listen: ""}
`, guildID, dmID, llm.URL(), deepgram.URL, realtimeCfg, hangGuard, t.TempDir())
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	fake.Attach(sess)
	defer sess.Close()
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard,
		getenv: func(k string) string { return vars[k] }, discord: sess}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfgPath, "--listen", anyPort}, e) }()
	const wait = hangGuard
	if _, err := fake.WaitCall(wait, discordtest.PathHasPrefix("PUT", "/applications/")); err != nil {
		t.Fatalf("the bot did not come up: %v", err)
	}

	// The DM, in the voice channel, starts the session.
	dm := discordtest.Member{UserID: dmID, Name: "Dana"}
	inVoice := make(chan struct{})
	var once sync.Once
	sess.AddHandler(func(_ *discordgo.Session, v *discordgo.VoiceStateUpdate) {
		if v.UserID == dmID && v.ChannelID == voiceID {
			once.Do(func() { close(inVoice) })
		}
	})
	if err := fake.SetUserVoice(guildID, dmID, voiceID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inVoice:
	case <-time.After(wait):
		t.Fatal("the DM's voice state never arrived")
	}
	start := fake.Command(guildID, textID, dm, "session", discordtest.Sub("start"))
	if err := fake.Send(start); err != nil {
		t.Fatal(err)
	}
	if c, err := fake.WaitCall(wait, discordtest.PathIs("PATCH", start.OriginalPath(fake.AppID))); err != nil ||
		!strings.Contains(string(c.Body), "Recording") {
		t.Fatalf("session start: %v %s", err, c.Body)
	}

	// A player joins with DAVE and, once the group is formed, speaks.
	player, err := conn.Dial(ctx, conn.Params{Endpoint: vs.Endpoint(), GuildID: guildID, ChannelID: voiceID, UserID: thorin,
		SessionID: "sess-thorin", Token: "tok-thorin"}, conn.Config{Logger: quiet, NewE2EE: dave.NewE2EE(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	defer player.Close()
	waitFor(t, wait, "a DAVE group of the bot and the player", func() bool {
		return gw.Settled() && len(gw.Members()) == 2 && player.E2EE().Epoch() > 0
	})
	epoch := player.E2EE().Epoch()
	pcm := audiotest.Speak(t, "Grimjaw, what news of the shipment?", 48000)
	st := audiotest.Encode(t, pcm, "player", 1, time.Now())
	for _, p := range st.Packets {
		time.Sleep(time.Until(p.Received))
		if err := player.WriteOpus(p.Opus); err != nil {
			t.Fatal(err)
		}
	}

	// The NPC answers in voice: the player decrypts its frames, at least
	// 100 of them (two sentences), then listens on to the end of the reply
	// (a second without a frame). A loaded machine may pause the reply
	// for longer than that: only the hang guard fails the test.
	const wantFrames = 100
	frames := 0
	deadline := time.After(wait)
	for listening := true; listening; {
		select {
		case p := <-player.Packets():
			if p.UserID == fake.BotUser.ID {
				frames++
			}
		case <-time.After(time.Second):
			listening = frames < wantFrames
		case <-deadline:
			t.Fatalf("the player heard %d frames of the NPC's reply (two sentences), want at least %d", frames, wantFrames)
		}
	}
	if got := player.E2EE().Epoch(); got < epoch {
		t.Errorf("the DAVE epoch went back from %d to %d while the bot spoke", epoch, got)
	}
	if calls := deepgram.Calls(); len(calls) == 0 || !slices.Contains(calls[0].Query["keyterm"], "Grimjaw") {
		t.Errorf("speech-to-text was not boosted with the campaign's names: %+v", calls)
	}
	if s2s {
		st := rt.State()
		if len(st.Commits) != 1 || len(st.Outputs) != 1 || !strings.Contains(st.Outputs[0].Output, "shipment") {
			t.Errorf("the model heard %d turns and got tool outputs %+v", len(st.Commits), st.Outputs)
		}
		if len(st.Sessions) == 0 || !strings.Contains(fmt.Sprint(st.Sessions[len(st.Sessions)-1]["instructions"]), "You are Grimjaw") {
			t.Error("the model was not given Grimjaw's persona and memory")
		}
	}

	// The DM ends the session; it is saved and processed.
	end := fake.Command(guildID, textID, dm, "session", discordtest.Sub("end"))
	if err := fake.Send(end); err != nil {
		t.Fatal(err)
	}
	c, err := fake.WaitCall(wait, discordtest.PathIs("PATCH", end.OriginalPath(fake.AppID)))
	if err != nil || !strings.Contains(string(c.Body), "ended and saved") {
		t.Fatalf("session end: %v %s", err, c.Body)
	}
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var session string
	if err := db.QueryRow(ctx, `SELECT id FROM sessions WHERE campaign_id = 'ironhold-saga' AND id NOT IN ('s1','s2')`).Scan(&session); err != nil {
		t.Fatalf("the voice session was not recorded: %v", err)
	}
	type line struct{ speaker, npc, text, raw string }
	var lines []line
	rows, _ := db.Query(ctx, `SELECT speaker_id, npc_id, text, raw_text FROM transcript_entries
		WHERE campaign_id = 'ironhold-saga' AND session_id = $1 ORDER BY at, id`, session)
	for rows.Next() {
		var l line
		if err := rows.Scan(&l.speaker, &l.npc, &l.text, &l.raw); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	want := []line{{thorin, "", "Grimjaw, what news of the shipment?", "grim jaw, what news of the shipment?"},
		{"grimjaw", "grimjaw", "Stolen, not lost. Find my steel in Duskwood.", "Stolen, not lost. Find my steel in Duskwood."}}
	if !slices.Equal(lines, want) {
		t.Fatalf("session log:\n got %+v\nwant %+v", lines, want)
	}
	waitFor(t, wait, "chunks and a pending fact from the session", func() bool {
		var chunks, pending int
		db.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE campaign_id = 'ironhold-saga' AND session_id = $1`, session).Scan(&chunks)
		db.QueryRow(ctx, `SELECT count(*) FROM relationships WHERE campaign_id = 'ironhold-saga' AND rel_type = 'SUSPECTS'
			AND status = 'pending' AND session_id = $1`, session).Scan(&pending)
		return chunks > 0 && pending == 1
	})

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(wait):
		t.Fatal("serve did not stop")
	}
}

func mustID(t *testing.T, s string) uint64 {
	t.Helper()
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTableSettingsFromConfig: voice.merge_wait and the digest cadence
// (lifecycle.digest_every, digest_lines) reach the table.
func TestTableSettingsFromConfig(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse(strings.NewReader("voice:\n  merge_wait: 1500ms\nlifecycle:\n  digest_every: 90s\n  digest_lines: 5\n"),
		"c.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s := tableSettings(cfg)
	if s.MergeWait != 1500*time.Millisecond || s.DigestEvery != 90*time.Second || s.DigestLines != 5 {
		t.Fatalf("merge wait %s, digest every %s, digest lines %d", s.MergeWait, s.DigestEvery, s.DigestLines)
	}
	if d := tableSettings(config.Default()); d.MergeWait != 2*time.Second || d.DigestEvery != 3*time.Minute || d.DigestLines != 12 {
		t.Fatalf("defaults: merge wait %s, digest every %s, digest lines %d", d.MergeWait, d.DigestEvery, d.DigestLines)
	}
}

// TestRequireE2EEFromConfig: voice.require_e2ee reaches the DAVE session
// of every voice connection; by default a call without DAVE is joined.
func TestRequireE2EEFromConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		yaml    string
		refused bool
	}{
		{"voice:\n  require_e2ee: true\n", true},
		{"voice:\n  require_e2ee: false\n", false},
		{"{}\n", false},
	} {
		cfg, err := config.Parse(strings.NewReader(tc.yaml), "c.yaml", func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		e, err := voiceConnConfig(cfg, slog.New(slog.DiscardHandler)).NewE2EE(1, 2)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.SessionDescription(0)
		if refused := errors.Is(err, dave.ErrE2EERequired); refused != tc.refused || !refused && err != nil {
			t.Fatalf("%q: a call without DAVE: %v; want refused %v", tc.yaml, err, tc.refused)
		}
	}
}
