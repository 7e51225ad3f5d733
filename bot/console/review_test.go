package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

// TestBulkReviewAndUndo: ticking facts and pressing "Confirm selected"
// confirms them in one batch; the page then offers Undo, which puts them
// back; "Reject all from session" takes every pending fact of the session.
func TestBulkReviewAndUndo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.signInLink(t)
	g := f.camp.Graph()
	tok := b.csrf()
	pending, err := g.PendingFacts(ctx, memory.FactFilter{})
	if err != nil || len(pending) < 2 {
		t.Fatalf("pending facts in the sample: %v %v", pending, err)
	}
	status := func(id int64) memory.FactStatus {
		t.Helper()
		got, err := g.Fact(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	_, page := b.get("/review")
	for _, want := range []string{`form="bulk"`, "Confirm selected", "Confirm all waiting", fmt.Sprintf(`value="%d" form="bulk"`, pending[0].ID)} {
		if !strings.Contains(page, want) {
			t.Errorf("the review page lacks %q", want)
		}
	}

	form := url.Values{"csrf": {tok}, "action": {"confirm"}, "fact": {fmt.Sprint(pending[0].ID), fmt.Sprint(pending[1].ID)}}
	resp, body := b.post("/review/bulk", form, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Confirmed 2 facts in batch") {
		t.Fatalf("bulk confirm: %d %s", resp.StatusCode, body)
	}
	for _, p := range pending[:2] {
		if s := status(p.ID); s != memory.StatusActive {
			t.Fatalf("fact %d after the bulk confirm: %s", p.ID, s)
		}
	}
	if !strings.Contains(body, `id="undo-banner"`) {
		t.Fatalf("no undo banner after the bulk confirm: %s", body)
	}
	last, ok, err := g.LastReviewBatch(ctx)
	if err != nil || !ok {
		t.Fatalf("last batch: %v %v", ok, err)
	}
	resp, body = b.post(fmt.Sprintf("/review/undo/%d", last.ID), url.Values{"csrf": {tok}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, fmt.Sprintf("Undid batch #%d", last.ID)) {
		t.Fatalf("undo: %d %s", resp.StatusCode, body)
	}
	for _, p := range pending[:2] {
		if s := status(p.ID); s != memory.StatusPending {
			t.Fatalf("fact %d after undo: %s", p.ID, s)
		}
	}
	if strings.Contains(body, `id="undo-banner"`) {
		t.Error("the undone batch is still offered")
	}

	// Nothing ticked: nothing changes, and the page says why.
	resp, body = b.post("/review/bulk", url.Values{"csrf": {tok}, "action": {"confirm"}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Nothing was selected") {
		t.Fatalf("empty bulk: %d %s", resp.StatusCode, body)
	}
	// A bad fact number is refused naming it.
	if resp, body := b.post("/review/bulk", url.Values{"csrf": {tok}, "action": {"confirm"}, "fact": {"12x"}}, nil); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(body, "12x") {
		t.Fatalf("bad fact number: %d", resp.StatusCode)
	}

	// Reject all from one session.
	session := pending[0].Provenance.SessionID
	resp, body = b.post("/review/bulk", url.Values{"csrf": {tok}, "action": {"reject"}, "all": {"1"}, "session": {session}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Rejected") {
		t.Fatalf("reject all from %s: %d %s", session, resp.StatusCode, body)
	}
	for _, p := range pending {
		want := memory.StatusPending
		if p.Provenance.SessionID == session {
			want = memory.StatusRejected
		}
		if s := status(p.ID); s != want {
			t.Errorf("fact %d (session %s) after reject all from %s: %s, want %s", p.ID, p.Provenance.SessionID, session, s, want)
		}
	}
}

// TestPlayerCannotBulkReview: a player's session can neither bulk review
// nor undo, even with its own valid CSRF token.
func TestPlayerCannotBulkReview(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	g := f.camp.Graph()
	pending, err := g.PendingFacts(ctx, memory.FactFilter{})
	if err != nil || len(pending) == 0 {
		t.Fatalf("pending: %v %v", pending, err)
	}
	// The DM makes a batch a player might try to undo.
	dm := f.signInLink(t)
	if resp, _ := dm.post("/review/bulk", url.Values{"csrf": {dm.csrf()}, "action": {"confirm"}, "fact": {fmt.Sprint(pending[0].ID)}}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("DM bulk confirm: %d", resp.StatusCode)
	}
	last, _, err := g.LastReviewBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := f.signInDiscord(t, player)
	tok := b.csrf()
	posts := []struct {
		path string
		form url.Values
	}{
		{"/review/bulk", url.Values{"csrf": {tok}, "action": {"reject"}, "all": {"1"}}},
		{"/review/bulk", url.Values{"csrf": {tok}, "action": {"confirm"}, "fact": {fmt.Sprint(pending[len(pending)-1].ID)}}},
		{fmt.Sprintf("/review/undo/%d", last.ID), url.Values{"csrf": {tok}}},
	}
	for _, p := range posts {
		if resp, _ := b.post(p.path, p.form, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a player's POST %s: %d, want 403", p.path, resp.StatusCode)
		}
	}
	if got, _ := g.Fact(ctx, pending[0].ID); got.Status != memory.StatusActive {
		t.Errorf("a player undid the DM's batch: fact %d is %s", pending[0].ID, got.Status)
	}
	for _, p := range pending[1:] {
		if got, _ := g.Fact(ctx, p.ID); got.Status != memory.StatusPending {
			t.Errorf("a player reviewed fact %d: %s", p.ID, got.Status)
		}
	}
}

// TestAsOfBySessionAndDate: the "As of" page shows what held at a session
// or a date, says why it cannot, and never shows a player a secret fact.
func TestAsOfBySessionAndDate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dm := f.signInLink(t)
	cases := []struct {
		asOf      string
		want, not []string
	}{
		{"s1", []string{"Grimjaw as of session s1", "LOCATED_AT", "Ironhold", "FORGED"}, nil},
		{"2026-03-05", []string{"Grimjaw as of 2026-03-05", "LOCATED_AT", "Ironhold"}, nil},
		// Before the first session only what was entered outside play.
		{"2026-02-01", []string{"Grimjaw as of 2026-02-01", "FORGED"}, []string{"LOCATED_AT"}},
		{"next tuesday", []string{"neither a session", "next tuesday"}, []string{"Grimjaw as of"}},
	}
	for _, tc := range cases {
		resp, body := dm.get("/asof?entity=Grimjaw&as_of=" + url.QueryEscape(tc.asOf))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("as of %s: %d", tc.asOf, resp.StatusCode)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("as of %s: the page lacks %q", tc.asOf, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(body, w) {
				t.Errorf("as of %s: the page shows %q", tc.asOf, w)
			}
		}
	}
	b, _, _ := f.signInDiscord(t, player)
	resp, body := b.get("/asof?entity=grimjaw&as_of=s2")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "as of session s2") {
		t.Fatalf("a player's as of: %d", resp.StatusCode)
	}
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Errorf("the player's As of page shows the secret %q", s)
		}
	}
}
