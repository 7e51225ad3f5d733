package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
)

// cmdChat runs NPC turns from the terminal: the same pipeline as in voice,
// typed instead of spoken. Without a language model, or when it fails, the
// NPC answers from its memory with the extractive fallback, marked as such.
func cmdChat(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("chat", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	npcID := fs.String("npc", "", "the NPC to talk to (entity id)")
	as := fs.String("as", "Player", "your name at the table")
	session := fs.String("session", "", "session id to record the conversation in (default chat-<date>)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" || *npcID == "" {
		return usagef("--campaign and --npc are required")
	}
	cfg, err := sf.loadConfig(e)
	if err != nil {
		return err
	}
	if !cfg.Providers.LLM.Configured() {
		// Chat without an LLM is a mode, not a configuration error: say
		// what it does and what to set for real replies.
		printf(e.stderr, "No LLM is configured (providers.llm.base_url and providers.llm.model, or GLYPHOXA_LLM_BASE_URL and GLYPHOXA_LLM_MODEL). "+
			"%s For a local model: ollama serve, then GLYPHOXA_LLM_BASE_URL=http://localhost:11434/v1 GLYPHOXA_LLM_MODEL=llama3.1\n", npc.OfflineBehaviour)
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := checkCampaign(ctx, store, *campaign); err != nil {
		return err
	}
	door, closeDoor, err := openDoor(ctx, store, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer closeDoor()
	camp, err := door.Open(ctx, *campaign, memory.DMViewer())
	if err != nil {
		return err
	}
	// The same check as ask --npc: a mistyped id names the nearest NPCs,
	// and a player, place or thing is no one to talk to.
	if err := checkNPC(ctx, camp, *npcID); err != nil {
		return err
	}
	ent, err := camp.Graph().Entity(ctx, *npcID)
	if err != nil {
		return err
	}
	recaller, err := newRecaller(camp, cfg)
	if err != nil {
		printf(e.stderr, "(the recall tool is not available: %v)\n", err)
	}
	fallback, err := npc.NewFallback(npc.FallbackConfig{Graph: table.NPCGraph(camp), Heard: camp.Sessions(), Recall: recaller,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	ncfg := npc.Config{Context: newHotContext(camp, cfg), Graph: table.NPCGraph(camp), Heard: camp.Sessions(),
		Recall: recaller, ContextTokens: cfg.Memory.HotContextTokens, Fallback: fallback,
		Budget: npc.ToolBudget{MaxTime: cfg.Memory.ToolTime.Std()}}
	if cfg.Providers.LLM.Configured() {
		if ncfg.LLM, err = newLLM(cfg, nil); err != nil {
			return err
		}
	}
	agent, err := npc.NewAgent(ncfg)
	if err != nil {
		return err
	}
	sid := *session
	if sid == "" {
		sid = "chat-" + time.Now().UTC().Format("2006-01-02")
	}
	return chatLoop(ctx, e, camp, agent, ent, sid, *as)
}

// newLLM is the one place that builds the LLM client (providers.llm):
// NPC turns, summaries, fact extraction and recaps use it. onUsage, if
// set, receives the tokens of every call (the /metrics token counter).
func newLLM(cfg config.Config, onUsage func(llm.Usage)) (*llm.Client, error) {
	p := cfg.Providers.LLM
	return llm.New(llm.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, Model: p.Model, Temperature: float32(p.Temperature),
		Timeout: p.Timeout.Std(), OnUsage: onUsage})
}

func chatLoop(ctx context.Context, e *env, camp *access.Campaign, agent *npc.Agent, ent memory.Entity, sessionID, as string) error {
	printf(e.stdout, "Talking to %s in campaign %s (session %s). Type a line and press Enter; an empty line or Ctrl-D ends.\n",
		ent.Name, camp.ID(), sessionID)
	var history []npc.Message
	in := bufio.NewScanner(e.stdin)
	for {
		printf(e.stdout, "\n%s> ", as)
		if !in.Scan() {
			printf(e.stdout, "\n")
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		if line == "" {
			return nil
		}
		now := time.Now().UTC()
		if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: sessionID, SpeakerID: "console:" + as,
			SpeakerName: as, Text: line, RawText: line, At: now, IdempotencyKey: fmt.Sprintf("chat:%s:%d", sessionID, now.UnixNano())}); err != nil {
			return err
		}
		printf(e.stdout, "%s: ", ent.Name)
		res, err := agent.Turn(ctx, npc.TurnInput{NPCID: ent.ID, SessionID: sessionID, SpeakerID: "console:" + as, SpeakerName: as,
			Text: line, History: history, Live: true}, func(s string) { printf(e.stdout, "%s ", s) })
		printf(e.stdout, "\n")
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			printf(e.stderr, "(%v)\n", err)
			continue
		}
		for _, t := range res.Tools {
			status := "ok"
			if t.Error != "" {
				status = t.Error
			}
			printf(e.stdout, "  [tool %s %s → %s]\n", t.Name, t.Args, truncateStr(status, 80))
		}
		if res.Fallback {
			printf(e.stdout, "  [fallback: answered from memory without the language model]\n")
		} else {
			printf(e.stdout, "  [%d ms to first sentence, %d+%d tokens]\n", res.Timings.FirstSentence.Milliseconds(),
				res.Usage.PromptTokens, res.Usage.CompletionTokens)
		}
		at := time.Now().UTC()
		if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: sessionID, SpeakerID: ent.ID, SpeakerName: ent.Name,
			NPCID: ent.ID, Text: res.Text, RawText: res.Text, At: at, IdempotencyKey: fmt.Sprintf("chat:%s:%d", sessionID, at.UnixNano())}); err != nil {
			return err
		}
		history = append(history, npc.Message{SpeakerID: "console:" + as, Speaker: as, Text: line, At: now},
			npc.Message{SpeakerID: ent.ID, Speaker: ent.Name, NPCID: ent.ID, Text: res.Text, At: at})
		if len(history) > 40 {
			history = history[len(history)-40:]
		}
	}
}

func truncateStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
