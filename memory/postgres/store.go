package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/glyphoxa/glyphoxa/memory"
)

// DefaultReviewThreshold is the confidence below which a new fact waits for
// the DM's review.
const DefaultReviewThreshold = 0.7

// Option configures a Store.
type Option func(*options)

type options struct {
	reviewThreshold float64
	logger          *slog.Logger
	maxConns        int32
	exactChunks     *int // nil: exactSearchFloats / dims
}

// WithReviewThreshold sets the confidence below which facts are pending DM
// review (default 0.7).
func WithReviewThreshold(t float64) Option { return func(o *options) { o.reviewThreshold = t } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMaxConns caps the connection pool (default: pgxpool's, or the DSN's
// pool_max_conns).
func WithMaxConns(n int32) Option { return func(o *options) { o.maxConns = n } }

// WithExactSearch sets the largest campaign, in chunks, whose
// nearest-chunk searches read every chunk rather than the HNSW index
// (default: as many as read 4,000,000 embedding components, 10,416 at 384
// dimensions; see nearest). With n 0 every campaign with a chunk, and with
// n negative every campaign, is searched through the index: for tests of
// the approximate search.
func WithExactSearch(n int) Option { return func(o *options) { o.exactChunks = &n } }

// Store is the PostgreSQL memory store: one pool shared by all campaigns and
// layers. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	dims int
	opts options
}

// NewStore connects to dsn, migrates the schema, checks that the database's
// embedding dimension is dims, and returns the store.
func NewStore(ctx context.Context, dsn string, dims int, opts ...Option) (*Store, error) {
	o := options{reviewThreshold: DefaultReviewThreshold, logger: slog.Default()}
	for _, f := range opts {
		f(&o)
	}
	if o.reviewThreshold < 0 || o.reviewThreshold > 1 {
		return nil, fmt.Errorf("%w: review threshold must be within 0..1, got %v", memory.ErrInvalid, o.reviewThreshold)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing the database DSN: %w", err)
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}

	// The first connection of the pool migrates the schema (a process that
	// finds it current spends one round trip on it) and stays in the pool
	// for the queries that follow: a short-lived process such as `glyphoxa
	// ask` opens one connection, not one to migrate and another to work.
	m := &migrator{dims: dims}
	// The store's statements are interactive reads and writes that run in
	// milliseconds, and two of PostgreSQL's planner features pay a start-up
	// cost the planner misjudges for them. Both are off for the store's
	// connections unless the DSN sets them (see interactiveSettings).
	settings := interactiveSettings(cfg.ConnConfig.RuntimeParams)
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if err := m.migrate(ctx, c); err != nil {
			return err
		}
		if settings != "" {
			if _, err := c.Exec(ctx, settings); err != nil {
				return fmt.Errorf("setting the store's connection parameters (%s): %w", settings, err)
			}
		}
		return pgxvec.RegisterTypes(ctx, c)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the connection pool: %w", err)
	}
	first, err := pool.Acquire(ctx) // connects, migrates, and goes back to the pool
	if err != nil {
		pool.Close()
		if merr := m.failed(); merr != nil {
			return nil, merr
		}
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", describeTarget(cfg.ConnConfig), err)
	}
	first.Release()
	return &Store{pool: pool, dims: dims, opts: o}, nil
}

// interactiveSettings are the SET statements, in one string (one round
// trip), of the parameters the store sets on each new connection, less
// those the DSN sets itself (params: its run-time parameters) where it may
// (below). They are SETs on the connection, not startup
// parameters, which connection poolers such as PgBouncer refuse.
//
//   - jit off: PostgreSQL compiles any statement whose estimated cost
//     passes jit_above_cost, which the visibility rules of a player's reads
//     at 10k rows do, and compiling took 0.5 to 5 s of a statement that
//     runs in 0.1 to 0.3 s (BenchmarkSceneEntities, a player's fact list
//     at 10k facts: 1.6 s with JIT, 0.3 s without).
//   - max_parallel_workers_per_gather 0: a parallel plan starts worker
//     processes for the statement. A session-log search computes its
//     text-search query from the campaign's language inside the
//     statement, so the planner cannot see the query and estimates 5,000
//     matching lines: at the 100k bench scale (1M lines) it planned two
//     workers for a search that matches one line: 67 ms at the median
//     with them, 0.2 to 0.4 ms without (`glyphoxa bench --scale 100k`, L1
//     search). None of the store's benchmarks was faster with workers: a
//     player's search in a heavily split 100k campaign took 541 to 576 ms
//     with them and 389 to 452 ms without (BenchmarkPlayerSearch), the
//     GraphRAG queries the same.
//
// And one the DSN cannot change: default_transaction_isolation is read
// committed, whatever the server's or the DSN's default. The store's
// statements are written for it: the change log's publication
// (glyphoxa_publish_changes) waits for a lock and then reads what the
// publisher before it committed, which a repeatable-read statement, its
// snapshot taken before the wait, cannot (it failed "could not serialize
// access" when readers of one campaign met); the cursors of late commits
// ([ChangeCursor]) read each statement's own snapshot.
func interactiveSettings(params map[string]string) string {
	out := []string{"SET default_transaction_isolation = 'read committed'"}
	for _, s := range []struct{ name, value string }{{"jit", "off"}, {"max_parallel_workers_per_gather", "0"}} {
		if _, set := params[s.name]; !set {
			out = append(out, "SET "+s.name+" = "+s.value)
		}
	}
	return strings.Join(out, "; ")
}

// migrator runs [Migrate] on the first connection a store's pool opens;
// connections opened after it succeeded skip it.
type migrator struct {
	dims int
	mu   sync.Mutex
	done bool
	err  error // the last failure, for NewStore's error
}

func (m *migrator) migrate(ctx context.Context, c *pgx.Conn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil
	}
	if err := Migrate(ctx, c, m.dims); err != nil {
		m.err = err
		return err
	}
	m.done, m.err = true, nil
	return nil
}

func (m *migrator) failed() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close closes the pool; it waits for connections in use to be released.
func (s *Store) Close() { s.pool.Close() }

// Pool exposes the shared pool for components that keep their own tables in
// the same database.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Dimensions is the embedding dimension of the semantic index.
func (s *Store) Dimensions() int { return s.dims }

// exactChunks is the largest campaign searched exactly (WithExactSearch).
func (s *Store) exactChunks() int {
	if s.opts.exactChunks != nil {
		return *s.opts.exactChunks
	}
	return exactSearchFloats / max(s.dims, 1)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Campaign returns the memory layers of one campaign, creating the campaign
// if it is new.
func (s *Store) Campaign(ctx context.Context, id string) (*Campaign, error) {
	if err := validCampaignID(id); err != nil {
		return nil, err
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO campaigns (id) VALUES ($1) ON CONFLICT DO NOTHING", id); err != nil {
		return nil, fmt.Errorf("opening campaign %q: %w", id, classify(endedBy(ctx, err)))
	}
	return newCampaign(s, s.pool, id, nil, view{}), nil
}

// ExistingCampaign returns the memory layers of a campaign that exists, or
// an error wrapping memory.ErrNotFound that lists the known campaigns.
func (s *Store) ExistingCampaign(ctx context.Context, id string) (*Campaign, error) {
	if err := validCampaignID(id); err != nil {
		return nil, err
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM campaigns WHERE id = $1)", id).Scan(&ok); err != nil {
		return nil, fmt.Errorf("opening campaign %q: %w", id, classify(endedBy(ctx, err)))
	}
	if !ok {
		known, err := s.Campaigns(ctx)
		if err != nil {
			return nil, fmt.Errorf("opening campaign %q: %w", id, err)
		}
		return nil, &UnknownCampaignError{ID: id, Known: known}
	}
	return newCampaign(s, s.pool, id, nil, view{}), nil
}

// UnknownCampaignError is the error for a campaign that does not exist; it
// wraps memory.ErrNotFound and lists the known campaigns.
type UnknownCampaignError struct {
	ID    string
	Known []string
}

func (e *UnknownCampaignError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("campaign %q not found: the database holds no campaign yet", e.ID)
	}
	return fmt.Sprintf("campaign %q not found (known: %s)", e.ID, strings.Join(e.Known, ", "))
}

func (e *UnknownCampaignError) Unwrap() error { return memory.ErrNotFound }

// Campaigns lists the campaign ids in the database.
func (s *Store) Campaigns(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT id FROM campaigns ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("listing campaigns: %w", classify(endedBy(ctx, err)))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing campaigns: %w", classify(endedBy(ctx, err)))
	}
	return ids, nil
}

// InTx runs fn with the layers of one campaign bound to a single transaction:
// everything fn writes lands together or not at all.
func (s *Store) InTx(ctx context.Context, campaignID string, fn func(*Campaign) error) error {
	if err := validCampaignID(campaignID); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO campaigns (id) VALUES ($1) ON CONFLICT DO NOTHING", campaignID); err != nil {
			return fmt.Errorf("opening campaign %q: %w", campaignID, err)
		}
		return fn(newCampaign(s, tx, campaignID, nil, view{}))
	})
}

func validCampaignID(id string) error { return memory.ValidateCampaignID(id) }

// querier is what the layers need from a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Campaign is one campaign's view of the store. Its layers only ever touch
// rows of this campaign.
type Campaign struct {
	id    string
	store *Store
	db    guarded
	view  view
	l1    *SessionLog
	l2    *SemanticIndex
	graph *Graph
}

// newCampaign binds the layers of campaign id to db (the pool or a
// transaction) through a querier that classifies every error as an outage
// or a refusal (memory.ErrUnavailable, memory.ErrRefused) and, with a gate,
// guards every statement.
func newCampaign(s *Store, db querier, id string, gate Gate, v view) *Campaign {
	// The querier guarded once: a guarded pool or transaction is
	// unwrapped before it is wrapped with this campaign's gate.
	switch g := db.(type) {
	case guarded:
		db = g.q
	case guardedTx:
		db = g.Tx
	}
	q := guarded{q: db, gate: gate}
	v.campaign = id
	g := &Graph{db: q, campaign: id, threshold: s.opts.reviewThreshold, view: v}
	return &Campaign{
		id:    id,
		store: s,
		db:    q,
		view:  v,
		l1:    &SessionLog{db: q, campaign: id, view: v},
		l2:    &SemanticIndex{db: q, campaign: id, dims: s.dims, exactChunks: s.exactChunks(), view: v},
		graph: g,
	}
}

// Through returns this campaign's layers with every statement guarded by
// gate (see [Gate]), bound to the same viewer.
func (c *Campaign) Through(gate Gate) *Campaign {
	return newCampaign(c.store, c.db, c.id, gate, c.view)
}

// InTx runs fn with this campaign's layers (same viewer, same gate) bound to
// one transaction, the writer named actor in the change log when actor is
// not empty: everything fn writes lands together or not at all.
func (c *Campaign) InTx(ctx context.Context, actor string, fn func(*Campaign) error) error {
	return pgx.BeginFunc(ctx, c.db, func(tx pgx.Tx) error {
		if actor != "" {
			if _, err := tx.Exec(ctx, "SELECT set_config('glyphoxa.actor', $1, true)", actor); err != nil {
				return fmt.Errorf("naming the writer: %w", err)
			}
		}
		return fn(newCampaign(c.store, tx, c.id, c.db.gate, c.view))
	})
}

// ID is the campaign id.
func (c *Campaign) ID() string { return c.id }

// Sessions is the session log (L1).
func (c *Campaign) Sessions() *SessionLog { return c.l1 }

// Index is the semantic index (L2).
func (c *Campaign) Index() *SemanticIndex { return c.l2 }

// Graph is the knowledge graph (L3), which also answers GraphRAG queries.
func (c *Campaign) Graph() *Graph { return c.graph }

// Compile-time checks that the layers implement the memory interfaces.
var (
	_ memory.SessionStore   = (*SessionLog)(nil)
	_ memory.KnowledgeGraph = (*Graph)(nil)
)

// describeTarget names the server a config points at, without credentials.
func describeTarget(c *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}
