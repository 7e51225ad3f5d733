package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// traversalWorld is a generated campaign for comparing Neighbors with a
// walk built from one-hop reads: towns of related entities with a few
// roads between them, facts of every status, secret facts (some known to
// an NPC), entities with and without secret attributes, and names that
// differ only in case.
type traversalWorld struct {
	ids  []string
	npc  string // the NPC whose view is checked
	lone string // an entity without facts
}

// traversalTypes are the relation types of the generated facts (none
// single-valued, so every write lands as written).
var traversalTypes = []string{"KNOWS", "OWNS", "MEMBER_OF", "ALLIED_WITH", "FEARS"}

func seedTraversalWorld(t testing.TB, c *postgres.Campaign, entities, facts int) traversalWorld {
	t.Helper()
	ctx := context.Background()
	ok := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	g := c.Graph()
	r := rand.New(rand.NewPCG(28, 1))
	names := []string{"Ada", "ADA", "Bree", "bree", "Corvin", "Dara", "Elowen", "Fenn", "Gorrim", "Hesper", "Ilsa", "Jory"}
	attrs := []map[string]any{
		{},
		{"mood": "calm", "rank": 3},
		{"secret_plan": "flee at dawn", "mood": "tense"},
		{"Gm_Notes": "a spy", "title": "Lady"},
		{"history": map[string]any{"secret": true, "told": "no"}, "kin": []any{1, map[string]any{"dm_x": 2}, nil}},
		{"motto": "no secret survives", "hiddenness": 1},
		{"known_by": []any{"n005"}, "age": 40},
		{"notes": "public", "dm": "not a prefix", "items": []any{"map", map[string]any{"secret": false, "a": "b"}}},
	}
	w := traversalWorld{npc: "n005"}
	var es []memory.Entity
	for i := range entities {
		id := fmt.Sprintf("n%03d", i)
		w.ids = append(w.ids, id)
		typ := memory.EntityNPC
		if i%3 == 1 {
			typ = memory.EntityLocation
		}
		es = append(es, memory.Entity{ID: id, Type: typ, Name: names[r.IntN(len(names))],
			Aliases: []string{fmt.Sprintf("alias %d", i)}, Attributes: attrs[r.IntN(len(attrs))]})
	}
	w.lone = fmt.Sprintf("n%03d", entities)
	es = append(es, memory.Entity{ID: w.lone, Type: memory.EntityItem, Name: "Lone Ring"})
	ok(g.UpsertEntities(ctx, es))
	const town = 12
	for range facts {
		a := r.IntN(entities)
		b := a - a%town + r.IntN(town)
		if r.IntN(10) == 0 {
			b = r.IntN(entities) // a road to another town
		}
		if b >= entities || a == b {
			continue
		}
		f := memory.Relationship{SourceID: w.ids[a], TargetID: w.ids[b], Type: traversalTypes[r.IntN(len(traversalTypes))],
			Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceStated, DMConfirmed: true}}
		switch x := r.IntN(20); {
		case x == 0:
			f.Attributes = map[string]any{memory.AttrSecret: true}
		case x == 1:
			f.Attributes = map[string]any{memory.AttrSecret: true, memory.AttrKnownBy: []any{w.npc}}
		case x == 2:
			f.Provenance = memory.Provenance{Confidence: 0.1, Source: memory.SourceInferred} // pending
		}
		stored, err := g.UpsertRelationship(ctx, f)
		ok(err)
		switch x := r.IntN(20); {
		case stored.Status == memory.StatusPending && x < 7:
			_, err = g.RejectFact(ctx, stored.ID)
		case stored.Status == memory.StatusActive && x == 0:
			_, err = g.RetireFact(ctx, stored.ID, "s9")
		}
		ok(err)
	}
	return w
}

// oneHopNeighbors is the walk Neighbors promises, built from one-hop reads
// (Relationships: the viewer's active, visible edges of the types and
// directions asked for): the least number of hops to every entity within
// depth, nearest first, then by lower-cased name and id, with the public
// attributes of memory.PublicAttributes.
func oneHopNeighbors(t *testing.T, dm, viewer *postgres.Graph, ids []string, o memory.TraversalOpts) func(start string, depth int) []memory.Neighbor {
	t.Helper()
	ctx := ctxT(t)
	all := must[[][]memory.Relationship](t)(viewer.RelationshipsOfEach(ctx, ids, memory.TraversalOpts{RelTypes: o.RelTypes, Direction: o.Direction}))
	next := map[string][]string{}
	for i, rels := range all {
		for _, x := range rels {
			if x.SourceID == ids[i] {
				next[ids[i]] = append(next[ids[i]], x.TargetID)
			}
			if x.TargetID == ids[i] {
				next[ids[i]] = append(next[ids[i]], x.SourceID)
			}
		}
	}
	ents := map[string]memory.Entity{}
	for _, e := range must[[]memory.Entity](t)(dm.FindEntities(ctx, memory.EntityFilter{})) {
		e.Attributes = memory.PublicAttributes(e.Attributes)
		ents[e.ID] = e
	}
	return func(start string, depth int) []memory.Neighbor {
		seen := map[string]int{start: 0}
		frontier := []string{start}
		var out []memory.Neighbor
		for d := 1; d <= depth && len(frontier) > 0; d++ {
			var level []string
			for _, id := range frontier {
				for _, n := range next[id] {
					if _, ok := seen[n]; !ok {
						seen[n] = d
						level = append(level, n)
						out = append(out, memory.Neighbor{Entity: ents[n], Depth: d})
					}
				}
			}
			frontier = level
		}
		slices.SortFunc(out, func(a, b memory.Neighbor) int {
			if a.Depth != b.Depth {
				return a.Depth - b.Depth
			}
			if c := strings.Compare(strings.ToLower(a.Entity.Name), strings.ToLower(b.Entity.Name)); c != 0 {
				return c
			}
			return strings.Compare(a.Entity.ID, b.Entity.ID)
		})
		if o.Limit > 0 && len(out) > o.Limit {
			out = out[:o.Limit]
		}
		return out
	}
}

// Neighbors returns what a breadth-first walk over one-hop reads finds, for
// every reader, depth 1 to 4, relation-type and direction filters and
// limits: the same entities, hops, order and attributes. Pending, rejected
// and retired facts are not walked; secret facts only by those who may
// see them.
func TestNeighborsAgreeWithOneHopWalk(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	w := seedTraversalWorld(t, c, 120, 420)
	ctx := ctxT(t)
	statuses := map[memory.FactStatus]int{}
	all := []memory.FactStatus{memory.StatusActive, memory.StatusPending, memory.StatusRejected, memory.StatusRetired}
	for _, f := range must[[]postgres.FactWithNames](t)(c.Graph().FindFacts(ctx, postgres.FactQuery{Statuses: all, Limit: 10_000})) {
		statuses[f.Status]++
	}
	for _, st := range all {
		if statuses[st] == 0 {
			t.Fatalf("the world has no %s fact, so the test proves less than it says: %v", st, statuses)
		}
	}
	starts := []string{w.ids[0], w.ids[5], w.ids[17], w.ids[60], w.ids[119], w.npc, w.lone, "nobody"}
	opts := []memory.TraversalOpts{
		{},
		{RelTypes: []string{"KNOWS", "ALLIED_WITH"}},
		{Direction: memory.Outgoing},
		{Direction: memory.Incoming, RelTypes: []string{"OWNS", "FEARS", "MEMBER_OF"}},
		{Limit: 7},
	}
	far := 0
	for _, v := range []memory.Viewer{memory.DMViewer(), memory.PlayerViewer(), memory.NPCViewer(w.npc)} {
		g := mustAs(t, c, v).Graph()
		for _, o := range opts {
			want := oneHopNeighbors(t, c.Graph(), g, w.ids, o)
			for _, start := range starts {
				for depth := 1; depth <= 4; depth++ {
					got := must[[]memory.Neighbor](t)(g.Neighbors(ctx, start, depth, o))
					exp := want(start, depth)
					if depth == 4 && len(exp) > 30 {
						far++
					}
					if !sameNeighbors(got, exp) {
						t.Errorf("%s, %+v, from %s, depth %d:\n got  %s\n want %s", v, o, start, depth, describe(got), describe(exp))
					}
				}
			}
		}
	}
	if far == 0 {
		t.Fatal("no walk reached far, so the test proves little")
	}
	if got := must[[]memory.Neighbor](t)(c.Graph().Neighbors(ctx, w.ids[0], 0, memory.TraversalOpts{})); got != nil {
		t.Errorf("depth 0: %v, want nothing", got)
	}
}

func sameNeighbors(a, b []memory.Neighbor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Depth != y.Depth || x.Entity.ID != y.Entity.ID || x.Entity.Name != y.Entity.Name || x.Entity.Type != y.Entity.Type ||
			!slices.Equal(x.Entity.Aliases, y.Entity.Aliases) || !reflect.DeepEqual(x.Entity.Attributes, y.Entity.Attributes) {
			return false
		}
	}
	return true
}

func describe(ns []memory.Neighbor) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "%s@%d%v ", n.Entity.ID, n.Depth, n.Entity.Attributes)
	}
	return b.String()
}

// publicAttrs calls glyphoxa_public_attributes only for attributes whose
// text may hold a secret; on every other it must be the identity. Each
// case is read through the shortcut and through the function alone, and
// both must equal the Go definition.
func TestPublicAttrsShortcut(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	cases := []string{
		`{}`, `{"a": 1}`, `{"secret": true}`, `{"secret": false, "x": 1}`, `{"Secret": true}`, `{"SeCrEt_plan": 1}`,
		`{"GM_NOTES": 1}`, `{"Dm_x": 1}`, `{"HIDDEN": 1}`, `{"Known_By": ["n1"]}`, `{"NOTES_GM": 1}`, `{"notes_dm": 1}`,
		`{"notes": 1, "notes_x": 2, "dm": 3, "gm": 4, "known": 5}`,
		`{"a": {"b": {"c": [1, {"secret": true}, {"d": {"hidden_e": 1}}]}}}`,
		`{"a": [[[{"gm_x": 1, "y": 2}]]]}`,
		`{"motto": "no secret here", "q": "a \"secret\" in a value"}`,
		`{"x\"secret": 1, "back\\slash": {"secret": true}}`,
		`{" secret": 1, "secretive": 2, "ſecret": 3, "ＳＥＣＲＥＴ": 4, "Ｇｍ_": 5}`,
		`{"\u0073ecret": 1}`, `{"tab\tsecret": 1}`, `{"nul": null, "arr": [null, {"secret": true}]}`,
	}
	// Generated objects: keys from pieces that make and do not make a
	// secret, in mixed case, at random depths.
	r := rand.New(rand.NewPCG(28, 2))
	secret := []string{"secret", "gm_", "dm_", "hidden", "known_by", "notes_"}
	plain := []string{"notes", "gm", "dm", "mood", "sec", "x", "_", "\"", "é", "known", "hid"}
	piece := func() string {
		if r.IntN(12) == 0 {
			return secret[r.IntN(len(secret))]
		}
		return plain[r.IntN(len(plain))]
	}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(6); {
		case depth > 3 || k == 0:
			return r.IntN(100)
		case k == 1:
			return []any{gen(depth + 1), gen(depth + 1)}
		case k == 2 && r.IntN(4) == 0:
			return map[string]any{"secret": r.IntN(2) == 0, "v": gen(depth + 1)}
		default:
			m := map[string]any{}
			for range 1 + r.IntN(3) {
				key := piece() + piece()
				if r.IntN(2) == 0 {
					key = strings.ToUpper(key[:1]) + key[1:]
				}
				m[key] = gen(depth + 1)
			}
			return m
		}
	}
	for range 400 {
		b, _ := json.Marshal(map[string]any{"k": gen(0), piece(): gen(1)})
		cases = append(cases, string(b))
	}
	q := `SELECT ` + postgres.PublicAttrsSQLForTest("t") + `, glyphoxa_public_attributes(t.attributes),
		t.attributes::text ~* '"(` + postgres.SecretKeyStartsForTest + `)'
		FROM (SELECT $1::jsonb AS attributes) t`
	shortcut, exact := 0, 0
	for _, in := range cases {
		var fast, slow []byte
		var matched bool
		check(t, s.Pool().QueryRow(ctx, q, in).Scan(&fast, &slow, &matched))
		if matched {
			exact++
		} else {
			shortcut++
		}
		var v map[string]any
		check(t, json.Unmarshal([]byte(in), &v))
		var f, sl any
		check(t, json.Unmarshal(fast, &f))
		check(t, json.Unmarshal(slow, &sl))
		want := any(memory.PublicAttributes(v))
		wb, _ := json.Marshal(want)
		check(t, json.Unmarshal(wb, &want))
		if !reflect.DeepEqual(f, sl) || !reflect.DeepEqual(f, want) {
			t.Errorf("%s: shortcut %s, function %s, Go %s", in, fast, slow, wb)
		}
	}
	t.Logf("%d cases took the shortcut, %d the function", shortcut, exact)
	if shortcut < 20 || exact < 20 {
		t.Fatalf("%d cases took the shortcut and %d the function: both paths need cases", shortcut, exact)
	}
}

// BenchmarkNeighbors walks one and three hops through the graph of the 1k
// bench campaign (benchdata.Scale1k's entities and facts; few lines and
// chunks), as `glyphoxa bench` does. Run it with -benchmem for the
// allocations of a call; wall times depend on the machine's load.
func BenchmarkNeighbors(b *testing.B) {
	spec := benchdata.Spec{Name: "walk", Entities: benchdata.Scale1k.Entities, Relationships: benchdata.Scale1k.Relationships,
		Entries: 100, Chunks: 10, EntriesPerSession: 100, Dims: testDims, Seed: benchdata.Scale1k.Seed}
	s, dsn := pgtest.NewStore(b, spec.Dims)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		b.Fatal(err)
	}
	if err := benchdata.Generate(ctx, conn, "bench", spec, nil); err != nil {
		b.Fatal(err)
	}
	c, err := s.Campaign(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	g := c.Graph()
	for _, depth := range []int{1, 3} {
		b.Run(fmt.Sprintf("depth%d", depth), func(b *testing.B) {
			i, found := 0, 0
			for b.Loop() {
				ns, err := g.Neighbors(ctx, benchdata.EntityID(i*37%spec.Entities), depth, memory.TraversalOpts{})
				if err != nil {
					b.Fatal(err)
				}
				i++
				found += len(ns)
			}
			b.ReportMetric(float64(found)/float64(i), "entities/op")
		})
	}
}
