package bundle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// editRow rewrites the row of the first record of kind in a bundle with
// edit.
func editRow(t *testing.T, b []byte, kind string, edit func(row map[string]any)) []byte {
	t.Helper()
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if !bytes.HasPrefix(l, []byte(`{"kind":"`+kind+`"`)) {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatal(err)
		}
		edit(rec["row"].(map[string]any))
		out, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = out
		return bytes.Join(lines, []byte("\n"))
	}
	t.Fatalf("no %s record", kind)
	return nil
}

// A hand-edited bundle whose secret fact says "secret": "yes" (or an
// entity's attribute object "secret": "true") is restored as it is: the
// store refuses such a marker from every other writer
// (memory.CheckSecretMarkers), since only the boolean true hides a fact,
// and every player of the copy reads what the DM meant to hide.
func TestAttackBundleSecretMarkerNotABoolean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, dims)
	pgtest.Import(t, s, sample)
	good := export(t, s, campaign)
	for _, tc := range []struct {
		name, kind, target string
		edit               func(map[string]any)
	}{
		{"fact", "relationships", "marker-fact", func(row map[string]any) {
			attrs, _ := row["attributes"].(map[string]any)
			if attrs == nil {
				attrs = map[string]any{}
			}
			attrs["secret"] = "yes"
			row["attributes"] = attrs
		}},
		{"entity attribute", "entities", "marker-entity", func(row map[string]any) {
			attrs, _ := row["attributes"].(map[string]any)
			if attrs == nil {
				attrs = map[string]any{}
			}
			attrs["lineage"] = map[string]any{"secret": "true", "text": "the heir of the dragon"}
			row["attributes"] = attrs
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := editRow(t, good, tc.kind, tc.edit)
			_, err := bundle.Import(ctx, s.Pool(), tc.target, bytes.NewReader(b))
			if errors.Is(err, bundle.ErrBadBundle) && strings.Contains(err.Error(), "secret") {
				return
			}
			// What a player of the restored campaign reads.
			var leaked bool
			if err == nil {
				c, aerr := pgtest.Campaign(t, s, tc.target).As(memory.PlayerViewer())
				if aerr != nil {
					t.Fatal(aerr)
				}
				// The marked fact (the bundle's first: the sample's secret
				// grimjaw -FORGED-> vault-key) is among those a player reads.
				for _, f := range playerFacts(t, c) {
					leaked = leaked || tc.kind == "relationships" && f.Type == "FORGED"
				}
				ents, eerr := c.Graph().FindEntities(ctx, memory.EntityFilter{})
				if eerr != nil {
					t.Fatal(eerr)
				}
				for _, e := range ents {
					leaked = leaked || e.Attributes["lineage"] != nil
				}
			}
			t.Fatalf("import: %v, want an error naming the secret marker (a player of the copy reads what it marks: %v)", err, leaked)
		})
	}
}

// A bundle's campaign settings carry the calendar as JSON, written without
// the check SetCalendar applies: a calendar that is not an object, or a
// month of 0 days, is restored, and every later read of the campaign's
// calendar (ask --as-of, /recap, /session date) fails or refuses every
// date.
func TestAttackBundleCalendarUnchecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, dims)
	pgtest.Import(t, s, sample)
	good := export(t, s, campaign)
	for _, tc := range []struct {
		target string
		cal    any
	}{
		{"cal-string", "Harptos"},
		{"cal-zero-days", map[string]any{"months": []any{map[string]any{"name": "Frostfall", "days": 0}}}},
		{"cal-nameless", map[string]any{"months": []any{map[string]any{"name": "", "days": 30}}}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			b := editRow(t, good, "campaigns", func(row map[string]any) { row["calendar"] = tc.cal })
			_, err := bundle.Import(ctx, s.Pool(), tc.target, bytes.NewReader(b))
			if errors.Is(err, bundle.ErrBadBundle) && strings.Contains(err.Error(), "calendar") {
				return
			}
			var after error
			if err == nil {
				_, _, after = pgtest.Campaign(t, s, tc.target).Sessions().Calendar(ctx)
				if after == nil {
					after = pgtest.Campaign(t, s, tc.target).Sessions().SetGameDate(ctx, "s1", "1 Frostfall 1452")
				}
			}
			t.Fatalf("import: %v, want an error naming the calendar (after the import, the calendar reads: %v)", err, after)
		})
	}
}

func playerFacts(t *testing.T, c *postgres.Campaign) []postgres.FactWithNames {
	t.Helper()
	facts, err := c.Graph().FindFacts(context.Background(), postgres.FactQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return facts
}
