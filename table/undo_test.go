package table_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/table"
)

// TestUndoReply: each NPC reply reaches OnReply with an id; UndoReply
// withdraws the latest by its id (non-canon in the session log, as Undo),
// refuses an older one and a second withdrawal.
func TestUndoReply(t *testing.T) {
	t.Parallel()
	replies := make(chan table.Reply, 4)
	r := newRigWith(t, 0, nil, func(cfg *table.Config) { cfg.OnReply = func(rp table.Reply) { replies <- rp } })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got []table.Reply
	for range 2 {
		if _, err := r.turn(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case rp := <-replies:
			got = append(got, rp)
		case <-ctx.Done():
			t.Fatal("no reply reached OnReply")
		}
	}
	first, second := got[0], got[1]
	if first.ID == "" || first.ID == second.ID || second.NPCID != "grimjaw" || second.NPCName != "Grimjaw" || second.Text != answer ||
		!second.Voiced || second.To != player {
		t.Fatalf("replies %+v", got)
	}
	if _, err := r.s.UndoReply(ctx, first.ID); !errors.Is(err, table.ErrNotLastReply) {
		t.Fatalf("undoing an older reply: %v", err)
	}
	u, err := r.s.UndoReply(ctx, second.ID)
	if err != nil || u.NPCID != "grimjaw" || u.Reply != answer || u.Marked != 1 {
		t.Fatalf("UndoReply = %+v, %v", u, err)
	}
	if _, err := r.s.UndoReply(ctx, second.ID); !errors.Is(err, table.ErrNothingToUndo) {
		t.Fatalf("undoing it again: %v", err)
	}
	es, err := r.camp.Sessions().Entries(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	var canon, nonCanon int
	for _, e := range es {
		if e.NPCID == "grimjaw" {
			if e.NonCanon {
				nonCanon++
			} else {
				canon++
			}
		}
	}
	if canon != 1 || nonCanon != 1 {
		t.Errorf("Grimjaw's replies in the session log: %d canon, %d non-canon; want 1 and 1", canon, nonCanon)
	}
}
