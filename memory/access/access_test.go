package access_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func newDoor(t *testing.T, s *postgres.Store, b reconnect.Backoff) *access.Door {
	t.Helper()
	d, err := access.New(access.Config{Store: s, Probe: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func seed(t *testing.T, s *postgres.Store, id string) {
	t.Helper()
	ctx := context.Background()
	c := pgtest.Campaign(t, s, id)
	err := c.Graph().UpsertEntities(ctx, []memory.Entity{
		{ID: "vexa", Type: memory.EntityNPC, Name: "Vexa", Attributes: map[string]any{
			"occupation": "smuggler", "gm_notes": "GMNOTE-MARKER", "Secret_Motive": "MOTIVE-MARKER",
			"description": map[string]any{"secret": true, "text": "OBJECT-MARKER"},
		}},
		{ID: "docks", Type: memory.EntityLocation, Name: "The Docks"},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHandlesAreBoundToTheirViewer(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	seed(t, s, "bound")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()

	player, err := d.Open(ctx, "bound", memory.PlayerViewer())
	if err != nil {
		t.Fatal(err)
	}
	e, err := player.Graph().Entity(ctx, "vexa")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gm_notes", "Secret_Motive", "description"} {
		if _, ok := e.Attributes[k]; ok {
			t.Errorf("a player reads attribute %q: %v", k, e.Attributes)
		}
	}
	if e.Attributes["occupation"] != "smuggler" {
		t.Errorf("a player lost a public attribute: %v", e.Attributes)
	}

	// A player's handle never widens, to the DM or to an NPC.
	for _, v := range []memory.Viewer{memory.DMViewer(), memory.NPCViewer("vexa")} {
		if _, err := player.As(v); !errors.Is(err, memory.ErrForbidden) {
			t.Errorf("player.As(%s) = %v, want ErrForbidden", v, err)
		}
	}
	if _, err := player.As(memory.PlayerViewer()); err != nil {
		t.Errorf("player.As(player) = %v", err)
	}
	// The DM's handle narrows: Vexa reads her own secrets.
	dm, err := d.Open(ctx, "bound", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	vexa, err := dm.As(memory.NPCViewer("vexa"))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := vexa.Graph().Entity(ctx, "vexa"); err != nil || e.Attributes["gm_notes"] != "GMNOTE-MARKER" {
		t.Errorf("Vexa reading herself: %v, %v", e.Attributes, err)
	}
	if _, err := vexa.As(memory.NPCViewer("docks")); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("an NPC's handle re-bound to another NPC: %v, want ErrForbidden", err)
	}

	// What only the DM may do is refused to a player's handle.
	if _, err := player.Inspect(ctx); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("player Inspect: %v, want ErrForbidden", err)
	}
	if _, err := player.KGNode(ctx, access.KGDM, "x"); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("player reading the DM level: %v, want ErrForbidden", err)
	}
	if err := player.SetKGLimit(ctx, 5); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("player SetKGLimit: %v, want ErrForbidden", err)
	}
	if _, err := dm.Inspect(ctx); err != nil {
		t.Errorf("DM Inspect: %v", err)
	}
	// Nor may a player's or an NPC's handle change canon: they propose
	// through WriteFact.
	for name, write := range map[string]func() error{
		"player DeleteEntity": func() error { return player.Graph().DeleteEntity(ctx, "vexa") },
		"player UpdateEntity": func() error {
			name := "Mallory"
			_, err := player.Graph().UpdateEntity(ctx, "vexa", memory.EntityUpdate{Name: &name})
			return err
		},
		"player ConfirmFact": func() error { _, err := player.Graph().ConfirmFact(ctx, 1); return err },
		"NPC UpsertEntity":   func() error { return vexa.Graph().UpsertEntity(ctx, memory.Entity{ID: "x", Type: "item", Name: "X"}) },
		"NPC RejectFact":     func() error { _, err := vexa.Graph().RejectFact(ctx, 1); return err },
	} {
		if err := write(); !errors.Is(err, memory.ErrForbidden) {
			t.Errorf("%s = %v, want ErrForbidden", name, err)
		}
	}
	if e, err := dm.Graph().Entity(ctx, "vexa"); err != nil || e.Name != "Vexa" {
		t.Errorf("a refused write changed the entity: %v %v", e, err)
	}
}

func TestOpenRefusesUnknownCampaignsToReaders(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	seed(t, s, "known")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()
	for _, v := range []memory.Viewer{memory.PlayerViewer(), memory.NPCViewer("vexa")} {
		_, err := d.Open(ctx, "typo", v)
		if !errors.Is(err, memory.ErrNotFound) {
			t.Fatalf("Open(typo, %s) = %v, want ErrNotFound", v, err)
		}
		// A reader is not told which campaigns there are.
		if strings.Contains(err.Error(), "known") {
			t.Errorf("the error names another campaign: %v", err)
		}
	}
	ids, err := d.Campaigns(ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("a reader's Open created a campaign: %v %v", ids, err)
	}
	if _, err := d.Open(ctx, "new-one", memory.DMViewer()); err != nil {
		t.Errorf("the DM opening a new campaign: %v", err)
	}
	if _, err := d.Open(ctx, "bad id!", memory.DMViewer()); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("Open(bad id) = %v, want ErrInvalid", err)
	}
	if _, err := d.Open(ctx, "known", memory.Viewer{}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("Open without a viewer = %v, want ErrInvalid", err)
	}
}

// TestOutageDegradesTheDoor stops PostgreSQL under open handles: the first
// statement that meets the outage degrades the door, later ones fail at
// once without reaching for the dead server, and the door opens again when
// the database answers (by Ping, then by the probe).
func TestOutageDegradesTheDoor(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx := context.Background()
	s, err := postgres.NewStore(ctx, cl.DSN(), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	seed(t, s, "outage")
	d := newDoor(t, s, reconnect.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond})
	player, err := d.Open(ctx, "outage", memory.PlayerViewer())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := player.Graph().Entity(ctx, "vexa"); err != nil {
		t.Fatal(err)
	}

	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	_, err = player.Graph().Entity(ctx, "vexa")
	if !errors.Is(err, memory.ErrUnavailable) || errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("a read in an outage: %v, want ErrUnavailable", err)
	}
	if h := d.Health(); !h.Degraded || h.Outages != 1 {
		t.Fatalf("health after an outage: %+v", h)
	}
	// Degraded: answered by the door itself.
	var u *access.UnavailableError
	if _, err := player.Sessions().Sessions(ctx); !errors.As(err, &u) {
		t.Fatalf("a read while degraded: %v, want the door's UnavailableError", err)
	}
	if _, err := player.Graph().FindEntities(ctx, memory.EntityFilter{}); !errors.As(err, &u) {
		t.Fatalf("a listing while degraded: %v, want the door's UnavailableError", err)
	}
	if _, err := d.Open(ctx, "outage", memory.PlayerViewer()); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("Open while degraded: %v, want ErrUnavailable", err)
	}
	if err := d.Ping(ctx); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("Ping with the database down: %v", err)
	}
	// A door that has not met the outage yet meets it while opening.
	fresh := newDoor(t, s, reconnect.Backoff{})
	if _, err := fresh.Open(ctx, "outage", memory.PlayerViewer()); !errors.Is(err, memory.ErrUnavailable) || !fresh.Health().Degraded {
		t.Fatalf("Open in an outage: %v (degraded %v), want ErrUnavailable", err, fresh.Health().Degraded)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("Ping with the database back: %v", err)
	}
	if e, err := player.Graph().Entity(ctx, "vexa"); err != nil || e.Name != "Vexa" {
		t.Fatalf("a read after recovery: %v %v", e, err)
	}

	// The probe opens the door by itself.
	d.Start(ctx)
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	if _, err := player.Graph().Entity(ctx, "vexa"); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("second outage: %v", err)
	}
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	hang := time.After(2 * time.Minute) // a hang guard, not a budget
	for d.Health().Degraded {
		select {
		case <-hang:
			t.Fatal("the probe never saw the database back")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if h := d.Health(); h.Outages != 2 {
		t.Errorf("outages = %d, want 2", h.Outages)
	}
	if _, err := player.Graph().Entity(ctx, "vexa"); err != nil {
		t.Fatalf("a read after the probe's recovery: %v", err)
	}
}

// TestRefusalsDoNotDegrade: a statement the database refuses is not an
// outage.
func TestRefusalsDoNotDegrade(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	seed(t, s, "refusal")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()
	dm, err := d.Open(ctx, "refusal", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dm.Graph().Entity(ctx, "nobody"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("a missing entity: %v", err)
	}
	// A relationship to an entity that does not exist violates a foreign key.
	_, err = dm.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "vexa", TargetID: "nowhere", Type: "LOCATED_AT", Provenance: memory.Provenance{Confidence: 1}})
	if err == nil {
		t.Fatal("a fact to a missing entity was stored")
	}
	if errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("a refusal classified as an outage: %v", err)
	}
	if d.Health().Degraded {
		t.Fatal("a refusal degraded the door")
	}
}

// TestOpenRechecksADegradedDoor: with no probe running, opening a handle
// checks the database itself, at most once per RecheckEvery, so what
// starts after the database is back works at once.
func TestOpenRechecksADegradedDoor(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx := context.Background()
	s, err := postgres.NewStore(ctx, cl.DSN(), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	seed(t, s, "recheck")
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC))
	d, err := access.New(access.Config{Store: s, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	player, err := d.Open(ctx, "recheck", memory.PlayerViewer())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	if _, err := player.Graph().Entity(ctx, "vexa"); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("a read in an outage: %v", err)
	}
	if _, err := d.Open(ctx, "recheck", memory.PlayerViewer()); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("Open with the database down: %v", err)
	}
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	// Checked a moment ago: the door answers by itself until RecheckEvery.
	var u *access.UnavailableError
	if _, err := d.Open(ctx, "recheck", memory.PlayerViewer()); !errors.As(err, &u) {
		t.Fatalf("Open within RecheckEvery of the last check: %v, want the door's UnavailableError", err)
	}
	clk.Advance(access.RecheckEvery)
	c, err := d.Open(ctx, "recheck", memory.PlayerViewer())
	if err != nil || d.Health().Degraded {
		t.Fatalf("Open after the database came back: %v (degraded %v)", err, d.Health().Degraded)
	}
	if _, err := c.Graph().Entity(ctx, "vexa"); err != nil {
		t.Fatalf("a read through the reopened door: %v", err)
	}
	if _, err := player.Graph().Entity(ctx, "vexa"); err != nil {
		t.Fatalf("a read through the handle opened before the outage: %v", err)
	}
}

// BenchmarkEntity reads one entity as a player, straight from the store
// (bound, not guarded) and through the door (bound and guarded): the
// door's cost per statement is the difference. The context can be
// cancelled, as every reader's is (a request's, a session's): pgx watches
// such a context whichever way the statement comes.
func BenchmarkEntity(b *testing.B) {
	s, _ := pgtest.NewStore(b, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := pgtest.Campaign(b, s, "bench")
	if err := c.Graph().UpsertEntity(ctx, memory.Entity{ID: "vexa", Type: memory.EntityNPC, Name: "Vexa",
		Attributes: map[string]any{"occupation": "smuggler", "gm_notes": "x"}}); err != nil {
		b.Fatal(err)
	}
	raw, err := c.As(memory.PlayerViewer())
	if err != nil {
		b.Fatal(err)
	}
	door, err := access.New(access.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	defer door.Close()
	through, err := door.Open(ctx, "bench", memory.PlayerViewer())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		read func() error
	}{
		{"store", func() error { _, err := raw.Graph().Entity(ctx, "vexa"); return err }},
		{"door", func() error { _, err := through.Graph().Entity(ctx, "vexa"); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
