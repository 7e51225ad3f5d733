package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestLedgerCommand: /ledger lists the promises, debts and handovers; the
// DM sees those waiting for review, marked, and a player only those the
// DM confirmed; "who" narrows it to one character.
func TestLedgerCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	at := time.Date(2026, 4, 2, 19, 5, 0, 0, time.UTC)
	write := func(src, dst, rel, what string) int64 {
		t.Helper()
		f, err := h.camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: dst, Type: rel,
			Attributes: map[string]any{"what": what, "evidence": "Grimjaw: " + what, "said_at": at.Format(time.RFC3339)},
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: at, Confidence: ledger.RulesConfidence, Source: memory.SourceStated}})
		if err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	debt := write("elara", "grimjaw", ledger.RelOwes, "ten gold for the blade")
	write("grimjaw", "brannoc", ledger.RelGave, "a hammer")
	// Brannoc passes the hammer on: the first handover says who has it now.
	write("brannoc", "elara", ledger.RelGave, "the hammer")

	run := func(who discordtest.Member, opts ...discordtest.Opt) string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, who, "ledger", opts...)
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	dm := run(theDM)
	if !strings.Contains(dm, "owes Grimjaw: ten gold for the blade") || !strings.Contains(dm, "gave Brannoc: a hammer") ||
		!strings.Contains(dm, "waiting for your review") || !strings.Contains(dm, "gave Brannoc: a hammer (now with Elara Moonwhisper)") ||
		strings.Contains(dm, "gave Elara Moonwhisper: the hammer (now with") {
		t.Fatalf("the DM's ledger: %s", dm)
	}
	if p := run(player); strings.Contains(p, "ten gold") || strings.Contains(p, "hammer") {
		t.Fatalf("a player sees unreviewed entries: %s", p)
	}
	if _, err := h.camp.Graph().ConfirmFact(ctx, debt); err != nil {
		t.Fatal(err)
	}
	p := run(player)
	if !strings.Contains(p, "owes Grimjaw: ten gold") || strings.Contains(p, "hammer") || strings.Contains(p, "review") {
		t.Fatalf("a player's ledger after the DM confirmed the debt: %s", p)
	}
	if only := run(theDM, discordtest.Str("who", "Brannoc")); !strings.Contains(only, "hammer") || strings.Contains(only, "ten gold") {
		t.Fatalf("the ledger of Brannoc: %s", only)
	}
	// A name with a control character is refused, quoted, not echoed.
	for _, who := range []string{"Bran\x00noc", "Brannoc\x1b[2J", "Bran\u0085noc"} {
		got := run(theDM, discordtest.Str("who", who))
		if strings.ContainsFunc(got, unicode.IsControl) || !strings.Contains(got, "control character") {
			t.Errorf("who %q: %q", who, got)
		}
	}
}

// TestLedgerForgetsAForgottenPlayer: a ledger entry quotes the line it
// rests on; once its speaker runs /privacy forget-me, another player's
// /ledger no longer shows it.
func TestLedgerForgetsAForgottenPlayer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	var session, name, text string
	if err := h.pool.QueryRow(ctx, `SELECT session_id, speaker_name, text FROM transcript_entries
		WHERE campaign_id = $1 AND speaker_id = $2 AND NOT noncanon ORDER BY id LIMIT 1`, campaign, player.UserID).
		Scan(&session, &name, &text); err != nil {
		t.Fatalf("a line of %s in the sample: %v", player.UserID, err)
	}
	quote := name + ": " + text
	if _, err := h.camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "grimjaw",
		Type: ledger.RelPromised, Attributes: map[string]any{"what": "a favour", "evidence": quote},
		Provenance: memory.Provenance{SessionID: session, Confidence: 1, DMConfirmed: true, Source: memory.SourceStated}}); err != nil {
		t.Fatal(err)
	}
	other := discordtest.Member{UserID: "u2", Name: "Mira"}
	ledgerOf := func() string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, other, "ledger")
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	if l := ledgerOf(); !strings.Contains(l, text) {
		t.Fatalf("before forget-me the ledger quotes the line (else this test proves nothing): %s", l)
	}
	h.send(h.fake.Button(guildID, channelID, player, "forgetme:yes:"+player.UserID))
	if l := ledgerOf(); strings.Contains(l, text) || strings.Contains(l, "a favour") {
		t.Fatalf("another player's ledger still quotes the forgotten line: %s", l)
	}
}

// TestLedgerKeepsSecrets: a player's /ledger shows neither a secret entry
// (even asked for by name) nor, on a confirmed handover, where a pending
// or secret handover would have moved the item; the DM's shows both.
func TestLedgerKeepsSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	at := time.Date(2026, 4, 2, 19, 5, 0, 0, time.UTC)
	write := func(src, dst, rel, what string, i int, conf float64, secret bool) {
		t.Helper()
		said := at.Add(time.Duration(i) * time.Minute)
		attrs := map[string]any{"what": what, "evidence": "Grimjaw: " + what, "said_at": said.Format(time.RFC3339)}
		if secret {
			attrs[memory.AttrSecret] = true
		}
		if _, err := h.camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: dst, Type: rel, Attributes: attrs,
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: said, Confidence: conf, Source: memory.SourceStated}}); err != nil {
			t.Fatal(err)
		}
	}
	write("vexa", "grimjaw", ledger.RelOwes, "the cult's blood money", 0, 0.95, true)
	write("grimjaw", "brannoc", ledger.RelGave, "a hammer", 1, 0.95, false)
	write("brannoc", "elara", ledger.RelGave, "the hammer", 2, ledger.RulesConfidence, false)
	write("grimjaw", "thorin", ledger.RelGave, "a silver key", 3, 0.95, false)
	write("thorin", "vexa", ledger.RelGave, "the silver key", 4, 0.95, true)
	run := func(who discordtest.Member, opts ...discordtest.Opt) string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, who, "ledger", opts...)
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	dm := run(theDM)
	if !strings.Contains(dm, "blood money") || !strings.Contains(dm, "a hammer (now with Elara") || !strings.Contains(dm, "a silver key (now with Vexa") {
		t.Fatalf("the DM's ledger: %s", dm)
	}
	for _, opts := range [][]discordtest.Opt{nil, {discordtest.Str("who", "Vexa Thorn")}} {
		p := run(player, opts...)
		if strings.Contains(p, "blood money") || strings.Contains(p, "now with") || strings.Contains(p, "Vexa") && opts == nil ||
			!strings.Contains(p, "a hammer") && opts == nil {
			t.Errorf("a player's ledger (%v) shows a secret or where an unconfirmed handover moved an item: %s", opts, p)
		}
	}
}
