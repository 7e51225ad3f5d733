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

func (g guarded) enter(caller context.Context) (context.Context, context.CancelFunc, error) {
	if g.gate != nil {
		if err := g.gate.Enter(); err != nil {
			return caller, func() {}, err
		}
	}
	ctx, cancel := g.bound(caller)
	return ctx, cancel, nil
}

// bound is the caller's context bounded by the gate's statement timeout.
func (g guarded) bound(caller context.Context) (context.Context, context.CancelFunc) {
	if g.gate == nil {
		return caller, func() {}
	}
	if d := g.gate.Timeout(); d > 0 {
		return context.WithTimeout(caller, d)
	}
	return caller, func() {}
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

// Begin starts a transaction: acquiring a connection and sending BEGIN are
// one statement to the gate. The transaction's statements are guarded one
// by one as the pool's are (refused at once while the gate knows the
// database down, each bounded by its timeout, outages told to it), and so
// are Commit and Rollback, without the refusal: a transaction under way
// may always end. pgx keeps no context past the call that was given it, so
// a bound on one statement ends with that statement.
func (g guarded) Begin(caller context.Context) (pgx.Tx, error) {
	ctx, cancel, err := g.enter(caller)
	if err != nil {
		return nil, err
	}
	defer cancel()
	tx, err := g.q.Begin(ctx)
	if err != nil {
		return nil, g.done(caller, err)
	}
	return guardedTx{Tx: tx, g: guarded{q: tx, gate: g.gate}}, nil
}

// guardedTx is a transaction whose statements are guarded (see
// [guarded.Begin]).
type guardedTx struct {
	pgx.Tx
	g guarded // over Tx
}

func (t guardedTx) Exec(caller context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.g.Exec(caller, sql, args...)
}

func (t guardedTx) Query(caller context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.g.Query(caller, sql, args...)
}

func (t guardedTx) QueryRow(caller context.Context, sql string, args ...any) pgx.Row {
	return t.g.QueryRow(caller, sql, args...)
}

func (t guardedTx) SendBatch(caller context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.g.SendBatch(caller, b)
}

func (t guardedTx) Begin(caller context.Context) (pgx.Tx, error) { return t.g.Begin(caller) }

func (t guardedTx) Commit(caller context.Context) error {
	ctx, cancel := t.g.bound(caller)
	defer cancel()
	return t.g.done(caller, t.Tx.Commit(ctx))
}

// Rollback ends the transaction. pgx.BeginFunc rolls back after every
// commit too, and is told pgx.ErrTxClosed then: that is not an outage.
func (t guardedTx) Rollback(caller context.Context) error {
	ctx, cancel := t.g.bound(caller)
	defer cancel()
	err := t.Tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return t.g.done(caller, err)
}

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
