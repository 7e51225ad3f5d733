package access

import (
	"context"
	"io"

	"github.com/glyphoxa/glyphoxa/memory/bundle"
)

// Export writes campaign's whole memory as a bundle (memory/bundle) to w:
// secrets, the DM's notes and the review state included, so it is for the
// DM only (callers check). It fails at once while the door is degraded.
func (d *Door) Export(ctx context.Context, campaign string, w io.Writer) error {
	if err := d.Enter(); err != nil {
		return err
	}
	_, err := bundle.Export(ctx, d.store.Pool(), campaign, w, d.cfg.Clock.Now())
	return err
}
