package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestExportDownload: the DM downloads the campaign's bundle, which
// restores into a fresh database with every entity and fact; a player is
// refused and sees nothing of it.
func TestExportDownload(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dm := f.signInLink(t)
	resp, body := dm.get("/review")
	if !strings.Contains(body, `href="/export"`) {
		t.Fatalf("the DM's pages offer no download:\n%.500s", body)
	}
	resp, body = dm.get("/export")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/gzip" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename="ironhold-saga-2026-03-09.glyphoxa.jsonl.gz"`) {
		t.Fatalf("GET /export as the DM: %d %v", resp.StatusCode, resp.Header)
	}
	ctx := context.Background()
	fresh, _ := pgtest.NewStore(t, 8)
	res, err := bundle.Import(ctx, fresh.Pool(), campaign, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.Campaign != campaign || res.Counts["transcript_entries"] != 26 {
		t.Fatalf("the downloaded bundle: %+v", res)
	}
	want := len(mustT[[]memory.Entity](t)(f.camp.Graph().FindEntities(ctx, memory.EntityFilter{})))
	got := len(mustT[[]memory.Entity](t)(pgtest.Campaign(t, fresh, campaign).Graph().FindEntities(ctx, memory.EntityFilter{})))
	if want == 0 || got != want {
		t.Fatalf("restored %d entities of %d", got, want)
	}
	secret := mustT[int64](t)(pgtest.Campaign(t, fresh, campaign).CanonFactID(ctx, "grimjaw", "vault-key", "FORGED"))
	if secret == 0 {
		t.Fatal("the DM's backup lacks the secret fact")
	}

	p, _, _ := f.signInDiscord(t, player)
	resp, body = p.get("/export")
	if resp.StatusCode != 403 || bundle.IsBundle([]byte(body)) {
		t.Fatalf("GET /export as a player: %d %.200q", resp.StatusCode, body)
	}
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Fatalf("the refusal shows a player %q", s)
		}
	}
	if _, body := p.get("/graph"); strings.Contains(body, `href="/export"`) {
		t.Fatal("a player's pages offer the download")
	}
}

func mustT[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
