package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/glyphoxa/glyphoxa/memory"
)

func TestIsOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("x: %w", memory.ErrInvalid), false},
		{fmt.Errorf("x: %w", memory.ErrNotFound), false},
		{fmt.Errorf("x: %w", memory.ErrForbidden), false},
		{fmt.Errorf("x: %w", memory.ErrRefused), false},
		{fmt.Errorf("x: %w", memory.ErrUnavailable), true},
		{pgx.ErrNoRows, false},
		{context.Canceled, false},
		{&pgconn.PgError{Code: "23505"}, false}, // unique violation
		{&pgconn.PgError{Code: "42601"}, false}, // syntax error
		{&pgconn.PgError{Code: "54001"}, false}, // statement too complex (stack depth)
		{&pgconn.PgError{Code: "57P01"}, true},  // admin shutdown
		{&pgconn.PgError{Code: "08006"}, true},  // connection failure
		{&pgconn.PgError{Code: "53300"}, true},  // too many connections
		{errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), true},
		{context.DeadlineExceeded, true},
	} {
		if got := IsOutage(tc.err); got != tc.want {
			t.Errorf("IsOutage(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestClassify: every driver error leaves the store carrying its class,
// with the driver's message and the driver's error still reachable.
func TestClassify(t *testing.T) {
	t.Parallel()
	refused := &pgconn.PgError{Code: "23505", Message: "duplicate key"}
	err := classify(refused)
	var pgErr *pgconn.PgError
	if !errors.Is(err, memory.ErrRefused) || errors.Is(err, memory.ErrUnavailable) || !errors.As(err, &pgErr) ||
		err.Error() != refused.Error() {
		t.Errorf("classify(unique violation) = %v", err)
	}
	down := errors.New("connection refused")
	if err := classify(down); !errors.Is(err, memory.ErrUnavailable) || !errors.Is(err, down) {
		t.Errorf("classify(connection refused) = %v", err)
	}
	if err := classify(pgx.ErrNoRows); err != pgx.ErrNoRows {
		t.Errorf("classify(no rows) = %v, want it unchanged", err)
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
	twice := classify(classify(down))
	var c *classified
	if !errors.As(twice, &c) || c.err != down {
		t.Errorf("classifying twice wraps twice: %#v", twice)
	}
}
