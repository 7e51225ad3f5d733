package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

func asPgError(err error) *pgconn.PgError {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr
	}
	return nil
}
