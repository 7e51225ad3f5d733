package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// seedConflicts records, through the fact timeline, three facts from
// session s2 that conflict with the sample's canon: Grimjaw and Elara move
// (each supersedes an s1 LOCATED_AT) and Grimjaw is said not to be in the
// Guild (contradicts), with evidence far longer than an embed field.
func seedConflicts(t *testing.T, h *harness) []memory.Conflict {
	t.Helper()
	ctx := context.Background()
	g := h.camp.Graph()
	record := func(src, dst, typ string, conf float64, how memory.FactSource, evidence string) memory.Conflict {
		t.Helper()
		_, cs, err := g.RecordFact(ctx, memory.Relationship{SourceID: src, TargetID: dst, Type: typ,
			Attributes: map[string]any{"extracted": true, "evidence": evidence},
			Provenance: memory.Provenance{SessionID: "s2", Confidence: conf, Source: how}})
		if err != nil || len(cs) != 1 {
			t.Fatalf("recording %s -%s-> %s: %+v %v", src, typ, dst, cs, err)
		}
		return cs[0]
	}
	return []memory.Conflict{
		record("grimjaw", "tower", "LOCATED_AT", 0.8, memory.SourceInferred, "Grimjaw carried his anvil up to the Tower of Whispers."),
		record("elara", "sunken-vault", "LOCATED_AT", 0.9, memory.SourceStated, "Elara went down into the Sunken Vault."),
		record("grimjaw", "guild", "NOT_MEMBER_OF", 0.75, memory.SourceStated, strings.Repeat("The Guild threw Grimjaw out. ", 150)),
	}
}

// wireMessage is the part of a message (response, edit) the checks read.
type wireMessage struct {
	Content    string                    `json:"content"`
	Embeds     []*discordgo.MessageEmbed `json:"embeds"`
	Components []struct {
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
			Disabled bool   `json:"disabled"`
		} `json:"components"`
	} `json:"components"`
}

func decodeMessage(t *testing.T, raw []byte) wireMessage {
	t.Helper()
	var m wireMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return m
}

// buttons returns the custom ids of the enabled buttons by label.
func (m wireMessage) buttons() map[string]string {
	out := map[string]string{}
	for _, row := range m.Components {
		for _, c := range row.Components {
			if !c.Disabled {
				out[c.Label] = c.CustomID
			}
		}
	}
	return out
}

// checkLimits fails when a message breaks one of Discord's limits.
func checkLimits(t *testing.T, m wireMessage) {
	t.Helper()
	count := func(s string) int { return utf8.RuneCountInString(s) }
	if count(m.Content) > 2000 || len(m.Embeds) > 10 || len(m.Components) > 5 {
		t.Errorf("message over Discord's limits: %d characters, %d embeds, %d rows", count(m.Content), len(m.Embeds), len(m.Components))
	}
	for _, e := range m.Embeds {
		total := count(e.Title) + count(e.Description)
		if count(e.Title) > 256 || count(e.Description) > 4096 || len(e.Fields) > 25 {
			t.Errorf("embed over Discord's limits: %+v", e)
		}
		for _, f := range e.Fields {
			total += count(f.Name) + count(f.Value)
			if count(f.Name) > 256 || count(f.Value) > 1024 || f.Value == "" {
				t.Errorf("field over Discord's limits: %q (%d) / %d characters", f.Name, count(f.Name), count(f.Value))
			}
		}
		if e.Footer != nil {
			total += count(e.Footer.Text)
		}
		if total > 6000 {
			t.Errorf("embed of %d characters", total)
		}
	}
}

func (m wireMessage) text() string {
	raw, _ := json.Marshal(m)
	return string(raw)
}

func TestConflictsSettledByButtons(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	g := h.camp.Graph()
	cs := seedConflicts(t, h)
	moved, elara, negation := cs[0], cs[1], cs[2]
	if moved.Kind != memory.LinkSupersedes || negation.Kind != memory.LinkContradicts {
		t.Fatalf("seeded conflicts: %+v", cs)
	}

	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("conflicts"))
	r := h.send(i)
	if r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource || r.Data.Flags != discordgo.MessageFlagsEphemeral {
		t.Fatalf("conflicts must be a deferred ephemeral reply, got %+v", r)
	}
	raw, _ := json.Marshal(h.original(i))
	page := decodeMessage(t, raw)
	checkLimits(t, page)
	if len(page.Embeds) != 1 || len(page.Embeds[0].Fields) != 2 {
		t.Fatalf("one conflict per page, old and new: %s", raw)
	}
	fields := page.Embeds[0].Fields
	for _, want := range []string{"Old · #" + itoa(moved.OldFact.ID), "Grimjaw", "LOCATED_AT", "Ironhold"} {
		if !strings.Contains(fields[0].Name, want) {
			t.Errorf("the old fact's heading %q lacks %q", fields[0].Name, want)
		}
	}
	for _, want := range []string{"confidence 0.95", "stated", "session s1", "status: retired (held until session s2)"} {
		if !strings.Contains(fields[0].Value, want) {
			t.Errorf("the old fact's provenance %q lacks %q", fields[0].Value, want)
		}
	}
	for _, want := range []string{"New · #" + itoa(moved.NewFact.ID), "Tower of Whispers"} {
		if !strings.Contains(fields[1].Name, want) {
			t.Errorf("the new fact's heading %q lacks %q", fields[1].Name, want)
		}
	}
	for _, want := range []string{"confidence 0.80", "inferred", "session s2", "UTC", "evidence: “Grimjaw carried his anvil"} {
		if !strings.Contains(fields[1].Value, want) {
			t.Errorf("the new fact's provenance %q lacks %q", fields[1].Value, want)
		}
	}
	if !strings.Contains(page.Embeds[0].Description, "supersedes") || !strings.Contains(page.Embeds[0].Footer.Text, "Conflict 1 of 3") {
		t.Errorf("page 1: %s", raw)
	}
	btn := page.buttons()
	if btn["Keep new"] != "conf:n:"+itoa(moved.ID)+":0" || btn["Keep old"] != "conf:o:"+itoa(moved.ID)+":0" || btn["Next ▶"] == "" {
		t.Fatalf("buttons %v", btn)
	}
	if _, ok := btn["◀ Previous"]; ok {
		t.Error("Previous is enabled on the first page")
	}

	// Paging to the last conflict: the negation, with its long evidence
	// clipped to Discord's limits.
	r = h.send(h.fake.Button(guildID, channelID, theDM, "conf:p:0:2"))
	if r.Type != discordgo.InteractionResponseUpdateMessage {
		t.Fatalf("paging: %s", r.raw)
	}
	last := decodeMessage(t, mustData(t, r.raw))
	checkLimits(t, last)
	if s := last.text(); !strings.Contains(s, "contradicts") || !strings.Contains(s, "NOT_MEMBER_OF") ||
		!strings.Contains(s, "Conflict 3 of 3") || !strings.Contains(s, "The Guild threw Grimjaw out.") || !strings.Contains(s, "…") {
		t.Errorf("page 3: %s", s)
	}
	if last.buttons()["Keep new"] != "conf:n:"+itoa(negation.ID)+":2" {
		t.Errorf("page 3 buttons: %v", last.buttons())
	}

	// Keep old: Grimjaw never moved.
	r = h.send(h.fake.Button(guildID, channelID, theDM, "conf:o:"+itoa(moved.ID)+":0"))
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "Kept the old fact") {
		t.Fatalf("keep old: %s", r.raw)
	}
	after := decodeMessage(t, mustData(t, r.raw))
	checkLimits(t, after)
	if s := after.text(); strings.Contains(s, "conf:o:"+itoa(moved.ID)+":") || !strings.Contains(s, "Elara Moonwhisper") ||
		!strings.Contains(s, "Conflict 1 of 2") {
		t.Errorf("the page after keep old: %s", s)
	}
	var resolution string
	if err := h.pool.QueryRow(ctx, `SELECT resolution FROM fact_conflicts WHERE id = $1`, moved.ID).Scan(&resolution); err != nil ||
		resolution != "kept_old" {
		t.Fatalf("conflict %d resolution %q %v", moved.ID, resolution, err)
	}
	if f, _ := g.Fact(ctx, moved.NewFact.ID); f.Status != memory.StatusRejected {
		t.Errorf("the new fact after keep old: %+v", f)
	}
	if got := locatedAsOf(t, h, "grimjaw", "s2"); got != "ironhold" {
		t.Errorf("as of s2 Grimjaw is at %q, want ironhold", got)
	}

	// Keep new: Elara went to the vault in s2, and was at the tower before.
	r = h.send(h.fake.Button(guildID, channelID, theDM, "conf:n:"+itoa(elara.ID)+":0"))
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "Kept the new fact") ||
		!strings.Contains(r.Data.Content, "retired as of session s2") {
		t.Fatalf("keep new: %s", r.raw)
	}
	if f, _ := g.Fact(ctx, elara.NewFact.ID); f.Status != memory.StatusActive || !f.Provenance.DMConfirmed {
		t.Errorf("the new fact after keep new: %+v", f)
	}
	for s, want := range map[string]string{"s1": "tower", "s2": "sunken-vault"} {
		if got := locatedAsOf(t, h, "elara", s); got != want {
			t.Errorf("as of %s Elara is at %q, want %s", s, got, want)
		}
	}
	open, err := g.Conflicts(ctx)
	if err != nil || len(open) != 1 || open[0].ID != negation.ID {
		t.Fatalf("open conflicts after two settled: %+v %v", open, err)
	}

	// A stale button on a settled conflict changes nothing and says why.
	r = h.send(h.fake.Button(guildID, channelID, theDM, "conf:n:"+itoa(moved.ID)+":0"))
	if !strings.Contains(r.Data.Content, "already resolved") {
		t.Errorf("stale button: %s", r.raw)
	}
	if got := locatedAsOf(t, h, "grimjaw", "s2"); got != "ironhold" {
		t.Errorf("a stale button moved Grimjaw to %q", got)
	}

	// The last one settled, the page says so.
	r = h.send(h.fake.Button(guildID, channelID, theDM, "conf:o:"+itoa(negation.ID)+":0"))
	if !strings.Contains(r.Data.Content, "No conflicting facts") || len(decodeMessage(t, mustData(t, r.raw)).Components) != 0 {
		t.Errorf("after the last conflict: %s", r.raw)
	}
}

func TestNonDMCannotSettleConflicts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	moved := seedConflicts(t, h)[0]
	snapshot := func() string {
		var s string
		if err := h.pool.QueryRow(ctx, `SELECT string_agg(format('%s:%s:%s', id, status, valid_until_session), ',' ORDER BY id)
			FROM relationships WHERE campaign_id = $1`, campaign).Scan(&s); err != nil {
			t.Fatal(err)
		}
		var c string
		if err := h.pool.QueryRow(ctx, `SELECT string_agg(format('%s:%s', id, resolution), ',' ORDER BY id)
			FROM fact_conflicts WHERE campaign_id = $1`, campaign).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return s + "|" + c
	}
	before := snapshot()
	for _, id := range []string{"conf:n:" + itoa(moved.ID) + ":0", "conf:o:" + itoa(moved.ID) + ":0", "conf:p:0:1"} {
		r := h.send(h.fake.Button(guildID, channelID, player, id))
		if r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data.Flags != discordgo.MessageFlagsEphemeral ||
			!strings.Contains(r.Data.Content, "Only the DM") {
			t.Fatalf("a player pressed %s: %s", id, r.raw)
		}
	}
	r := h.send(h.fake.Command(guildID, channelID, player, "memory", discordtest.Sub("conflicts")))
	if r.Data.Flags != discordgo.MessageFlagsEphemeral || !strings.Contains(r.Data.Content, "is for the DM") {
		t.Fatalf("a player ran /memory conflicts: %s", r.raw)
	}
	if after := snapshot(); after != before {
		t.Fatalf("a player changed the memory:\n before %s\n after  %s", before, after)
	}
	if got := locatedAsOf(t, h, "grimjaw", "s2"); got != "tower" {
		t.Errorf("as of s2 Grimjaw is at %q, want tower (the open conflict's new fact)", got)
	}
}

// locatedAsOf is where an entity was during a session.
func locatedAsOf(t *testing.T, h *harness, entity, session string) string {
	t.Helper()
	rs, err := h.camp.Graph().FactsAsOf(context.Background(), entity, session)
	if err != nil {
		t.Fatal(err)
	}
	var at []string
	for _, r := range rs {
		if r.Type == "LOCATED_AT" && r.SourceID == entity {
			at = append(at, r.TargetID)
		}
	}
	return strings.Join(at, ",")
}

// mustData returns the data of an interaction response.
func mustData(t *testing.T, raw []byte) []byte {
	t.Helper()
	var r struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Data == nil {
		t.Fatalf("no data in %s: %v", raw, err)
	}
	return r.Data
}
