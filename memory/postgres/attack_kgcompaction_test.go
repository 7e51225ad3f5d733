package postgres_test

import (
	"slices"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCompactionTellsOfSecrets: compaction archives the campaign
// level's nodes, the game's entities, for every reader: a player's kg_read
// loses them too. It planned on the DM's graph: secret facts counted
// toward a node's connectedness, the DM's private notes toward its
// richness, and a note the DM wrote this week restarted its 7-day
// protection. A player comparing which entities were archived with what
// they can read of them learned which ones the DM keeps secrets about, and
// when the DM wrote about them. Two campaigns the same in everything
// players read, one of them with secret facts, DM notes and a fresh DM
// note, must have the same entities archived.
func TestAttackCompactionTellsOfSecrets(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStore(t)
	archivedAfter := func(name string, secrets bool) []string {
		c := pgtest.Campaign(t, s, name)
		seedKG(t, s, c, 2000, 100)
		// A budget that keeps about half the nodes, so the choice matters.
		check(t, c.SetKGLimit(ctx, 40000))
		if secrets {
			// Old nodes (the seed's first 100 are recent) the DM keeps
			// secrets about: secret facts linking them, long DM notes, and
			// a DM note written yesterday on some.
			_, err := s.Pool().Exec(ctx, `
				INSERT INTO relationships (campaign_id, source_id, target_id, rel_type, confidence, source, status, attributes)
				SELECT $1, 'n' || i, 'n' || (i + 1), 'SECRETLY_SERVES', 1, 'stated', 'active', '{"secret": true}'
				FROM generate_series(1000, 1998, 2) i`, c.ID())
			check(t, err)
			_, err = s.Pool().Exec(ctx, `
				UPDATE entities SET attributes = attributes || jsonb_build_object('dm_notes', repeat('the truth about it, ', 40)),
				       updated_at = CASE WHEN id IN ('n1500', 'n1700', 'n1900') THEN $2::timestamptz - interval '1 day' ELSE updated_at END
				WHERE campaign_id = $1 AND substr(id, 2)::int BETWEEN 1000 AND 2000`, c.ID(), kgNow)
			check(t, err)
		}
		rep := must[postgres.Compaction](t)(c.CompactKG(ctx, postgres.KGCampaign, kgNow))
		t.Logf("%s: %+v", name, rep)
		if rep.Archived == 0 {
			t.Fatalf("%s: nothing archived: %+v", name, rep)
		}
		rows, err := s.Pool().Query(ctx, `SELECT id FROM entities WHERE campaign_id = $1 AND kg_archived_at IS NOT NULL ORDER BY id`, c.ID())
		check(t, err)
		var ids []string
		for rows.Next() {
			var id string
			check(t, rows.Scan(&id))
			ids = append(ids, id)
		}
		check(t, rows.Err())
		return ids
	}
	plain := archivedAfter("kg-no-secrets", false)
	secret := archivedAfter("kg-secrets", true)
	if !slices.Equal(plain, secret) {
		var only, kept []string
		for _, id := range plain {
			if !slices.Contains(secret, id) {
				kept = append(kept, id)
			}
		}
		for _, id := range secret {
			if !slices.Contains(plain, id) {
				only = append(only, id)
			}
		}
		t.Errorf("LEAK: the DM's secrets changed what compaction archived (%d against %d nodes): "+
			"kept because of secrets %d (first %q), archived only with secrets %d (first %q)",
			len(secret), len(plain), len(kept), kept[:min(len(kept), 5)], len(only), only[:min(len(only), 5)])
	}
}
