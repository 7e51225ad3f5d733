// Package benchdata generates deterministic synthetic campaigns for
// benchmarking the memory store: a knowledge graph with local structure (most
// facts stay within clusters of related entities, a few reach across, as in
// a real campaign's towns and factions), session transcripts that mention
// entities, and embedded chunks linked to the entities they mention.
//
// The same Spec and seed always produce the same rows, so runs at different
// times or on different machines measure the same work.
//
// # Density
//
// [Scale1k] and [Scale100k] differ in size only, not in shape: per entity
// both hold 5 relationships, 10 transcript lines (half of which name an
// entity: 5 line mentions per entity) and 1 chunk, and each chunk links 3
// entities (3 chunk links per entity); a session is 5,000 lines and 500
// chunks at both scales. An operation that costs the same at both scales
// is therefore flat in the campaign's size, not helped by a denser small
// campaign ([Spec.Density]; `glyphoxa bench` prints it as measured).
package benchdata

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"
)

// Spec sizes a synthetic campaign.
type Spec struct {
	Name          string
	Entities      int
	Relationships int
	Entries       int
	Chunks        int
	// EntriesPerSession fixes the session length, so per-session work does
	// not grow with the campaign.
	EntriesPerSession int
	Dims              int
	Seed              uint64
	// Database is the database `glyphoxa bench` keeps the campaign in
	// (default glyphoxa_bench_<Name>).
	Database string
}

// Scale1k and Scale100k are the two scales the memory benchmark runs, of
// equal density (see the package doc).
var (
	Scale1k = Spec{Name: "1k", Entities: 1_000, Relationships: 5_000, Entries: 10_000, Chunks: 1_000,
		EntriesPerSession: 5_000, Dims: 384, Seed: 1,
		// Not glyphoxa_bench_1k, which held the denser 1k campaign of
		// earlier versions: a run of one does not drop the other's.
		Database: "glyphoxa_bench_1k_even"}
	Scale100k = Spec{Name: "100k", Entities: 100_000, Relationships: 500_000, Entries: 1_000_000, Chunks: 100_000,
		EntriesPerSession: 5_000, Dims: 384, Seed: 1}
)

// Key identifies a spec's data; a database generated for one key is reused.
func (s Spec) Key() string {
	return fmt.Sprintf("e%d-r%d-t%d-c%d-p%d-d%d-s%d-v2", s.Entities, s.Relationships, s.Entries, s.Chunks,
		s.EntriesPerSession, s.Dims, s.Seed)
}

// Density is a spec's shape per entity: what a campaign of its size holds
// around each entity.
type Density struct {
	// Relationships, Lines and Chunks are per entity; ChunkLinks is the
	// chunk–entity links per entity, LinesPerSession and ChunksPerSession
	// the length of a session.
	Relationships, Lines, Chunks, ChunkLinks float64
	LinesPerSession, ChunksPerSession        float64
}

// Density returns the spec's density as generated: every chunk links
// [ChunkEntities] of them (3).
func (s Spec) Density() Density {
	e := float64(max(s.Entities, 1))
	return Density{Relationships: float64(s.Relationships) / e, Lines: float64(s.Entries) / e,
		Chunks: float64(s.Chunks) / e, ChunkLinks: float64(s.Chunks*chunkLinks) / e,
		LinesPerSession:  float64(s.EntriesPerSession),
		ChunksPerSession: float64(s.Chunks) / float64(s.Sessions())}
}

// chunkLinks is how many entities a chunk links.
const chunkLinks = 3

// DatabaseName is the database `glyphoxa bench` keeps the campaign in.
func (s Spec) DatabaseName() string {
	if s.Database != "" {
		return s.Database
	}
	return "glyphoxa_bench_" + s.Name
}

// Sessions is the number of sessions the spec generates.
func (s Spec) Sessions() int { return max(1, (s.Entries+s.EntriesPerSession-1)/s.EntriesPerSession) }

// clusterSize is the number of entities in one neighbourhood (a town, a
// faction and its people). It is the same at every scale, so a traversal
// from an entity meets the same amount of graph at 1k and at 100k entities.
const clusterSize = 50

// Start is the time the first synthetic session starts.
var Start = time.Date(2025, 1, 4, 18, 0, 0, 0, time.UTC)

// EntryInterval is the time between two transcript entries.
const EntryInterval = 3 * time.Second

var syllables = []string{
	"ka", "dor", "vex", "thal", "mir", "gor", "el", "an", "bri", "zul", "ra", "nok", "sil", "ur", "fen", "tor",
	"ly", "mar", "quo", "ish", "bel", "drak", "om", "pra", "shi", "ven", "gal", "oth", "ryn", "sa", "tu", "wen",
	"yar", "cor", "dun", "fi", "hal", "jor", "kel", "lun", "mo", "nar", "per", "ros", "sten", "tha", "vil", "wyr",
	"zen", "ab", "cy", "ed", "il", "ob", "ux", "ar", "bo", "ce", "di", "ga",
}

// EntityID returns the id of entity i.
func EntityID(i int) string { return fmt.Sprintf("e%06d", i) }

// EntityName returns a unique pronounceable name for entity i.
func EntityName(i int) string {
	n := len(syllables)
	s := syllables[i%n] + syllables[(i/n)%n] + syllables[(i/(n*n))%n]
	if i >= n*n*n {
		s += syllables[(i/(n*n*n))%n]
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// SessionID returns the id of session i.
func SessionID(i int) string { return fmt.Sprintf("s%04d", i) }

var entityTypes = []struct {
	name   string
	weight int
}{{"npc", 40}, {"location", 20}, {"item", 15}, {"event", 10}, {"faction", 5}, {"quest", 5}, {"concept", 5}}

// EntityType returns the type of entity i.
func EntityType(i int) string {
	h := int(splitmix(uint64(i)) % 100)
	for _, t := range entityTypes {
		if h < t.weight {
			return t.name
		}
		h -= t.weight
	}
	return "concept"
}

var relTypes = []string{"KNOWS", "LOCATED_AT", "MEMBER_OF", "ALLIED_WITH", "HOSTILE_TO", "OWNS", "EMPLOYED_BY",
	"PARTICIPATED_IN", "QUEST_GIVER", "CHILD_OF"}

var words = strings.Fields(`sword forge hammer tavern ale gold coin dragon tower vault guild road forest
	river bridge gate shadow fire storm crown ring map key letter secret promise debt feather rune blade
	shield armour potion scroll temple priest king queen merchant thief guard captain ship harbour mine cave
	wolf goblin orc troll ghost crypt ruin festival market winter summer night dawn dusk prophecy curse`)

var phrases = []string{
	"We should ask %s about the %s",
	"I think %s knows where the %s is",
	"%s said the %s was stolen near the %s",
	"Let's go back to %s before the %s closes",
	"Did anyone else notice the %s that %s was carrying",
	"I roll to persuade %s to give us the %s",
	"The %s reminds me of what %s told us",
	"%s looks nervous when we mention the %s",
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// neighbour picks a related entity for i: usually in its own cluster,
// sometimes anywhere.
func neighbour(r *rand.Rand, i, n int) int {
	if r.IntN(10) == 0 || n <= clusterSize {
		return r.IntN(n)
	}
	first := i - i%clusterSize
	return first + r.IntN(min(clusterSize, n-first))
}

// EntityVector returns the deterministic embedding direction of entity i.
func EntityVector(i, dims int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, uint64(i)+1<<40))
	v := make([]float32, dims)
	for k := range v {
		v[k] = float32(r.NormFloat64())
	}
	normalise(v)
	return v
}

func normalise(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for k := range v {
		v[k] *= inv
	}
}

// ChunkEntities returns the entities chunk c mentions (three neighbours in
// one cluster).
func ChunkEntities(c, entities int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed^0xc4, uint64(c)))
	a := r.IntN(entities)
	out := []int{a}
	for len(out) < chunkLinks {
		b := neighbour(r, a, entities)
		dup := false
		for _, x := range out {
			dup = dup || x == b
		}
		if !dup {
			out = append(out, b)
		}
		if entities < chunkLinks {
			break
		}
	}
	return out
}

// ChunkVector returns the embedding of chunk c: the sum of its entities'
// directions plus noise, normalised.
func ChunkVector(c int, s Spec) []float32 {
	v := make([]float32, s.Dims)
	for _, e := range ChunkEntities(c, s.Entities, s.Seed) {
		for k, x := range EntityVector(e, s.Dims, s.Seed) {
			v[k] += x
		}
	}
	r := rand.New(rand.NewPCG(s.Seed^0x77, uint64(c)))
	for k := range v {
		v[k] += float32(r.NormFloat64() * 0.05)
	}
	normalise(v)
	return v
}

// Progress receives a line of progress.
type Progress func(format string, args ...any)

// Generate writes the spec's campaign into an empty, migrated database
// through conn, which must have pgvector's types registered. It drops the
// bulk indexes while loading and rebuilds them after.
func Generate(ctx context.Context, conn *pgx.Conn, campaign string, s Spec, progress Progress) error {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if _, err := conn.Exec(ctx, "INSERT INTO campaigns (id) VALUES ($1) ON CONFLICT DO NOTHING", campaign); err != nil {
		return err
	}
	step := func(name string, f func() (int64, error)) error {
		t := time.Now()
		n, err := f()
		if err != nil {
			return fmt.Errorf("generating %s: %w", name, err)
		}
		progress("  %-22s %9d rows  %6.1fs", name, n, time.Since(t).Seconds())
		return nil
	}
	// Entities.
	err := step("entities", func() (int64, error) {
		i := 0
		return conn.CopyFrom(ctx, pgx.Identifier{"entities"}, []string{"campaign_id", "id", "type", "name", "aliases", "attributes"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i >= s.Entities {
					return nil, nil
				}
				row := []any{campaign, EntityID(i), EntityType(i), EntityName(i), []string{},
					map[string]any{"description": fmt.Sprintf("%s of the %s", EntityType(i), words[i%len(words)]),
						"rank": i % 7}}
				i++
				return row, nil
			}))
	})
	if err != nil {
		return err
	}
	// Relationships: unique (source, target, type), clustered.
	err = step("relationships", func() (int64, error) {
		r := rand.New(rand.NewPCG(s.Seed, 0x2e1))
		seen := make(map[[3]int]bool, s.Relationships)
		n := 0
		at := Start
		return conn.CopyFrom(ctx, pgx.Identifier{"relationships"},
			[]string{"campaign_id", "source_id", "target_id", "rel_type", "attributes", "session_id", "established_at",
				"confidence", "source", "dm_confirmed", "status", "created_at", "updated_at"},
			pgx.CopyFromFunc(func() ([]any, error) {
				for n < s.Relationships {
					src := n * s.Entities / max(s.Relationships, 1)
					dst := neighbour(r, src, s.Entities)
					t := r.IntN(len(relTypes))
					key := [3]int{src, dst, t}
					if dst == src || seen[key] {
						n++ // keep the count deterministic: skip, do not retry
						continue
					}
					seen[key] = true
					n++
					conf := 0.7 + 0.3*r.Float64()
					status := "active"
					if r.IntN(20) == 0 {
						conf, status = 0.3+0.39*r.Float64(), "pending"
					}
					sess := r.IntN(s.Sessions())
					ts := at.Add(time.Duration(n) * time.Second)
					return []any{campaign, EntityID(src), EntityID(dst), relTypes[t], map[string]any{"weight": r.IntN(10)},
						SessionID(sess), ts, conf, "stated", false, status, ts, ts}, nil
				}
				return nil, nil
			}))
	})
	if err != nil {
		return err
	}
	// Sessions and transcript.
	err = step("sessions", func() (int64, error) {
		i := 0
		return conn.CopyFrom(ctx, pgx.Identifier{"sessions"}, []string{"campaign_id", "id", "started_at", "ended_at"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i >= s.Sessions() {
					return nil, nil
				}
				start := SessionStart(i)
				row := []any{campaign, SessionID(i), start, start.Add(time.Duration(s.EntriesPerSession) * EntryInterval)}
				i++
				return row, nil
			}))
	})
	if err != nil {
		return err
	}
	err = step("transcript entries", func() (int64, error) {
		r := rand.New(rand.NewPCG(s.Seed, 0x71))
		i := 0
		return conn.CopyFrom(ctx, pgx.Identifier{"transcript_entries"},
			[]string{"campaign_id", "session_id", "speaker_id", "speaker_name", "npc_id", "text", "raw_text", "at", "duration_ms", "idempotency_key"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i >= s.Entries {
					return nil, nil
				}
				sess := i / s.EntriesPerSession
				at := SessionStart(sess).Add(time.Duration(i%s.EntriesPerSession) * EntryInterval)
				text := sentence(r, s.Entities)
				speaker, name, npc := fmt.Sprintf("u%d", r.IntN(5)+1), "", ""
				name = "Player " + speaker[1:]
				if r.IntN(4) == 0 {
					e := r.IntN(s.Entities)
					speaker, name, npc = EntityID(e), EntityName(e), EntityID(e)
				}
				row := []any{campaign, SessionID(sess), speaker, name, npc, text, strings.ToLower(text), at, 2000 + r.IntN(4000),
					fmt.Sprintf("bench:%d", i)}
				i++
				return row, nil
			}))
	})
	if err != nil {
		return err
	}
	// Chunks, without their HNSW index while loading.
	if _, err := conn.Exec(ctx, "DROP INDEX IF EXISTS chunks_embedding_hnsw"); err != nil {
		return err
	}
	err = step("chunks", func() (int64, error) {
		c := 0
		per := max(1, s.Chunks/s.Sessions())
		r := rand.New(rand.NewPCG(s.Seed, 0xc0))
		return conn.CopyFrom(ctx, pgx.Identifier{"chunks"},
			[]string{"campaign_id", "id", "session_id", "content", "embedding", "speaker_ids", "start_at", "end_at"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if c >= s.Chunks {
					return nil, nil
				}
				sess := min(c/per, s.Sessions()-1)
				start := SessionStart(sess).Add(time.Duration(c%per) * time.Minute)
				ents := ChunkEntities(c, s.Entities, s.Seed)
				var b strings.Builder
				for _, e := range ents {
					b.WriteString(fill(phrases[r.IntN(len(phrases))], EntityName(e), words[r.IntN(len(words))], words[r.IntN(len(words))]))
					b.WriteString(". ")
				}
				row := []any{campaign, fmt.Sprintf("c%07d", c), SessionID(sess), strings.TrimSpace(b.String()),
					pgvector.NewVector(ChunkVector(c, s)), []string{"u1", "u2"}, start, start.Add(time.Minute)}
				c++
				return row, nil
			}))
	})
	if err != nil {
		return err
	}
	err = step("chunk entity links", func() (int64, error) {
		c, k := 0, 0
		var ents []int
		return conn.CopyFrom(ctx, pgx.Identifier{"chunk_entities"}, []string{"campaign_id", "chunk_id", "entity_id"},
			pgx.CopyFromFunc(func() ([]any, error) {
				for c < s.Chunks {
					if k == 0 {
						ents = ChunkEntities(c, s.Entities, s.Seed)
					}
					if k < len(ents) {
						row := []any{campaign, fmt.Sprintf("c%07d", c), EntityID(ents[k])}
						k++
						return row, nil
					}
					c, k = c+1, 0
				}
				return nil, nil
			}))
	})
	if err != nil {
		return err
	}
	err = step("HNSW index", func() (int64, error) {
		if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '1GB'"); err != nil {
			return 0, err
		}
		_, err := conn.Exec(ctx, "CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops)")
		return int64(s.Chunks), err
	})
	if err != nil {
		return err
	}
	// What the generation logged marks where the benchmark's own writes
	// begin (see Restore).
	if _, err := conn.Exec(ctx, `INSERT INTO glyphoxa_meta (key, value)
		SELECT $1, coalesce(max(id), 0)::text FROM graph_changes WHERE campaign_id = $2
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, changesKey(campaign), campaign); err != nil {
		return fmt.Errorf("recording the generated change log: %w", err)
	}
	// VACUUM as well as ANALYZE: a freshly loaded table has no visibility
	// map, so every index-only scan also reads the table's pages, which a
	// database in use (autovacuum) does not; the benchmark measures the
	// latter.
	_, err = conn.Exec(ctx, "VACUUM (ANALYZE)")
	return err
}

// The benchmark's write operations write only these: entities whose id
// starts with WrittenEntityPrefix and facts of type WrittenRelType (no
// generated fact has it), so that [Restore] can take them out again.
const (
	WrittenEntityPrefix = "new-"
	WrittenRelType      = "RUMOURED"
)

func changesKey(campaign string) string { return "bench_changes:" + campaign }

// DB is what Restore needs of a connection or pool.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Restore takes out of a generated campaign what a benchmark run wrote
// (entities named by WrittenEntityPrefix, facts of WrittenRelType and the
// change log entries after the generation's), so that repeated runs measure
// the campaign as generated instead of one that grows with every run. It
// reports how many entities and facts it removed. A campaign generated
// before the change log's end was recorded has it worked out once, from
// the rows the benchmark writes, and recorded.
func Restore(ctx context.Context, db DB, campaign string) (entities, facts int64, err error) {
	var mark int64
	err = db.QueryRow(ctx, "SELECT value::bigint FROM glyphoxa_meta WHERE key = $1", changesKey(campaign)).Scan(&mark)
	if errors.Is(err, pgx.ErrNoRows) {
		err = db.QueryRow(ctx, `SELECT coalesce(max(g.id), 0) FROM graph_changes g WHERE g.campaign_id = $1 AND g.op = 'insert'
			AND NOT (g.kind = 'entity' AND starts_with(g.ref, $2))
			AND NOT (g.kind = 'fact' AND g.ref IN (SELECT r.id::text FROM relationships r WHERE r.campaign_id = $1 AND r.rel_type = $3))`,
			campaign, WrittenEntityPrefix, WrittenRelType).Scan(&mark)
		if err == nil {
			_, err = db.Exec(ctx, "INSERT INTO glyphoxa_meta (key, value) VALUES ($1, $2)", changesKey(campaign), fmt.Sprint(mark))
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("finding the generated change log's end: %w", err)
	}
	tag, err := db.Exec(ctx, "DELETE FROM relationships WHERE campaign_id = $1 AND rel_type = $2", campaign, WrittenRelType)
	if err != nil {
		return 0, 0, fmt.Errorf("removing the benchmark's facts: %w", err)
	}
	facts = tag.RowsAffected()
	tag, err = db.Exec(ctx, "DELETE FROM entities WHERE campaign_id = $1 AND starts_with(id, $2)", campaign, WrittenEntityPrefix)
	if err != nil {
		return 0, facts, fmt.Errorf("removing the benchmark's entities: %w", err)
	}
	entities = tag.RowsAffected()
	if _, err := db.Exec(ctx, "DELETE FROM graph_changes WHERE campaign_id = $1 AND id > $2", campaign, mark); err != nil {
		return entities, facts, fmt.Errorf("removing the benchmark's change log: %w", err)
	}
	return entities, facts, nil
}

// SessionStart is when synthetic session i starts: weekly game nights.
func SessionStart(i int) time.Time { return Start.Add(time.Duration(i) * 7 * 24 * time.Hour) }

// sentence returns a line of table talk naming one entity half the time.
func sentence(r *rand.Rand, entities int) string {
	p := phrases[r.IntN(len(phrases))]
	name := "the party"
	if r.IntN(2) == 0 {
		name = EntityName(r.IntN(entities))
	}
	return fill(p, name, words[r.IntN(len(words))], words[r.IntN(len(words))])
}

// fill formats phrase p with as many of args as it has verbs.
func fill(p string, args ...string) string {
	n := strings.Count(p, "%s")
	as := make([]any, n)
	for i := range as {
		as[i] = args[i]
	}
	return fmt.Sprintf(p, as...)
}
