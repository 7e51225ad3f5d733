package postgres_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
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

// Neighbors decodes attributes itself (without copying the row's bytes
// and without reflection); it must read every object as scanning into a
// *map[string]any does, an absent one as an empty map, and refuse what
// is not an object.
func TestScanAttributesAsMap(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{}`, `{"a": 1, "b": 1.5e300, "c": -0, "d": 12345678901234567890}`,
		`{"s": "é\u00e9\ud83d\ude00\"\\", "n": null, "t": true, "arr": [1, "x", {"y": [null, {}]}]}`,
		`{"dup": 1, "dup": 2}`, `{"deep": {"a": {"b": {"c": {"d": [[[]]]}}}}}`, "{\"bad utf8\": \"\xff\"}"} {
		var want map[string]any
		check(t, json.Unmarshal([]byte(in), &want))
		got, err := postgres.ScanAttributesForTest([]byte(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, %v; want %#v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "null"} {
		got, err := postgres.ScanAttributesForTest([]byte(in))
		if in == "" {
			got, err = postgres.ScanAttributesForTest(nil)
		}
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("%q: got %#v, %v; want an empty map", in, got, err)
		}
	}
	for _, in := range []string{`[]`, `[{"a": 1}]`, `"x"`, `1`, `{"a": `, `{"a": 1} x`} {
		if got, err := postgres.ScanAttributesForTest([]byte(in)); err == nil {
			t.Errorf("%s: got %#v, want an error", in, got)
		}
	}
}

// publicAttrs reads the public attributes stored when an entity was
// written, computed by glyphoxa_public_attributes only for attributes
// whose text may hold a secret (migration 0029); on every other they must
// be the attributes themselves. Each case is read through the column and
// through the function alone, and both must equal the Go definition.
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
	// Each case is written as an entity, so that PostgreSQL computes its
	// stored public attributes (migration 0029) as it does for every
	// write, and read back through publicAttrs.
	c := pgtest.Campaign(t, s, "camp")
	q := `SELECT ` + postgres.PublicAttrsSQLForTest("e") + `, glyphoxa_public_attributes(e.attributes),
		e.attributes::text ~* '"(` + postgres.SecretKeyStartsForTest + `)'
		FROM entities e WHERE e.campaign_id = $1 AND e.id = $2`
	shortcut, exact := 0, 0
	for i, in := range cases {
		id := fmt.Sprintf("case-%d", i)
		_, err := s.Pool().Exec(ctx, `INSERT INTO entities (campaign_id, id, type, name, attributes) VALUES ($1, $2, 'thing', $2, $3::jsonb)`,
			c.ID(), id, in)
		check(t, err)
		var fast, slow []byte
		var matched bool
		check(t, s.Pool().QueryRow(ctx, q, c.ID(), id).Scan(&fast, &slow, &matched))
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
			t.Errorf("%s: stored %s, function %s, Go %s", in, fast, slow, wb)
		}
	}
	// The column's test for a possible secret is secretKeyStarts, as the
	// facts' shortcut below: a migration changing one must change both.
	var expr string
	check(t, s.Pool().QueryRow(ctx, `SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
		JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
		WHERE d.adrelid = 'entities'::regclass AND a.attname = 'public_attributes'`).Scan(&expr))
	if !strings.Contains(expr, `'"(`+postgres.SecretKeyStartsForTest+`)'`) {
		t.Errorf("entities.public_attributes is %s, which does not test for %q", expr, postgres.SecretKeyStartsForTest)
	}
	t.Logf("%d cases took the shortcut, %d the function", shortcut, exact)
	if shortcut < 20 || exact < 20 {
		t.Fatalf("%d cases took the shortcut and %d the function: both paths need cases", shortcut, exact)
	}
	// A fact's attributes as a player or an NPC reads them take the same
	// shortcut: they must equal, byte for byte, the exact expression
	// (glyphoxa_public_attributes without the "secret" marker, the marker
	// put back on a secret fact), also for values that are not objects.
	qf := `SELECT ` + postgres.FactAttrsSQLForTest("t") + `,
		glyphoxa_public_attributes(t.attributes - 'secret') || CASE WHEN t.attributes->'secret' = 'true'::jsonb THEN '{"secret": true}'::jsonb ELSE '{}'::jsonb END
		FROM (SELECT $1::jsonb AS attributes) t`
	for _, in := range append(cases, `[]`, `[1, "secret"]`, `[{"a": 1}]`) {
		var fast, slow string
		check(t, s.Pool().QueryRow(ctx, qf, in).Scan(&fast, &slow))
		if fast != slow {
			t.Errorf("fact attributes %s: shortcut %s, exact %s", in, fast, slow)
		}
	}
}

// benchWalkCampaign generates the graph of the 1k bench campaign in a
// fresh database (benchdata.Scale1k's entities and facts; few lines and
// chunks).
func benchWalkCampaign(b *testing.B) (*postgres.Campaign, benchdata.Spec) {
	b.Helper()
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
	return c, spec
}

// BenchmarkNeighbors walks one and three hops through the graph of the 1k
// bench campaign (benchdata.Scale1k's entities and facts; few lines and
// chunks), as `glyphoxa bench` does. Run it with -benchmem for the
// allocations of a call; wall times depend on the machine's load.
func BenchmarkNeighbors(b *testing.B) {
	c, spec := benchWalkCampaign(b)
	ctx := context.Background()
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

// visibleWalk is what VisibleSubgraph promises, computed in Go from the
// DM's lists of active facts and entities: the NPC, the other ends of its
// own edges, and whatever lies within depth hops outward along the scope's
// types over the facts it may see; the edges are its own and those of the
// scope among what it sees, with the attributes an NPC reads.
func visibleWalk(facts []memory.Relationship, ents map[string]memory.Entity, npc string, types []string, depth int) ([]memory.Entity, []memory.Relationship) {
	sees := func(f memory.Relationship) bool {
		if f.Attributes[memory.AttrSecret] != true || f.SourceID == npc || f.TargetID == npc {
			return true
		}
		switch k := f.Attributes[memory.AttrKnownBy].(type) {
		case []any:
			return slices.Contains(k, any(npc))
		case string:
			return k == npc
		case map[string]any:
			_, ok := k[npc]
			return ok
		}
		return false
	}
	own := func(f memory.Relationship) bool { return f.SourceID == npc || f.TargetID == npc }
	visited := map[string]bool{npc: true}
	var frontier []string
	for _, f := range facts {
		if own(f) && f.SourceID != f.TargetID {
			other := f.SourceID
			if other == npc {
				other = f.TargetID
			}
			if !visited[other] {
				visited[other] = true
				frontier = append(frontier, other)
			}
		}
	}
	for d := 1; d < depth && len(frontier) > 0; d++ {
		var next []string
		for _, f := range facts {
			if slices.Contains(frontier, f.SourceID) && slices.Contains(types, f.Type) && sees(f) && !visited[f.TargetID] {
				visited[f.TargetID] = true
				next = append(next, f.TargetID)
			}
		}
		frontier = next
	}
	var es []memory.Entity
	for id := range visited {
		e, ok := ents[id]
		if !ok {
			continue
		}
		if id != npc {
			e.Attributes = memory.PublicAttributes(e.Attributes)
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b memory.Entity) int {
		if (a.ID == npc) != (b.ID == npc) {
			if a.ID == npc {
				return -1
			}
			return 1
		}
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var rs []memory.Relationship
	for _, f := range facts {
		if own(f) || (slices.Contains(types, f.Type) && visited[f.SourceID] && visited[f.TargetID] && sees(f)) {
			attrs := map[string]any{}
			for k, v := range f.Attributes {
				if k != memory.AttrSecret {
					attrs[k] = v
				}
			}
			attrs = memory.PublicAttributes(attrs)
			if f.Attributes[memory.AttrSecret] == true {
				attrs[memory.AttrSecret] = true
			}
			f.Attributes = attrs
			rs = append(rs, f)
		}
	}
	slices.SortFunc(rs, func(a, b memory.Relationship) int { return cmp.Compare(a.ID, b.ID) })
	return es, rs
}

// VisibleSubgraph returns what the Go walk of visibleWalk finds, for the
// NPC's own handle and the DM's, every scope and depth 1 to 4: the same
// entities in the same order with the same attributes, and the same edges.
// Pending, rejected and retired facts are not walked; secret facts only by
// their ends and the NPCs that know them.
func TestVisibleSubgraphAgreesWithWalk(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	w := seedTraversalWorld(t, c, 120, 420)
	ctx := ctxT(t)
	var facts []memory.Relationship
	for _, f := range must[[]postgres.FactWithNames](t)(c.Graph().FindFacts(ctx, postgres.FactQuery{Statuses: []memory.FactStatus{memory.StatusActive}, Limit: 10_000})) {
		facts = append(facts, f.Relationship)
	}
	ents := map[string]memory.Entity{}
	for _, e := range must[[]memory.Entity](t)(c.Graph().FindEntities(ctx, memory.EntityFilter{})) {
		ents[e.ID] = e
	}
	scopes := [][]string{nil, {"KNOWS"}, {"OWNS", "FEARS", "MEMBER_OF"}}
	far, secretSeen, most := 0, 0, 0
	for _, npc := range []string{w.npc, w.ids[0], w.ids[17], w.ids[60], w.ids[119], w.lone} {
		for _, g := range []*postgres.Graph{c.Graph(), mustAs(t, c, memory.NPCViewer(npc)).Graph()} {
			for _, types := range scopes {
				for depth := 1; depth <= 4; depth++ {
					gotE, gotR := mustVisible(t, g, npc, memory.VisibilityScope{RelTypes: types, MaxDepth: depth})
					want := types
					if len(want) == 0 {
						want = memory.DefaultKnowledgeScope()
					}
					wantE, wantR := visibleWalk(facts, ents, npc, want, depth)
					if depth >= 3 && len(wantE) > 12 {
						far++ // beyond the NPC's own edges
					}
					most = max(most, len(wantE))
					for _, r := range wantR {
						if r.Attributes[memory.AttrSecret] == true && !(r.SourceID == npc || r.TargetID == npc) {
							secretSeen++
						}
					}
					if !sameEntities(gotE, wantE) {
						t.Errorf("%s, %v, depth %d: entities\n got  %s\n want %s", npc, types, depth, entityIDs(gotE), entityIDs(wantE))
					}
					if !sameFacts(gotR, wantR) {
						t.Errorf("%s, %v, depth %d: %d edges, want %d", npc, types, depth, len(gotR), len(wantR))
					}
				}
			}
		}
	}
	t.Logf("%d walks went beyond the NPC's own edges (the largest saw %d entities); %d secret edges were seen through known_by", far, most, secretSeen)
	if far == 0 || secretSeen == 0 {
		t.Fatalf("%d walks reached far and %d secret edges were seen through known_by: the test proves little", far, secretSeen)
	}
	if _, _, err := c.Graph().VisibleSubgraph(ctx, "nobody", memory.VisibilityScope{}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("an unknown NPC: %v, want not found", err)
	}
}

func sameEntities(a, b []memory.Entity) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Name != y.Name || x.Type != y.Type || !slices.Equal(x.Aliases, y.Aliases) ||
			!reflect.DeepEqual(jsonRoundTrip(x.Attributes), jsonRoundTrip(y.Attributes)) {
			return false
		}
	}
	return true
}

func sameFacts(a, b []memory.Relationship) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.SourceID != y.SourceID || x.TargetID != y.TargetID || x.Type != y.Type || x.Status != y.Status ||
			!reflect.DeepEqual(jsonRoundTrip(x.Attributes), jsonRoundTrip(y.Attributes)) {
			return false
		}
	}
	return true
}

// jsonRoundTrip is v as JSON decodes it (numbers as float64), so values
// built in Go and values read from the database compare alike.
func jsonRoundTrip(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func entityIDs(es []memory.Entity) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// BenchmarkVisibleSubgraph reads what an NPC can see (the default scope,
// 3 hops) in the graph of the 1k bench campaign, as each NPC's hot context
// does, through the NPC's own handle. Run it with -benchmem for the
// allocations of a call; wall times depend on the machine's load.
func BenchmarkVisibleSubgraph(b *testing.B) {
	c, spec := benchWalkCampaign(b)
	ctx := context.Background()
	i, ents, rels := 0, 0, 0
	for b.Loop() {
		npc := benchdata.EntityID(i * 37 % spec.Entities)
		as, err := c.As(memory.NPCViewer(npc))
		if err != nil {
			b.Fatal(err)
		}
		e, r, err := as.Graph().VisibleSubgraph(ctx, npc, memory.VisibilityScope{})
		if err != nil {
			b.Fatal(err)
		}
		i++
		ents, rels = ents+len(e), rels+len(r)
	}
	b.ReportMetric(float64(ents)/float64(i), "entities/op")
	b.ReportMetric(float64(rels)/float64(i), "facts/op")
}
