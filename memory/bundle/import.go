package bundle

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// ErrBadBundle is wrapped by every error about the bundle's content (as
// opposed to the database): a malformed or truncated file, an unknown
// kind or column, a reference to a row the bundle does not hold.
var ErrBadBundle = errors.New("bad bundle")

// ErrNotEmpty is wrapped by the error for a target campaign that already
// holds memory: a bundle is restored into a new campaign.
var ErrNotEmpty = errors.New("the campaign is not empty")

// Result is what an import did.
type Result struct {
	Header Header
	// Counts are the rows written, per kind.
	Counts Counts
	// Unembedded is the number of chunks whose embeddings were left out
	// because the target database's dimension differs from the bundle's
	// (`glyphoxa process` embeds them again).
	Unembedded int64
}

// batchSize is how many rows one round trip writes.
const batchSize = 500

// IsBundle reports whether the start of a file is a bundle's (gzipped or
// not): callers peek at it to tell a bundle from a campaign file.
func IsBundle(start []byte) bool {
	if len(start) >= 2 && start[0] == 0x1f && start[1] == 0x8b {
		return true
	}
	return bytes.HasPrefix(bytes.TrimLeft(start, " \t\r\n"), []byte(`{"format":"`+Format+`"`))
}

// ReadHeader reads a bundle's header (gzipped or not) and checks its
// format and version.
func ReadHeader(r io.Reader) (Header, error) {
	in, err := open(r)
	if err != nil {
		return Header{}, err
	}
	defer in.close()
	return in.header()
}

// open starts reading a bundle, gunzipping it if it is gzipped.
func open(r io.Reader) (*reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	in := &reader{r: br, close: func() {}}
	if start, _ := br.Peek(2); len(start) == 2 && start[0] == 0x1f && start[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: reading the gzip stream: %v", ErrBadBundle, err)
		}
		in.r, in.close = bufio.NewReaderSize(zr, 64<<10), func() { zr.Close() }
	}
	return in, nil
}

// header reads and checks the first line.
func (in *reader) header() (Header, error) {
	var h Header
	line, err := in.next()
	if errors.Is(err, io.EOF) {
		return h, fmt.Errorf("%w: the file is empty", ErrBadBundle)
	}
	if err != nil {
		return h, err
	}
	if err := strictJSON(line, &h); err != nil || h.Format != Format {
		if !bytes.HasPrefix(line, []byte("{")) {
			return h, fmt.Errorf("%w: line 1 is not a glyphoxa campaign bundle header (a campaign file? import it without a bundle's options)", ErrBadBundle)
		}
		return h, fmt.Errorf("%w: line 1 is not a glyphoxa campaign bundle header", ErrBadBundle)
	}
	if v := h.Version; v < 1 || v > Version {
		return h, fmt.Errorf("%w: format version %d; this glyphoxa reads versions 1 to %d (upgrade glyphoxa)", ErrBadBundle, v, Version)
	}
	return h, nil
}

// Import restores a bundle into campaign, which must be new or hold no
// memory yet (the error wraps ErrNotEmpty otherwise), in one transaction:
// on any error nothing is written. Serial ids are assigned anew and every
// reference to them remapped (see the package doc).
func Import(ctx context.Context, db DB, campaign string, r io.Reader) (Result, error) {
	var res Result
	if err := memory.ValidateCampaignID(campaign); err != nil {
		return res, err
	}
	in, err := open(r)
	if err != nil {
		return res, err
	}
	defer in.close()
	if res.Header, err = in.header(); err != nil {
		return res, err
	}
	err = pgx.BeginFunc(ctx, txBeginner{db}, func(tx pgx.Tx) error {
		im := &importer{tx: tx, campaign: campaign, in: in, res: &res, ids: map[string]map[int64]int64{}}
		return im.run(ctx)
	})
	if err != nil {
		return Result{Header: res.Header}, err
	}
	return res, nil
}

// txBeginner adapts DB to pgx.BeginFunc.
type txBeginner struct{ db DB }

func (b txBeginner) Begin(ctx context.Context) (pgx.Tx, error) {
	return b.db.BeginTx(ctx, pgx.TxOptions{})
}

// reader reads a bundle line by line.
type reader struct {
	r     *bufio.Reader
	line  int
	close func()
}

// next returns the next non-empty line, or io.EOF.
func (r *reader) next() ([]byte, error) {
	for {
		b, err := r.r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("reading the bundle after line %d: %w", r.line, err)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading the bundle after line %d: %w", r.line, err)
		}
		r.line++
		if b = bytes.TrimSpace(b); len(b) > 0 {
			return b, nil
		}
	}
}

func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// importer writes one bundle inside a transaction.
type importer struct {
	tx       pgx.Tx
	campaign string
	in       *reader
	res      *Result

	cols  map[string]map[string]bool // table -> insertable columns
	ids   map[string]map[int64]int64 // table -> old serial -> new
	sqls  map[string]string
	batch *pgx.Batch
	dims  int
}

func (im *importer) badf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrBadBundle, im.in.line, fmt.Sprintf(format, args...))
}

func (im *importer) run(ctx context.Context) error {
	tx := im.tx
	if _, err := tx.Exec(ctx, `SELECT set_config('glyphoxa.actor', 'bundle-import', true)`); err != nil {
		return fmt.Errorf("importing: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO campaigns (id) VALUES ($1) ON CONFLICT DO NOTHING`, im.campaign); err != nil {
		return fmt.Errorf("creating campaign %s: %w", im.campaign, err)
	}
	// Lock the campaign row so two imports into it cannot interleave.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM campaigns WHERE id = $1 FOR UPDATE`, im.campaign); err != nil {
		return fmt.Errorf("locking campaign %s: %w", im.campaign, err)
	}
	if err := im.checkEmpty(ctx); err != nil {
		return err
	}
	var err error
	if _, im.dims, err = schemaOf(ctx, tx); err != nil {
		return err
	}
	if err := im.loadColumns(ctx); err != nil {
		return err
	}
	order := map[string]int{settingsKind: 0}
	byName := map[string]Table{}
	for i, t := range Tables() {
		order[t.Name] = i + 1
		byName[t.Name] = t
	}
	im.res.Counts = Counts{}
	last, current := -1, ""
	for {
		line, err := im.in.next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: it ends after line %d without its end record: the file is truncated", ErrBadBundle, im.in.line)
		}
		if err != nil {
			return err
		}
		var rec record
		if err := strictJSON(line, &rec); err != nil {
			return im.badf("not a JSON record: %v", err)
		}
		if rec.Kind == endKind {
			if err := im.flush(ctx, current); err != nil {
				return err
			}
			if err := im.oweEmbeddings(ctx); err != nil {
				return err
			}
			return im.end(rec.Counts)
		}
		pos, ok := order[rec.Kind]
		if !ok {
			return im.badf("unknown record kind %q (a bundle from a newer glyphoxa? upgrade glyphoxa)", rec.Kind)
		}
		if pos < last {
			return im.badf("%s record after %s records: the bundle is out of order", rec.Kind, current)
		}
		if rec.Kind != current {
			if err := im.flush(ctx, current); err != nil {
				return err
			}
			last, current = pos, rec.Kind
		}
		var row map[string]json.RawMessage
		if err := strictJSON(rec.Row, &row); err != nil || row == nil {
			return im.badf("the %s record has no row object", rec.Kind)
		}
		im.res.Counts[rec.Kind]++
		if rec.Kind == settingsKind {
			if err := im.settings(ctx, row); err != nil {
				return err
			}
			continue
		}
		if err := im.row(ctx, byName[rec.Kind], row); err != nil {
			return err
		}
		if im.batch != nil && im.batch.Len() >= batchSize {
			if err := im.flush(ctx, current); err != nil {
				return err
			}
		}
	}
}

// oweEmbeddings marks, in the restoring transaction, the sessions whose
// chunks lost their embeddings (the bundle's dimension is not this
// database's) as owing a rebuild of their chunks (postgres.RechunkStage):
// a restore killed before it embedded them again is finished by serve or
// by glyphoxa process, which clear the mark.
func (im *importer) oweEmbeddings(ctx context.Context) error {
	if im.res.Unembedded == 0 {
		return nil
	}
	_, err := im.tx.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage, updated_at)
		SELECT $1, s.session_id, $2, clock_timestamp()
		FROM (SELECT DISTINCT session_id FROM chunks WHERE campaign_id = $1 AND embedding IS NULL) s
		ON CONFLICT (campaign_id, session_id, stage) DO UPDATE SET updated_at = excluded.updated_at`, im.campaign, postgres.RechunkStage)
	if err != nil {
		return fmt.Errorf("recording that the restored chunks are to be embedded again: %w", err)
	}
	return nil
}

// checkEmpty refuses a campaign that already holds memory.
func (im *importer) checkEmpty(ctx context.Context) error {
	var sessions, entities, dmNodes int64
	err := im.tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions WHERE campaign_id = $1),
		(SELECT count(*) FROM entities WHERE campaign_id = $1), (SELECT count(*) FROM dm_nodes WHERE campaign_id = $1)`,
		im.campaign).Scan(&sessions, &entities, &dmNodes)
	if err != nil {
		return fmt.Errorf("checking campaign %s: %w", im.campaign, err)
	}
	if sessions+entities+dmNodes > 0 {
		return fmt.Errorf("%w: campaign %s already holds %d sessions, %d entities and %d DM notes; import the bundle into a new campaign (--campaign NEW-ID)",
			ErrNotEmpty, im.campaign, sessions, entities, dmNodes)
	}
	return nil
}

// loadColumns reads the insertable columns of every table a bundle holds.
func (im *importer) loadColumns(ctx context.Context) error {
	names := []string{settingsKind}
	for _, t := range Tables() {
		names = append(names, t.Name)
	}
	rows, err := im.tx.Query(ctx, `SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relname = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''`, names)
	if err != nil {
		return fmt.Errorf("reading the database's columns: %w", err)
	}
	im.cols = map[string]map[string]bool{}
	var table, col string
	_, err = pgx.ForEachRow(rows, []any{&table, &col}, func() error {
		if im.cols[table] == nil {
			im.cols[table] = map[string]bool{}
		}
		im.cols[table][col] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the database's columns: %w", err)
	}
	for _, n := range names {
		if im.cols[n] == nil {
			return fmt.Errorf("this database has no table %s: migrate it first (glyphoxa migrate)", n)
		}
	}
	im.sqls = map[string]string{}
	return nil
}

// columns checks row's columns against table and returns them sorted.
func (im *importer) columns(table string, row map[string]json.RawMessage) ([]string, error) {
	cols := make([]string, 0, len(row))
	for k, v := range row {
		if k == "campaign_id" {
			return nil, im.badf("a %s row names a campaign_id: rows belong to the campaign they are imported into", table)
		}
		if !im.cols[table][k] {
			if string(v) == "null" {
				delete(row, k)
				continue
			}
			return nil, im.badf("%s.%s is not a column of this database (a bundle from a newer glyphoxa? upgrade glyphoxa and run glyphoxa migrate)", table, k)
		}
		cols = append(cols, k)
	}
	slices.Sort(cols)
	return cols, nil
}

// settings applies the campaign's settings.
func (im *importer) settings(ctx context.Context, row map[string]json.RawMessage) error {
	delete(row, "id")
	delete(row, "created_at")
	if err := im.checkCalendar(row["calendar"]); err != nil {
		return err
	}
	cols, err := im.columns(settingsKind, row)
	if err != nil || len(cols) == 0 {
		return err
	}
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = ident(c) + " = r." + ident(c)
	}
	b, _ := json.Marshal(row)
	_, err = im.tx.Exec(ctx, `UPDATE campaigns t SET `+strings.Join(set, ", ")+`
		FROM jsonb_populate_record(NULL::campaigns, $2::jsonb) r WHERE t.id = $1`, im.campaign, b)
	if err != nil {
		return fmt.Errorf("line %d: applying the campaign's settings: %w", im.in.line, err)
	}
	return nil
}

// row queues one row's insert, remapping its serial references.
func (im *importer) row(ctx context.Context, t Table, row map[string]json.RawMessage) error {
	var old int64
	if t.Serial != "" {
		v, ok := row[t.Serial]
		if !ok {
			return im.badf("a %s row has no %s", t.Name, t.Serial)
		}
		if err := json.Unmarshal(v, &old); err != nil {
			return im.badf("%s.%s %s is not an id", t.Name, t.Serial, v)
		}
		if _, dup := im.ids[t.Name][old]; dup {
			return im.badf("%s %d appears twice", t.Name, old)
		}
		delete(row, t.Serial)
	}
	for col, space := range t.Refs {
		v, ok := row[col]
		if !ok || string(v) == "null" {
			continue // a nullable reference that names nothing (player_grants.fact_id)
		}
		var ref int64
		if err := json.Unmarshal(v, &ref); err != nil {
			return im.badf("%s.%s %s is not an id", t.Name, col, v)
		}
		nid, ok := im.ids[space][ref]
		if !ok {
			return im.badf("%s.%s refers to %s %d, which the bundle does not hold", t.Name, col, space, ref)
		}
		row[col] = json.RawMessage(strconv.FormatInt(nid, 10))
	}
	if len(t.PayloadRefs) > 0 {
		if err := im.payloadRefs(t, row); err != nil {
			return err
		}
	}
	if t.Name == "entities" || t.Name == "relationships" {
		if err := im.checkAttributes(t.Name, row["attributes"]); err != nil {
			return err
		}
	}
	if t.Name == "chunks" && im.res.Header.Dimensions != im.dims {
		if v, ok := row["embedding"]; ok && string(v) != "null" {
			row["embedding"] = json.RawMessage("null")
			im.res.Unembedded++
		}
	}
	cols, err := im.columns(t.Name, row)
	if err != nil {
		return err
	}
	b, err := json.Marshal(row)
	if err != nil {
		return im.badf("%v", err)
	}
	q := im.insertSQL(t, cols)
	if im.batch == nil {
		im.batch = &pgx.Batch{}
	}
	line := im.in.line
	if t.Serial == "" {
		im.batch.Queue(q, im.campaign, b)
		return nil
	}
	if im.ids[t.Name] == nil {
		im.ids[t.Name] = map[int64]int64{}
	}
	ids := im.ids[t.Name]
	ids[old] = 0 // reserved: a duplicate is caught before the batch runs
	im.batch.Queue(q, im.campaign, b).QueryRow(func(r pgx.Row) error {
		var nid int64
		if err := r.Scan(&nid); err != nil {
			return fmt.Errorf("line %d: writing %s %d: %w", line, t.Name, old, err)
		}
		ids[old] = nid
		return nil
	})
	return nil
}

// checkAttributes refuses what the store refuses from every other writer
// (memory.CheckSecretMarkers): a "secret" marker that is not a boolean
// would leave the fact or value it was meant to hide public.
func (im *importer) checkAttributes(table string, v json.RawMessage) error {
	if v == nil || string(v) == "null" {
		return nil
	}
	var attrs map[string]any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&attrs); err != nil {
		return im.badf("%s.attributes is not an object", table)
	}
	if err := memory.CheckSecretMarkers(attrs); err != nil {
		return im.badf("%s.attributes: %v", table, err)
	}
	return nil
}

// checkCalendar refuses a calendar SetCalendar would refuse: every later
// read of it would fail, or refuse every date.
func (im *importer) checkCalendar(v json.RawMessage) error {
	if v == nil || string(v) == "null" {
		return nil
	}
	var c calendar.Calendar
	d := json.NewDecoder(bytes.NewReader(v))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return im.badf("the campaign's calendar is not a calendar: %v", err)
	}
	if err := c.Validate(); err != nil {
		return im.badf("the campaign's calendar: %v", err)
	}
	return nil
}

// payloadRefs remaps the fact a proposal's payload names.
func (im *importer) payloadRefs(t Table, row map[string]json.RawMessage) error {
	var kind string
	if json.Unmarshal(row["kind"], &kind) != nil {
		return nil
	}
	space, ok := t.PayloadRefs[kind]
	if !ok {
		return nil
	}
	var payload map[string]any
	if err := json.Unmarshal(row["payload"], &payload); err != nil {
		return im.badf("the payload of a %s proposal is not an object", kind)
	}
	s, _ := payload["id"].(string)
	ref, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(s), "#"), 10, 64)
	if err != nil || ref == 0 {
		return nil // names no fact (a proposal to delete what does not exist)
	}
	nid, ok := im.ids[space][ref]
	if !ok {
		return im.badf("a %s proposal refers to %s %d, which the bundle does not hold", kind, space, ref)
	}
	payload["id"] = strconv.FormatInt(nid, 10)
	b, _ := json.Marshal(payload)
	row["payload"] = b
	return nil
}

// insertSQL is the insert of a row of t with cols, from a JSON object
// ($2) PostgreSQL converts to the columns' types.
func (im *importer) insertSQL(t Table, cols []string) string {
	key := t.Name + "\x00" + strings.Join(cols, "\x00")
	if q, ok := im.sqls[key]; ok {
		return q
	}
	names := make([]string, 0, len(cols)+1)
	vals := make([]string, 0, len(cols)+1)
	if im.cols[t.Name]["campaign_id"] {
		names, vals = append(names, "campaign_id"), append(vals, "$1::text")
	}
	for _, c := range cols {
		names = append(names, ident(c))
		vals = append(vals, "r."+ident(c))
	}
	q := `INSERT INTO ` + t.Name + ` (` + strings.Join(names, ", ") + `) SELECT ` + strings.Join(vals, ", ") +
		` FROM jsonb_populate_record(NULL::` + t.Name + `, $2::jsonb) r`
	if !im.cols[t.Name]["campaign_id"] {
		// Every insert takes the same two arguments.
		q += ` WHERE $1::text IS NOT NULL`
	}
	if t.Serial != "" {
		q += ` RETURNING ` + ident(t.Serial)
	}
	im.sqls[key] = q
	return q
}

// flush sends the queued rows of kind.
func (im *importer) flush(ctx context.Context, kind string) error {
	if im.batch == nil || im.batch.Len() == 0 {
		return nil
	}
	b := im.batch
	im.batch = nil
	if err := im.tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("writing %s rows (up to line %d): %w", kind, im.in.line, err)
	}
	return nil
}

// end checks the end record against what was read, and that nothing
// follows it.
func (im *importer) end(want Counts) error {
	for _, k := range append([]string{settingsKind}, tableNames()...) {
		if want[k] != im.res.Counts[k] {
			return im.badf("the end record counts %d %s rows, the bundle holds %d: the file is damaged", want[k], k, im.res.Counts[k])
		}
	}
	for k := range want {
		if _, ok := im.res.Counts[k]; !ok && want[k] != 0 && !slices.Contains(tableNames(), k) && k != settingsKind {
			return im.badf("the end record counts rows of unknown kind %q", k)
		}
	}
	if _, err := im.in.next(); !errors.Is(err, io.EOF) {
		if err != nil {
			return err
		}
		return im.badf("text after the end record")
	}
	return nil
}

func tableNames() []string {
	var out []string
	for _, t := range Tables() {
		out = append(out, t.Name)
	}
	return out
}

// ident quotes a column name read from a bundle (checked against the
// database's columns first; quoting keeps it an identifier regardless).
func ident(s string) string { return pgx.Identifier{s}.Sanitize() }
