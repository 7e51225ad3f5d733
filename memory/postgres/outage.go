package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/glyphoxa/glyphoxa/memory"
)

// IsOutage reports whether err means the database cannot be reached, rather
// than that it refused the request: connection failures, timeouts, a server
// shutting down (SQLSTATE class 57) or out of resources (class 53), a broken
// connection (class 08) count; refusals of the request itself (constraint
// violations, invalid input, not found, a query the caller cancelled) do
// not. Errors a campaign's layers return already carry the answer as
// [memory.ErrUnavailable] or [memory.ErrRefused]; IsOutage also classifies
// raw driver errors. A timeout counts: IsOutage cannot tell whose deadline
// passed, which [IsOutageFor] can.
func IsOutage(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, memory.ErrRefused),
		errors.Is(err, memory.ErrInvalid),
		errors.Is(err, memory.ErrNotFound),
		errors.Is(err, memory.ErrForbidden),
		errors.Is(err, pgx.ErrNoRows),
		errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, memory.ErrUnavailable):
		return true
	}
	if pgErr := asPgError(err); pgErr != nil {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "57"), // operator intervention: shutdown
			strings.HasPrefix(pgErr.Code, "53"): // insufficient resources
			return true
		}
		return false
	}
	// Not the server's answer: the connection failed, was lost or timed out.
	return true
}

// IsOutageFor is IsOutage as the layer that was called with ctx sees err:
// when ctx has ended (its caller's own deadline passed, or it cancelled),
// the work ended for the caller's reason, not the database's. A deadline
// of a caller's (an NPC's tool budget, a turn's timeout) must not take
// memory offline for everyone; a hung database is found by the timeouts
// the door and the memory guard set on their own work while their callers
// still wait, and by their health probes.
func IsOutageFor(ctx context.Context, err error) bool {
	return ctx.Err() == nil && IsOutage(err)
}

// callerEnded is the error of a statement whose caller's context ended
// while it ran: the driver's error and the context's (context.Canceled or
// context.DeadlineExceeded). It carries no class: not memory.ErrUnavailable,
// since the database was not found down, and not memory.ErrRefused. A
// layer above that set the deadline itself (the memory guard's write
// timeout) still sees a timeout in it (IsOutage).
type callerEnded struct{ err, cause error }

func (e *callerEnded) Error() string   { return e.err.Error() }
func (e *callerEnded) Unwrap() []error { return []error{e.err, e.cause} }

// endedBy marks err as its caller's when the caller's context ended and
// the database did not answer, or answered that the statement was
// cancelled (SQLSTATE 57014, what a cancel request sent on the caller's
// behalf yields).
func endedBy(caller context.Context, err error) error {
	if err == nil || caller.Err() == nil || !IsOutage(err) {
		return err
	}
	if pgErr := asPgError(err); pgErr != nil && pgErr.Code != "57014" {
		return err
	}
	return &callerEnded{err: err, cause: context.Cause(caller)}
}

// classified is a driver error with its class (memory.ErrUnavailable or
// memory.ErrRefused) attached. Its message is the driver's own.
type classified struct {
	class error
	err   error
}

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.err, e.class} }

// classify attaches memory.ErrUnavailable or memory.ErrRefused to a driver
// error; nil, pgx.ErrNoRows and already classified errors pass unchanged.
func classify(err error) error {
	switch {
	case err == nil, errors.Is(err, pgx.ErrNoRows),
		errors.Is(err, memory.ErrUnavailable), errors.Is(err, memory.ErrRefused),
		errors.As(err, new(*callerEnded)):
		return err
	case IsOutage(err):
		return &classified{class: memory.ErrUnavailable, err: err}
	}
	return &classified{class: memory.ErrRefused, err: err}
}

// Gate guards a campaign's every statement (see [Campaign.Through]): Enter
// refuses at once while the database is known to be unreachable, and Failed
// is told of every outage a statement met, so the gate can stop sending
// statements until its probe sees the database back. A gate must be safe
// for concurrent use.
type Gate interface {
	// Enter returns nil when a statement may be sent, or an error wrapping
	// memory.ErrUnavailable.
	Enter() error
	// Failed is told of a statement's outage error.
	Failed(err error)
	// Timeout bounds one statement (0: no bound beyond the caller's
	// context).
	Timeout() time.Duration
}

// guarded is a querier whose statements are classified and, with a gate,
// guarded. It wraps the pool or a transaction.
type guarded struct {
	q    querier
	gate Gate // nil: classify only
}

func (g guarded) enter(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if g.gate == nil {
		return ctx, func() {}, nil
	}
	if err := g.gate.Enter(); err != nil {
		return ctx, func() {}, err
	}
	if d := g.gate.Timeout(); d > 0 {
		ctx, cancel := context.WithTimeout(ctx, d)
		return ctx, cancel, nil
	}
	return ctx, func() {}, nil
}

// done classifies the error of a statement its caller ran with ctx (the
// caller's context, before the gate's timeout) and tells the gate of an
// outage: not of a statement whose caller gave up (see IsOutageFor), whose
// error is left unclassified (callerEnded).
func (g guarded) done(caller context.Context, err error) error {
	err = classify(endedBy(caller, err))
	if g.gate != nil && errors.Is(err, memory.ErrUnavailable) {
		g.gate.Failed(err)
	}
	return err
}

func (g guarded) Exec(caller context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel, err := g.enter(caller)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer cancel()
	tag, err := g.q.Exec(ctx, sql, args...)
	return tag, g.done(caller, err)
}

func (g guarded) Query(caller context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel, err := g.enter(caller)
	if err != nil {
		return nil, err
	}
	rows, err := g.q.Query(ctx, sql, args...)
	if err != nil {
		cancel()
		return nil, g.done(caller, err)
	}
	return &guardedRows{Rows: rows, g: g, caller: caller, cancel: cancel}, nil
}

func (g guarded) QueryRow(caller context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel, err := g.enter(caller)
	if err != nil {
		return errRow{err}
	}
	return &guardedRow{row: g.q.QueryRow(ctx, sql, args...), g: g, caller: caller, cancel: cancel}
}

func (g guarded) SendBatch(caller context.Context, b *pgx.Batch) pgx.BatchResults {
	ctx, cancel, err := g.enter(caller)
	if err != nil {
		return errBatch{err}
	}
	return &guardedBatch{BatchResults: g.q.SendBatch(ctx, b), g: g, caller: caller, cancel: cancel}
}

func (g guarded) Begin(ctx context.Context) (pgx.Tx, error) {
	// A transaction's statements are bounded by the caller's context alone:
	// a timeout here would end the transaction after its Begin returned.
	if g.gate != nil {
		if err := g.gate.Enter(); err != nil {
			return nil, err
		}
	}
	tx, err := g.q.Begin(ctx)
	if err != nil {
		return nil, g.done(ctx, err)
	}
	return guardedTx{Tx: tx, g: guarded{q: tx, gate: g.gate}}, nil
}

// guardedTx classifies the errors of a transaction's statements.
type guardedTx struct {
	pgx.Tx
	g guarded
}

func (t guardedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.Tx.Exec(ctx, sql, args...)
	return tag, t.g.done(ctx, err)
}

func (t guardedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, t.g.done(ctx, err)
	}
	return &guardedRows{Rows: rows, g: t.g, caller: ctx, cancel: func() {}}, nil
}

func (t guardedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return &guardedRow{row: t.Tx.QueryRow(ctx, sql, args...), g: t.g, caller: ctx, cancel: func() {}}
}

func (t guardedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return &guardedBatch{BatchResults: t.Tx.SendBatch(ctx, b), g: t.g, caller: ctx, cancel: func() {}}
}

func (t guardedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := t.Tx.Begin(ctx)
	if err != nil {
		return nil, t.g.done(ctx, err)
	}
	return guardedTx{Tx: tx, g: guarded{q: tx, gate: t.g.gate}}, nil
}

func (t guardedTx) Commit(ctx context.Context) error { return t.g.done(ctx, t.Tx.Commit(ctx)) }

// guardedRows classifies the error that ends a result set and releases the
// statement's timeout when the rows are closed.
type guardedRows struct {
	pgx.Rows
	g      guarded
	caller context.Context
	cancel context.CancelFunc
	closed bool
}

func (r *guardedRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.cancel()
	}
}

func (r *guardedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *guardedRows) Err() error { return r.g.done(r.caller, r.Rows.Err()) }

type guardedRow struct {
	row    pgx.Row
	g      guarded
	caller context.Context
	cancel context.CancelFunc
}

func (r *guardedRow) Scan(dest ...any) error {
	defer r.cancel()
	return r.g.done(r.caller, r.row.Scan(dest...))
}

type guardedBatch struct {
	pgx.BatchResults
	g      guarded
	caller context.Context
	cancel context.CancelFunc
}

func (b *guardedBatch) Exec() (pgconn.CommandTag, error) {
	tag, err := b.BatchResults.Exec()
	return tag, b.g.done(b.caller, err)
}

func (b *guardedBatch) Query() (pgx.Rows, error) {
	rows, err := b.BatchResults.Query()
	if err != nil {
		return nil, b.g.done(b.caller, err)
	}
	return &guardedRows{Rows: rows, g: b.g, caller: b.caller, cancel: func() {}}, nil
}

func (b *guardedBatch) QueryRow() pgx.Row {
	return &guardedRow{row: b.BatchResults.QueryRow(), g: b.g, caller: b.caller, cancel: func() {}}
}

func (b *guardedBatch) Close() error {
	defer b.cancel()
	return b.g.done(b.caller, b.BatchResults.Close())
}

// errRow and errBatch answer a statement the gate refused.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
