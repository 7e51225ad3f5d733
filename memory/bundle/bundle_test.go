package bundle_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const (
	dims     = 4
	sample   = "../../testdata/campaigns/ironhold-saga.yaml"
	campaign = "ironhold-saga"
)

var now = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// played builds a campaign as a played one stands: the sample's sessions
// and facts, then evidence, a superseded fact (history and a link), a
// player's pending fact in conflict with canon, a rejected one, a summary,
// chunks with embeddings, processing state, an opt-out, a forgotten
// player, an agent's proposal naming a fact, and the DM's private notes.
func played(t *testing.T, s *postgres.Store) *postgres.Campaign {
	t.Helper()
	ctx := context.Background()
	c := pgtest.Import(t, s, sample)
	g := c.Graph()
	// A fourth player says something, then asks to be forgotten.
	must[bool](t)(c.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s2", SpeakerID: "u9", SpeakerName: "Quill",
		Text: "My secret word is zanzibarquux.", At: time.Date(2026, 3, 8, 20, 40, 0, 0, time.UTC)}))
	lines := must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctx, "s1"))
	facts := must[[]postgres.FactWithNames](t)(g.FindFacts(ctx, postgres.FactQuery{Limit: 1000}))
	for i, f := range facts[:4] {
		if err := g.AddEvidence(ctx, f.ID, []int64{lines[i].ID, lines[i+1].ID}); err != nil {
			t.Fatal(err)
		}
	}
	// The DM moves Elara: the tower fact is retired, superseded.
	w := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "elara", TargetID: "sunken-vault",
		Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s2", Confidence: 1, Source: memory.SourceStated}}, "she went below"))
	if err := g.AddEvidence(ctx, w.Fact.ID, []int64{lines[2].ID}); err != nil {
		t.Fatal(err)
	}
	// A player proposes Grimjaw elsewhere (pending, in conflict with canon), and a fact the DM rejects.
	must[memory.FactWrite](t)(g.WriteFact(ctx, memory.Player("u1"), memory.Relationship{SourceID: "grimjaw", TargetID: "duskwood",
		Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.7, Source: memory.SourceStated}}, ""))
	rej := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.Player("u2"), memory.Relationship{SourceID: "vexa", TargetID: "grimjaw",
		Type: "KNOWS", Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.6, Source: memory.SourceInferred}}, ""))
	must[memory.Relationship](t)(g.RejectFact(ctx, rej.Fact.ID))
	if err := c.Sessions().SaveSummary(ctx, "s2", "The coin led to the Sunken Vault; Vexa wears black feathers."); err != nil {
		t.Fatal(err)
	}
	// Chunks with embeddings, and the processing state that made them.
	for i, sess := range []string{"s1", "s2"} {
		es := must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctx, sess))
		var text []string
		var speakers []string
		for _, e := range es {
			text = append(text, e.Text)
			if e.SpeakerID != "" && !slices.Contains(speakers, e.SpeakerID) {
				speakers = append(speakers, e.SpeakerID)
			}
		}
		err := c.Index().IndexChunks(ctx, []memory.Chunk{{ID: sess + "-0", SessionID: sess, Content: strings.Join(text, " "),
			Embedding: []float32{float32(i) + 0.5, 0.25, -1, 0.125}, SpeakerIDs: speakers, EntityIDs: []string{"grimjaw", "elara"},
			StartAt: es[0].At, EndAt: es[len(es)-1].At}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Processing().Save(ctx, sess, "chunks", len(es), true); err != nil {
			t.Fatal(err)
		}
	}
	// The extraction cache quotes the player who will be forgotten.
	if err := c.Processing().SaveWindow(ctx, "s2", 0, "h", []byte(`{"quote": "zanzibarquux"}`)); err != nil {
		t.Fatal(err)
	}
	must[memory.ForgetReport](t)(c.ForgetSpeaker(ctx, "u9"))
	if err := c.OptOut(ctx, "u9"); err != nil {
		t.Fatal(err)
	}
	// An agent proposes retiring a fact; the DM keeps private notes.
	forged := must[int64](t)(c.CanonFactID(ctx, "grimjaw", "vault-key", "FORGED"))
	must[int64](t)(c.Propose(ctx, "delete_edge", map[string]string{"id": fmt.Sprint(forged)}, "mcp:player:agent"))
	must[postgres.KGNode](t)(c.KGPutNode(ctx, postgres.KGDM, postgres.KGNodeInput{ID: "plot", Gist: "the dragon wants the key"}, now))
	must[postgres.KGNode](t)(c.KGPutNode(ctx, postgres.KGDM, postgres.KGNodeInput{ID: "twist", Gist: "Elara is the heir",
		Touches: []string{"plot", "notes/arc.md:12"}, Notes: []string{"reveal in s4", "only if they ask"}}, now))
	if err := c.KGPutDMEdge(ctx, "plot", "twist", "LEADS_TO", []string{"slowly"}, now); err != nil {
		t.Fatal(err)
	}
	if err := c.KGPutDMEdge(ctx, "twist", "notes/arc.md:12", "WRITTEN_IN", nil, now); err != nil {
		t.Fatal(err)
	}
	if err := c.KGPutArtifactEdge(ctx, "grimjaw", "maps/ironhold.png", "DRAWN_ON", []string{"the forge is marked"}, now); err != nil {
		t.Fatal(err)
	}
	if err := c.SetKGLimit(ctx, 4321); err != nil {
		t.Fatal(err)
	}
	// Per-player knowledge: a character, presence spans (the second one
	// while the DM has split the party), a whisper and a granted fact.
	must[postgres.PlayerCharacter](t)(c.SetPlayerCharacter(ctx, "u1", "thorin"))
	for i, ps := range [][]string{{"u1", "u2"}, {"u2"}} {
		if err := c.Sessions().RecordPresence(ctx, "s1", time.Date(2026, 3, 1, 19, i, 0, 0, time.UTC), ps, i == 1); err != nil {
			t.Fatal(err)
		}
	}
	must[postgres.Grant](t)(c.AddGrant(ctx, "u1", "the seal is in the well", 0, "s1"))
	must[postgres.Grant](t)(c.AddGrant(ctx, "u2", "", forged, "s1"))
	return c
}

func export(t *testing.T, s *postgres.Store, id string) []byte {
	t.Helper()
	var b bytes.Buffer
	must[bundle.Counts](t)(bundle.Export(context.Background(), s.Pool(), id, &b, now))
	return b.Bytes()
}

// TestRoundTrip exports a played campaign and imports it into a new
// campaign of the same database and into a fresh database: entities,
// facts (with history, evidence, links and conflicts), sessions, lines,
// chunks, privacy state, proposals and the DM's notes are equal, and
// exporting the copy gives the same bundle up to the serial ids.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, dims)
	orig := played(t, s)
	b := export(t, s, campaign)
	if bytes.Contains(b, []byte("zanzibarquux")) {
		t.Fatal("the bundle holds what a forgotten player said")
	}
	fresh, _ := pgtest.NewStore(t, dims)
	targets := []struct {
		name  string
		store *postgres.Store
		id    string
	}{
		{"another campaign", s, "ironhold-copy"},
		{"a fresh database", fresh, campaign},
	}
	want := snapshot(t, orig)
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) {
			res, err := bundle.Import(ctx, tc.store.Pool(), tc.id, bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts["relationships"] == 0 || res.Counts["fact_evidence"] == 0 || res.Counts["transcript_entries"] == 0 || res.Unembedded != 0 {
				t.Fatalf("import result %+v", res)
			}
			got := snapshot(t, pgtest.Campaign(t, tc.store, tc.id))
			compare(t, want, got)
			// The full-text postings are left out of the bundle and rebuilt
			// by the import as it writes the chunks.
			if a, b := postings(t, s, campaign), postings(t, tc.store, tc.id); a == "" || a != b {
				t.Fatalf("the copy's full-text postings differ from the original's:\n%s\n%s", a, b)
			}
			again := export(t, tc.store, tc.id)
			if a, b := normalize(t, b), normalize(t, again); a != b {
				t.Fatalf("exporting the copy gives another bundle:\n%s", firstDiff(a, b))
			}
		})
	}
	// Gzipped, into yet another campaign.
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	if !bundle.IsBundle(z.Bytes()[:2]) || !bundle.IsBundle(b[:40]) {
		t.Fatal("IsBundle does not recognise a bundle")
	}
	if _, err := bundle.Import(ctx, s.Pool(), "ironhold-gz", &z); err != nil {
		t.Fatal(err)
	}
	compare(t, want, snapshot(t, pgtest.Campaign(t, s, "ironhold-gz")))
}

// view is a campaign as its readers see it, with serial ids replaced by
// what they name.
type view struct {
	Entities  []memory.Entity
	Facts     []string
	Conflicts []string
	Sessions  []memory.Session
	Lines     []string
	Chunks    []string
	Presence  []string
	OptedOut  []string
	Proposals []string
	DM        string
	Limit     int
	Language  string
}

func snapshot(t *testing.T, c *postgres.Campaign) view {
	t.Helper()
	ctx := context.Background()
	g := c.Graph()
	var v view
	v.Entities = must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{}))
	sort.Slice(v.Entities, func(i, j int) bool { return v.Entities[i].ID < v.Entities[j].ID })
	facts := must[[]postgres.FactWithNames](t)(g.FindFacts(ctx, postgres.FactQuery{Limit: 10000,
		Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending, memory.StatusRejected, memory.StatusRetired}}))
	name := map[int64]string{}
	for _, f := range facts {
		name[f.ID] = fmt.Sprintf("%s-%s->%s[%s %s]", f.SourceID, f.Type, f.TargetID, f.Status, f.CreatedAt.UTC().Format(time.RFC3339Nano))
	}
	for _, f := range facts {
		r := f.Relationship
		ev := must[[]memory.TranscriptEntry](t)(g.Evidence(ctx, r.ID))
		var evText []string
		for _, e := range ev {
			evText = append(evText, e.Text)
		}
		var links []string
		for _, l := range must[[]memory.FactLink](t)(g.FactLinks(ctx, r.ID)) {
			links = append(links, fmt.Sprintf("%s %s %s %v", name[l.FromFact], l.Kind, name[l.ToFact], l.Weight))
		}
		sort.Strings(links)
		id := r.ID
		r.ID = 0
		attrs, _ := json.Marshal(r.Attributes)
		r.Attributes = nil
		v.Facts = append(v.Facts, fmt.Sprintf("%s %+v attrs=%s evidence=%q links=%q", name[id], r, attrs, evText, links))
	}
	sort.Strings(v.Facts)
	for _, cf := range must[[]memory.Conflict](t)(g.Conflicts(ctx)) {
		v.Conflicts = append(v.Conflicts, fmt.Sprintf("%s vs %s %s %q %s", name[cf.NewFact.ID], name[cf.OldFact.ID], cf.Kind, cf.Resolution, cf.CreatedAt.UTC()))
	}
	sort.Strings(v.Conflicts)
	v.Sessions = must[[]memory.Session](t)(c.Sessions().Sessions(ctx))
	for _, sess := range v.Sessions {
		for _, e := range must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctx, sess.ID)) {
			e.ID = 0
			v.Lines = append(v.Lines, fmt.Sprintf("%+v", e))
		}
		for _, ch := range must[[]memory.Chunk](t)(c.Index().Chunks(ctx, sess.ID)) {
			v.Chunks = append(v.Chunks, fmt.Sprintf("%+v", ch))
		}
		for _, p := range must[[]postgres.Presence](t)(c.Presence(ctx, sess.ID)) {
			v.Presence = append(v.Presence, fmt.Sprintf("%s %s %v split=%v", p.SessionID, p.At.UTC(), p.Players, p.Split))
		}
	}
	// The split flag of the presence spans (migration 0031) travels: a
	// copy that lost it would read the split scene to every player.
	if !slices.ContainsFunc(v.Presence, func(s string) bool { return strings.HasSuffix(s, "split=true") }) {
		t.Fatalf("the campaign has no split presence span: %q", v.Presence)
	}
	for u := range must[map[string]time.Time](t)(c.OptedOut(ctx)) {
		v.OptedOut = append(v.OptedOut, u)
	}
	for _, p := range must[[]postgres.Proposal](t)(c.PendingProposals(ctx)) {
		var payload map[string]string
		json.Unmarshal(p.Payload, &payload)
		var fid int64
		fmt.Sscan(payload["id"], &fid)
		v.Proposals = append(v.Proposals, fmt.Sprintf("%s %s %s %s", p.Kind, name[fid], p.Actor, p.CreatedAt.UTC()))
	}
	dm, _ := json.Marshal(must[postgres.KGView](t)(c.KGRead(ctx, true)))
	v.DM = string(dm)
	v.Limit = must[int](t)(c.KGLimit(ctx))
	v.Language = must[string](t)(c.Language(ctx))
	if len(v.Facts) == 0 || len(v.Lines) == 0 || len(v.Chunks) == 0 || len(v.Conflicts) == 0 || len(v.Proposals) == 0 {
		t.Fatalf("the campaign is missing parts: %d facts, %d lines, %d chunks, %d conflicts, %d proposals",
			len(v.Facts), len(v.Lines), len(v.Chunks), len(v.Conflicts), len(v.Proposals))
	}
	return v
}

func compare(t *testing.T, want, got view) {
	t.Helper()
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range wv.NumField() {
		if !reflect.DeepEqual(wv.Field(i).Interface(), gv.Field(i).Interface()) {
			t.Errorf("%s differ:\nwant %+v\ngot  %+v", wv.Type().Field(i).Name, wv.Field(i).Interface(), gv.Field(i).Interface())
		}
	}
}

// normalize replaces every serial id of a bundle (and every reference to
// one) by its rank in the bundle, and drops the header.
func normalize(t *testing.T, b []byte) string {
	t.Helper()
	rank := map[string]map[string]string{}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	sc.Scan() // header
	tables := map[string]bundle.Table{}
	for _, tb := range bundle.Tables() {
		tables[tb.Name] = tb
	}
	for sc.Scan() {
		var rec struct {
			Kind string         `json:"kind"`
			Row  map[string]any `json:"row"`
		}
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		if err := d.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		tb := tables[rec.Kind]
		if tb.Serial != "" {
			if rank[tb.Name] == nil {
				rank[tb.Name] = map[string]string{}
			}
			old := fmt.Sprint(rec.Row[tb.Serial])
			rank[tb.Name][old] = fmt.Sprint(len(rank[tb.Name]))
			rec.Row[tb.Serial] = rank[tb.Name][old]
		}
		for col, space := range tb.Refs {
			rec.Row[col] = rank[space][fmt.Sprint(rec.Row[col])]
		}
		if p, ok := rec.Row["payload"].(map[string]any); ok && tb.PayloadRefs[fmt.Sprint(rec.Row["kind"])] != "" {
			p["id"] = rank[tb.PayloadRefs[fmt.Sprint(rec.Row["kind"])]][fmt.Sprint(p["id"])]
		}
		line, _ := json.Marshal(rec)
		out = append(out, string(line))
	}
	return strings.Join(out, "\n")
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n%s\n%s", i+2, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(al), len(bl))
}

// TestImportRefuses: a bad bundle is refused with an error naming the
// problem, and nothing of it is written.
func TestImportRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, dims)
	played(t, s)
	good := export(t, s, campaign)
	lines := strings.Split(strings.TrimSuffix(string(good), "\n"), "\n")
	edit := func(f func([]string) []string) string {
		return strings.Join(f(slices.Clone(lines)), "\n") + "\n"
	}
	find := func(ls []string, kind string) int {
		for i, l := range ls {
			if strings.HasPrefix(l, `{"kind":"`+kind+`"`) {
				return i
			}
		}
		t.Fatalf("no %s record", kind)
		return -1
	}
	cases := []struct {
		name, bundle string
		target       string
		is           error
		says         string
	}{
		{"empty", "", "t-empty", bundle.ErrBadBundle, "the file is empty"},
		{"a campaign file", "campaign: x\n", "t-yaml", bundle.ErrBadBundle, "line 1 is not"},
		{"newer version", edit(func(ls []string) []string {
			ls[0] = strings.Replace(ls[0], `"version":1`, `"version":99`, 1)
			return ls
		}), "t-version", bundle.ErrBadBundle, "format version 99"},
		{"truncated", edit(func(ls []string) []string { return ls[:len(ls)/2] }), "t-trunc", bundle.ErrBadBundle, "truncated"},
		{"a line lost", edit(func(ls []string) []string {
			i := find(ls, "privacy_optouts")
			return append(ls[:i], ls[i+1:]...)
		}), "t-lost", bundle.ErrBadBundle, "the end record counts"},
		{"garbage line", edit(func(ls []string) []string {
			ls[3] = "{not json"
			return ls
		}), "t-garbage", bundle.ErrBadBundle, "line 4: not a JSON record"},
		{"unknown kind", edit(func(ls []string) []string {
			return slices.Insert(ls, 2, `{"kind":"spells","row":{"id":"fireball"}}`)
		}), "t-kind", bundle.ErrBadBundle, `unknown record kind "spells"`},
		{"unknown column", edit(func(ls []string) []string {
			i := find(ls, "entities")
			ls[i] = strings.Replace(ls[i], `"row":{`, `"row":{"mana":7,`, 1)
			return ls
		}), "t-col", bundle.ErrBadBundle, "entities.mana is not a column"},
		{"dangling evidence", edit(func(ls []string) []string {
			i := find(ls, "fact_evidence")
			ls[i] = `{"kind":"fact_evidence","row":{"fact_id":999999,"entry_id":1}}`
			return ls
		}), "t-ref", bundle.ErrBadBundle, "refers to relationships 999999"},
		{"out of order", edit(func(ls []string) []string {
			i, j := find(ls, "sessions"), find(ls, "entities")
			ls[i], ls[j] = ls[j], ls[i]
			return ls
		}), "t-order", bundle.ErrBadBundle, "out of order"},
		{"a row the database refuses", edit(func(ls []string) []string {
			i := find(ls, "relationships")
			ls[i] = regexp.MustCompile(`"confidence": ?[0-9.]+`).ReplaceAllString(ls[i], `"confidence":7`)
			return ls
		}), "t-db", nil, "writing relationships"},
		{"not empty", string(good), campaign, bundle.ErrNotEmpty, "already holds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bundle.Import(ctx, s.Pool(), tc.target, strings.NewReader(tc.bundle))
			if err == nil || !strings.Contains(err.Error(), tc.says) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("import: %v, want an error saying %q", err, tc.says)
			}
			if tc.target == campaign {
				return
			}
			var n int
			if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM campaigns WHERE id = $1) + (SELECT count(*) FROM sessions WHERE campaign_id = $1)
				+ (SELECT count(*) FROM transcript_entries WHERE campaign_id = $1) + (SELECT count(*) FROM relationships WHERE campaign_id = $1)`,
				tc.target).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Fatalf("a refused import left %d rows of campaign %s", n, tc.target)
			}
		})
	}
	if _, err := bundle.Export(ctx, s.Pool(), "no-such-campaign", &bytes.Buffer{}, now); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("exporting an unknown campaign: %v", err)
	}
}

// TestEveryTableClassified: every table holding campaign rows is carried
// by a bundle or skipped for a stated reason, so a table a migration adds
// cannot be silently left out of backups.
func TestEveryTableClassified(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, dims)
	rows, err := s.Pool().Query(context.Background(), `SELECT DISTINCT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'
		AND a.attname IN ('campaign_id', 'fact_id') AND NOT a.attisdropped ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var name string
	for rows.Next() {
		rows.Scan(&name)
		names = append(names, name)
	}
	if rows.Err() != nil || len(names) < 10 {
		t.Fatalf("tables %v: %v", names, rows.Err())
	}
	carried := map[string]bool{}
	for _, tb := range bundle.Tables() {
		carried[tb.Name] = true
	}
	for _, n := range names {
		if why, skipped := bundle.Skipped()[n]; !carried[n] && !skipped {
			t.Errorf("table %s holds campaign rows but is neither in bundle.Tables nor in bundle.Skipped", n)
		} else if skipped && why == "" {
			t.Errorf("table %s is skipped without a reason", n)
		}
	}
}

// postings lists a campaign's full-text postings (chunk_postings), one
// per line.
func postings(t *testing.T, s *postgres.Store, campaign string) string {
	t.Helper()
	var out string
	err := s.Pool().QueryRow(context.Background(), `SELECT coalesce(string_agg(chunk_id || ' ' || lexeme || ' ' || tf || ' ' || doc_len,
		E'\n' ORDER BY chunk_id, lexeme), '') FROM chunk_postings WHERE campaign_id = $1`, campaign).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
