package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestLedgerHandedOn: glyphoxa ledger shows, on a handover of an item
// passed on since, who holds it now (text and JSON); the last handover
// names nobody else, and a player reads only canon.
func TestLedgerHandedOn(t *testing.T) {
	t.Parallel()
	dsn := sampleUnprocessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	for i, h := range []struct{ from, to, what string }{
		{"grimjaw", "thorin", "a lantern"}, {"thorin", "lyra", "the lantern"}, {"lyra", "kael", "my lantern"},
	} {
		said := at.Add(time.Duration(i) * time.Minute)
		if _, err := camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: h.from, TargetID: h.to, Type: ledger.RelGave,
			Attributes: map[string]any{"what": h.what, "evidence": "take " + h.what, "said_at": said.Format(time.RFC3339)},
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: said, Confidence: ledger.RulesConfidence, Source: memory.SourceStated}}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, vars, "ledger", "--campaign", "ironhold-saga")
	if code != 0 || strings.Count(out, "(now with Kael)") != 2 || !strings.Contains(out, "a lantern (now with Kael)") {
		t.Fatalf("glyphoxa ledger: %d\n%s%s\nwant the first two handovers now with Kael", code, out, errs)
	}
	code, out, errs = runCLI(t, vars, "ledger", "--campaign", "ironhold-saga", "--json")
	var items []ledger.Item
	if code != 0 || json.Unmarshal([]byte(out), &items) != nil || len(items) != 3 {
		t.Fatalf("glyphoxa ledger --json: %d\n%s%s", code, out, errs)
	}
	for i, want := range []string{"Kael", "Kael", ""} {
		if items[i].NowWith != want {
			t.Errorf("handover %d (%s→%s): now with %q; want %q", i, items[i].From, items[i].To, items[i].NowWith, want)
		}
	}
	if code, out, _ := runCLI(t, vars, "ledger", "--campaign", "ironhold-saga", "--as", "player"); code != 0 || strings.Contains(out, "lantern") {
		t.Errorf("a player's ledger shows unreviewed handovers: %d\n%s", code, out)
	}
}

// TestLedgerAsPlayerKeepsSecrets: `glyphoxa ledger --as player` (text and
// JSON) lists neither a secret entry nor one waiting for review, nor where
// a pending handover would have moved an item; --as dm lists them all, and
// another --as is refused naming the flag.
func TestLedgerAsPlayerKeepsSecrets(t *testing.T) {
	t.Parallel()
	dsn := sampleUnprocessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	for i, x := range []struct {
		from, to, rel, what string
		conf                float64
		secret              bool
	}{
		{"vexa", "grimjaw", ledger.RelOwes, "the cult's blood money", 0.95, true},
		{"grimjaw", "thorin", ledger.RelGave, "a lantern", 0.95, false},
		{"thorin", "lyra", ledger.RelGave, "the lantern", ledger.RulesConfidence, false},
		{"lyra", "kael", ledger.RelPromised, "to keep the map safe", ledger.RulesConfidence, false},
	} {
		said := at.Add(time.Duration(i) * time.Minute)
		attrs := map[string]any{"what": x.what, "evidence": "Grimjaw: " + x.what, "said_at": said.Format(time.RFC3339)}
		if x.secret {
			attrs[memory.AttrSecret] = true
		}
		if _, err := camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: x.from, TargetID: x.to, Type: x.rel, Attributes: attrs,
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: said, Confidence: x.conf, Source: memory.SourceStated}}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, vars, "ledger", "--campaign", "ironhold-saga")
	if code != 0 || !strings.Contains(out, "blood money") || !strings.Contains(out, "a lantern (now with Lyra)") || !strings.Contains(out, "waiting for review") {
		t.Fatalf("glyphoxa ledger as the DM: %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{{"--as", "player"}, {"--as", "player", "--json"}} {
		code, out, errs := runCLI(t, vars, append([]string{"ledger", "--campaign", "ironhold-saga"}, args...)...)
		if code != 0 || !strings.Contains(out, "a lantern") {
			t.Fatalf("glyphoxa ledger %v: %d\n%s%s", args, code, out, errs)
		}
		for _, leak := range []string{"blood money", "Lyra", "map safe", "waiting", "pending"} {
			if strings.Contains(out, leak) {
				t.Errorf("glyphoxa ledger %v shows %q:\n%s", args, leak, out)
			}
		}
	}
	if code, _, errs := runCLI(t, vars, "ledger", "--campaign", "ironhold-saga", "--as", "npc"); code == 0 || !strings.Contains(errs, "--as") {
		t.Errorf("glyphoxa ledger --as npc: %d %s; want refused naming --as", code, errs)
	}
}

// TestLedgerEmptySaysHowToFill: an empty ledger points at what fills it.
// Plain `glyphoxa process` only chunks and embeds, so the hint must name
// --extract (imported sessions) rather than send the DM round in a loop.
func TestLedgerEmptySaysHowToFill(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": sampleUnprocessed.Copy(t)}
	code, out, errs := runCLI(t, vars, "ledger", "--campaign", "ironhold-saga")
	if code != 0 {
		t.Fatalf("glyphoxa ledger: %d\n%s%s", code, out, errs)
	}
	for _, w := range []string{"no promises, debts or handovers", "/session end", "glyphoxa process --campaign ironhold-saga --extract"} {
		if !strings.Contains(out, w) {
			t.Errorf("empty ledger's hint lacks %q:\n%s", w, out)
		}
	}
}
