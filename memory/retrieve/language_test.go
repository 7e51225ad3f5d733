package retrieve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestGermanEndToEnd: a German campaign, imported, chunked and asked in
// German, finds the line that answers by its stemmed words in every mode
// that reads words (vector search with the offline embedder included),
// the question words aside, and from the session log before it is
// chunked.
func TestGermanEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), evalHangGuard)
	defer cancel()
	at := time.Date(2026, 1, 10, 19, 0, 0, 0, time.UTC)
	lines := []struct{ who, text string }{
		{"Grog", "Ich schaue mich im Hafen um."},
		{"SL", "Der Nebel hängt über den Booten, die Möwen schreien."},
		{"Vex", "Wann gehen wir endlich weiter? Wer hat die Karte?"},
		{"Grog", "Ich reiße die silberne Kette vom Altar der Kapelle."},
		{"SL", "Die Kerzen flackern, als Grog die Kette an sich nimmt."},
		{"Pike", "Ich segne die Waffen der Gruppe."},
		{"Vex", "Wir sollten zum Markt gehen und Vorräte kaufen."},
	}
	var scenes []campaignfile.Session
	for s := range 3 { // three sessions, so that the words have frequencies
		sess := campaignfile.Session{ID: "s" + string(rune('1'+s)), StartedAt: at.AddDate(0, 0, 7*s)}
		for i, l := range lines {
			text := l.text
			if s > 0 && i == 3 {
				text = "Ich kaufe Brot auf dem Markt."
			}
			if s > 0 && i == 4 {
				text = "Der Händler nickt und nimmt die Münzen."
			}
			sess.Entries = append(sess.Entries, campaignfile.Entry{ID: sess.ID + "-" + string(rune('a'+i)), SpeakerID: strings.ToLower(l.who),
				SpeakerName: l.who, Text: text, At: sess.StartedAt.Add(time.Duration(10*i) * time.Second), DurationMS: 3000})
		}
		sess.EndedAt = sess.StartedAt.Add(time.Hour)
		scenes = append(scenes, sess)
	}
	cf := &campaignfile.File{Campaign: "de-e2e", Language: "de", Sessions: scenes,
		Entities: []campaignfile.Entity{{ID: "grog", Type: "player", Name: "Grog"}}}
	store, _ := pgtest.NewStore(t, evalDims)
	if err := store.InTx(ctx, cf.Campaign, func(c *postgres.Campaign) error {
		if err := c.SetLanguage(ctx, cf.Language); err != nil {
			return err
		}
		_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	camp := pgtest.Campaign(t, store, cf.Campaign)
	e, err := embed.NewOffline(evalDims)
	if err != nil {
		t.Fatal(err)
	}
	// Before chunking, questions are answered from the session log, in
	// German too.
	r0, err := New(camp, e, Config{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := r0.Search(ctx, Query{Text: "Wann hat Grog die Ketten genommen?", K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Kind != KindEntry || !strings.Contains(rs[0].Content, "Kette") {
		t.Errorf("session-log fallback: %+v, want the line about the chain", rs)
	}
	if _, err := chunk.Process(ctx, camp, e, chunk.Options{MaxLines: 2, Overlap: -1}); err != nil {
		t.Fatal(err)
	}
	r, err := New(camp, e, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The offline embedder follows the campaign's language (chunks and
	// questions alike), so vector search finds the German word forms too.
	for _, m := range []Mode{ModeVector, ModeFTS, ModePPR, ModeHybrid} {
		for _, q := range []string{"Wann hat Grog die Ketten genommen?", "Grog nahm die Ketten."} {
			rs, err := r.Search(ctx, Query{Text: q, Mode: m, K: 1})
			if err != nil {
				t.Fatalf("%s %q: %v", m, q, err)
			}
			// Either line of the event answers: Grog's or the DM's.
			if len(rs) == 0 || !strings.Contains(rs[0].Content, "Kette") {
				t.Errorf("%s %q: best %v, want a line about the chain", m, q, rs)
			}
		}
	}
}
