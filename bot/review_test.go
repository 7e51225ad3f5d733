package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestBulkReviewWithUndo: "Confirm all" confirms every pending fact in one
// batch and offers Undo, which puts them back; a player can do neither.
func TestBulkReviewWithUndo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	g := h.camp.Graph()
	pending, err := g.PendingFacts(ctx, memory.FactFilter{})
	if err != nil || len(pending) == 0 {
		t.Fatalf("pending facts in the sample: %v %v", pending, err)
	}
	statuses := func() string {
		var b strings.Builder
		for _, p := range pending {
			f, err := g.Fact(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(string(f.Status) + " ")
		}
		return b.String()
	}
	before := statuses()

	// The page offers the bulk buttons.
	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("pending"))
	h.send(i)
	page := decodeMessageMap(t, h.original(i))
	checkLimits(t, page)
	all := page.buttons()["Confirm all ("+itoa(int64(len(pending)))+")"]
	if all != "pend:a:0:0:" {
		t.Fatalf("no Confirm all button: %v", page.buttons())
	}

	// A player cannot press it, nor Undo.
	for _, id := range []string{all, "pend:x:0:0:", "pend:u:1:0:"} {
		r := h.send(h.fake.Button(guildID, channelID, player, id))
		if !strings.Contains(r.Data.Content, "Only the DM") {
			t.Fatalf("a player pressed %s: %s", id, r.raw)
		}
	}
	if got := statuses(); got != before {
		t.Fatalf("a player's press changed %q to %q", before, got)
	}

	r := h.send(h.fake.Button(guildID, channelID, theDM, all))
	if !strings.Contains(r.Data.Content, "Confirmed "+itoa(int64(len(pending)))+" fact(s) in one batch") {
		t.Fatalf("bulk confirm: %s", r.raw)
	}
	for _, p := range pending {
		if f, _ := g.Fact(ctx, p.ID); f.Status != memory.StatusActive {
			t.Fatalf("fact %d after Confirm all: %s", p.ID, f.Status)
		}
	}
	after := decodeMessage(t, mustData(t, r.raw))
	checkLimits(t, after)
	var undo string
	for label, id := range after.buttons() {
		if strings.HasPrefix(label, "↩ Undo batch") {
			undo = id
		}
	}
	if !strings.HasPrefix(undo, "pend:u:") {
		t.Fatalf("no Undo button after the bulk confirm: %v", after.buttons())
	}
	r = h.send(h.fake.Button(guildID, channelID, theDM, undo))
	if !strings.Contains(r.Data.Content, "Undid batch") {
		t.Fatalf("undo: %s", r.raw)
	}
	if got := statuses(); got != before {
		t.Fatalf("after undo the facts are %q, want %q", got, before)
	}
	// Undo twice says why not.
	r = h.send(h.fake.Button(guildID, channelID, theDM, undo))
	if !strings.Contains(r.Data.Content, "undone") {
		t.Fatalf("second undo: %s", r.raw)
	}
}

// TestPendingCardNamesItsConflict: a pending fact in an open conflict says
// so on its review card, and confirming it settles the conflict.
func TestPendingCardNamesItsConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	g := h.camp.Graph()
	cs := seedConflicts(t, h)
	negation := cs[2] // contradicts: the new fact is pending
	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("pending"))
	h.send(i)
	raw := decodeMessageMap(t, h.original(i)).text()
	if !strings.Contains(raw, "in open conflict "+itoa(negation.ID)) {
		t.Fatalf("the pending card of fact %d does not name conflict %d: %s", negation.NewFact.ID, negation.ID, raw)
	}
	r := h.send(h.fake.Button(guildID, channelID, theDM, "pend:c:"+itoa(negation.NewFact.ID)+":0:"))
	if !strings.Contains(r.Data.Content, "Confirmed") {
		t.Fatalf("confirm: %s", r.raw)
	}
	open, err := g.Conflicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range open {
		if c.ID == negation.ID {
			t.Fatalf("conflict %d is still open after its new fact was confirmed", c.ID)
		}
	}
	if f, _ := g.Fact(ctx, negation.OldFact.ID); f.Status != memory.StatusRetired {
		t.Fatalf("the contradicted fact is %s beside the confirmed one", f.Status)
	}
}

// decodeMessageMap decodes a message read back from the fake as a map.
func decodeMessageMap(t *testing.T, m map[string]any) wireMessage {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return decodeMessage(t, raw)
}

// TestRecapOfAnOldSessionAsItStoodThen: a recap of s1 is told what s1
// established, including a fact retired since (Brannoc visited Duskwood in
// s1; the DM retired it in s2), not only what is canon now.
func TestRecapOfAnOldSessionAsItStoodThen(t *testing.T) {
	t.Parallel()
	p := &paraphraser{}
	srv := llmtest.New(p.handle)
	t.Cleanup(srv.Close)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, bot.Deps{RecapLLM: client})
	ctx := context.Background()
	g := h.camp.Graph()
	f, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "brannoc", TargetID: "duskwood", Type: "VISITED",
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceStated}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.RetireFact(ctx, f.ID, "s2"); err != nil {
		t.Fatal(err)
	}
	i := h.fake.Command(guildID, channelID, theDM, "recap", discordtest.Str("scope", "session"), discordtest.Str("session", "s1"))
	h.send(i)
	content, _ := h.original(i)["content"].(string) // waits for the recap
	p.mu.Lock()
	prompts := strings.Join(p.prompts, "\n")
	p.mu.Unlock()
	if prompts == "" {
		t.Fatalf("the model was not asked: %s", content)
	}
	if !strings.Contains(prompts, "Brannoc visited Duskwood") {
		t.Fatalf("the recap of s1 was not told what s1 established (since retired):\n%s", prompts)
	}
}

// TestFactListAsOfDate: /memory fact list and entity show take a date for
// as_of beside a session.
func TestFactListAsOfDate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	reply := func(i discordtest.Interaction) string {
		t.Helper()
		h.send(i)
		return decodeMessageMap(t, h.original(i)).text()
	}
	h.send(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("add",
		discordtest.Str("subject", "grimjaw"), discordtest.Str("relation", "located at"), discordtest.Str("object", "duskwood")))))
	list := reply(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("list",
		discordtest.Str("entity", "grimjaw"), discordtest.Str("as_of", "2026-03-05")))))
	if !strings.Contains(list, "as of 2026-03-05") || !strings.Contains(list, "Ironhold") || strings.Contains(list, "Duskwood") {
		t.Errorf("fact list as of 2026-03-05: %s", list)
	}
	show := reply(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("entity", discordtest.Sub("show",
		discordtest.Str("entity", "grimjaw"), discordtest.Str("as_of", "2026-03-05")))))
	if !strings.Contains(show, "as of 2026-03-05") || !strings.Contains(show, "Ironhold") {
		t.Errorf("entity show as of 2026-03-05: %s", show)
	}
}
