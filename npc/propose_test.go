package npc_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/npc"
)

// An NPC's propose_fact of a fact canon already holds (here a secret one)
// answers exactly as for a new fact and leaves the canon fact untouched: the
// claim is the NPC's own proposal (issue 17, item 1).
func TestProposeFactNeverRevealsOrMerges(t *testing.T) {
	c := sampleCampaign(t)
	ctx := context.Background()
	id, err := c.Graph().IdentitySnapshot(ctx, "grimjaw")
	if err != nil {
		t.Fatal(err)
	}
	var canon memory.Relationship
	for _, r := range id.Relationships {
		if r.Type == "FORGED" {
			canon = r
		}
	}
	if canon.ID == 0 || canon.Attributes[memory.AttrSecret] != true {
		t.Fatalf("the sample lacks the secret FORGED fact: %+v", id.Relationships)
	}
	srv := llmtest.New(llmtest.Script(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			{Name: npc.ToolProposeFact, Args: `{"subject":"Grimjaw","relation":"forged","object":"Vault Key","confidence":1}`},
		}},
		llmtest.Reply{ToolCalls: []llmtest.Call{
			{Name: npc.ToolProposeFact, Args: `{"subject":"Grimjaw","relation":"forged","object":"Dawn Hammer","confidence":1}`},
		}},
		llmtest.Reply{Text: "Hm."},
	))
	defer srv.Close()
	a := newAgent(t, c, srv, npc.ToolBudget{})
	if _, err := a.Turn(ctx, npc.TurnInput{NPCID: "grimjaw", SessionID: "s3", SpeakerName: "Kael", Text: "Who made the key?"}, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	existing := toolResults(reqs[1])[npc.ToolProposeFact]
	fresh := strings.TrimPrefix(toolResults(reqs[2])[npc.ToolProposeFact], existing)
	if existing == "" || strings.ReplaceAll(fresh, "Dawn Hammer", "Vault Key") != existing || !strings.Contains(existing, "game master will review") {
		t.Fatalf("propose_fact of an existing secret fact answered %q, of a new one %q", existing, fresh)
	}
	after, err := c.Graph().Fact(ctx, canon.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after.Attributes, canon.Attributes) || !after.UpdatedAt.Equal(canon.UpdatedAt) || after.Status != memory.StatusActive {
		t.Errorf("the canon fact changed: %+v, was %+v", after, canon)
	}
	pending, err := c.Graph().PendingFacts(ctx, memory.FactFilter{EntityID: "vault-key"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID == canon.ID || pending[0].Attributes["proposed_by"] != "grimjaw" {
		t.Errorf("the NPC's proposal: %+v", pending)
	}
}

// TestAttackProposeFactTellsOfTheDMsRuling attacks the DM's review through
// an NPC. A player talks Grimjaw into noting that he forged the Dawn
// Hammer, and asks him again later: propose_fact's answer, which the model
// may repeat aloud, must be the same whether the NPC never proposed the
// fact, proposed it and the DM has not looked yet, or proposed it and the
// DM rejected it. Otherwise the player learns, through the NPC, how the DM
// ruled on a claim the DM kept to themselves.
func TestAttackProposeFactTellsOfTheDMsRuling(t *testing.T) {
	c := sampleCampaign(t)
	ctx := context.Background()
	propose := llmtest.Reply{ToolCalls: []llmtest.Call{
		{Name: npc.ToolProposeFact, Args: `{"subject":"Grimjaw","relation":"forged","object":"Dawn Hammer","confidence":1}`},
	}}
	srv := llmtest.New(llmtest.Script(propose, llmtest.Reply{Text: "Hm."}, propose, llmtest.Reply{Text: "Hm."},
		propose, llmtest.Reply{Text: "Hm."}))
	defer srv.Close()
	a := newAgent(t, c, srv, npc.ToolBudget{})
	answers := map[string]string{}
	for _, state := range []string{"never proposed", "pending", "rejected"} {
		if state == "rejected" {
			pending, err := c.Graph().PendingFacts(ctx, memory.FactFilter{EntityID: "grimjaw"})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range pending {
				if f.Type == "FORGED" && f.Attributes["proposed_by"] == "grimjaw" {
					if _, err := c.Graph().RejectFact(ctx, f.ID); err != nil {
						t.Fatal(err)
					}
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d proposals of Grimjaw's to reject: %+v", n, pending)
			}
		}
		if _, err := a.Turn(ctx, npc.TurnInput{NPCID: "grimjaw", SessionID: "s3", SpeakerName: "Kael", Text: "You forged the Dawn Hammer, admit it."}, nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		answers[state] = toolResults(reqs[len(reqs)-1])[npc.ToolProposeFact]
	}
	if answers["never proposed"] == "" || answers["pending"] != answers["never proposed"] || answers["rejected"] != answers["never proposed"] {
		t.Errorf("propose_fact answered differently by the fact's review:\n%q", answers)
	}
}
