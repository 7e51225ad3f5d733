package bundle

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// DB is what a bundle needs of the database: transactions (a
// *pgxpool.Pool, see postgres.Store.Pool).
type DB interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Header is a bundle's first line.
type Header struct {
	Format   string `json:"format"`
	Version  int    `json:"version"`
	Campaign string `json:"campaign"`
	// ExportedAt is when the snapshot was taken.
	ExportedAt time.Time `json:"exported_at"`
	// Schema is the exporting database's last migration.
	Schema int `json:"schema"`
	// Dimensions is the length of the chunks' embeddings (0: none).
	Dimensions int `json:"embedding_dimensions,omitempty"`
}

// Counts is the number of rows of each kind.
type Counts map[string]int64

// record is one line after the header.
type record struct {
	Kind   string          `json:"kind"`
	Row    json.RawMessage `json:"row,omitempty"`
	Counts Counts          `json:"counts,omitempty"`
}

// Export writes campaign's bundle to w from one consistent snapshot,
// streaming rows as the database returns them, and returns how many rows
// of each kind it wrote. now dates the header. An unknown campaign is an
// error wrapping memory.ErrNotFound.
func Export(ctx context.Context, db DB, campaign string, w io.Writer, now time.Time) (Counts, error) {
	if err := memory.ValidateCampaignID(campaign); err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("exporting campaign %s: %w", campaign, err)
	}
	defer tx.Rollback(ctx)
	var settings []byte
	err = tx.QueryRow(ctx, `SELECT (to_jsonb(t) - 'id' - 'created_at')::text FROM campaigns t WHERE t.id = $1`, campaign).Scan(&settings)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("exporting campaign %s: %w", campaign, memory.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("exporting campaign %s: reading its settings: %w", campaign, err)
	}
	h := Header{Format: Format, Version: Version, Campaign: campaign, ExportedAt: now.UTC()}
	if h.Schema, h.Dimensions, err = schemaOf(ctx, tx); err != nil {
		return nil, fmt.Errorf("exporting campaign %s: %w", campaign, err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeJSON(bw, h); err != nil {
		return nil, err
	}
	counts := Counts{}
	if err := writeRow(bw, settingsKind, settings); err != nil {
		return nil, err
	}
	counts[settingsKind] = 1
	for _, t := range Tables() {
		skip, err := derived(ctx, tx, t)
		if err != nil {
			return nil, fmt.Errorf("exporting campaign %s: %w", campaign, err)
		}
		rows, err := tx.Query(ctx, `SELECT (to_jsonb(t) - $2::text[])::text `+t.From, campaign, skip)
		if err != nil {
			return nil, fmt.Errorf("exporting campaign %s: reading %s: %w", campaign, t.Name, err)
		}
		var n int64
		var row []byte
		_, err = pgx.ForEachRow(rows, []any{&row}, func() error {
			n++
			return writeRow(bw, t.Name, row)
		})
		if err != nil {
			return nil, fmt.Errorf("exporting campaign %s: reading %s: %w", campaign, t.Name, err)
		}
		counts[t.Name] = n
	}
	if err := writeJSON(bw, record{Kind: endKind, Counts: counts}); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("writing the bundle: %w", err)
	}
	return counts, nil
}

// schemaOf reads the database's last migration and embedding dimension.
func schemaOf(ctx context.Context, q pgx.Tx) (schema, dims int, err error) {
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&schema); err != nil {
		return 0, 0, fmt.Errorf("reading the schema version: %w", err)
	}
	var d string
	err = q.QueryRow(ctx, `SELECT value FROM glyphoxa_meta WHERE key = 'embedding_dimensions'`).Scan(&d)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, fmt.Errorf("reading the embedding dimension: %w", err)
	}
	if d != "" {
		if dims, err = strconv.Atoi(d); err != nil {
			return 0, 0, fmt.Errorf("reading the embedding dimension %q: %w", d, err)
		}
	}
	return schema, dims, nil
}

// derived lists the columns of t a bundle leaves out: campaign_id, the
// generated columns and t.Skip.
func derived(ctx context.Context, q pgx.Tx, t Table) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0
		AND NOT attisdropped AND attgenerated <> ''`, t.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", t.Name, err)
	}
	gen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", t.Name, err)
	}
	return append(append([]string{"campaign_id"}, t.Skip...), gen...), nil
}

func writeRow(w *bufio.Writer, kind string, row []byte) error {
	w.WriteString(`{"kind":`)
	w.WriteString(strconv.Quote(kind))
	w.WriteString(`,"row":`)
	w.Write(row)
	if _, err := w.WriteString("}\n"); err != nil {
		return fmt.Errorf("writing the bundle: %w", err)
	}
	return nil
}

func writeJSON(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("writing the bundle: %w", err)
	}
	w.Write(b)
	if err := w.WriteByte('\n'); err != nil {
		return fmt.Errorf("writing the bundle: %w", err)
	}
	return nil
}
