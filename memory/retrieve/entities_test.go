package retrieve

import (
	"context"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

func TestHybridEntityResults(t *testing.T) {
	c, e := small(t)
	ctx := context.Background()
	check(t, c.Graph().UpsertEntities(ctx, []memory.Entity{{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik",
		Aliases: []string{"the Smith"},
		Attributes: map[string]any{
			"occupation":               "blacksmith",
			"traits":                   []any{"gruff", "honest"},
			memory.AttrSecretKnowledge: "forged the false crown",
			"secret_identity":          "heir of Greywater",
			"debts": []any{
				map[string]any{"to": "the guild", "amount": 40},
				map[string]any{"to": "the cult of ash", "secret": true},
			},
			"past": map[string]any{"born": "Ironhold", "secret_name": "Ashbrand"},
		}}}))
	r, err := New(c, e, Config{})
	check(t, err)

	rs, err := r.Search(ctx, Query{Text: "What does Hadrik say about the forge?", K: 1})
	check(t, err)
	if len(rs) != 2 || rs[0].Kind != KindChunk || rs[1].Kind != KindEntity {
		t.Fatalf("want one answer followed by the named entity, got %+v", rs)
	}
	ent := rs[1]
	want := "Hadrik (npc)\nalso: the Smith\n" +
		`debts: [{"amount":40,"to":"the guild"}]` + "\n" +
		"occupation: blacksmith\npast: {\"born\":\"Ironhold\"}\ntraits: gruff, honest"
	if ent.ID != "hadrik" || ent.Content != want || ent.Score != 1 || len(ent.EntityIDs) != 1 || ent.EntityIDs[0] != "hadrik" {
		t.Errorf("entity result %+v, want content %q", ent, want)
	}
	for _, secret := range []string{"false crown", "heir of", "cult of ash", "Ashbrand", "secret"} {
		if strings.Contains(ent.Content, secret) {
			t.Errorf("entity result shows the secret %q: %q", secret, ent.Content)
		}
	}

	// An alias names the entity too; a near spelling does not.
	rs, err = r.Search(ctx, Query{Text: "is the smith at the forge", K: 5})
	check(t, err)
	if kinds := resultKinds(rs); !strings.HasSuffix(kinds, "entity") || strings.Count(kinds, "entity") != 1 {
		t.Errorf("alias: kinds %s", kinds)
	}
	rs, err = r.Search(ctx, Query{Text: "what about Hadrick and the forge", K: 5})
	check(t, err)
	if kinds := resultKinds(rs); strings.Contains(kinds, "entity") {
		t.Errorf("near spelling returned an entity: %+v", rs)
	}

	// Only hybrid retrieval adds entities, and not for an NPC.
	for _, q := range []Query{{Text: "Hadrik forge", Mode: ModeVector}, {Text: "Hadrik forge", Mode: ModePPR},
		{Text: "Ost Greywater fog", NPCID: "ost"}} {
		rs, err := r.Search(ctx, q)
		check(t, err)
		if kinds := resultKinds(rs); strings.Contains(kinds, "entity") {
			t.Errorf("%+v: kinds %s", q, kinds)
		}
	}
}

func resultKinds(rs []Result) string {
	var ks []string
	for _, x := range rs {
		ks = append(ks, x.Kind)
	}
	return strings.Join(ks, " ")
}
