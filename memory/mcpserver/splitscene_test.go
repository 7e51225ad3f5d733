package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
)

// TestSplitSceneOverMCP: the DM split the party, Lyra (u2) alone in the
// scene. An independent MCP client (the TypeScript SDK) searches the
// sessions and asks (hybrid retrieval over chunks) with the group's player
// token, with Thorin's own token (named by his user id), with Lyra's own
// (named by her character) and with the DM's token: the group's token and
// Thorin's read no line of the scene, Lyra's does, the DM's does.
func TestSplitSceneOverMCP(t *testing.T) {
	t.Parallel()
	peers := nodePeers(t)
	store := sample(t)
	ctx := context.Background()
	c := pgtest.Campaign(t, store, "ironhold-saga")
	for u, ch := range map[string]string{"u1": "thorin", "u2": "lyra"} {
		if _, err := c.SetPlayerCharacter(ctx, u, ch); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Date(2026, 4, 2, 19, 0, 0, 0, time.UTC)
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"u1", "u2"}, false}, {time.Minute, []string{"u2"}, true}, {3 * time.Minute, []string{"u1", "u2"}, false}} {
		if err := c.Sessions().RecordPresence(ctx, "split", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	lines := []memory.TranscriptEntry{
		{SpeakerID: "dm", SpeakerName: "Dana", Text: "Everyone sees the lanterns of Quillmere harbour.", At: start.Add(30 * time.Second)},
		{SpeakerID: "dm", SpeakerName: "Dana", Text: "Lyra alone finds the sapphire key under the Quillmere altar.", At: start.Add(2 * time.Minute)},
		{SpeakerID: "dm", SpeakerName: "Dana", Text: "The party meets again at the Quillmere gate.", At: start.Add(4 * time.Minute)},
	}
	emb, err := embed.NewOffline(store.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	var chunks []memory.Chunk
	for i, e := range lines {
		e.SessionID = "split"
		if _, err := c.Sessions().WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, memory.Chunk{ID: fmt.Sprintf("split-%d", i), SessionID: "split", Content: "Dana: " + e.Text,
			StartAt: e.At, EndAt: e.At.Add(time.Second)})
	}
	// A chunk that holds a line said together and the scene's first line.
	chunks = append(chunks, memory.Chunk{ID: "split-mixed", SessionID: "split",
		Content: "Dana: " + lines[0].Text + "\nDana: " + lines[1].Text, StartAt: lines[0].At, EndAt: lines[1].At.Add(time.Second)})
	texts := make([]string, len(chunks))
	for i, ch := range chunks {
		texts[i] = ch.Content
	}
	vs, err := emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		chunks[i].Embedding = vs[i]
	}
	if err := c.Index().IndexChunks(ctx, chunks); err != nil {
		t.Fatal(err)
	}

	door := pgtest.Door(t, store)
	url := serveMCP(t, mcpserver.Config{Door: door, Campaign: "ironhold-saga",
		Asker: retrieve.NewAsker(door, emb, retrieve.Config{})}, mcpserver.Tokens{Player: []string{"group-token-0123456789"}, DM: []string{"dm-token-0123456789"},
		Players: map[string]string{"thorin-token-0123456789": "u1", "lyra-token-01234567890": "Lyra"}})
	calls := []call{
		{Tool: "search_sessions", Args: map[string]any{"query": "Quillmere", "limit": 50}},
		{Tool: "ask", Args: map[string]any{"question": "Who finds the sapphire key under the Quillmere altar?", "k": 20}},
	}
	for _, tc := range []struct {
		name, token string
		scene       bool // reads the scene's line
	}{
		{"the group's player token", "group-token-0123456789", false},
		{"Thorin's own token", "thorin-token-0123456789", false},
		{"Lyra's own token", "lyra-token-01234567890", true},
		{"the DM's token", "dm-token-0123456789", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := runClient(t, peers, "split-"+strings.Fields(tc.name)[1], calls, "http", url, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range run.Results {
				out := string(r.Result)
				if !r.OK {
					t.Fatalf("%s: %s", calls[i].Tool, r.Error)
				}
				if got := strings.Contains(out, "sapphire"); got != tc.scene {
					if got {
						t.Errorf("LEAK: %s reads the split scene: %s", calls[i].Tool, out)
					} else {
						t.Errorf("%s does not read the scene its player was in: %s", calls[i].Tool, out)
					}
				}
				if !strings.Contains(out, "lanterns") && !strings.Contains(out, "Quillmere gate") {
					t.Errorf("%s reads nothing said together: %s", calls[i].Tool, out)
				}
			}
		})
	}
}
