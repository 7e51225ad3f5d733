package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestGermanCampaign: a campaign in German stems German words, drops
// German stop words, and keeps its statistics right when its language
// changes after chunks were written.
func TestGermanCampaign(t *testing.T) {
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "de")
	lines := []string{
		"Grog: Ich nehme die silbernen Ketten vom Altar.",
		"SL: Die Kerzen flackern, als Grog die Ketten an sich reißt.",
		"Vex: Wir sollten zurück zum Hafen gehen.",
		"Pike: Ich segne das Schwert des Zwerges.",
	}
	var cs []memory.Chunk
	for i, l := range lines {
		cs = append(cs, memory.Chunk{ID: string(rune('a' + i)), SessionID: "s1", Content: l, StartAt: t0})
	}
	check(t, c.Index().IndexChunks(ctx, cs))
	if got := must[string](t)(c.Language(ctx)); got != "english" {
		t.Fatalf("language before setting one: %q, want english", got)
	}
	check(t, c.SetLanguage(ctx, "de"))
	checkTextStats(t, s, "after switching to German")
	if got := must[string](t)(c.Language(ctx)); got != "german" {
		t.Fatalf("language: %q, want german", got)
	}
	cases := []struct {
		q    string
		want string // id of the best chunk
	}{
		{"Wann hat Grog die Kette genommen?", "a"}, // Kette ~ Ketten, nehmen ~ nehme
		{"Wer hat das Schwert gesegnet?", "d"},     // Schwert, segnen
		{"Zwerg", "d"},                             // Zwerges
	}
	for _, tc := range cases {
		hits := must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, tc.q, 3, nil))
		if len(hits) == 0 || hits[0].Chunk.ID != tc.want {
			t.Errorf("%q: best %v, want chunk %s", tc.q, hitIDs(hits), tc.want)
		}
	}
	// German stop words are not lexemes of the index.
	var n int
	check(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM chunk_lexemes WHERE campaign_id = 'de' AND lexeme IN ('die', 'ich', 'das', 'wir')`).Scan(&n))
	if n != 0 {
		t.Errorf("%d German stop words indexed", n)
	}
	// New chunks are indexed in German too.
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "e", SessionID: "s1", Content: "SL: Die Zwerge feiern im Hafen.", StartAt: t0}}))
	checkTextStats(t, s, "after writing in German")
	hits := must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, "Wo feiern die Zwerge?", 1, nil))
	if len(hits) != 1 || hits[0].Chunk.ID != "e" {
		t.Errorf("Wo feiern die Zwerge?: %v, want e", hitIDs(hits))
	}

	if err := c.SetLanguage(ctx, "klingon"); !errors.Is(err, memory.ErrInvalid) || !strings.Contains(err.Error(), "klingon") {
		t.Errorf("unknown language: %v, want an invalid-input error naming it", err)
	}
	if got := must[string](t)(c.Language(ctx)); got != "german" {
		t.Errorf("a refused language changed it to %q", got)
	}
}

func hitIDs(hits []postgres.ChunkHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Chunk.ID)
	}
	return out
}

// TestQuestionsRankLikeStatements: a question and the statement it asks
// about rank the same chunks the same, in English and in German, even
// where chunks hold the question words themselves.
func TestQuestionsRankLikeStatements(t *testing.T) {
	s := newStore(t)
	ctx := ctxT(t)
	en := pgtest.Campaign(t, s, "en")
	de := pgtest.Campaign(t, s, "de")
	check(t, de.SetLanguage(ctx, "german"))
	write := func(c *postgres.Campaign, lines ...string) {
		var cs []memory.Chunk
		for i, l := range lines {
			cs = append(cs, memory.Chunk{ID: fmt.Sprint("c", i), SessionID: "s1", Content: l, StartAt: t0})
		}
		check(t, c.Index().IndexChunks(ctx, cs))
	}
	write(en,
		"Grog: I grab the chain off the altar.",
		"Vex: Whose turn is it? When do we eat? Who did this? Why? How?",
		"Pike: Didn't we leave the chain at the inn? What did you do?",
		"DM: Grog, you rip the silver chain free.",
		"Percy: I polish my gun.")
	write(de,
		"Grog: Ich nehme die Kette vom Altar.",
		"Vex: Wann gehen wir endlich? Wer hat das getan? Warum? Wieso? Wo?",
		"Pike: Wessen Kette ist das? Woher kommt sie?",
		"SL: Grog, du reißt die silberne Kette los.",
		"Percy: Ich putze mein Gewehr.")
	cases := []struct {
		c                   *postgres.Campaign
		question, statement string
	}{
		{en, "When did Grog grab the chain?", "Grog grabbed the chain."},
		{en, "Who grabbed the chain? Was it Grog?", "Grog grabbed the chain."},
		{en, "Didn't Grog grab the chain, how and why?", "Grog grabbed the chain."},
		{de, "Wann hat Grog die Kette genommen?", "Grog nahm die Kette."},
		{de, "Wer nahm die Kette, warum und wo? War es Grog?", "Grog nahm die Kette."},
	}
	for _, tc := range cases {
		q := must[[]postgres.ChunkHit](t)(tc.c.Index().TextSearch(ctx, tc.question, 5, nil))
		st := must[[]postgres.ChunkHit](t)(tc.c.Index().TextSearch(ctx, tc.statement, 5, nil))
		if len(q) == 0 || len(q) != len(st) {
			t.Errorf("%q: %v; %q: %v", tc.question, hitIDs(q), tc.statement, hitIDs(st))
			continue
		}
		for i := range q {
			if q[i].Chunk.ID != st[i].Chunk.ID || q[i].Score != st[i].Score {
				t.Errorf("%q ranks %v, %q ranks %v", tc.question, hitIDs(q), tc.statement, hitIDs(st))
				break
			}
		}
	}
}

// TestGermanSessionLog: the session log is searched in the campaign's
// language: lines written before the language was set are re-indexed,
// lines written after it are indexed in it, and another campaign keeps
// English.
func TestGermanSessionLog(t *testing.T) {
	s := newStore(t)
	ctx := ctxT(t)
	de := pgtest.Campaign(t, s, "de-log")
	en := pgtest.Campaign(t, s, "en-log")
	for _, c := range []*postgres.Campaign{de, en} {
		check(t, c.Sessions().StartSession(ctx, "s1", t0))
	}
	write := func(c *postgres.Campaign, key, text string) {
		t.Helper()
		_, err := c.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "u1", SpeakerName: "Grog",
			Text: text, At: t0, IdempotencyKey: key})
		check(t, err)
	}
	write(de, "a", "Ich nehme die silbernen Ketten vom Altar.")
	write(en, "a", "Die, foul beast, the chains are mine!")
	search := func(c *postgres.Campaign, q string, any bool) []string {
		t.Helper()
		hits := must[[]memory.EntryHit](t)(c.Sessions().Search(ctx, q, memory.SearchOpts{Any: any}))
		var out []string
		for _, h := range hits {
			out = append(out, h.Entry.IdempotencyKey)
		}
		return out
	}
	// English stems "Ketten" and "Kette" apart.
	if got := search(de, "Kette", false); len(got) != 0 {
		t.Fatalf("Kette before the campaign is German: %v, want nothing (english stemming)", got)
	}
	check(t, de.SetLanguage(ctx, "de"))
	if got := search(de, "Kette", false); len(got) != 1 || got[0] != "a" {
		t.Errorf("Kette in German: %v, want [a] (Ketten, re-indexed)", got)
	}
	write(de, "b", "Die Zwerge feiern im Hafen.")
	if got := search(de, "Zwerg feiern", false); len(got) != 1 || got[0] != "b" {
		t.Errorf("Zwerg feiern: %v, want [b] (written after the switch)", got)
	}
	// German stop words match nothing; in English "die" is a word.
	if got := search(de, "die", true); len(got) != 0 {
		t.Errorf("German stop word die: %v, want nothing", got)
	}
	if got := search(en, "die", true); len(got) != 1 {
		t.Errorf("English campaign, die: %v, want its line", got)
	}
}
