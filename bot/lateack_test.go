package bot_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// storeDigest is the campaign database's content: every table's rows,
// hashed. The guild leases are left out (renewed on a timer, not by
// commands).
func (h *harness) storeDigest() string {
	h.t.Helper()
	ctx := context.Background()
	rows, err := h.pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'leases' ORDER BY 1`)
	if err != nil {
		h.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			h.t.Fatal(err)
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	var b strings.Builder
	for _, t := range tables {
		var n int
		var sum string
		q := fmt.Sprintf(`SELECT count(*), coalesce(md5(string_agg(t::text, E'\n' ORDER BY t::text)), '') FROM %q t`, t)
		if err := h.pool.QueryRow(ctx, q).Scan(&n, &sum); err != nil {
			h.t.Fatalf("%s: %v", t, err)
		}
		fmt.Fprintf(&b, "%s %d %s\n", t, n, sum)
	}
	return b.String()
}

// digestDiff names the tables whose digests differ.
func digestDiff(before, after string) string {
	was := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		was[l] = true
	}
	var changed []string
	for _, l := range strings.Split(after, "\n") {
		if !was[l] {
			changed = append(changed, strings.Fields(l)[0])
		}
	}
	return strings.Join(changed, ", ")
}

// tableDigest is what the table's live controls hold for Grimjaw: muted,
// directed, the scene (the next speaker is read, and taken, apart).
func (h *harness) tableDigest() string {
	c := h.bot.Controls(guildID)
	d, ok := c.Direction("grimjaw")
	return fmt.Sprintf("muted %v direction %v %+v scene %+v", c.Muted("grimjaw"), ok, d, c.Scene())
}

// lateCase is a command, button or form with effects.
type lateCase struct {
	name string
	i    func(h *harness) discordtest.Interaction
	// acted reports whether a fresh interaction did what it does, beyond
	// the store's and the table's digests changing.
	acted func(h *harness) error
	// untouched, when set, checks what the digests do not see (a voice
	// session's) after the late interactions.
	untouched func() error
}

// sendExpired sends i, which Discord refuses to acknowledge, and checks
// that the bot tried once and sent nothing after.
func (h *harness) sendExpired(i discordtest.Interaction) {
	h.t.Helper()
	r := h.send(i)
	if r.Type == 0 {
		h.t.Fatalf("no acknowledgement attempted: %s", r.raw)
	}
	h.waitHandled(i)
	callbacks := 0
	for _, c := range h.fake.Calls() {
		switch {
		case c.Path == i.CallbackPath():
			callbacks++
		case strings.HasPrefix(c.Path, i.FollowupPath(h.fake.AppID)):
			h.t.Errorf("after a refused acknowledgement the bot still answered: %s %s %s", c.Method, c.Path, c.Body)
		}
	}
	if callbacks != 1 {
		h.t.Errorf("%d acknowledgements tried, want 1", callbacks)
	}
}

// runLate runs each case three times: expired by the test (Discord's 3 s
// passed), expired by age on the fake's clock (a process stopped past its
// lease wakes with the interaction buffered), then fresh. The two late
// ones change nothing and answer nothing; the fresh one acts.
func runLate(t *testing.T, h *harness, cases []lateCase) {
	h.fake.SetAckWindow(3 * time.Second)
	for _, tc := range cases {
		store, table := h.storeDigest(), h.tableDigest()

		marked := tc.i(h)
		h.fake.Expire(marked)
		h.sendExpired(marked)

		aged := tc.i(h)
		h.fake.Advance(4 * time.Second) // past the window, on the fake's clock only
		h.sendExpired(aged)

		if got := h.storeDigest(); got != store {
			t.Errorf("%s: a late interaction changed the store: %s", tc.name, digestDiff(store, got))
		}
		if got := h.tableDigest(); got != table {
			t.Errorf("%s: a late interaction changed the table: %s → %s", tc.name, table, got)
		}
		if tc.untouched != nil {
			if err := tc.untouched(); err != nil {
				t.Errorf("%s: a late interaction acted: %v", tc.name, err)
			}
		}
		if tc.name == "npc next" {
			if got := h.bot.Controls(guildID).TakeNext(); got != "" {
				t.Errorf("a late /npc next set the next speaker: %q", got)
			}
		}

		fresh := tc.i(h)
		r := h.send(fresh)
		if r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource && r.Type != discordgo.InteractionResponseDeferredMessageUpdate {
			t.Errorf("%s: a command with effects must acknowledge first (defer), got type %d", tc.name, r.Type)
		}
		if strings.Contains(r.Data.Content, "⚠️") {
			t.Errorf("%s: the fresh interaction failed: %s", tc.name, r.Data.Content)
		}
		changed := h.storeDigest() != store || h.tableDigest() != table
		if tc.acted != nil {
			if err := tc.acted(h); err != nil {
				t.Errorf("%s: the fresh interaction did not act: %v (%s)", tc.name, err, r.Data.Content)
			}
		} else if !changed {
			t.Errorf("%s: the fresh interaction changed nothing: %s", tc.name, r.Data.Content)
		}
	}
}

// factIDs returns the campaign's facts of a status, oldest first.
func (h *harness) factIDs(status string) []int64 {
	h.t.Helper()
	rows, err := h.pool.Query(context.Background(), `SELECT id FROM relationships WHERE campaign_id = $1 AND status = $2 ORDER BY id`, campaign, status)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			h.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) < 2 {
		h.t.Fatalf("the sample campaign has %d %s facts, want 2 or more", len(ids), status)
	}
	return ids
}

// TestLateCommandsActOnNothing: a slash command Discord no longer accepts
// (its acknowledgement refused with 10062) changes neither the campaign's
// memory nor the table, and gets no follow-up; a fresh one acts.
func TestLateCommandsActOnNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	pending, active := h.factIDs("pending"), h.factIDs("active")
	cal := &calendar.Calendar{Months: []calendar.Month{{Name: "Deepwinter", Days: 30}, {Name: "Frostfall", Days: 30}}, Era: "DR"}
	if err := h.camp.Sessions().SetCalendar(context.Background(), cal); err != nil {
		t.Fatal(err)
	}
	cmd := func(m discordtest.Member, name string, opts ...discordtest.Opt) func(*harness) discordtest.Interaction {
		return func(h *harness) discordtest.Interaction { return h.fake.Command(guildID, channelID, m, name, opts...) }
	}
	grimjaw := discordtest.Str("npc", "grimjaw")
	runLate(t, h, []lateCase{
		{name: "npc mute", i: cmd(theDM, "npc", discordtest.Sub("mute", grimjaw))},
		{name: "npc next", i: cmd(theDM, "npc", discordtest.Sub("next", grimjaw)), acted: func(h *harness) error {
			if got := h.bot.Controls(guildID).TakeNext(); got != "grimjaw" {
				return fmt.Errorf("next speaker %q", got)
			}
			return nil
		}},
		{name: "npc direct", i: cmd(theDM, "npc", discordtest.Sub("direct", grimjaw, discordtest.Str("instruction", "be curt")))},
		{name: "npc scene", i: cmd(theDM, "npc", discordtest.Sub("scene", discordtest.Str("location", "ironhold"), discordtest.Str("present", "grimjaw")))},
		{name: "memory confirm", i: cmd(theDM, "memory", discordtest.Sub("confirm", discordtest.Str("fact", fmt.Sprint(pending[0]))))},
		{name: "memory reject", i: cmd(theDM, "memory", discordtest.Sub("reject", discordtest.Str("fact", fmt.Sprint(pending[1]))))},
		{name: "memory fact add", i: cmd(theDM, "memory", discordtest.Group("fact", discordtest.Sub("add",
			discordtest.Str("subject", "grimjaw"), discordtest.Str("relation", "fears"), discordtest.Str("object", "duskwood"))))},
		{name: "memory fact retire", i: cmd(theDM, "memory", discordtest.Group("fact", discordtest.Sub("retire", discordtest.Str("fact", fmt.Sprint(active[0])))))},
		{name: "memory forget fact", i: cmd(theDM, "memory", discordtest.Group("forget", discordtest.Sub("fact", discordtest.Str("fact", fmt.Sprint(active[1])))))},
		{name: "memory entity add", i: cmd(theDM, "memory", discordtest.Group("entity", discordtest.Sub("add",
			discordtest.Str("name", "Orla Brightwater"), discordtest.Str("kind", "npc"))))},
		{name: "memory grant", i: cmd(theDM, "memory", discordtest.Sub("grant", userOpt("player", player.UserID), discordtest.Str("text", "a crown under the well")))},
		{name: "session player", i: cmd(theDM, "session", discordtest.Sub("player", userOpt("member", player.UserID), discordtest.Str("character", "Thorin")))},
		{name: "session date", i: cmd(theDM, "session", discordtest.Sub("date", discordtest.Str("date", "3 Frostfall 1452")))},
		{name: "privacy opt-out", i: cmd(player, "privacy", discordtest.Sub("opt-out"))},
	})
}

// TestLateButtonsActOnNothing: the same for buttons and forms: a review
// press, a forget-me confirmation, a corrected fact, an edited entity.
func TestLateButtonsActOnNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	pending := h.factIDs("pending")
	lines := func() (n int) {
		if err := h.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM transcript_entries WHERE campaign_id = $1 AND speaker_id = $2`, campaign, player.UserID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if lines() == 0 {
		t.Fatal("the sample campaign has no lines by the player")
	}
	runLate(t, h, []lateCase{
		{name: "review confirm", i: func(h *harness) discordtest.Interaction {
			return h.fake.Button(guildID, channelID, theDM, fmt.Sprintf("pend:c:%d:0:", pending[0]))
		}, acted: func(h *harness) error {
			f, err := h.camp.Graph().Fact(context.Background(), pending[0])
			if err != nil || f.Status != memory.StatusActive {
				return fmt.Errorf("fact %d: %s %v", pending[0], f.Status, err)
			}
			return nil
		}},
		{name: "fact correction form", i: func(h *harness) discordtest.Interaction {
			return h.fake.ModalSubmit(guildID, channelID, theDM, fmt.Sprintf("factedit:%d:0:", pending[1]),
				map[string]string{"subject": "grimjaw", "relation": "LOCATED_AT", "object": "duskwood"})
		}},
		{name: "entity edit form", i: func(h *harness) discordtest.Interaction {
			return h.fake.ModalSubmit(guildID, channelID, theDM, "entedit:grimjaw",
				map[string]string{"name": "Grimjaw Ironfist", "aliases": "Grim", "attributes": "occupation: master smith\n"})
		}},
		{name: "forget-me", i: func(h *harness) discordtest.Interaction {
			return h.fake.Button(guildID, channelID, player, "forgetme:yes:"+player.UserID)
		}, acted: func(h *harness) error {
			if n := lines(); n != 0 {
				return fmt.Errorf("%d lines of the player remain", n)
			}
			return nil
		}},
	})
}

// sayVoice is a running voice session that speaks for NPCs and withdraws
// replies (replyVoice).
type sayVoice struct {
	*replyVoice
	sayMu sync.Mutex
	said  []string
}

func (v *sayVoice) Say(_ context.Context, _, npcID, text string) error {
	v.sayMu.Lock()
	defer v.sayMu.Unlock()
	v.said = append(v.said, npcID+": "+text)
	return nil
}

func (v *sayVoice) spoken() []string {
	v.sayMu.Lock()
	defer v.sayMu.Unlock()
	return append([]string(nil), v.said...)
}

// TestLateVoiceAndConflictActionsActOnNothing: a late /npc say speaks
// nothing, a late Undo withdraws nothing, a late conflict button settles
// nothing.
func TestLateVoiceAndConflictActionsActOnNothing(t *testing.T) {
	t.Parallel()
	v := &sayVoice{replyVoice: &replyVoice{gone: map[string]bool{}}}
	h := newHarness(t, bot.Deps{Voice: v})
	if err := h.bot.Resume(context.Background(), guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	v.reply(bot.NPCReply{ID: "r1", NPCName: "Grimjaw", Text: "Forty gold.", Voiced: true})
	undone := func() []string {
		v.mu.Lock()
		defer v.mu.Unlock()
		return append([]string(nil), v.undone...)
	}
	conflicts := seedConflicts(t, h)
	runLate(t, h, []lateCase{
		{name: "npc say", i: func(h *harness) discordtest.Interaction {
			return h.fake.Command(guildID, channelID, theDM, "npc", discordtest.Sub("say", discordtest.Str("npc", "grimjaw"), discordtest.Str("text", "Begone.")))
		}, untouched: func() error {
			if s := v.spoken(); len(s) != 0 {
				return fmt.Errorf("spoke %q", s)
			}
			return nil
		}, acted: func(*harness) error {
			if s := v.spoken(); len(s) != 1 || s[0] != "grimjaw: Begone." {
				return fmt.Errorf("spoke %q", s)
			}
			return nil
		}},
		{name: "undo button", i: func(h *harness) discordtest.Interaction {
			return h.fake.Button(guildID, channelID, theDM, "undo:r1")
		}, untouched: func() error {
			if u := undone(); len(u) != 0 {
				return fmt.Errorf("withdrew %q", u)
			}
			return nil
		}, acted: func(*harness) error {
			if u := undone(); len(u) != 1 || u[0] != "r1" {
				return fmt.Errorf("withdrew %q", u)
			}
			return nil
		}},
		{name: "conflict button", i: func(h *harness) discordtest.Interaction {
			return h.fake.Button(guildID, channelID, theDM, fmt.Sprintf("conf:o:%d:0", conflicts[0].ID))
		}},
	})
}

// logRecords keeps the records a logger handled.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// about returns the records with an attribute interaction = id.
func (l *logRecords) about(id string) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.recs {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "interaction" && a.Value.String() == id {
				out = append(out, r)
				return false
			}
			return true
		})
	}
	return out
}

// TestRefusedAcknowledgementIsLoggedOnce: a late command leaves one Warn
// naming the command and the interaction, and nothing else about it.
func TestRefusedAcknowledgementIsLoggedOnce(t *testing.T) {
	t.Parallel()
	logs := &logRecords{}
	store, _ := pgtest.NewStore(t, 16)
	h := newHarnessLogged(t, bot.Deps{}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}}, store, slog.New(logs))
	for _, tc := range []struct {
		name, want string
		i          discordtest.Interaction
	}{
		{"command", "/memory fact add", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("add",
			discordtest.Str("subject", "grimjaw"), discordtest.Str("relation", "fears"), discordtest.Str("object", "duskwood"))))},
		{"button", "button forgetme", h.fake.Button(guildID, channelID, player, "forgetme:yes:"+player.UserID)},
	} {
		h.fake.Expire(tc.i)
		h.sendExpired(tc.i)
		recs := logs.about(tc.i.ID)
		if len(recs) != 1 || recs[0].Level != slog.LevelWarn {
			t.Errorf("%s: want one Warn about the interaction, got %d records: %+v", tc.name, len(recs), recs)
			continue
		}
		var command string
		recs[0].Attrs(func(a slog.Attr) bool {
			if a.Key == "command" {
				command = a.Value.String()
			}
			return true
		})
		if command != tc.want {
			t.Errorf("%s: the Warn names the command %q, want %q", tc.name, command, tc.want)
		}
	}
}

// TestLateContinuityButtonSettlesNothing: a continuity card's Retcon,
// pressed in the DM's direct messages, settles nothing when Discord no
// longer accepts it; a fresh press settles the card.
func TestLateContinuityButtonSettlesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := &cardVoice{board: continuity.NewBoard()}
	h := newHarnessFor(t, bot.Deps{Voice: v}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole},
		DMUserIDs: []string{theDM.UserID}})
	if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	chk, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(h.camp)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	cards := v.raise(t, chk, "Thorin", "Grimjaw is in Duskwood.", time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC))
	if len(cards) != 1 {
		t.Fatalf("cards %+v; want one", cards)
	}
	card := cards[0]
	status := func() string {
		c, _ := v.board.Get(card.ID)
		return c.Status
	}
	runLate(t, h, []lateCase{
		{name: "continuity Retcon", i: func(h *harness) discordtest.Interaction {
			return h.fake.DMButton(theDM, "cont:r:"+guildID+":"+card.ID)
		}, untouched: func() error {
			if s := status(); s != continuity.CardOpen {
				return fmt.Errorf("the card is %s", s)
			}
			return nil
		}, acted: func(*harness) error {
			if s := status(); s == continuity.CardOpen {
				return fmt.Errorf("the card is still %s", s)
			}
			return nil
		}},
	})
}
