package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const (
	guildID   = "100000000000000001"
	otherID   = "100000000000000009" // a guild the bot is in but which has no campaign
	channelID = "100000000000000002"
	dmRole    = "100000000000000003"
	campaign  = "ironhold-saga"
	wait      = 2 * time.Minute // a hang guard, not a budget: every wait ends on the event it waits for
)

var (
	theDM  = discordtest.Member{UserID: "200000000000000001", Name: "Dana", Roles: []string{dmRole}}
	player = discordtest.Member{UserID: "u1", Name: "Thorin"} // speaker id u1 in the sample campaign
)

type harness struct {
	t    *testing.T
	fake *discordtest.Server
	// pool reads the database directly; door is the bot's; camp is the
	// campaign through it, bound to the DM, for seeding and checking.
	pool *pgxpool.Pool
	door *access.Door
	camp *access.Campaign
	bot  *bot.Bot
	// handled closes, per interaction id, once the bot's handler returned.
	handled *handledSet
}

// handledSet is the interactions whose handlers returned, by id.
type handledSet struct {
	mu    sync.Mutex
	chans map[string]chan struct{}
}

func (s *handledSet) ch(id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chans == nil {
		s.chans = map[string]chan struct{}{}
	}
	c, ok := s.chans[id]
	if !ok {
		c = make(chan struct{})
		s.chans[id] = c
	}
	return c
}

func (s *handledSet) mark(id string) {
	c := s.ch(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-c: // a second delivery of the same interaction
	default:
		close(c)
	}
}

// waitHandled waits until the bot's handler of i returned.
func (h *harness) waitHandled(i discordtest.Interaction) {
	h.t.Helper()
	select {
	case <-h.handled.ch(i.ID):
	case <-time.After(wait):
		h.hung(fmt.Sprintf("the handler of interaction %s did not return", i.ID))
	}
}

func newHarness(t *testing.T, deps bot.Deps) *harness {
	t.Helper()
	return newHarnessFor(t, deps, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}})
}

// newHarnessFor is newHarness with the guild bound as g.
func newHarnessFor(t *testing.T, deps bot.Deps, g bot.Guild) *harness {
	t.Helper()
	store, _ := pgtest.NewStore(t, 16)
	return newHarnessOn(t, deps, g, store)
}

// newHarnessOn is newHarnessFor on store (a database of the test's own,
// such as a private cluster's), into which it imports the sample campaign.
func newHarnessOn(t *testing.T, deps bot.Deps, g bot.Guild, store *postgres.Store) *harness {
	t.Helper()
	return newHarnessLogged(t, deps, g, store, nil)
}

// newHarnessLogged is newHarnessOn with the bot also logging to log (when
// not nil) and built with opts. Whatever the test passes, the bot and its door log to the
// test: kept quiet, and printed if the test fails (keepLog).
func newHarnessLogged(t *testing.T, deps bot.Deps, g bot.Guild, store *postgres.Store, log *slog.Logger, opts ...bot.Option) *harness {
	t.Helper()
	return newHarnessGuilds(t, deps, []bot.Guild{g}, store, log, opts...)
}

// newHarnessGuilds is newHarnessLogged with the guilds gs bound (the
// harness's campaign is the sample's, whichever guild binds it).
func newHarnessGuilds(t *testing.T, deps bot.Deps, gs []bot.Guild, store *postgres.Store, log *slog.Logger, opts ...bot.Option) *harness {
	t.Helper()
	kept := keepLog(t)
	if log == nil {
		log = kept
	} else {
		log = slog.New(slog.NewMultiHandler(kept.Handler(), log.Handler()))
	}
	pgtest.Import(t, store, "../testdata/campaigns/ironhold-saga.yaml")
	ctx := context.Background()
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.AddGuild(&discordgo.Guild{ID: guildID, Name: "The Table"})
	fake.AddGuild(&discordgo.Guild{ID: otherID, Name: "Elsewhere"})
	for _, g := range gs {
		if g.ID != guildID && g.ID != otherID {
			fake.AddGuild(&discordgo.Guild{ID: g.ID, Name: "Server of " + g.Campaign})
		}
	}

	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	fake.Attach(sess)
	door, err := access.New(access.Config{Store: store, Logger: kept.With("part", "door")})
	if err != nil {
		t.Fatal(err)
	}
	door.Start(ctx)
	t.Cleanup(func() { door.Close() })
	deps.Door = door
	handled := &handledSet{}
	b, err := bot.New(bot.Config{Guilds: gs,
		Logger: log},
		deps, append([]bot.Option{bot.WithSession(sess), bot.WithHandled(handled.mark)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing the bot: %v", err)
		}
		sess.Close()
	})
	camp, err := door.Open(ctx, campaign, memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, fake: fake, pool: store.Pool(), door: door, bot: b, camp: camp, handled: handled}
	// Ready once the commands are registered.
	h.waitCall(discordtest.PathHasPrefix("PUT", "/applications/"))
	return h
}

// response is an interaction response as sent on the wire.
type response struct {
	Type discordgo.InteractionResponseType `json:"type"`
	Data struct {
		Content    string                                      `json:"content"`
		Flags      discordgo.MessageFlags                      `json:"flags"`
		CustomID   string                                      `json:"custom_id"`
		Choices    []*discordgo.ApplicationCommandOptionChoice `json:"choices"`
		Components []json.RawMessage                           `json:"components"`
		Embeds     []json.RawMessage                           `json:"embeds"`
	} `json:"data"`
	raw json.RawMessage
}

// send dispatches an interaction and returns its initial response. An
// acknowledgement that defers (a command or button that acts: the bot
// acts only once Discord took the acknowledgement) is returned once the
// handler is done, with the answer that completed it: Data holds the edit
// of the original response (its content followed by any follow-ups'),
// and raw is {"type": the acknowledgement's, "data": the edit}.
func (h *harness) send(i discordtest.Interaction) response {
	h.t.Helper()
	if err := h.fake.Send(i); err != nil {
		h.t.Fatal(err)
	}
	c := h.waitCall(discordtest.PathIs("POST", i.CallbackPath()))
	var r response
	if err := c.Decode(&r); err != nil {
		h.t.Fatalf("decoding the response %s: %v", c.Body, err)
	}
	r.raw = c.Body
	if r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource && r.Type != discordgo.InteractionResponseDeferredMessageUpdate {
		return r
	}
	h.waitHandled(i)
	var contents []string
	for _, call := range h.fake.Calls() {
		edit := call.Method == "PATCH" && call.Path == i.OriginalPath(h.fake.AppID)
		if !edit && !(call.Method == "POST" && call.Path == i.FollowupPath(h.fake.AppID)) {
			continue
		}
		var m struct {
			Flags      discordgo.MessageFlags `json:"flags"`
			Content    string                 `json:"content"`
			Components []json.RawMessage      `json:"components"`
			Embeds     []json.RawMessage      `json:"embeds"`
		}
		if err := call.Decode(&m); err != nil {
			h.t.Fatalf("decoding %s %s: %v", call.Method, call.Path, err)
		}
		contents = append(contents, m.Content)
		if edit {
			r.Data.Components, r.Data.Embeds = m.Components, m.Embeds
			// raw keeps the shape of an initial response: the
			// acknowledgement's type, the edit as its data.
			r.raw = json.RawMessage(fmt.Sprintf(`{"type":%d,"data":%s}`, r.Type, call.Body))
		} else {
			r.Data.Flags |= m.Flags
		}
	}
	r.Data.Content = strings.Join(contents, "\n")
	return r
}

// original waits for the deferred response's edit.
func (h *harness) original(i discordtest.Interaction) map[string]any {
	h.t.Helper()
	c := h.waitCall(discordtest.PathIs("PATCH", i.OriginalPath(h.fake.AppID)))
	var m map[string]any
	if err := c.Decode(&m); err != nil {
		h.t.Fatal(err)
	}
	return m
}

func TestRegistersExactlyTheCommandsInBoundGuilds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	c := h.waitCall(discordtest.PathHasPrefix("PUT", "/applications/"))
	if c.Path != "/applications/"+h.fake.AppID+"/guilds/"+guildID+"/commands" {
		t.Fatalf("registered at %s", c.Path)
	}
	var got []map[string]any
	if err := c.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("testdata/commands.json")
	var wantJSON []map[string]any
	if err := json.Unmarshal(want, &wantJSON); err != nil {
		t.Fatalf("testdata/commands.json: %v", err)
	}
	if !reflect.DeepEqual(got, wantJSON) {
		pretty, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("registration payload differs from testdata/commands.json; got:\n%s", pretty)
	}
	time.Sleep(200 * time.Millisecond)
	for _, call := range h.fake.Calls() {
		if strings.Contains(call.Path, otherID) {
			t.Fatalf("commands registered in an unbound guild: %s", call.Path)
		}
	}
}

func TestPendingFactConfirmedByButton(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	pending, err := h.camp.Graph().PendingFacts(ctx, memory.FactFilter{})
	if err != nil || len(pending) != 2 {
		t.Fatalf("pending facts in the sample: %v %v", pending, err)
	}
	first := pending[0]

	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("pending"))
	r := h.send(i)
	if r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource || r.Data.Flags != discordgo.MessageFlagsEphemeral {
		t.Fatalf("pending must be a deferred ephemeral reply, got %+v", r)
	}
	msg := h.original(i)
	raw, _ := json.Marshal(msg)
	for _, want := range []string{"Vexa Thorn", "MEMBER_OF", "Ashen Circle", "session s2", "Confirm #", "pend:c:"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the pending page lacks %q: %s", want, raw)
		}
	}
	// The DM presses Confirm on the first fact.
	press := h.fake.Button(guildID, channelID, theDM, "pend:c:"+itoa(first.ID)+":0:")
	r = h.send(press)
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "Confirmed") {
		t.Fatalf("button response %+v", r)
	}
	f, err := h.camp.Graph().Fact(ctx, first.ID)
	if err != nil || f.Status != memory.StatusActive || !f.Provenance.DMConfirmed {
		t.Fatalf("fact after Confirm: %+v %v", f, err)
	}
	// The updated page no longer lists it.
	if strings.Contains(string(r.raw), "pend:c:"+itoa(first.ID)+":") {
		t.Fatalf("the confirmed fact is still offered: %s", r.raw)
	}
}

func TestNonDMCannotReview(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	pending, _ := h.camp.Graph().PendingFacts(ctx, memory.FactFilter{})
	r := h.send(h.fake.Button(guildID, channelID, player, "pend:c:"+itoa(pending[0].ID)+":0:"))
	if r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data.Flags != discordgo.MessageFlagsEphemeral ||
		!strings.Contains(r.Data.Content, "Only the DM") {
		t.Fatalf("non-DM press: %+v", r)
	}
	f, _ := h.camp.Graph().Fact(ctx, pending[0].ID)
	if f.Status != memory.StatusPending {
		t.Fatalf("a non-DM changed a fact: %+v", f)
	}
	r = h.send(h.fake.Command(guildID, channelID, player, "memory", discordtest.Sub("pending")))
	if r.Data.Flags != discordgo.MessageFlagsEphemeral || !strings.Contains(r.Data.Content, "is for the DM") {
		t.Fatalf("non-DM /memory: %+v", r)
	}
	// An administrator counts as a DM.
	admin := discordtest.Member{UserID: "300", Name: "Admin", Admin: true}
	r = h.send(h.fake.Command(guildID, channelID, admin, "memory", discordtest.Sub("pending")))
	if r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource {
		t.Fatalf("admin /memory: %+v", r)
	}
}

func TestForgetMeDeletesThePlayersLines(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	count := func() (n int) {
		h.pool.QueryRow(ctx, `SELECT count(*) FROM transcript_entries WHERE campaign_id = $1 AND speaker_id = 'u1'`, campaign).Scan(&n)
		return n
	}
	before := count()
	if before == 0 {
		t.Fatal("the sample campaign has no lines by u1")
	}
	r := h.send(h.fake.Command(guildID, channelID, player, "privacy", discordtest.Sub("forget-me")))
	if !strings.Contains(r.Data.Content, "cannot be undone") || len(r.Data.Components) != 1 {
		t.Fatalf("forget-me asks first: %+v", r)
	}
	// Someone else cannot press the player's button.
	r = h.send(h.fake.Button(guildID, channelID, theDM, "forgetme:yes:"+player.UserID))
	if !strings.Contains(r.Data.Content, "Only the person who asked") || count() != before {
		t.Fatalf("another member pressed forget-me: %+v", r)
	}
	r = h.send(h.fake.Button(guildID, channelID, player, "forgetme:yes:"+player.UserID))
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "Deleted "+itoa(int64(before))+" lines") {
		t.Fatalf("forget-me result: %+v", r)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d lines by u1 remain", n)
	}
}

func TestAutocompleteAndEntityEdit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	r := h.send(h.fake.Autocomplete(guildID, channelID, theDM, "memory", discordtest.Group("entity",
		discordtest.Sub("show", discordtest.Focused("entity", "gri")))))
	if r.Type != discordgo.InteractionApplicationCommandAutocompleteResult || len(r.Data.Choices) != 1 ||
		r.Data.Choices[0].Value != "grimjaw" {
		t.Fatalf("autocomplete: %+v", r.Data)
	}
	r = h.send(h.fake.Autocomplete(guildID, channelID, theDM, "memory", discordtest.Sub("confirm", discordtest.Focused("fact", ""))))
	if len(r.Data.Choices) != 2 {
		t.Fatalf("pending-fact autocomplete: %+v", r.Data.Choices)
	}
	// A player gets no suggestions for DM commands.
	r = h.send(h.fake.Autocomplete(guildID, channelID, player, "memory", discordtest.Sub("confirm", discordtest.Focused("fact", ""))))
	if len(r.Data.Choices) != 0 {
		t.Fatalf("player autocomplete of DM command: %+v", r.Data.Choices)
	}

	r = h.send(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("entity", discordtest.Sub("edit", discordtest.Str("entity", "grimjaw")))))
	if r.Type != discordgo.InteractionResponseModal || r.Data.CustomID != "entedit:grimjaw" {
		t.Fatalf("edit opens a modal: %+v", r)
	}
	r = h.send(h.fake.ModalSubmit(guildID, channelID, theDM, "entedit:grimjaw",
		map[string]string{"name": "Grimjaw", "aliases": "Grim", "attributes": "occupation: [unclosed"}))
	if !strings.Contains(r.Data.Content, "Nothing was changed") {
		t.Fatalf("bad YAML: %+v", r)
	}
	e, _ := h.camp.Graph().Entity(ctx, "grimjaw")
	if e.Attributes["occupation"] != "blacksmith" {
		t.Fatalf("a refused edit changed the entity: %+v", e)
	}
	r = h.send(h.fake.ModalSubmit(guildID, channelID, theDM, "entedit:grimjaw",
		map[string]string{"name": "Grimjaw Ironfist", "aliases": "Grim, Ironfist", "attributes": "occupation: master smith\nmood: wary\n"}))
	e, _ = h.camp.Graph().Entity(ctx, "grimjaw")
	if e.Name != "Grimjaw Ironfist" || e.Attributes["mood"] != "wary" || e.Attributes["secret_knowledge"] != nil || len(e.Aliases) != 2 {
		t.Fatalf("after edit: %+v (%+v)", e, r)
	}
}

func TestRecapIsTraceableAndPlayerSafe(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	i := h.fake.Command(guildID, channelID, player, "recap", discordtest.Str("scope", "session"), discordtest.Str("session", "s1"),
		discordtest.Bool("player_safe", false))
	h.send(i)
	msg := h.original(i)
	content, _ := msg["content"].(string)
	if !strings.Contains(content, "player-safe") || !strings.Contains(content, "⟨s1 ") {
		t.Fatalf("a player's recap must be player-safe and traceable: %s", content)
	}
	if strings.Contains(content, "hooded stranger") || strings.Contains(content, "lost heir") {
		t.Fatalf("the recap reveals a secret: %s", content)
	}
}

func TestLongOutputIsSplit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	var es []memory.TranscriptEntry
	for k := range 40 {
		es = append(es, memory.TranscriptEntry{SessionID: "s9", SpeakerID: "u2", SpeakerName: "Lyra",
			Text: strings.Repeat("The dragon Eldrinax sleeps beneath the drowned vault and dreams of names. ", 5),
			At:   time.Date(2026, 4, 1, 19, k, 0, 0, time.UTC)})
	}
	if _, err := h.camp.Sessions().WriteEntries(ctx, es); err != nil {
		t.Fatal(err)
	}
	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("search", discordtest.Str("query", "dragon"), discordtest.Str("mode", "text")))
	h.send(i)
	first := h.original(i)
	if n := len([]rune(first["content"].(string))); n > 2000 || n < 1000 {
		t.Fatalf("first message of %d characters", n)
	}
	c := h.waitCall(discordtest.PathIs("POST", i.FollowupPath(h.fake.AppID)))
	var follow map[string]any
	c.Decode(&follow)
	if follow["flags"] != float64(discordgo.MessageFlagsEphemeral) || len([]rune(follow["content"].(string))) > 2000 {
		t.Fatalf("follow-up %v", follow)
	}
}

func itoa(n int64) string { return strings.TrimSpace(strings.ReplaceAll(jsonNum(n), `"`, "")) }

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

var _ = errors.New

func TestDMDirectsTheNextAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	next := func(m discordtest.Member, npc string) response {
		return h.send(h.fake.Command(guildID, channelID, m, "npc", discordtest.Sub("next", discordtest.Str("npc", npc))))
	}
	if r := next(player, "grimjaw"); !strings.Contains(r.Data.Content, "is for the DM") {
		t.Fatalf("a player directed an NPC: %q", r.Data.Content)
	}
	if got := h.bot.Controls(guildID).TakeNext(); got != "" {
		t.Fatalf("a refused direction was kept: %q", got)
	}
	if r := next(theDM, "thorin"); !strings.Contains(r.Data.Content, "not an NPC") {
		t.Errorf("directing a player character: %q", r.Data.Content)
	}
	if r := next(theDM, "Grim"); !strings.Contains(r.Data.Content, "Grimjaw answers the next thing") || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("direction reply %+v", r.Data)
	}
	c := h.bot.Controls(guildID)
	if got := c.TakeNext(); got != "grimjaw" {
		t.Errorf("TakeNext = %q, want grimjaw", got)
	}
	if got := c.TakeNext(); got != "" {
		t.Errorf("the direction is used once; second TakeNext = %q", got)
	}
}
