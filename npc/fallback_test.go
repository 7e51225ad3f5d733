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
	f, err := npc.NewFallback(npc.FallbackConfig{Graph: c.Graph(), Heard: c.Sessions(),
		OnReply: func(id string, knew bool) { replies = append(replies, id) }})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, npc, text string
		knew            bool
		want            []string // in the reply
		never           []string // never in the reply
	}{
		{name: "a fact about a known person, asked where", npc: "grimjaw", text: "Grimjaw, where is Elara?", knew: true,
			want: []string{"Thorin, ", "Elara Moonwhisper is at Tower of Whispers."}},
		{name: "its own words, heard", npc: "grimjaw", text: "Grimjaw, will the Guild still pay us two hundred gold?", knew: true,
			want: []string{"As I said before: Lost? Stolen! Two hundred gold from the Guild"}},
		{name: "what it heard another say", npc: "brannoc", text: "Brannoc, where was the lost cart headed?", knew: true,
			want: []string{"lost cart of steel"}},
		{name: "a fact about itself, in the first person", npc: "elara", text: "Elara, who are the Ashen Circle?", knew: true,
			want: []string{"I am hostile to Ashen Circle.", "Ashen Circle wants to wake Eldrinax"}},
		{name: "a secret fact is never told", npc: "grimjaw", text: "Grimjaw, who made the vault key?", knew: true,
			want: []string{"About Vault Key: iron key with a drowned rune."}, never: []string{"forged", "hooded stranger"}},
		{name: "its secret knowledge is never told", npc: "grimjaw", text: "Grimjaw, did you sell a key to a hooded stranger?", knew: true,
			never: []string{"Sunken Vault", "sold it"}},
		{name: "another NPC's knowledge is out of reach", npc: "brannoc", text: "Brannoc, what do you know about the Ashen Circle?",
			want: []string{"I don't know anything about Ashen Circle"}, never: []string{"Eldrinax"}},
		{name: "nothing matches", npc: "vexa", text: "Vexa, what about the weather?",
			want: []string{"I don't know anything about the weather"}},
		{name: "a formal speaker does not know", npc: "elara", text: "Elara, where is the dragon?",
			want: []string{"I am afraid I know nothing about the dragon."}},
		{name: "a blank line", npc: "vexa", text: "  ", want: []string{"I don't know anything about that"}},
	}
	knew := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spoken []string
			res, err := f.Turn(context.Background(), npc.TurnInput{NPCID: tt.npc, SessionID: "s3", SpeakerName: "Thorin", Text: tt.text},
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
			dont := strings.Contains(res.Text, "know anything") || strings.Contains(res.Text, "know nothing")
			if dont == tt.knew {
				t.Errorf("knew = %v, want %v", !dont, tt.knew)
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

func TestFallbackDoesNotEchoItself(t *testing.T) {
	c := sampleCampaign(t)
	f, err := npc.NewFallback(npc.FallbackConfig{Graph: c.Graph(), Heard: c.Sessions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := npc.TurnInput{NPCID: "grimjaw", SessionID: "s3", SpeakerName: "Kael", Text: "Grimjaw, will the Guild pay us two hundred gold?"}
	first, err := f.Turn(ctx, in, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 15, 19, 0, 0, 0, time.UTC)
	if err := c.Sessions().StartSession(ctx, "s3", at); err != nil {
		t.Fatal(err)
	}
	for i, e := range []memory.TranscriptEntry{
		{SessionID: "s3", SpeakerID: "u3", SpeakerName: "Kael", Text: in.Text, At: at},
		{SessionID: "s3", SpeakerID: "grimjaw", NPCID: "grimjaw", SpeakerName: "Grimjaw", Text: first.Text, At: at.Add(time.Second)},
	} {
		e.IdempotencyKey = fmt.Sprintf("echo:%d", i)
		if _, err := c.Sessions().WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	again, err := f.Turn(ctx, in, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(again.Text, "As I said before: Kael") || strings.Count(again.Text, "Kael,") > 1 {
		t.Errorf("the NPC quotes its own reply of this session: %q", again.Text)
	}
	if !strings.Contains(again.Text, "Two hundred gold from the Guild") {
		t.Errorf("the NPC forgot what it said in an earlier session: %q", again.Text)
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
