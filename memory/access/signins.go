package access

import (
	"context"
	"fmt"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// SignIn is a signed-in browser of the DM console.
type SignIn = postgres.SignIn

// guard runs a door-level statement (one not bound to a campaign: the
// campaign list, console sign-ins) through the health gate, bounded by the
// statement timeout; an outage degrades the door.
func (d *Door) guard(caller context.Context, what string, fn func(context.Context) error) error {
	if err := d.Enter(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	ctx, cancel := context.WithTimeout(caller, d.cfg.StatementTimeout)
	defer cancel()
	err := fn(ctx)
	if err != nil && postgres.IsOutageFor(caller, err) {
		d.Failed(err)
		return fmt.Errorf("%s: %w: %w", what, memory.ErrUnavailable, err)
	}
	return err
}

// SaveSignIn keeps a console sign-in, so that it outlives the process,
// and forgets those expired by now.
func (d *Door) SaveSignIn(ctx context.Context, in SignIn, now time.Time) error {
	return d.guard(ctx, "saving a console sign-in", func(ctx context.Context) error { return d.store.SaveSignIn(ctx, in, now) })
}

// SignInByHash returns the unexpired console sign-in whose cookie hashes
// to idHash.
func (d *Door) SignInByHash(ctx context.Context, idHash []byte, now time.Time) (SignIn, bool, error) {
	var in SignIn
	var ok bool
	err := d.guard(ctx, "reading a console sign-in", func(ctx context.Context) error {
		var err error
		in, ok, err = d.store.SignInByHash(ctx, idHash, now)
		return err
	})
	return in, ok, err
}

// DeleteSignIn forgets a console sign-in.
func (d *Door) DeleteSignIn(ctx context.Context, idHash []byte) error {
	return d.guard(ctx, "removing a console sign-in", func(ctx context.Context) error { return d.store.DeleteSignIn(ctx, idHash) })
}
