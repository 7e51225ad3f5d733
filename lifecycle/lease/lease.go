// Package lease claims work in PostgreSQL for one glyphoxa process among
// several sharing a database: a guild's voice session, a Discord shard, a
// campaign's background work.
//
// # Model
//
// A claim is a row of the leases table (migration 0014) named after the
// work ("guild/123", "shard/0of3", "background/campaign"). Its holder
// (Lease.Owner, one id per process) keeps it by renewing it before
// expires_at; a claim whose holder stopped renewing expires and the next
// [Leases.Acquire] takes it. Each change of holder increments the claim's
// fencing token: [Leases.Renew], [Leases.SetState] and [Leases.Check]
// succeed only with the current token, so a process that lost a claim (it
// paused longer than the lease time, or the database told it so) learns it
// at its next write and stops ([ErrLost]). A claim's State is what its next
// holder needs to resume the work (a running session's channels and id).
//
// Times come from the injected clock and are written as values, not from
// the database's now(): processes compare them with their own clocks, so
// their clocks must agree to well within the lease time (NTP does).
//
// There is no home-made consensus: every decision is one conditional
// statement on the row, which PostgreSQL serialises.
//
// # Fencing, and its window
//
// Only the claim's own statements (Renew, SetState, Check, Release) carry
// the fencing token. A guild's voice session writes its lines through the
// memory guard (lifecycle/guard), which does not: those writes are fenced
// by the process, not by the database, and the rule lives in one place,
// [Keeper.Held]: a claim is this process's only until the expiry of its
// last renewal, on its own clock (past it, another process may hold it),
// or, while the database cannot be reached, one lease time past its last
// attempt to renew it (below). The session asks Held before every write
// ([Set.Holder], lifecycle/session Config.Held) and records nothing once
// it says no; a set answers for a claim only while it is held
// ([Set.Holds], [Set.Claim]). So a process that stalls past its lease (a
// long pause, a frozen VM) and wakes up writes nothing from its first
// instant awake, before its heartbeat runs. When the heartbeat notices
// the loss ([Keeper]'s lost function), serve hands the session over
// (bot.Bot.Lost, table.Session.Release): the lines it had acknowledged are
// drained into the session log, and it is neither marked ended nor
// processed; the new holder goes on writing it under the same id. A line
// not recorded is not acknowledged (table.Session.Say returns an error).
//
// The window that remains is one write: a write that passed the check
// when the process stalled lands when it wakes up, possibly after another
// process took the claim over. It lands once (each line has its own
// idempotency key), in the same session, so nothing is lost or broken, but
// an utterance both processes heard may be stored twice.
//
// During a database outage no process can renew, and none can take a
// claim: the holder keeps it ([Keeper]), its sessions go on spooling their
// lines, and it renews the claim when the database is back, fenced by its
// token ([Leases.Reclaim]). The window this leaves is a partition: a
// holder that cannot reach the database while another process can holds
// on until the database answers it, though the other may take the claim
// once its stored expiry passes. The bot user is one for every process, so
// the taker's voice connection ends the holder's; the lines the holder
// spooled until then are stored once, in the same session, as in a
// hand-over.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// DefaultTTL is how long a claim lasts without a renewal.
const DefaultTTL = 15 * time.Second

// ErrLost says a claim is no longer this process's: it expired and another
// process took it, or it was released.
var ErrLost = errors.New("the claim was lost to another process")

// DB is the subset of a pgx pool the claims use.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Config configures Leases. DB and Owner are required.
type Config struct {
	DB DB
	// Owner names this process in every claim it holds; it must differ
	// between processes (see NewOwner).
	Owner string
	// TTL is how long a claim lasts without renewal (DefaultTTL when zero).
	TTL   time.Duration
	Clock clock.Clock
}

// Leases claims work for one process.
type Leases struct {
	db    DB
	owner string
	ttl   time.Duration
	clk   clock.Clock
}

// New returns the claims of the process cfg.Owner names.
func New(cfg Config) (*Leases, error) {
	switch {
	case cfg.DB == nil:
		return nil, errors.New("lease: a database is required")
	case strings.TrimSpace(cfg.Owner) == "":
		return nil, errors.New("lease: an owner id is required")
	case cfg.TTL < 0:
		return nil, fmt.Errorf("lease: negative lease time %s", cfg.TTL)
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	return &Leases{db: cfg.DB, owner: cfg.Owner, ttl: cfg.TTL, clk: clock.OrReal(cfg.Clock)}, nil
}

// Owner is the id this process claims under.
func (l *Leases) Owner() string { return l.owner }

// TTL is the lease time.
func (l *Leases) TTL() time.Duration { return l.ttl }

// Lease is a claim held, as last written.
type Lease struct {
	Name    string
	Owner   string
	Token   int64
	Expires time.Time
	State   string
}

// HeldError says a claim is held by another process.
type HeldError struct {
	Name    string
	Holder  string    // the process holding it
	Expires time.Time // until when, unless it renews
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is claimed by process %s until %s", e.Name, e.Holder, e.Expires.UTC().Format(time.RFC3339))
}

// Acquire claims name: it succeeds when nobody holds it, its holder let it
// expire, or this process already holds it (which renews it, keeping its
// token and state). A new holder gets the next token; state replaces the
// stored one only when it is not empty (a taker keeps the work to resume).
// It returns a *HeldError when another process holds the claim.
func (l *Leases) Acquire(ctx context.Context, name, state string) (Lease, error) {
	if name == "" {
		return Lease{}, errors.New("lease: empty claim name")
	}
	now := l.clk.Now()
	var got Lease
	err := l.db.QueryRow(ctx, `
		INSERT INTO leases AS l (name, owner, token, acquired_at, renewed_at, expires_at, state)
		VALUES ($1, $2, 1, $3, $3, $4, $5)
		ON CONFLICT (name) DO UPDATE SET
			owner = EXCLUDED.owner,
			token = CASE WHEN l.owner = EXCLUDED.owner AND l.expires_at > $3 THEN l.token ELSE l.token + 1 END,
			acquired_at = CASE WHEN l.owner = EXCLUDED.owner AND l.expires_at > $3 THEN l.acquired_at ELSE $3 END,
			renewed_at = $3,
			expires_at = $4,
			state = CASE WHEN $5 = '' THEN l.state ELSE $5 END
		WHERE l.owner = EXCLUDED.owner OR l.expires_at <= $3
		RETURNING name, owner, token, expires_at, state`,
		name, l.owner, now, now.Add(l.ttl), state).Scan(&got.Name, &got.Owner, &got.Token, &got.Expires, &got.State)
	if errors.Is(err, pgx.ErrNoRows) {
		h, ok, gerr := l.Get(ctx, name)
		switch {
		case gerr != nil:
			return Lease{}, gerr
		case !ok: // released and deleted in between: try once more
			return l.Acquire(ctx, name, state)
		}
		return Lease{}, &HeldError{Name: name, Holder: h.Owner, Expires: h.Expires}
	}
	if err != nil {
		return Lease{}, fmt.Errorf("claiming %s: %w", name, err)
	}
	return got, nil
}

// Renew extends a held claim by the lease time. It returns ErrLost when
// the claim is no longer held with ls's token.
func (l *Leases) Renew(ctx context.Context, ls Lease) (Lease, error) {
	now := l.clk.Now()
	tag, err := l.db.Exec(ctx, `UPDATE leases SET renewed_at = $4, expires_at = $5
		WHERE name = $1 AND owner = $2 AND token = $3 AND expires_at > $4`,
		ls.Name, ls.Owner, ls.Token, now, now.Add(l.ttl))
	if err != nil {
		return ls, fmt.Errorf("renewing the claim %s: %w", ls.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return ls, fmt.Errorf("renewing the claim %s (token %d): %w", ls.Name, ls.Token, ErrLost)
	}
	ls.Expires = now.Add(l.ttl)
	return ls, nil
}

// Reclaim renews a claim whose stored expiry may have passed while the
// database could not be reached ([Keeper]): it succeeds when ls's token is
// still current (nobody took the claim, which increments it) and returns
// ErrLost otherwise.
func (l *Leases) Reclaim(ctx context.Context, ls Lease) (Lease, error) {
	now := l.clk.Now()
	tag, err := l.db.Exec(ctx, `UPDATE leases SET renewed_at = $4, expires_at = $5
		WHERE name = $1 AND owner = $2 AND token = $3`,
		ls.Name, ls.Owner, ls.Token, now, now.Add(l.ttl))
	if err != nil {
		return ls, fmt.Errorf("renewing the claim %s after an outage: %w", ls.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return ls, fmt.Errorf("renewing the claim %s (token %d) after an outage: %w", ls.Name, ls.Token, ErrLost)
	}
	ls.Expires = now.Add(l.ttl)
	return ls, nil
}

// SetState replaces the work a held claim resumes (empty: none). It is
// fenced: it returns ErrLost when ls's token is no longer current.
func (l *Leases) SetState(ctx context.Context, ls Lease, state string) (Lease, error) {
	tag, err := l.db.Exec(ctx, `UPDATE leases SET state = $4 WHERE name = $1 AND owner = $2 AND token = $3`,
		ls.Name, ls.Owner, ls.Token, state)
	if err != nil {
		return ls, fmt.Errorf("recording the work of the claim %s: %w", ls.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return ls, fmt.Errorf("recording the work of the claim %s (token %d): %w", ls.Name, ls.Token, ErrLost)
	}
	ls.State = state
	return ls, nil
}

// Check is the fence of a write: nil when ls is still the current holder
// of its claim and not expired, ErrLost otherwise.
func (l *Leases) Check(ctx context.Context, ls Lease) error {
	var ok bool
	err := l.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leases
		WHERE name = $1 AND owner = $2 AND token = $3 AND expires_at > $4)`,
		ls.Name, ls.Owner, ls.Token, l.clk.Now()).Scan(&ok)
	if err != nil {
		return fmt.Errorf("checking the claim %s: %w", ls.Name, err)
	}
	if !ok {
		return fmt.Errorf("the claim %s (token %d): %w", ls.Name, ls.Token, ErrLost)
	}
	return nil
}

// Release gives a held claim up: it expires now, keeping its token (the
// next holder gets the next one) and its state when keepState is true
// (another process resumes the work) or clearing it.
func (l *Leases) Release(ctx context.Context, ls Lease, keepState bool) error {
	_, err := l.db.Exec(ctx, `UPDATE leases SET expires_at = $4, state = CASE WHEN $5 THEN state ELSE '' END
		WHERE name = $1 AND owner = $2 AND token = $3`, ls.Name, ls.Owner, ls.Token, l.clk.Now(), keepState)
	if err != nil {
		return fmt.Errorf("releasing the claim %s: %w", ls.Name, err)
	}
	return nil
}

// Get reads a claim as stored, whoever holds it; ok is false when it was
// never taken.
func (l *Leases) Get(ctx context.Context, name string) (ls Lease, ok bool, err error) {
	err = l.db.QueryRow(ctx, `SELECT name, owner, token, expires_at, state FROM leases WHERE name = $1`, name).
		Scan(&ls.Name, &ls.Owner, &ls.Token, &ls.Expires, &ls.State)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("reading the claim %s: %w", name, err)
	}
	return ls, true, nil
}

// Orphans lists the expired claims under prefix that carry work to
// resume (a non-empty state), oldest expiry first.
func (l *Leases) Orphans(ctx context.Context, prefix string) ([]Lease, error) {
	rows, err := l.db.Query(ctx, `SELECT name, owner, token, expires_at, state FROM leases
		WHERE state <> '' AND expires_at <= $1 AND starts_with(name, $2) ORDER BY expires_at, name`, l.clk.Now(), prefix)
	if err != nil {
		return nil, fmt.Errorf("listing the expired claims %s*: %w", prefix, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		var ls Lease
		return ls, r.Scan(&ls.Name, &ls.Owner, &ls.Token, &ls.Expires, &ls.State)
	})
}

// NewOwner returns an owner id for this process: its host name (the pod's,
// in Kubernetes), its pid and a random suffix, so that a restarted process
// never reuses the id of the one it replaces.
func NewOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "glyphoxa"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
