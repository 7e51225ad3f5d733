package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SignIn is a signed-in browser of the DM console (migration 0021). The
// console keys it by the SHA-256 of its cookie, never the cookie itself.
type SignIn struct {
	IDHash   []byte
	Campaign string
	UserID   string
	Name     string
	DM       bool
	CSRF     string
	Expires  time.Time
}

// SaveSignIn stores a sign-in and removes the ones expired by now (the
// console's clock).
func (s *Store) SaveSignIn(ctx context.Context, in SignIn, now time.Time) error {
	if len(in.IDHash) == 0 || in.Campaign == "" || in.CSRF == "" {
		return errors.New("saving a console sign-in: id hash, campaign and CSRF token are required")
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM console_signins WHERE expires_at < $1`, now)
	b.Queue(`INSERT INTO console_signins (id_hash, campaign_id, user_id, name, dm, csrf, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id_hash) DO UPDATE SET campaign_id = EXCLUDED.campaign_id, user_id = EXCLUDED.user_id,
			name = EXCLUDED.name, dm = EXCLUDED.dm, csrf = EXCLUDED.csrf, expires_at = EXCLUDED.expires_at`,
		in.IDHash, in.Campaign, in.UserID, in.Name, in.DM, in.CSRF, in.Expires)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("saving a console sign-in: %w", err)
	}
	return nil
}

// SignInByHash returns the sign-in with that cookie hash, if it is stored
// and has not expired by now.
func (s *Store) SignInByHash(ctx context.Context, idHash []byte, now time.Time) (SignIn, bool, error) {
	in := SignIn{IDHash: idHash}
	err := s.pool.QueryRow(ctx, `SELECT campaign_id, user_id, name, dm, csrf, expires_at FROM console_signins
		WHERE id_hash = $1 AND expires_at > $2`, idHash, now).Scan(&in.Campaign, &in.UserID, &in.Name, &in.DM, &in.CSRF, &in.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return SignIn{}, false, nil
	}
	if err != nil {
		return SignIn{}, false, fmt.Errorf("reading a console sign-in: %w", err)
	}
	return in, true, nil
}

// DeleteSignIn removes a sign-in (the browser signed out).
func (s *Store) DeleteSignIn(ctx context.Context, idHash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM console_signins WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("removing a console sign-in: %w", err)
	}
	return nil
}
