package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/memory"
)

// A player's page reads through a player's handle: no DM-only attribute
// in any spelling, no object marked secret, while the DM sees them all.
func TestPlayerEntityHasNoDMOnlyAttribute(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	markers := map[string]any{"gm_notes": "GMNOTE-MARKER", "DM_Plan": "DMPLAN-MARKER", "hidden_door": "HIDDEN-MARKER",
		"notes_gm": "NOTESGM-MARKER", "rumour": map[string]any{"secret": true, "text": "OBJECT-MARKER"}}
	if _, err := f.camp.Graph().UpdateEntity(context.Background(), "grimjaw", memory.EntityUpdate{SetAttributes: markers}); err != nil {
		t.Fatal(err)
	}
	pb, _, _ := f.signInDiscord(t, player)
	resp, body := pb.get("/api/entity/grimjaw")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("player /api/entity/grimjaw: %d %s", resp.StatusCode, body)
	}
	for _, m := range []string{"GMNOTE-MARKER", "DMPLAN-MARKER", "HIDDEN-MARKER", "NOTESGM-MARKER", "OBJECT-MARKER"} {
		if strings.Contains(body, m) {
			t.Errorf("a player reads %s: %s", m, body)
		}
	}
	if !strings.Contains(body, "blacksmith") {
		t.Errorf("a player lost a public attribute: %s", body)
	}
	_, body = f.signInLink(t).get("/api/entity/grimjaw")
	for _, m := range []string{"GMNOTE-MARKER", "DMPLAN-MARKER", "HIDDEN-MARKER", "NOTESGM-MARKER", "OBJECT-MARKER"} {
		if !strings.Contains(body, m) {
			t.Errorf("the DM does not read %s: %s", m, body)
		}
	}
}

// With the database down, pages answer 503 with a plain sentence (never
// the driver's words), the Live page shows memory as degraded, and pages
// work again once the database is back.
func TestOutageIs503InPlainWords(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	f := newFixtureOn(t, clusterStore(t, cl))
	pb, _, _ := f.signInDiscord(t, player)
	dm := f.signInLink(t)
	if resp, body := pb.get("/api/entity/grimjaw"); resp.StatusCode != http.StatusOK {
		t.Fatalf("before the outage: %d %s", resp.StatusCode, body)
	}
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who  *browser
		path string
	}{{pb, "/api/entity/grimjaw"}, {pb, "/graph"}, {dm, "/review"}, {pb, "/sessions/s1"}} {
		resp, body := c.who.get(c.path)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "memory is unavailable right now") {
			t.Errorf("%s in an outage: %d %.300s", c.path, resp.StatusCode, body)
		}
		for _, raw := range []string{"connect", "dial", "127.0.0.1", "SQLSTATE", "EOF"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s in an outage shows the driver's words (%q): %.300s", c.path, raw, body)
			}
		}
	}
	_, body := dm.get("/api/live")
	var live struct {
		Status struct {
			MemoryDegraded bool `json:"memory_degraded"`
		}
	}
	if err := json.Unmarshal([]byte(body), &live); err != nil || !live.Status.MemoryDegraded {
		t.Errorf("/api/live in an outage: %s (%v)", body, err)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	hang := time.After(2 * time.Minute) // a hang guard, not a budget
	for f.door.Health().Degraded {
		select {
		case <-hang:
			t.Fatal("the door never saw the database back")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if resp, body := pb.get("/api/entity/grimjaw"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the outage: %d %s", resp.StatusCode, body)
	}
}
