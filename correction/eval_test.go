package correction_test

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/correction/internal/evalcorpus"
)

// TestEvalCorpus holds the matcher to its quality targets on the shipped
// corpus: recall >= 95%, precision >= 99%, entity-free utterances altered
// <= 0.5%.
func TestEvalCorpus(t *testing.T) {
	c, err := evalcorpus.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Entities) < 40 || len(c.Misheard) < 300 || len(c.TableTalk) < 300 {
		t.Fatalf("corpus too small: %d entities, %d misheard, %d entity-free", len(c.Entities), len(c.Misheard), len(c.TableTalk))
	}
	m, err := correction.NewMatcher()
	if err != nil {
		t.Fatal(err)
	}
	r, err := evalcorpus.Run(m, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recall %.4f (%d/%d), precision %.4f (%d/%d), entity-free altered %.4f (%d/%d)",
		r.Recall(), r.Restored, r.Names, r.Precision(), r.CorrectSubs, r.Substitutions,
		r.AlteredShare(), r.EntityFreeAltered, r.EntityFree)
	if r.Recall() < 0.95 {
		t.Errorf("recall %.4f < 0.95", r.Recall())
	}
	if r.Precision() < 0.99 {
		t.Errorf("precision %.4f < 0.99", r.Precision())
	}
	if r.AlteredShare() > 0.005 {
		t.Errorf("entity-free utterances altered %.4f > 0.005", r.AlteredShare())
	}
}

func TestParseCase(t *testing.T) {
	tc, err := evalcorpus.ParseCase("ask [elder nacks's|eldrinax] and [grim jaw|grimjaw]")
	if err != nil {
		t.Fatal(err)
	}
	if tc.Heard != "ask elder nacks's and grim jaw" || len(tc.Golds) != 2 {
		t.Fatalf("%+v", tc)
	}
	if g := tc.Golds[0]; tc.Heard[g.Start:g.End] != "elder nacks" || g.EntityID != "eldrinax" {
		t.Errorf("gold 0: %+v", g)
	}
	for _, bad := range []string{"ask [elder nacks", "ask [elder nacks]", "ask elder] nacks", "[|x]"} {
		if _, err := evalcorpus.ParseCase(bad); err == nil {
			t.Errorf("ParseCase(%q) accepted", bad)
		}
	}
}

// TestNearNames holds the common-word guard to issue 26 on the near-names
// corpora: plain sentences whose words sit near the campaign's names are
// never altered when the names near them are not in play, nor on the tuning
// corpora with every name in play (a table with no scene set), and misheard
// names are restored at least as often as before the guard (the first
// scores, measured before tuning: 33 of 37 English names, 14 of 14 German;
// on the held-out corpora 17 of 20 and 11 of 11; the English corpus now
// holds 34, its "a lara" restored since). The held-out corpora,
// written before the second round of tuning, are held to their final
// scores with every name in play (see correction/README.md): one English
// plain sentence is still altered ("the old brook" for Oldbrook, a place,
// which takes an article), no German one since the German dictionary; the
// second German held-out corpus was written before that dictionary (first
// score 13 of 30 altered with every name in play, 13 of 13 restored).
func TestNearNames(t *testing.T) {
	for _, tc := range []struct {
		dir       string
		restored  int
		allInPlay int // plain sentences altered at most with every name in play
	}{
		{"testdata/nearnames", 34, 0},
		{"testdata/nearnames-de", 14, 0},
		{"testdata/nearnames-heldout", 17, 1},
		{"testdata/nearnames-heldout-de", 11, 0},
		{"testdata/nearnames-heldout2-de", 13, 0},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			c, err := evalcorpus.Load(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			lang, err := correction.ParseLanguage(c.Language)
			if err != nil {
				t.Fatal(err)
			}
			m, err := correction.NewMatcher(correction.WithLanguage(lang))
			if err != nil {
				t.Fatal(err)
			}
			for _, md := range []evalcorpus.Mode{evalcorpus.NoEvidence, evalcorpus.Scene, evalcorpus.AllInPlay, evalcorpus.Confident} {
				r, err := evalcorpus.RunMode(m, c, md)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s, %s: plain sentences altered %d of %d, names restored %d of %d",
					lang, md, r.EntityFreeAltered, r.EntityFree, r.Restored, r.Names)
				limit := r.EntityFreeAltered
				switch md {
				case evalcorpus.Scene:
					limit = 0
				case evalcorpus.AllInPlay:
					limit = tc.allInPlay
				}
				if r.EntityFreeAltered > limit {
					for _, w := range r.Wrongs {
						t.Errorf("%s, line %d: %q became %q", md, w.Case.Line, w.Sub.Original, w.Sub.Replacement)
					}
				}
				if (md == evalcorpus.Scene || md == evalcorpus.Confident) && r.Restored < tc.restored {
					t.Errorf("%s: %d names restored, fewer than the first score %d", md, r.Restored, tc.restored)
				}
			}
		})
	}
}
