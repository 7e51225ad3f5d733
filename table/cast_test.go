package table_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
)

// TestCastFollowsTheCampaign: the keyword lists are ranked by salience
// within each provider's budget, and an entity the DM adds is boosted,
// found and corrected after the next refresh.
func TestCastFollowsTheCampaign(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	camp := pgtest.Import(t, store, campaignPath)
	ctx := context.Background()
	pipe, err := correction.NewPipeline()
	if err != nil {
		t.Fatal(err)
	}
	cast, err := table.NewCast(ctx, pgtest.Open(t, store, camp.ID(), memory.DMViewer()), pipe)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 15, 19, 0, 0, 0, time.UTC)
	terms := cast.Keyterms(table.ProviderDeepgram, []string{"brannoc"}, now)
	if len(terms) == 0 || terms[0] != "Brannoc" {
		t.Fatalf("the NPC in the scene is not boosted first: %q", terms)
	}
	// Asked again with nothing changed, the same list, the caller's own
	// copy.
	again := cast.Keyterms(table.ProviderDeepgram, []string{"brannoc"}, now)
	if !slices.Equal(again, terms) {
		t.Fatalf("asked again: %q, was %q", again, terms)
	}
	again[0] = "changed"
	if terms := cast.Keyterms(table.ProviderDeepgram, []string{"brannoc"}, now); terms[0] != "Brannoc" {
		t.Fatalf("a caller's change reached the next list: %q", terms)
	}
	// An entity just named comes right after the scene (Brannoc and his
	// alias), before the rest.
	cast.NoteMentions(cast.FindNames("the Sunken Vault again"), now)
	terms = cast.Keyterms(table.ProviderDeepgram, []string{"brannoc"}, now)
	if i := slices.Index(terms, "Sunken Vault"); i != 2 {
		t.Fatalf("the entity just mentioned is at %d: %q", i, terms)
	}
	// Ten minutes on, the mention no longer counts.
	later := cast.Keyterms(table.ProviderDeepgram, []string{"brannoc"}, now.Add(11*time.Minute))
	if slices.Index(later, "Sunken Vault") < slices.Index(later, "Ashen Circle") {
		t.Fatalf("an old mention still ranks first: %q", later)
	}
	// Whisper's prompt budget is a few hundred tokens.
	chars := 0
	for _, k := range cast.Keyterms(table.ProviderOpenAI, nil, now) {
		chars += len(k) + 2
	}
	if chars > correction.WhisperPromptTokens*3 {
		t.Errorf("the Whisper terms take %d characters", chars)
	}

	// The DM adds an NPC: nothing changes until the refresh, then it is
	// everywhere.
	if err := camp.Graph().UpsertEntity(ctx, memory.Entity{ID: "korrin", Type: memory.EntityNPC, Name: "Korrin Ashvale",
		Aliases: []string{"Korrin"}}); err != nil {
		t.Fatal(err)
	}
	if cast.IsNPC("korrin") {
		t.Fatal("the cast changed before a refresh")
	}
	changed, err := cast.Refresh(ctx)
	if err != nil || !changed {
		t.Fatalf("refresh: %v, %v", changed, err)
	}
	if changed, err := cast.Refresh(ctx); err != nil || changed {
		t.Fatalf("a second refresh with no change reported one: %v, %v", changed, err)
	}
	if !cast.IsNPC("korrin") || !slices.Contains(cast.Keyterms(table.ProviderPocketsphinx, nil, now), "Korrin Ashvale") {
		t.Fatal("the new NPC is not in the cast")
	}
	ms := cast.FindNames("corin, will you take us across?")
	if len(ms) != 1 || ms[0].EntityID != "korrin" {
		t.Fatalf("the misheard new name was not found: %+v", ms)
	}
	if got := pipe.Correct(correction.Utterance{Text: "corin, will you take us across?"}).Text; got != "Korrin, will you take us across?" {
		t.Errorf("corrected %q", got)
	}
}
