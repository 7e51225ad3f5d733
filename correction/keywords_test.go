package correction

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRank(t *testing.T) {
	es := []Entity{{ID: "a", Name: "Alpha"}, {ID: "b", Name: "Bravo"}, {ID: "c", Name: "Charlie"},
		{ID: "d", Name: "Delta"}, {ID: "e", Name: "Echo"}}
	t0 := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	r := Rank(es, Salience{Scene: []string{"d", "b"}, LastMentioned: map[string]time.Time{
		"b": t0, "d": t0.Add(time.Minute), "e": t0.Add(2 * time.Minute), "a": t0.Add(-time.Hour)}})
	var got []string
	for _, x := range r {
		got = append(got, fmt.Sprintf("%s%d", x.ID, x.Tier))
	}
	// Scene first (most recent first), then mentioned, then the rest.
	if want := "[d0 b0 e1 a1 c2]"; fmt.Sprint(got) != want {
		t.Errorf("Rank = %v, want %v", got, want)
	}
}

var boostEntities = []Entity{
	{ID: "eldrinax", Name: "Eldrinax", Aliases: []string{"The Ember Wyrm"}},
	{ID: "kelthar", Name: "Kel'thar"},
	{ID: "tower", Name: "Tower of Whispers"},
	{ID: "grimjaw", Name: "Grimjaw", Aliases: []string{"grimjaw", "Grim"}},
}

func TestDeepgramKeyterms(t *testing.T) {
	r := Rank(boostEntities, Salience{Scene: []string{"tower"}})
	got := DeepgramKeyterms(r, DeepgramKeytermTokens)
	want := "[Tower of Whispers Eldrinax The Ember Wyrm Kel'thar Grimjaw Grim]"
	if fmt.Sprint(got) != want {
		t.Errorf("keyterms %v, want %v", got, want)
	}
	// A small budget keeps the most salient names only.
	if got := DeepgramKeyterms(r, 8); fmt.Sprint(got) != "[Tower of Whispers]" {
		t.Errorf("keyterms within 8 tokens: %v", got)
	}
	if got := DeepgramKeyterms(r, 0); len(got) != 0 {
		t.Errorf("keyterms within 0 tokens: %v", got)
	}
}

func TestDeepgramKeywords(t *testing.T) {
	r := Rank(boostEntities, Salience{Scene: []string{"kelthar"},
		LastMentioned: map[string]time.Time{"grimjaw": time.Now()}})
	got := DeepgramKeywords(r, DeepgramMaxKeywords)
	// Single words without punctuation; common words (Tower, Whispers,
	// Ember, Grim…) are not boosted: "Tower of Whispers" is a keyterm.
	want := "[Kelthar:3 Grimjaw:2 Eldrinax:1 Wyrm:1]"
	if fmt.Sprint(got) != want {
		t.Errorf("keywords %v, want %v", got, want)
	}
	if got := DeepgramKeywords(r, 2); len(got) != 2 {
		t.Errorf("max 2: %v", got)
	}
}

func TestWhisperPrompt(t *testing.T) {
	r := Rank(boostEntities, Salience{})
	if got, want := WhisperPrompt(r, WhisperPromptTokens), "Eldrinax, The Ember Wyrm, Kel'thar, Tower of Whispers, Grimjaw, Grim."; got != want {
		t.Errorf("prompt %q, want %q", got, want)
	}
	// 1,000 names never exceed the limit.
	many := Rank(benchEntities(1000), Salience{})
	p := WhisperPrompt(many, WhisperPromptTokens)
	total := 0
	for _, name := range strings.Split(strings.TrimSuffix(p, "."), ", ") {
		total += estimateTokens(name) + 1
	}
	if total > WhisperPromptTokens || total < WhisperPromptTokens-10 {
		t.Errorf("prompt of %d estimated tokens for a limit of %d", total, WhisperPromptTokens)
	}
	if WhisperPrompt(nil, WhisperPromptTokens) != "" {
		t.Error("prompt without names is not empty")
	}
}
