package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/realtime"
	"github.com/glyphoxa/glyphoxa/voice/realtime/realtimetest"
)

// One turn of an S2S NPC, as the turn pipeline drives it: refresh the hot
// context, pass the addressed player's frames, end the turn, play the
// audio events and log the transcripts.
func Example() {
	srv := realtimetest.Start(realtimetest.Options{
		Transcript: "Grimjaw, what news?",
		Replies: []realtimetest.Reply{{
			Call: &realtimetest.Call{Name: "recall", Arguments: `{"query":"news"}`},
			Text: "The mine flooded last night.",
		}},
	})
	defer srv.Close()

	ctx := context.Background()
	budget := realtime.NewBudget(30 * time.Minute) // one per game session
	s, err := realtime.Dial(ctx, realtime.Config{
		URL: srv.URL(), APIKey: "sk-…", Model: "gpt-realtime", Voice: "ash",
		Instructions: "You are Grimjaw, the blacksmith of Ironhold.",
		Tools:        []realtime.Tool{{Name: "recall", Description: "Recall memories about a topic."}},
		Runner: realtime.ToolRunnerFunc(func(ctx context.Context, name string, args json.RawMessage) (string, error) {
			return `{"memories":["the mine flooded"]}`, nil // the NPC's own memory, its permissions applied
		}),
		Budget: budget,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	_ = s.UpdateInstructions(ctx, "You are Grimjaw… (hot context for this turn)")
	frame := make([]int16, 960) // 20 ms at 48 kHz, from the addressed player's lane
	for range 10 {
		_ = s.Hear(ctx, frame)
	}
	if err := s.EndOfTurn(ctx); err != nil {
		fmt.Println(err)
		return
	}
	played := 0
	for ev := range s.Events() {
		switch ev.Kind {
		case realtime.EventAudio:
			played += len(ev.Audio) // to the Opus encoder, 960 samples a frame
		case realtime.EventPlayerTranscript:
			fmt.Println("player:", ev.Text)
		case realtime.EventToolCall:
			fmt.Println("tool:", ev.Tool.Name, string(ev.Tool.Args))
		case realtime.EventNPCTranscript:
			fmt.Println("npc:", ev.Text)
		}
		if ev.Kind == realtime.EventResponseDone && ev.Status == "completed" && played > 0 {
			break
		}
	}
	fmt.Println("audio played:", played > 0)
	// Output:
	// player: Grimjaw, what news?
	// tool: recall {"query":"news"}
	// npc: The mine flooded last night.
	// audio played: true
}
