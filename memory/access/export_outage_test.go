package access_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestExportInAnOutage: the database stops before anything else noticed;
// the door's export then fails naming the outage (memory.ErrUnavailable,
// which the console answers with a plain 503), writes nothing and degrades
// the door, and exports again once the database is back.
func TestExportInAnOutage(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx := context.Background()
	s, err := postgres.NewStore(ctx, cl.DSN(), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	seed(t, s, "exported")
	d := newDoor(t, s, reconnect.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond})
	var before bytes.Buffer
	if err := d.Export(ctx, "exported", &before); err != nil || before.Len() == 0 {
		t.Fatalf("export before the outage: %d bytes, %v", before.Len(), err)
	}

	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	var during bytes.Buffer
	err = d.Export(ctx, "exported", &during)
	if !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("export in an outage: %v; want an error naming the outage (memory.ErrUnavailable)", err)
	}
	if during.Len() != 0 {
		t.Errorf("export in an outage wrote %d bytes", during.Len())
	}
	if !d.Health().Degraded {
		t.Error("an export that met the outage did not degrade the door")
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("Ping with the database back: %v", err)
	}
	var after bytes.Buffer
	if err := d.Export(ctx, "exported", &after); err != nil || after.Len() == 0 {
		t.Fatalf("export after the outage: %d bytes, %v", after.Len(), err)
	}
}
