package npc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/npc"
)

func TestFallbackAnswersFromWhatTheNPCKnows(t *testing.T) {
	c := sampleCampaign(t)
	var replies []string
	var knewLast bool
	f, err := npc.NewFallback(npc.FallbackConfig{Graph: c.Graph(), Heard: c.Sessions(),
		OnReply: func(id string, knew bool) { replies = append(replies, id); knewLast = knew }})
	if err != nil {
		t.Fatal(err)
	}
	lyra := npc.Message{SpeakerID: "u2", Speaker: "Lyra", Text: "Listen, the vault key is hidden under the third stone of the old mill."}
	tests := []struct {
		name, npc, text string
		said            []npc.Message
		knew            bool
		want            []string // in the reply
		never           []string // never in the reply
	}{
		{name: "a fact about a known person, asked where", npc: "grimjaw", text: "Grimjaw, where is Elara?", knew: true,
			want: []string{"Thorin.", "Elara Moonwhisper is at Tower of Whispers."}},
		{name: "its own earlier replies are never quoted", npc: "grimjaw", text: "Grimjaw, will the Guild still pay us two hundred gold?", knew: true,
			want: []string{"I am a member of Smiths' Guild."}, never: []string{"Lost? Stolen!", "As I said before", "said"}},
		{name: "what a player told it", npc: "brannoc", text: "Brannoc, where is the vault key hidden?", knew: true,
			said: []npc.Message{lyra,
				{SpeakerID: "grimjaw", NPCID: "grimjaw", Speaker: "Grimjaw", Text: "The vault key went to a hooded man by the river."},
				{SpeakerID: "u1", Speaker: "Thorin", Text: "I remember this: Brannoc: the vault key is hidden in the cellar stones."}},
			want:  []string{"Lyra said the vault key is hidden under the third stone of the old mill."},
			never: []string{"hooded", "river", "cellar", "I remember this"}},
		{name: "a fact about itself, in the first person", npc: "elara", text: "Elara, who are the Ashen Circle?", knew: true,
			want: []string{"I am hostile to Ashen Circle.", "Ashen Circle wants to wake Eldrinax"}},
		{name: "its occupation, asked", npc: "grimjaw", text: "Grimjaw, what is your trade?", knew: true,
			want: []string{"I am a blacksmith."}},
		{name: "a secret fact is never told", npc: "grimjaw", text: "Grimjaw, who made the vault key?", knew: true,
			want: []string{"About Vault Key: iron key with a drowned rune."}, never: []string{"forged", "hooded stranger"}},
		{name: "its secret knowledge is never told", npc: "grimjaw", text: "Grimjaw, did you sell a key to a hooded stranger?", knew: true,
			never: []string{"Sunken Vault", "sold it"}},
		{name: "another NPC's knowledge is out of reach", npc: "brannoc", text: "Brannoc, what do you know about the Ashen Circle?",
			never: []string{"Eldrinax", "Ashen", "Circle"}},
		{name: "nothing matches", npc: "vexa", text: "Vexa, what about the weather?", never: []string{"weather"}},
		{name: "a request it cannot serve", npc: "grimjaw", text: "Grimjaw, my sword needs a new edge.", never: []string{"sword", "edge"}},
		{name: "a formal speaker does not know", npc: "elara", text: "Elara, where is the dragon?", never: []string{"dragon", "know anything"}},
		{name: "a blank line", npc: "vexa", text: "  "},
	}
	knew := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spoken []string
			res, err := f.Turn(context.Background(), npc.TurnInput{NPCID: tt.npc, SessionID: "s3", SpeakerName: "Thorin", Text: tt.text, Said: tt.said},
				"no LLM configured", func(s string) { spoken = append(spoken, s) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %q", tt.npc, res.Text)
			if !res.Fallback || res.NPCID != tt.npc {
				t.Errorf("result %+v is not marked as %s's fallback", res, tt.npc)
			}
			if strings.Join(spoken, " ") != res.Text || len(spoken) != len(res.Sentences) {
				t.Errorf("spoken %q, text %q", spoken, res.Text)
			}
			if len(res.Sentences) > npc.FallbackMaxSentences {
				t.Errorf("%d sentences, want at most %d", len(res.Sentences), npc.FallbackMaxSentences)
			}
			if knewLast != tt.knew {
				t.Errorf("knew = %v, want %v", knewLast, tt.knew)
			}
			if !tt.knew && len(res.Sentences) != 1 {
				t.Errorf("a don't-know of %d sentences, want 1", len(res.Sentences))
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("reply lacks %q", w)
				}
			}
			for _, w := range tt.never {
				if strings.Contains(strings.ToLower(res.Text), strings.ToLower(w)) {
					t.Errorf("reply tells %q", w)
				}
			}
		})
		if tt.knew {
			knew++
		}
	}
	if got := f.Stats(); got.Answered != int64(knew) || got.DidNotKnow != int64(len(tests)-knew) {
		t.Errorf("stats %+v, want %d answered and %d not known", got, knew, len(tests)-knew)
	}
	if len(replies) != len(tests) {
		t.Errorf("OnReply called %d times, want %d", len(replies), len(tests))
	}
}

// TestFallbackNeverQuotesReplies replays the long-night failure: an NPC
// asked the same thing again and again, with its replies in the session
// log, answers without ever quoting a reply, nested or not.
func TestFallbackNeverQuotesReplies(t *testing.T) {
	c := sampleCampaign(t)
	f, err := npc.NewFallback(npc.FallbackConfig{Graph: c.Graph(), Heard: c.Sessions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Date(2026, 3, 15, 19, 0, 0, 0, time.UTC)
	if err := c.Sessions().StartSession(ctx, "s3", at); err != nil {
		t.Fatal(err)
	}
	var replies []string
	write := func(i int, e memory.TranscriptEntry) {
		e.SessionID, e.At, e.IdempotencyKey = "s3", at.Add(time.Duration(i)*time.Second), fmt.Sprintf("echo:%d", i)
		if _, err := c.Sessions().WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// An earlier version's replies, as they were recorded.
	write(0, memory.TranscriptEntry{SpeakerID: "grimjaw", NPCID: "grimjaw", SpeakerName: "Grimjaw",
		Text: "Kael, here is what I know. I remember this: I remember this: Grimjaw: I don't know anything about mend dent shield, sorry."})
	lines := []string{"Grimjaw, can you mend the dent in my shield?", "Grimjaw, will the Guild pay us two hundred gold?",
		"Grimjaw, is your forge open tomorrow?", "Grimjaw, where is Elara?"}
	for round := range 3 {
		for i, text := range lines {
			n := 1 + 2*(round*len(lines)+i)
			write(n, memory.TranscriptEntry{SpeakerID: "u3", SpeakerName: "Kael", Text: text})
			var hist []npc.Message
			for _, r := range replies {
				hist = append(hist, npc.Message{SpeakerID: "grimjaw", NPCID: "grimjaw", Speaker: "Grimjaw", Text: r})
			}
			res, err := f.Turn(ctx, npc.TurnInput{NPCID: "grimjaw", SessionID: "s3", SpeakerName: "Kael", Text: text, History: hist}, "test", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range replies {
				// The same question may get the same answer; an answer
				// holding an earlier one and more is a quote.
				if len(res.Text) > len(r) && strings.Contains(res.Text, r) {
					t.Errorf("%q quotes the earlier reply %q", res.Text, r)
				}
			}
			if len(res.Sentences) > npc.FallbackMaxSentences {
				t.Errorf("%q: %d sentences", res.Text, len(res.Sentences))
			}
			for _, bad := range []string{"I remember this", "As I said before", "know anything about", "Grimjaw said", "Kael said"} {
				if strings.Contains(res.Text, bad) {
					t.Errorf("reply %q holds %q", res.Text, bad)
				}
			}
			replies = append(replies, res.Text)
			write(n+1, memory.TranscriptEntry{SpeakerID: "grimjaw", NPCID: "grimjaw", SpeakerName: "Grimjaw", Text: res.Text})
		}
	}
}

func TestFallbackBadInput(t *testing.T) {
	if _, err := npc.NewFallback(npc.FallbackConfig{}); err == nil {
		t.Error("a fallback without a graph was accepted")
	}
	c := sampleCampaign(t)
	f, err := npc.NewFallback(npc.FallbackConfig{Graph: c.Graph()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Turn(context.Background(), npc.TurnInput{NPCID: "nobody", Text: "hello?"}, "test", nil)
	if !errors.Is(err, memory.ErrNotFound) || !strings.Contains(err.Error(), "nobody") {
		t.Errorf("unknown NPC: %v, want a not-found error naming it", err)
	}
	// Without a session search, the graph still answers.
	res, err := f.Turn(context.Background(), npc.TurnInput{NPCID: "grimjaw", Text: "Where is Elara?"}, "test", nil)
	if err != nil || !strings.Contains(res.Text, "Tower of Whispers") {
		t.Errorf("graph-only reply %q, %v", res.Text, err)
	}
}

func TestAgentFallsBack(t *testing.T) {
	c := sampleCampaign(t)
	f, err := npc.NewFallback(npc.FallbackConfig{Graph: c.Graph(), Heard: c.Sessions()})
	if err != nil {
		t.Fatal(err)
	}
	in := npc.TurnInput{NPCID: "grimjaw", SessionID: "s3", SpeakerName: "Lyra", Text: "Grimjaw, where is Elara?"}

	t.Run("no LLM configured", func(t *testing.T) {
		// Without an LLM or a fallback, no one answers, but the turn still
		// says what the LLM would have been sent.
		bare, err := npc.NewAgent(npc.Config{Context: hotctx.New(c, hotctx.Config{}), Graph: c.Graph()})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := bare.Turn(context.Background(), in, nil); !errors.Is(err, npc.ErrNoLLM) || len(res.Messages) < 2 ||
			!strings.Contains(res.Messages[len(res.Messages)-1].Content, "where is Elara") {
			t.Fatalf("turn without an LLM: %v, messages %+v", err, res.Messages)
		}
		a, err := npc.NewAgent(npc.Config{Context: hotctx.New(c, hotctx.Config{}), Graph: c.Graph(), Fallback: f})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Turn(context.Background(), in, nil)
		if err != nil || !res.Fallback || !strings.Contains(res.Text, "Tower of Whispers") {
			t.Errorf("reply %+v, %v; want a fallback from memory", res, err)
		}
	})
	tests := []struct {
		name     string
		reply    llmtest.Reply
		fallback bool
	}{
		{"the LLM fails", llmtest.Reply{Status: 400}, true},
		{"the LLM answers", llmtest.Reply{Text: "Up in her tower, lass."}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script(tt.reply))
			defer srv.Close()
			client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Backoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			a, err := npc.NewAgent(npc.Config{LLM: client, Context: hotctx.New(c, hotctx.Config{}), Graph: c.Graph(), Fallback: f})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Turn(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Fallback != tt.fallback {
				t.Errorf("fallback %v, want %v (reply %q)", res.Fallback, tt.fallback, res.Text)
			}
			if tt.fallback && !strings.Contains(res.Text, "Tower of Whispers") {
				t.Errorf("fallback reply %q does not answer from memory", res.Text)
			}
		})
	}
}
