package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestLedgerPage: the Ledger page lists the promises, debts and handovers
// with the quoted line linked to the session line; the DM sees those
// waiting for review and confirms one with the review's handler (CSRF
// checked), landing back on the Ledger; a player sees only confirmed
// entries, never a pending one, and no review buttons.
func TestLedgerPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	g := f.camp.Graph()
	es, err := f.camp.Sessions().Entries(ctx, "s1")
	if err != nil || len(es) < 8 {
		t.Fatalf("the sample's session s1: %d lines (%v)", len(es), err)
	}
	write := func(src, dst, rel, what string, conf float64, line memory.TranscriptEntry) int64 {
		t.Helper()
		fact, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: dst, Type: rel,
			Attributes: map[string]any{"what": what, "evidence": line.SpeakerName + ": " + line.Text,
				"said_at": line.At.UTC().Format(time.RFC3339)},
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: line.At, Confidence: conf, Source: memory.SourceStated}})
		if err != nil {
			t.Fatal(err)
		}
		return fact.ID
	}
	promise := write("grimjaw", "thorin", ledger.RelPromised, "two hundred gold for the steel", 0.9, es[7])
	debt := write("thorin", "brannoc", ledger.RelOwes, "three ales", ledger.RulesConfidence, es[1])
	write("grimjaw", "thorin", ledger.RelGave, "a hammer", 0.9, es[7])
	write("thorin", "lyra", ledger.RelGave, "the hammer", 0.9, es[7])
	if got, _ := g.Fact(ctx, debt); got.Status != memory.StatusPending {
		t.Fatalf("the debt is %s; want pending", got.Status)
	}

	dm := f.signInLink(t)
	resp, page := dm.get("/ledger")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the DM's ledger: %d %.300s", resp.StatusCode, page)
	}
	for _, want := range []string{
		`<a href="/ledger" aria-current="page">Ledger</a>`,
		"two hundred gold for the steel",
		fmt.Sprintf(`href="/sessions/s1?line=%d#line-%d"`, es[7].ID, es[7].ID),
		"three ales", fmt.Sprintf("Confirm #%d", debt), fmt.Sprintf("Reject #%d", debt),
		fmt.Sprintf(`href="/sessions/s1?line=%d#line-%d"`, es[1].ID, es[1].ID),
		"now with Lyra", "2026-03-01 19:20",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the DM's ledger lacks %q", want)
		}
	}
	if strings.Contains(page, fmt.Sprintf("Confirm #%d", promise)) {
		t.Error("the DM is offered to confirm an entry already canon")
	}

	pl, _, _ := f.signInDiscord(t, player)
	_, page = pl.get("/ledger")
	if !strings.Contains(page, "two hundred gold for the steel") || !strings.Contains(page, `href="/ledger"`) {
		t.Errorf("a player's ledger lacks the confirmed promise or the nav link: %.2000s", page)
	}
	if strings.Contains(page, "three ales") || strings.Contains(page, "Confirm #") || strings.Contains(page, `name="csrf" value=""`) {
		t.Fatalf("a player sees a pending entry or review buttons: %.2000s", page)
	}
	// A player cannot confirm it from a forged form either.
	if resp, _ := pl.post(fmt.Sprintf("/review/fact/%d", debt), url.Values{"csrf": {pl.csrf()}, "action": {"confirm"}, "back": {"/ledger"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a player's confirm: %d; want 403", resp.StatusCode)
	}

	// Without the CSRF token the DM's confirm is refused; with it, it
	// lands back on the Ledger and the player sees the debt.
	if resp, _ := dm.post(fmt.Sprintf("/review/fact/%d", debt), url.Values{"action": {"confirm"}, "back": {"/ledger"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a confirm without the CSRF token: %d; want 403", resp.StatusCode)
	}
	resp, page = dm.post(fmt.Sprintf("/review/fact/%d", debt), url.Values{"csrf": {dm.csrf()}, "action": {"confirm"}, "back": {"/ledger"}}, nil)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ledger" || !strings.Contains(page, fmt.Sprintf("Confirmed fact #%d", debt)) {
		t.Fatalf("the DM's confirm from the Ledger: %d at %s: %.500s", resp.StatusCode, resp.Request.URL.Path, page)
	}
	if got, _ := g.Fact(ctx, debt); got.Status != memory.StatusActive {
		t.Fatalf("the confirmed debt is %s", got.Status)
	}
	if _, page = pl.get("/ledger"); !strings.Contains(page, "three ales") {
		t.Error("a player does not see the debt the DM confirmed")
	}
}

// TestLedgerPageKeepsSecrets: a player's Ledger page shows no secret entry
// and no "now with" from a pending handover; the DM's shows both.
func TestLedgerPageKeepsSecrets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	for i, x := range []struct {
		from, to, rel, what string
		conf                float64
		secret              bool
	}{
		{"vexa", "grimjaw", ledger.RelOwes, "the cult's blood money", 0.95, true},
		{"grimjaw", "thorin", ledger.RelGave, "a lantern", 0.95, false},
		{"thorin", "lyra", ledger.RelGave, "the lantern", ledger.RulesConfidence, false},
	} {
		said := at.Add(time.Duration(i) * time.Minute)
		attrs := map[string]any{"what": x.what, "evidence": "Grimjaw: " + x.what, "said_at": said.Format(time.RFC3339)}
		if x.secret {
			attrs[memory.AttrSecret] = true
		}
		if _, err := f.camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: x.from, TargetID: x.to, Type: x.rel, Attributes: attrs,
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: said, Confidence: x.conf, Source: memory.SourceStated}}); err != nil {
			t.Fatal(err)
		}
	}
	dm := f.signInLink(t)
	if _, page := dm.get("/ledger"); !strings.Contains(page, "blood money") || !strings.Contains(page, "now with Lyra") {
		t.Fatalf("the DM's ledger lacks the secret debt or where the lantern went: %.3000s", page)
	}
	pl, _, _ := f.signInDiscord(t, player)
	_, page := pl.get("/ledger")
	if !strings.Contains(page, "a lantern") || strings.Contains(page, "blood money") || strings.Contains(page, "now with") {
		t.Fatalf("a player's ledger shows a secret or a pending handover's move: %.3000s", page)
	}
}
