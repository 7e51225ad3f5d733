package npc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/npc"
)

// TestAttackFallbackNonsense plays the table with no LLM and says what
// players say to an innkeeper or a blacksmith besides questions about the
// world: a greeting, thanks, a farewell, the NPC's name alone, "who are
// you?", an order. The offline NPC must not answer nonsense: "Hi" got
// "Can't do that.", "Grimjaw?" got "Couldn't say.", "who are you?" got
// "Not a thing I know." from a blacksmith, and "ale please" got "Thorin
// said I wave to Brannoc and order three ales." (Thorin's own line, told
// back to him in Brannoc's voice, whose "I" is now Brannoc). Small talk
// too: "how are you?" and "how's business?" got "Couldn't say.".
func TestAttackFallbackNonsense(t *testing.T) {
	c := sampleCampaign(t)
	f, err := npc.NewFallback(npc.FallbackConfig{Graph: c.Graph(), Heard: c.Sessions()})
	if err != nil {
		t.Fatal(err)
	}
	// A don't-know or a refusal: said to a greeting, thanks or a name
	// called, it is nonsense.
	refusals := []string{"can't", "cannot", "couldn't", "know", "no idea", "not my business", "not something",
		"afraid", "beyond me", "no answer", "help", "beats me", "got me", "heard a thing", "whisper"}
	// How an NPC says it is well.
	fine := []string{"well", "grumble", "better", "fine"}
	tests := []struct {
		npc, text string
		want      []string // one of these is in the reply (lower case)
		never     []string
	}{
		{npc: "grimjaw", text: "Hi", never: refusals},
		{npc: "grimjaw", text: "Hello there, Grimjaw!", never: refusals},
		{npc: "brannoc", text: "Good evening, Brannoc.", never: refusals},
		{npc: "elara", text: "Greetings, Elara.", never: refusals},
		{npc: "grimjaw", text: "Thanks, Grimjaw.", never: refusals},
		{npc: "brannoc", text: "Thank you, Brannoc!", never: refusals},
		{npc: "grimjaw", text: "Goodbye Grimjaw", never: refusals},
		{npc: "elara", text: "Farewell, Elara.", never: refusals},
		{npc: "grimjaw", text: "Grimjaw?", never: refusals},
		{npc: "grimjaw", text: "Grimjaw!", never: refusals},
		{npc: "brannoc", text: "Brannoc…", never: refusals},
		{npc: "grimjaw", text: "Grimjaw, who are you?", want: []string{"blacksmith"}},
		{npc: "grimjaw", text: "Grimjaw, tell me about yourself.", want: []string{"blacksmith"}},
		{npc: "vexa", text: "Who are you, Vexa?", want: []string{"guild enforcer"}},
		{npc: "brannoc", text: "Brannoc, ale please", never: []string{"wave", "said i", "said you"}},
		// Small talk: "how are you?" got "Couldn't say.", "what's new?"
		// "Not a thing I know.".
		{npc: "grimjaw", text: "How are you, Grimjaw?", want: fine, never: refusals},
		{npc: "brannoc", text: "Brannoc! How's business?", want: fine, never: refusals},
		{npc: "elara", text: "Good morning Elara, how are you doing today?", want: fine, never: refusals},
		{npc: "vexa", text: "How's it going, Vexa?", want: fine, never: refusals},
		{npc: "grimjaw", text: "Grimjaw, are you well?", want: fine, never: refusals},
		{npc: "grimjaw", text: "How have you been, Grimjaw?", want: fine, never: refusals},
		{npc: "brannoc", text: "What's new, Brannoc?", never: refusals},
		{npc: "elara", text: "Hello Elara, what's new with you these days?", never: refusals},
		{npc: "grimjaw", text: "Good day, Grimjaw.", never: refusals},
		{npc: "brannoc", text: "Good morning!", never: refusals},
		// Not social, not about itself: still an honest don't-know.
		{npc: "grimjaw", text: "Grimjaw, hello, where is the dragon?", never: []string{"dragon"}},
		// Small talk that goes on is a question, not small talk.
		{npc: "grimjaw", text: "Grimjaw, how are things with the dragon?", never: []string{"dragon", "well enough", "grumble", "never better", "thank you"}},
		{npc: "brannoc", text: "What's new about the dragon, Brannoc?", never: []string{"dragon", "usual", "same as ever", "this and that"}},
	}
	for _, tt := range tests {
		res, err := f.Turn(context.Background(), npc.TurnInput{NPCID: tt.npc, SessionID: "s3", SpeakerID: "u1",
			SpeakerName: "Thorin", Text: tt.text}, "no LLM configured", nil)
		if err != nil {
			t.Fatal(err)
		}
		reply := strings.ToLower(res.Text)
		for _, w := range tt.never {
			if strings.Contains(reply, w) {
				t.Errorf("%s, told %q, answers %q: it holds %q", tt.npc, tt.text, res.Text, w)
			}
		}
		if len(tt.want) > 0 && !containsAny(reply, tt.want) {
			t.Errorf("%s, told %q, answers %q: want one of %q", tt.npc, tt.text, res.Text, tt.want)
		}
		if strings.TrimSpace(res.Text) == "" || len(res.Sentences) > npc.FallbackMaxSentences {
			t.Errorf("%s, told %q, answers %q (%d sentences)", tt.npc, tt.text, res.Text, len(res.Sentences))
		}
	}
}
