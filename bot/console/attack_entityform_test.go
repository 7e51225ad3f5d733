package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

// The console's entity edit reads the attributes as YAML and removes every
// attribute the YAML does not hold. YAML past a "---" (a line a DM types
// as a separator, or a notes block that ends in one) is a second
// document, which yaml.Unmarshal reads no further than: the DM's notes
// after it were not saved, and an existing dm_notes was deleted, with
// "Saved". The edit must be refused, changing nothing.
func TestAttackEntityEditDropsASecondYAMLDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.signInLink(t)
	tok := b.csrf()
	_, body := b.post("/entities", url.Values{"csrf": {tok}, "name": {"Old Mill Tower"}, "kind": {"location"},
		"description": {"a ruined mill"}, "dm_notes": {"the cult meets here"}}, nil)
	if !strings.Contains(body, "Added Old Mill Tower") {
		t.Fatalf("add: %.500s", body)
	}
	_, body = b.post("/entities/old-mill-tower/edit", url.Values{"csrf": {tok}, "name": {"Old Mill Tower"},
		"attributes": {"description: a burnt mill\n---\ndm_notes: the cult meets here, at midnight\n"}}, nil)
	e, err := f.camp.Graph().Entity(ctx, "old-mill-tower")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "Nothing was changed") || e.Attributes["dm_notes"] != "the cult meets here" {
		t.Fatalf("edit with a second YAML document: dm_notes now %q; the page says: %.300s", e.Attributes["dm_notes"], flash(body))
	}
}

// flash is the start of the page's message, for failure output.
func flash(body string) string {
	for _, m := range []string{"Nothing was changed", "Saved"} {
		if i := strings.Index(body, m); i >= 0 {
			return body[i:min(len(body), i+60)]
		}
	}
	return body
}
