package scene_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table/scene"
)

const witnessHarbor = "../../testdata/scenes/witness-harbor.yaml"

// TestWitnessHarbor plays 45 minutes: what Kael told Brannoc as a
// follow-up at minute 3 is in Brannoc's context at minute 40 when asked in
// other words; what Lyra told Grimjaw while Brannoc was away is not in
// Brannoc's memory, and is in Grimjaw's.
func TestWitnessHarbor(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, dims)
	h := newHarness(t, store)
	sc := parseFile(t, witnessHarbor)
	res, err := scene.Play(context.Background(), sc, h.opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Took < 40*time.Minute {
		t.Fatalf("the scene took %s of scene time, want over 40 minutes", res.Took)
	}
	const boat, ledger = "grey heron", "bell tower"
	find := func(prefix string) scene.LineEvent {
		t.Helper()
		for _, l := range res.Lines {
			if strings.HasPrefix(strings.ToLower(l.Corrected), strings.ToLower(prefix)) {
				return l
			}
		}
		t.Fatalf("no line %q was played", prefix)
		return scene.LineEvent{}
	}

	told := find("You should know my cousin Tamsin")
	if told.Addressee != "brannoc" || told.Reason == "" || strings.Contains(strings.ToLower(told.Corrected), "brannoc") {
		t.Fatalf("the line of minute 3 went to %q (%s), want Brannoc as a follow-up", told.Addressee, told.Reason)
	}
	if d := told.At.Sub(sc.Start); d < 2*time.Minute || d > 4*time.Minute {
		t.Errorf("the follow-up was said at minute %.1f, want about 3", d.Minutes())
	}
	asked := find("Brannoc, remind me")
	if asked.Addressee != "brannoc" {
		t.Fatalf("the question of minute 40 went to %q (%s)", asked.Addressee, asked.Reason)
	}
	if d := asked.At.Sub(told.At); d < 30*time.Minute {
		t.Fatalf("the question came %s after the follow-up, want over 30 minutes", d)
	}
	if ctx := strings.ToLower(texts(asked.Context, "")); !strings.Contains(ctx, boat) {
		t.Errorf("what Kael told Brannoc at minute 3 is not in his context at minute 40:\n%s", ctx)
	}

	away := find("Brannoc, where do the smugglers")
	if ctx := strings.ToLower(texts(away.Context, "")); strings.Contains(ctx, ledger) || strings.Contains(ctx, "harbor watch") {
		t.Errorf("Brannoc's context holds what was said while he was away:\n%s", ctx)
	}
	there := find("Grimjaw, where do the smugglers")
	if there.Addressee != "grimjaw" {
		t.Fatalf("the control question went to %q (%s)", there.Addressee, there.Reason)
	}
	if ctx := strings.ToLower(texts(there.Context, "")); !strings.Contains(ctx, ledger) {
		t.Errorf("Grimjaw, who heard it, does not have the ledger in his context:\n%s", ctx)
	}

	// The witness store agrees: Brannoc's memory and digest hold the boat,
	// not the ledger.
	var mine strings.Builder
	for _, e := range res.Witness.Lines("brannoc") {
		mine.WriteString(strings.ToLower(e.Text) + "\n")
	}
	if !strings.Contains(mine.String(), boat) || strings.Contains(mine.String(), ledger) {
		t.Errorf("Brannoc's witnessed lines:\n%s", mine.String())
	}
	if d := strings.ToLower(res.Witness.Digest("brannoc")); strings.Contains(d, ledger) {
		t.Errorf("Brannoc's digest holds what was said while he was away:\n%s", d)
	}
}
