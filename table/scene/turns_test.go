package scene_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/scene"
)

// turnsScene exercises turn-taking through the production turn loop: a
// name said alone and its continuation 0.7 s later, two NPCs named
// together, players answering each other, the DM's direction and undo.
const turnsScene = `
session: turns
players:
  - {name: Thorin}
  - {name: Lyra}
lines:
  - {command: "/npc scene grimjaw brannoc", by: DM}
  - {speaker: Thorin, say: "Grimjaw…", heard: "Grimjaw…"}
  - {speaker: Thorin, say: "what news from the forge?", heard: "what news from the forge?", after: 700ms}
  - {speaker: Lyra, say: "Grimjaw and Brannoc, what do you both think?", heard: "Grimjaw and Brannoc, what do you both think?", after: 5s}
  - {speaker: Thorin, say: "Lyra, pass me the rope.", heard: "Lyra, pass me the rope.", after: 1s}
  - {speaker: Lyra, say: "Sure, here you go.", heard: "Sure, here you go.", after: 500ms}
  - {command: "/npc direct grimjaw instruction:be gruff and mention the rain", by: DM}
  - {speaker: Thorin, say: "Grimjaw, how much for the axe?", heard: "Grimjaw, how much for the axe?", after: 5s}
  - {command: "/npc undo", by: DM}
  - {speaker: Thorin, say: "And the shield?", heard: "And the shield?", after: 1s}
  - {command: "/npc direct grimjaw", by: DM}
  - {speaker: Thorin, say: "Grimjaw, one more thing.", heard: "Grimjaw, one more thing.", after: 3s}
  - {speaker: Lyra, say: "Brannoc.", heard: "Brannoc.", after: 3s}
  - {speaker: Thorin, say: "I roll for perception.", heard: "I roll for perception.", after: 5s}
`

// TestTurnTaking: a split vocative gets one answer, two NPCs named
// together both answer in turn, a player answering another player gets
// none, the DM's direction reaches the NPC's prompt until cleared, an
// undone reply is no NPC's memory and no follow-up, and a name said alone
// that nothing follows is answered alone once the merge wait is over.
func TestTurnTaking(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, dims)
	h := newHarness(t, store)
	ctx := context.Background()
	sc, err := scene.Parse(strings.NewReader(turnsScene), "turns")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var cmds []scene.CommandEvent
	h.opts.OnEvent = func(ev scene.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Command != nil {
			cmds = append(cmds, *ev.Command)
		}
	}
	res, err := scene.Play(ctx, sc, h.opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if c.Error != "" {
			t.Fatalf("%s: %s", c.Command, c.Error)
		}
	}
	if len(res.Lines) != 11 {
		for _, l := range res.Lines {
			t.Logf("%q → %q (%s)", l.Corrected, l.Addressee, l.Reason)
		}
		t.Fatalf("%d line events, want 11", len(res.Lines))
	}
	answers := func(l scene.LineEvent) []string {
		var who []string
		for _, r := range append([]table.LineReport{l.LineReport}, l.Also...) {
			if r.Reply != "" {
				who = append(who, r.Addressee)
			}
		}
		return who
	}
	l := res.Lines
	// The name alone is held, then answered once with its continuation.
	if !l[0].Held || len(answers(l[0])) != 0 || l[0].Reason != table.ReasonHeld {
		t.Errorf("the name said alone: %+v", l[0].LineReport)
	}
	if got := answers(l[1]); len(got) != 1 || got[0] != "grimjaw" || l[1].Joined != "Grimjaw…" {
		t.Errorf("its continuation: answered by %v, joined %q, want grimjaw once, joined to Grimjaw…", got, l[1].Joined)
	}
	if user := texts(l[1].Context, "user"); !strings.Contains(user, "Grimjaw…, what news from the forge?") &&
		!strings.Contains(user, "Grimjaw… what news from the forge?") {
		t.Errorf("the NPC was not asked the joined line:\n%s", user)
	}
	// Two NPCs named together answer in turn, in the order named.
	if got := answers(l[2]); strings.Join(got, ",") != "grimjaw,brannoc" {
		t.Errorf("Grimjaw and Brannoc, …: answered by %v, want grimjaw then brannoc", got)
	}
	if !strings.Contains(texts(l[2].Also[0].Context, ""), "Grimjaw here.") {
		t.Errorf("Brannoc did not hear Grimjaw's answer before his own")
	}
	// Players answering each other: nobody.
	for _, k := range []int{3, 4} {
		if got := answers(l[k]); len(got) != 0 {
			t.Errorf("%q answered by %v (%s)", l[k].Corrected, got, l[k].Reason)
		}
	}
	// The direction is in Grimjaw's prompt.
	if got := answers(l[5]); len(got) != 1 || got[0] != "grimjaw" {
		t.Fatalf("Grimjaw, how much for the axe?: answered by %v", got)
	}
	if sys := texts(l[5].Context, "system"); !strings.Contains(sys, "be gruff and mention the rain") {
		t.Errorf("the DM's direction is not in the prompt:\n%s", sys)
	}
	// After the undo, the next line is no follow-up to the withdrawn reply.
	if got := answers(l[6]); len(got) != 0 {
		t.Errorf("And the shield? after the undo: answered by %v (%s)", got, l[6].Reason)
	}
	// The direction, cleared, is no longer in the prompt; the withdrawn
	// reply is not in the conversation Grimjaw is sent.
	if got := answers(l[7]); len(got) != 1 {
		t.Fatalf("Grimjaw, one more thing.: answered by %v", got)
	}
	if all := texts(l[7].Context, ""); strings.Contains(all, "mention the rain") {
		t.Errorf("the cleared direction is still in the prompt")
	}
	// "Brannoc." alone: held, then answered alone (late) before the next
	// line, which nobody answers.
	if !l[8].Held || len(answers(l[8])) != 0 {
		t.Errorf("Brannoc. said alone: %+v", l[8].LineReport)
	}
	if got := answers(l[9]); !l[9].Late || len(got) != 1 || got[0] != "brannoc" || l[9].Corrected != "Brannoc." {
		t.Errorf("Brannoc. answered alone: late %v, answered by %v, line %q (report %+v)", l[9].Late, got, l[9].Corrected, l[9].LineReport)
	}
	if got := answers(l[10]); len(got) != 0 || l[10].Corrected != "I roll for perception." {
		t.Errorf("%q answered by %v", l[10].Corrected, got)
	}
	var withdrawn, replies int
	var asst []string
	for _, m := range l[7].Context {
		if m.Role == "assistant" {
			asst = append(asst, m.Content)
		}
	}
	es, err := h.camp.Sessions().Entries(ctx, sc.Session)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.NPCID == "grimjaw" {
			replies++
			if e.NonCanon {
				withdrawn++
			}
		}
	}
	// Grimjaw answered four times (the joined line, with Brannoc, the
	// axe, one more thing); the axe answer is withdrawn.
	if replies != 4 || withdrawn != 1 {
		t.Errorf("Grimjaw's lines in the session log: %d, %d non-canon; want 4 and 1", replies, withdrawn)
	}
	if len(asst) != 2 {
		t.Errorf("Grimjaw's own lines in his last prompt: %q; want his two canon replies before it", asst)
	}
}
