package access

import (
	"context"
	"fmt"
	"io"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Export writes campaign's whole memory as a bundle (memory/bundle) to w:
// secrets, the DM's notes and the review state included, so it is for the
// DM only (callers check). It fails at once while the door is degraded; an
// export that meets an outage degrades the door and returns an error
// wrapping memory.ErrUnavailable (what it wrote to w by then is a partial
// bundle: the caller discards it).
func (d *Door) Export(ctx context.Context, campaign string, w io.Writer) error {
	if err := d.Enter(); err != nil {
		return err
	}
	_, err := bundle.Export(ctx, d.store.Pool(), campaign, w, d.cfg.Clock.Now())
	if err != nil && postgres.IsOutageFor(ctx, err) {
		d.Failed(err)
		return fmt.Errorf("exporting campaign %q: %w: %w", campaign, memory.ErrUnavailable, err)
	}
	return err
}
