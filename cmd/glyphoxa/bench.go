package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/glyphoxa/glyphoxa/lifecycle/witness"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
	"github.com/glyphoxa/glyphoxa/memory/ppr"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
)

// benchOp is one measured memory operation.
type benchOp struct {
	name string
	// hot marks operations on an NPC turn's path, which must not slow down
	// as the campaign grows.
	hot bool
	// target is the latency the operation must stay under at 1k entities
	// (zero: no target).
	target time.Duration
	// goals are further targets, each at a scale and percentile.
	goals []benchGoal
	run   func(ctx context.Context, i int) error
}

// benchGoal is a latency target at one scale and percentile: "p99 at 100k
// ≤ 50 ms".
type benchGoal struct {
	scale string
	pct   int // 50, 95 or 99
	max   time.Duration
}

func (g benchGoal) String() string {
	return fmt.Sprintf("%s p%d ≤ %.0f ms", g.scale, g.pct, float64(g.max)/1e6)
}

// met tells whether r, measured at g's scale, meets g.
func (g benchGoal) met(r benchResult) bool {
	switch g.pct {
	case 50:
		return r.P50 <= g.max
	case 95:
		return r.P95 <= g.max
	default:
		return r.P99 <= g.max
	}
}

// benchResult is the latency distribution of one operation at one scale.
type benchResult struct {
	Op     string        `json:"op"`
	P50    time.Duration `json:"p50_ns"`
	P95    time.Duration `json:"p95_ns"`
	P99    time.Duration `json:"p99_ns"`
	hot    bool
	target time.Duration
	goals  []benchGoal
}

func cmdBench(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("bench", e)
	var sf storeFlags
	sf.register(fs)
	scales := fs.String("scale", "1k,100k", "comma-separated scales to run: 1k, 100k")
	iters := fs.Int("iterations", 300, "measured calls per operation (after 10% warm-up)")
	regen := fs.Bool("regenerate", false, "regenerate the benchmark databases even if they exist")
	asJSON := fs.Bool("json", false, "print JSON")
	only := fs.String("ops", "", "measure only the operations whose names contain this text (default all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := sf.loadConfig(e)
	if err != nil {
		return err
	}
	dsn, err := sf.resolveDSN(e, cfg)
	if err != nil {
		return err
	}
	var specs []benchdata.Spec
	for _, s := range strings.Split(*scales, ",") {
		switch strings.TrimSpace(s) {
		case "1k":
			specs = append(specs, benchdata.Scale1k)
		case "100k":
			specs = append(specs, benchdata.Scale100k)
		default:
			return usagef("unknown scale %q (want 1k or 100k)", s)
		}
	}
	results := map[string][]benchResult{}
	rtts := map[string]time.Duration{}
	loadBefore := loadAverage()
	for _, spec := range specs {
		res, rtt, err := benchScale(ctx, e, dsn, spec, *iters, *regen, *only)
		if err != nil {
			return fmt.Errorf("scale %s: %w", spec.Name, err)
		}
		results[spec.Name], rtts[spec.Name] = res, rtt
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"results": results, "select1": rtts})
	}
	printBench(e, specs, results, rtts)
	if l := loadAverage(); l != "" {
		// The latencies are wall times: the machine's other work is part
		// of them.
		fmt.Fprintf(e.stdout, "Load average (1, 5, 15 min): %s before, %s after.\n", loadBefore, l)
	}
	return nil
}

// loadAverage returns the system's load averages as /proc/loadavg gives
// them, or "" where there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// benchScale generates (or reuses) the scale's database and measures it.
func benchScale(ctx context.Context, e *env, serverDSN string, spec benchdata.Spec, iters int, regen bool, only string) ([]benchResult, time.Duration, error) {
	dsn, err := benchDatabase(ctx, e, serverDSN, spec, regen)
	if err != nil {
		return nil, 0, err
	}
	store, err := postgres.NewStore(ctx, dsn, spec.Dims, postgres.WithMaxConns(4))
	if err != nil {
		return nil, 0, err
	}
	defer store.Close()
	c, err := store.Campaign(ctx, "bench")
	if err != nil {
		return nil, 0, err
	}
	// The write operations' rows go again after the run (and any left by
	// an interrupted one before it): every run measures the campaign as
	// generated.
	restore := func(ctx context.Context) error {
		ents, facts, err := benchdata.Restore(ctx, store.Pool(), c.ID())
		if err == nil && ents+facts > 0 {
			printf(e.stderr, "  removed what the benchmark wrote: %d entities, %d facts\n", ents, facts)
		}
		return err
	}
	if err := restore(ctx); err != nil {
		return nil, 0, err
	}
	defer func() {
		if err := restore(context.WithoutCancel(ctx)); err != nil {
			printf(e.stderr, "  restoring the %s campaign: %v\n", spec.Name, err)
		}
	}()
	d, err := measuredDensity(ctx, store, c.ID())
	if err != nil {
		return nil, 0, err
	}
	printf(e.stderr, "measuring %s scale (%s): %d calls per operation\n", spec.Name, d, iters)
	var out []benchResult
	var rtt time.Duration
	ops, err := benchOps(store, c, spec)
	if err != nil {
		return nil, 0, err
	}
	for _, op := range ops {
		if op.name != "SELECT 1" && !strings.Contains(op.name, only) {
			continue
		}
		res, err := measure(ctx, op, iters)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", op.name, err)
		}
		if op.name == "SELECT 1" {
			rtt = res.P50
		}
		out = append(out, res)
	}
	return out, rtt, nil
}

// measuredDensity describes what a campaign holds per entity, counted: the
// bench campaigns of every scale must read alike (benchdata's Density).
func measuredDensity(ctx context.Context, s *postgres.Store, campaign string) (string, error) {
	var ents, facts, lines, chunks, links float64
	err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM entities WHERE campaign_id = $1),
		(SELECT count(*) FROM relationships WHERE campaign_id = $1), (SELECT count(*) FROM transcript_entries WHERE campaign_id = $1),
		(SELECT count(*) FROM chunks WHERE campaign_id = $1), (SELECT count(*) FROM chunk_entities WHERE campaign_id = $1)`, campaign).
		Scan(&ents, &facts, &lines, &chunks, &links)
	if err != nil {
		return "", fmt.Errorf("counting the bench campaign: %w", err)
	}
	ents = max(ents, 1)
	return fmt.Sprintf("%.0f entities; per entity %.1f facts, %.1f lines, %.1f chunks, %.1f chunk links",
		ents, facts/ents, lines/ents, chunks/ents, links/ents), nil
}

// benchDatabase returns the DSN of the database holding spec's campaign
// ("bench") on the server at serverDSN, generating it first when it is
// missing, holds another spec's campaign, or regen is set.
func benchDatabase(ctx context.Context, e *env, serverDSN string, spec benchdata.Spec, regen bool) (string, error) {
	dbName := spec.DatabaseName()
	dsn, err := dsnWithDatabase(serverDSN, dbName)
	if err != nil {
		return "", err
	}
	fresh, err := ensureBenchDatabase(ctx, serverDSN, dbName, spec, regen)
	if err != nil || !fresh {
		return dsn, err
	}
	printf(e.stderr, "generating the %s-entity benchmark campaign (once; reused by later runs)\n", spec.Name)
	s, err := postgres.NewStore(ctx, dsn, spec.Dims)
	if err != nil {
		return "", err
	}
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		return "", err
	}
	t := time.Now()
	err = benchdata.Generate(ctx, conn, "bench", spec, func(f string, a ...any) { printf(e.stderr, f+"\n", a...) })
	if err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO glyphoxa_meta (key, value) VALUES ('bench_key', $1)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, spec.Key()); err != nil {
		return "", err
	}
	printf(e.stderr, "  generated in %s\n", time.Since(t).Round(time.Second))
	return dsn, nil
}

// ensureBenchDatabase creates the scale's database if it is missing or holds
// data for another spec, and reports whether it is new.
func ensureBenchDatabase(ctx context.Context, serverDSN, name string, spec benchdata.Spec, regen bool) (bool, error) {
	admin, err := pgx.Connect(ctx, serverDSN)
	if err != nil {
		return false, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return false, err
	}
	if exists && !regen {
		dsn, _ := dsnWithDatabase(serverDSN, name)
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			var key string
			err := conn.QueryRow(ctx, "SELECT value FROM glyphoxa_meta WHERE key = 'bench_key'").Scan(&key)
			conn.Close(ctx)
			if err == nil && key == spec.Key() {
				return false, nil
			}
		}
	}
	if exists {
		if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return false, err
		}
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return true, err
}

func dsnWithDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parsing the DSN: %w", err)
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil
}

// measure runs op iters times after a warm-up and returns p50 and p99.
func measure(ctx context.Context, op benchOp, iters int) (benchResult, error) {
	warm := max(iters/10, 5)
	lat := make([]time.Duration, 0, iters)
	for i := range warm + iters {
		t := time.Now()
		if err := op.run(ctx, i); err != nil && !errors.Is(err, memory.ErrNotFound) {
			return benchResult{}, err
		}
		if i >= warm {
			lat = append(lat, time.Since(t))
		}
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return benchResult{Op: op.name, P50: pct(0.50), P95: pct(0.95), P99: pct(0.99), hot: op.hot, target: op.target, goals: op.goals}, nil
}

// benchOps are the measured operations. Each call picks its arguments from a
// deterministic random sequence.
func benchOps(s *postgres.Store, c *postgres.Campaign, spec benchdata.Spec) ([]benchOp, error) {
	r := rand.New(rand.NewPCG(42, 7))
	entity := func() string { return benchdata.EntityID(r.IntN(spec.Entities)) }
	near := func(a int) int { return a - a%50 + r.IntN(min(50, spec.Entities-(a-a%50))) }
	words := []string{"hammer", "tower", "secret", "gold", "dragon", "guild", "map", "debt"}
	common := []string{"party", "nervous", "persuade", "stolen", "gold", "dragon", "tavern", "secret"}
	g, l1, l2 := c.Graph(), c.Sessions(), c.Index()
	// The hot context is read as the table reads it: through the door, for
	// the DM, each NPC narrowing to its own handle.
	door, err := access.New(access.Config{Store: s})
	if err != nil {
		return nil, err
	}
	dc, err := door.Open(context.Background(), c.ID(), memory.DMViewer())
	if err != nil {
		return nil, err
	}
	hot := hotctx.New(dc, hotctx.Config{})
	var ret *retrieve.Retriever
	emb, rerr := embed.NewOffline(spec.Dims)
	if rerr != nil {
		return nil, rerr
	}
	ret, rerr = retrieve.New(c, emb, retrieve.Config{})
	var newEntity int
	var graph *ppr.Graph
	// The last five minutes of a busy table: 60 lines.
	var liveRecent []memory.TranscriptEntry
	for i := range 60 {
		liveRecent = append(liveRecent, memory.TranscriptEntry{SpeakerID: fmt.Sprintf("p%d", i%4), SpeakerName: fmt.Sprintf("Player %d", i%4),
			Text: "we should ask about the " + words[i%len(words)] + " before the night is over", At: time.Now().Add(time.Duration(i-60) * 5 * time.Second)})
	}
	// What the answering NPC witnessed by minute 45: 540 lines, one every
	// 5 s, a quarter of them said to it (lifecycle/witness); the table
	// sends its digest and the lines that bear on the question with the
	// turn, and the hot context searches no earlier lines itself.
	const listener = "bench-listener"
	wit := witness.New(witness.Config{Embedder: emb}) // no summariser: nothing runs in the background to stop
	start45 := time.Now().Add(-45 * time.Minute)
	for i := range 540 {
		key := fmt.Sprintf("bench:%d", i)
		wit.Heard(memory.TranscriptEntry{SpeakerID: fmt.Sprintf("p%d", i%4), SpeakerName: fmt.Sprintf("Player %d", i%4),
			Text: fmt.Sprintf("the %s of %s is kept near the %s, we will bring it back tomorrow", words[i%len(words)],
				benchdata.EntityName(i*37%spec.Entities), words[(i/3)%len(words)]),
			At: start45.Add(time.Duration(i) * 5 * time.Second), IdempotencyKey: key}, []string{listener})
		if i%4 == 0 {
			wit.SaidTo(key, listener)
		}
	}
	return []benchOp{
		{name: "SELECT 1", run: func(ctx context.Context, _ int) error {
			var one int
			return s.Pool().QueryRow(ctx, "SELECT 1").Scan(&one)
		}},
		{name: "identity snapshot", hot: true, target: 5 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			_, err := g.IdentitySnapshot(ctx, entity())
			return err
		}},
		{name: "neighbours depth 1", hot: true, target: 2 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			_, err := g.Neighbors(ctx, entity(), 1, memory.TraversalOpts{})
			return err
		}},
		{name: "3-hop traversal", target: 10 * time.Millisecond, goals: []benchGoal{{"1k", 95, 3 * time.Millisecond}}, run: func(ctx context.Context, _ int) error {
			_, err := g.Neighbors(ctx, entity(), 3, memory.TraversalOpts{})
			return err
		}},
		{name: "FindPath (same town)", run: func(ctx context.Context, _ int) error {
			a := r.IntN(spec.Entities)
			_, err := g.FindPath(ctx, benchdata.EntityID(a), benchdata.EntityID(near(a)), 4)
			return err
		}},
		{name: "GraphRAG text", hot: true, target: 20 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			_, err := g.QueryWithContext(ctx, words[r.IntN(len(words))]+" or "+words[r.IntN(len(words))],
				memory.GraphScope{EntityIDs: []string{entity()}, Depth: 1})
			return err
		}},
		{name: "GraphRAG vector", hot: true, target: 20 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			_, err := g.QueryWithEmbedding(ctx, benchdata.ChunkVector(r.IntN(spec.Chunks), spec), 10,
				memory.GraphScope{EntityIDs: []string{entity()}, Depth: 1})
			return err
		}},
		{name: "entity upsert", target: 2 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			newEntity++
			return g.UpsertEntity(ctx, memory.Entity{ID: fmt.Sprintf("%s%d", benchdata.WrittenEntityPrefix, newEntity), Type: "npc",
				Name: fmt.Sprintf("Newcomer %d", newEntity), Attributes: map[string]any{"mood": "curious"}})
		}},
		{name: "relationship upsert", target: 2 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			a := r.IntN(spec.Entities)
			_, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: benchdata.EntityID(a), TargetID: benchdata.EntityID(near(a)),
				Type: benchdata.WrittenRelType, Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceInferred}})
			return err
		}},
		{name: "hot context (NPC turn)", hot: true, target: 50 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			_, err := hot.Assemble(ctx, entity(), benchdata.SessionID(r.IntN(spec.Sessions())), 1500)
			return err
		}},
		{name: "hot context (live turn, minute 45)", hot: true, target: 20 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			// A live table's turn: the conversation of the last five minutes
			// comes with the request, with the NPC's digest of what it
			// witnessed and the earlier lines said to it that bear on the
			// question (recalled from the witness log of 540 lines).
			q := "what do you know about the " + words[r.IntN(len(words))] + " and the " + words[r.IntN(len(words))] + "?"
			said := wit.Recall(ctx, witness.Query{NPCID: listener, Text: q, Before: time.Now().Add(-5 * time.Minute)})
			used := len(wit.Digest(listener))
			for _, x := range said {
				used += len(x.Entry.Text) + 24
			}
			_, err := hot.AssembleTurn(ctx, hotctx.Request{NPCID: entity(), SessionID: benchdata.SessionID(r.IntN(spec.Sessions())),
				Budget: max(1500-used/hotctx.CharsPerToken, 375), Query: q, Live: true, Recent: liveRecent, Witnessed: true})
			return err
		}},
		{name: "hybrid retrieval (ask)", goals: []benchGoal{{"100k", 99, 50 * time.Millisecond}}, run: func(ctx context.Context, _ int) error {
			if rerr != nil {
				return rerr
			}
			_, err := ret.Search(ctx, retrieve.Query{Text: "what about " + benchdata.EntityName(r.IntN(spec.Entities)) + " and the " +
				words[r.IntN(len(words))] + "?", K: 10})
			return err
		}},
		{name: "graph refresh (no writes)", target: 5 * time.Millisecond, run: func(ctx context.Context, _ int) error {
			// The first (warm-up) call loads the graph; later ones pick up
			// what changed since, which is nothing.
			if graph == nil {
				gr, err := ppr.New(c, ppr.Config{})
				if err != nil {
					return err
				}
				if err := gr.Load(ctx); err != nil {
					return err
				}
				graph = gr
				return nil
			}
			n, err := graph.Refresh(ctx)
			if err == nil && n != 0 {
				err = fmt.Errorf("refresh without writes applied %d changes", n)
			}
			return err
		}},
		{name: "L1 recent (5 min)", hot: true, run: func(ctx context.Context, _ int) error {
			_, err := l1.GetRecent(ctx, benchdata.SessionID(r.IntN(spec.Sessions())), 5*time.Minute)
			return err
		}},
		{name: "L1 search", run: func(ctx context.Context, _ int) error {
			_, err := l1.Search(ctx, benchdata.EntityName(r.IntN(spec.Entities))+" "+words[r.IntN(len(words))], memory.SearchOpts{})
			return err
		}},
		// One word, as a DM or an agent types it into a search box: from a
		// word in half of the lines ("party") through an eighth
		// ("nervous") to one of the 66 filler words (about 2%).
		{name: "L1 search, one word", goals: []benchGoal{{"100k", 99, 50 * time.Millisecond}}, run: func(ctx context.Context, _ int) error {
			_, err := l1.Search(ctx, common[r.IntN(len(common))], memory.SearchOpts{Limit: 50})
			return err
		}},
		// A name alone, as the console's entity page looks up the lines
		// that mention an entity: a word the table's statistics do not
		// list, in about ten of a million lines.
		{name: "L1 search, a name", goals: []benchGoal{{"100k", 99, 50 * time.Millisecond}}, run: func(ctx context.Context, _ int) error {
			_, err := l1.Search(ctx, `"`+benchdata.EntityName(r.IntN(spec.Entities))+`"`, memory.SearchOpts{Limit: 10})
			return err
		}},
		{name: "L2 top-10", run: func(ctx context.Context, _ int) error {
			_, err := l2.Search(ctx, benchdata.ChunkVector(r.IntN(spec.Chunks), spec), 10, memory.ChunkFilter{})
			return err
		}},
	}, nil
}

func printBench(e *env, specs []benchdata.Spec, results map[string][]benchResult, rtts map[string]time.Duration) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
	w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	header := "operation\t"
	for _, s := range specs {
		header += fmt.Sprintf("%s p50 ms\t%s p95 ms\t%s p99 ms\t%s p50×RTT\t", s.Name, s.Name, s.Name, s.Name)
	}
	if len(specs) == 2 {
		header += "100k/1k p50\t"
	}
	header += "target\t"
	fmt.Fprintln(w, header)
	for i, op := range results[specs[0].Name] {
		line := op.Op + "\t"
		for _, s := range specs {
			r := results[s.Name][i]
			line += fmt.Sprintf("%s\t%s\t%s\t%.1f×\t", ms(r.P50), ms(r.P95), ms(r.P99), float64(r.P50)/float64(rtts[s.Name]))
		}
		verdict := ""
		if op.target > 0 {
			if r, ok := findResult(results["1k"], op.Op); ok {
				verdict = fmt.Sprintf("1k p50 < %s: %s", ms(op.target)+" ms", passMiss(r.P50 < op.target))
			}
		}
		for _, g := range op.goals {
			if r, ok := findResult(results[g.scale], op.Op); ok {
				if verdict != "" {
					verdict += "; "
				}
				verdict += g.String() + ": " + passMiss(g.met(r))
			}
		}
		if len(specs) == 2 {
			a, b := results[specs[0].Name][i], results[specs[1].Name][i]
			ratio := float64(b.P50) / float64(a.P50)
			line += fmt.Sprintf("%.2f×\t", ratio)
			if op.hot {
				if verdict != "" {
					verdict += "; "
				}
				verdict += "100k ≤ 1.5× 1k: " + passMiss(ratio <= 1.5)
			}
		}
		fmt.Fprintln(w, line+verdict+"\t")
	}
	w.Flush()
	fmt.Fprintln(e.stdout, "\nRTT = a bare SELECT 1 round trip on the same pool. The identity snapshot is one query (1 round trip).")
}

func findResult(rs []benchResult, op string) (benchResult, bool) {
	for _, r := range rs {
		if r.Op == op {
			return r, true
		}
	}
	return benchResult{}, false
}

func passMiss(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISS"
}
