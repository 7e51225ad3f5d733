// Command eval scores transcript correction (stage 1) on the evaluation
// corpora: name recall, precision, and the share of entity-free utterances
// altered. The main corpus is correction/testdata; the held-out corpora
// below it were written later and are reported separately (each says in its
// entities.yaml what, if anything, was tuned after its first result).
//
//	go run ./correction/cmd/eval [-corpus dir,dir…] [-v]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/correction/internal/evalcorpus"
)

func main() {
	dirs := flag.String("corpus", "correction/testdata,correction/testdata/holdout,correction/testdata/holdout2,correction/testdata/holdout3,correction/testdata/holdout4,correction/testdata/holdout5",
		"comma-separated corpus directories")
	verbose := flag.Bool("v", false, "list every miss and wrong substitution")
	mode := flag.Int("evidence", 0, "evidence given with each line: 0 none, 1 scene (the line's names in play), 2 all names in play, 3 all in play + word confidences")
	flag.Parse()
	for i, dir := range strings.Split(*dirs, ",") {
		if i > 0 {
			fmt.Println()
		}
		if err := run(os.Stdout, dir, *verbose, evalcorpus.Mode(*mode)); err != nil {
			fmt.Fprintln(os.Stderr, "eval:", err)
			os.Exit(1)
		}
	}
}

func run(w io.Writer, dir string, verbose bool, mode evalcorpus.Mode) error {
	c, err := evalcorpus.Load(dir)
	if err != nil {
		return err
	}
	lang, err := correction.ParseLanguage(c.Language)
	if err != nil {
		return err
	}
	m, err := correction.NewMatcher(correction.WithLanguage(lang))
	if err != nil {
		return err
	}
	r, err := evalcorpus.RunMode(m, c, mode)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s (%s, evidence: %s): %d entities, %d misheard utterances (%d names), %d entity-free utterances\n",
		dir, lang, mode, len(c.Entities), len(c.Misheard), r.Names, len(c.TableTalk))
	fmt.Fprintf(w, "recall:     %6.2f%%  (%d of %d misheard names restored; target >= 95%%)\n", 100*r.Recall(), r.Restored, r.Names)
	fmt.Fprintf(w, "precision:  %6.2f%%  (%d of %d substitutions correct; target >= 99%%)\n", 100*r.Precision(), r.CorrectSubs, r.Substitutions)
	fmt.Fprintf(w, "altered:    %6.2f%%  (%d of %d entity-free utterances changed; target <= 0.5%%)\n", 100*r.AlteredShare(), r.EntityFreeAltered, r.EntityFree)
	if verbose {
		for _, x := range r.Misses {
			fmt.Fprintf(w, "miss  line %d: %q (%s) -> %q\n", x.Case.Line, x.Gold.Heard, x.Gold.EntityID, x.Got)
		}
		for _, x := range r.Wrongs {
			fmt.Fprintf(w, "wrong line %d: %q -> %q (%s, %.3f, %s) in %q\n", x.Case.Line, x.Sub.Original, x.Sub.Replacement,
				x.Sub.EntityID, x.Sub.Score, x.Sub.Method, x.Case.Heard)
		}
	}
	return nil
}
