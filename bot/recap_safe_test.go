package bot_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// paraphraser is a fake model that, like a real one, retells whatever
// secret it was told in other words ("The blacksmith made the vault's
// key…"), which no word-overlap filter catches; told no secret, it writes
// an innocent sentence. Either way it cites the first line it was given.
type paraphraser struct {
	mu      sync.Mutex
	prompts []string
}

// paraphrases of the sample campaign's secrets, keyed by a word of each.
var paraphrases = map[string]string{
	"hooded":   "The blacksmith made the vault's key for a cloaked buyer.",
	"forged":   "The blacksmith made the vault's key for a cloaked buyer.",
	"heir":     "The court mage is secretly of royal blood.",
	"ledgers":  "The guild's books do not add up.",
	"betrayed": "The smith sold out his old friend.",
}

var lineRef = regexp.MustCompile(`\[(\d+)\]`)

func (p *paraphraser) handle(_ int, req llmtest.Request) llmtest.Reply {
	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Content)
		all.WriteString("\n")
	}
	prompt := all.String()
	p.mu.Lock()
	p.prompts = append(p.prompts, prompt)
	p.mu.Unlock()
	line := "1"
	if m := lineRef.FindStringSubmatch(prompt); m != nil {
		line = m[1]
	}
	lower := strings.ToLower(prompt)
	var sentences []string
	for word, para := range paraphrases {
		if strings.Contains(lower, word) {
			sentences = append(sentences, fmt.Sprintf(`{"text": %q, "lines": [%s]}`, para, line))
		}
	}
	sentences = append(sentences, fmt.Sprintf(`{"text": "The party met Grimjaw in Ironhold.", "lines": [%s]}`, line))
	return llmtest.Reply{Text: `{"sentences": [` + strings.Join(sentences, ",") + `]}`}
}

// A player-safe recap is built from what players may see: no secret, no
// DM note, no unconfirmed fact is ever in the prompt, so the model's
// paraphrases cannot leak one. The DM's own recap does get the secrets (so
// the fake model is known to paraphrase them).
func TestPlayerSafeRecapPromptHoldsNoSecret(t *testing.T) {
	t.Parallel()
	p := &paraphraser{}
	srv := llmtest.New(p.handle)
	t.Cleanup(srv.Close)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, bot.Deps{RecapLLM: client})
	ctx := context.Background()
	if _, err := h.camp.Graph().UpdateEntity(ctx, "grimjaw", memory.EntityUpdate{SetAttributes: map[string]any{
		"gm_notes": "his ledgers are forged", "secret_plan": "flee to Duskwood", "plan": map[string]any{"secret": true, "where": "the hooded stranger's ship"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "elara", Type: "BETRAYED",
		Attributes: map[string]any{memory.AttrSecret: true}, Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, DMConfirmed: true}}); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"hooded stranger", "forged", "lost heir", "ledgers", "flee to Duskwood", "FORGED", "betrayed"}

	recapAs := func(who discordtest.Member, safe bool) string {
		i := h.fake.Command(guildID, channelID, who, "recap", discordtest.Str("scope", "session"), discordtest.Str("session", "s1"),
			discordtest.Bool("player_safe", safe))
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	for _, tc := range []struct {
		name string
		who  discordtest.Member
		safe bool
	}{{"player", player, false}, {"DM asking for player-safe", theDM, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p.mu.Lock()
			p.prompts = nil
			p.mu.Unlock()
			content := recapAs(tc.who, tc.safe)
			p.mu.Lock()
			prompts := p.prompts
			p.mu.Unlock()
			if len(prompts) == 0 || !strings.Contains(content, "The party met Grimjaw") {
				t.Fatalf("the model was not used (%d prompts): %s", len(prompts), content)
			}
			for _, pr := range prompts {
				for _, s := range secrets {
					if strings.Contains(pr, s) {
						t.Errorf("the player-safe prompt holds the secret %q", s)
					}
				}
			}
			for _, para := range paraphrases {
				if strings.Contains(content, para) {
					t.Errorf("the player-safe recap leaks %q", para)
				}
			}
		})
	}
	t.Run("DM", func(t *testing.T) {
		content := recapAs(theDM, false)
		if !strings.Contains(content, paraphrases["betrayed"]) {
			t.Fatalf("the DM's recap should get the secret fact (else the test proves nothing): %s", content)
		}
	})
}

// The README says /memory search is for everyone: a player can search what
// was said at the table.
func TestPlayerCanSearch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	i := h.fake.Command(guildID, channelID, player, "memory", discordtest.Sub("search", discordtest.Str("query", "shipment"), discordtest.Str("mode", "text")))
	h.send(i)
	content, _ := h.original(i)["content"].(string)
	if !strings.Contains(content, "Said at the table") || !strings.Contains(content, "shipment") {
		t.Fatalf("a player's /memory search: %s", content)
	}
}
