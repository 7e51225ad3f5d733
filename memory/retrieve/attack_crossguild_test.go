package retrieve

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCrossGuildRecall (cross-guild attacker): two campaigns of one
// database, both chunked and embedded. At the first campaign's table, a
// player asks about what only the second campaign holds (its names, its
// markers, its words), addresses an NPC of the second campaign by id, and
// asks as of a session of the second campaign: through the NPCs' hot
// context (memory/hotctx) and hybrid retrieval in every mode, as the DM,
// a player, the campaign's own NPC and the other campaign's NPC id. No
// result carries a row of the second campaign. (TestCampaignsAreIsolated
// covers the store's reads one by one; this covers what a table reads for
// a turn, which joins chunks to lines, facts to entities and evidence.)
func TestAttackCrossGuildRecall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 64)
	e, _ := embed.NewOffline(64)
	mine := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	f := pgtest.ForeignCampaign(t, store, "../../testdata/campaigns/hostile-keep.yaml")
	other := pgtest.Campaign(t, store, f.Campaign)
	for _, c := range []chunkCampaign{mine, other} {
		if _, err := chunk.Process(ctx, c, e, chunk.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	// The other campaign answers these questions itself (else this test
	// proves nothing).
	questions := []string{"Where does Brenna hide the ledger in the Undercroft?", "mkf-foreign-line mkf-debt Aldric ten gold",
		"Aldric innkeeper barrels broken lantern", "What lies below us in the Undercroft?"}
	theirs, err := New(other, e, Config{RefreshEvery: -1})
	check(t, err)
	res, err := theirs.Search(ctx, Query{Text: questions[0], K: 10})
	check(t, err)
	if !leaks(f.Words, fmt.Sprint(res)) {
		t.Fatalf("the other campaign's own retrieval finds none of its words: %+v", res)
	}

	leak := func(what string, v any) {
		t.Helper()
		if s := fmt.Sprintf("%+v", v); leaks(f.Words, s) {
			t.Errorf("%s answers the other campaign's rows: %.800s", what, s)
		}
	}
	for _, v := range []memory.Viewer{memory.DMViewer(), memory.PlayerViewerOf("u1"), memory.NPCViewer("grimjaw"), memory.NPCViewer("aldric")} {
		c, err := mine.As(v)
		check(t, err)
		r, err := New(c, e, Config{RefreshEvery: -1})
		check(t, err)
		for _, q := range questions {
			for _, m := range Modes() {
				for _, query := range []Query{{Text: q, Mode: m, K: 20}, {Text: q, Mode: m, K: 20, NPCID: v.NPCID},
					{Text: q, Mode: m, K: 20, AsOf: f.Session}, {Text: q, Mode: m, K: 20, NPCID: "aldric"}} {
					res, err := r.Search(ctx, query)
					if err != nil && !strings.Contains(err.Error(), "not found") {
						t.Errorf("%s %s %+v: %v", v, m, query, err)
					}
					leak(fmt.Sprintf("%s search %s %q (npc %q, as of %q)", v, m, q, query.NPCID, query.AsOf), res)
				}
			}
		}
	}
	as := hotctx.New(pgtest.Open(t, store, mine.ID(), memory.DMViewer()), hotctx.Config{})
	for _, npc := range []string{"grimjaw", "aldric", "brenna"} {
		for _, sess := range []string{"s1", f.Session} {
			for _, q := range questions {
				hc, err := as.AssembleTurn(ctx, hotctx.Request{NPCID: npc, SessionID: sess, Budget: 2000, Query: q})
				if err != nil && !strings.Contains(err.Error(), "not found") {
					t.Errorf("hot context of %s in %s: %v", npc, sess, err)
				}
				leak(fmt.Sprintf("hot context of %s in session %s for %q", npc, sess, q), hc)
			}
		}
	}
}

// chunkCampaign is what chunk.Process needs of a campaign.
type chunkCampaign = chunk.Campaign

// leaks reports whether s holds one of words, ignoring case.
func leaks(words []string, s string) bool {
	s = strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(s, strings.ToLower(w)) {
			return true
		}
	}
	return false
}
