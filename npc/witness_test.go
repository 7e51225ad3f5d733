package npc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/npc"
)

// TestTurnSendsWhatTheNPCWitnessed: the digest and the earlier lines said
// to the NPC reach the model ahead of the conversation, within the hot
// context budget, and a non-nil Said keeps the hot context from searching
// the session log itself.
func TestTurnSendsWhatTheNPCWitnessed(t *testing.T) {
	c := sampleCampaign(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 19, 5, 0, 0, time.UTC)
	// A line in the session log the hot context would find by its words.
	if err := c.Sessions().StartSession(ctx, "s9", at); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s9", SpeakerID: "p3", SpeakerName: "Kael",
		Text: "The shipment went through Duskwood, the log says.", At: at, IdempotencyKey: "log:1"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		tokens   int
		digest   string
		said     []npc.Message
		want     []string
		unwanted []string
	}{
		{name: "digest and said", tokens: 1500, digest: "Said to you:\n- Kael: the Gull is moored at the south pier.",
			said:     []npc.Message{{Speaker: "Lyra", Text: "My boat, the Gull, has a red sail.", At: at}},
			want:     []string{npc.DigestTitle, "the Gull is moored", npc.SaidTitle, "Lyra (19:05): My boat, the Gull"},
			unwanted: []string{"the log says"}},
		{name: "said cut to its share of a small budget", tokens: 100, said: []npc.Message{
			{Speaker: "Lyra", Text: "The shipment is in the cellar.", At: at},
			{Speaker: "Lyra", Text: strings.Repeat("A very long line about the shipment. ", 20), At: at}},
			want: []string{"The shipment is in the cellar."}, unwanted: []string{"A very long line", "the log says"}},
		{name: "no said: the hot context searches the log", tokens: 1500, want: []string{"the log says"},
			unwanted: []string{npc.DigestTitle, npc.SaidTitle}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "Aye."}))
			defer srv.Close()
			a := newAgentWith(t, c, srv, npc.ToolBudget{}, tc.tokens)
			res, err := a.Turn(ctx, npc.TurnInput{NPCID: "grimjaw", SessionID: "s9", SpeakerName: "Thorin",
				Text: "Grimjaw, where did the shipment go?", Live: true, Digest: tc.digest, Said: tc.said}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			for _, m := range res.Messages {
				all.WriteString(m.Content + "\n")
			}
			for _, w := range tc.want {
				if !strings.Contains(all.String(), w) {
					t.Errorf("the request lacks %q:\n%s", w, all.String())
				}
			}
			for _, w := range tc.unwanted {
				if strings.Contains(all.String(), w) {
					t.Errorf("the request holds %q:\n%s", w, all.String())
				}
			}
			if last := res.Messages[len(res.Messages)-1]; last.Role != llm.RoleUser || !strings.Contains(last.Content, "where did the shipment go") {
				t.Errorf("the utterance is not last: %+v", last)
			}
		})
	}
}
