package recap_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

func input() recap.Input {
	return recap.Input{
		Lines: []recap.Line{
			{ID: 10, At: t0, Speaker: "DM", Text: "You find Grimjaw at his forge in Ironhold, hammering a glowing blade."},
			{ID: 11, At: t0.Add(time.Minute), Speaker: "Grimjaw", NPC: true, Text: "Lost? Stolen! Two hundred gold if you bring my steel back from Duskwood."},
			{ID: 12, At: t0.Add(2 * time.Minute), Speaker: "Kael", Text: "We'll do it."},
			{ID: 13, At: t0.Add(3 * time.Minute), Speaker: "Lyra", Text: "Pass me the dice, I need to roll a perception check."},
		},
		Avoid:     []string{"He forged the key to the Sunken Vault and sold it to a hooded stranger."},
		Sentences: 3,
	}
}

func writer(t *testing.T, replies ...llmtest.Reply) (recap.Writer, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(llmtest.Script(replies...))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return recap.Writer{LLM: c}, srv
}

func TestWrittenRecapIsChecked(t *testing.T) {
	w, srv := writer(t, llmtest.Reply{Text: "```json\n" + `{"sentences": [
		{"text": "Grimjaw offered two hundred gold for his stolen steel.", "lines": [11, 10]},
		{"text": "The party agreed to search Duskwood.", "lines": [12, 99]},
		{"text": "Grimjaw once sold the key to the Sunken Vault to a hooded stranger.", "lines": [10]},
		{"text": "Kael swore to help.", "lines": []},
		{"text": "Kael promised to bring the steel back.", "lines": [12]}
	]}` + "\n```"})
	r, err := w.Write(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	if r.Extractive || len(r.Sentences) != 2 || r.Dropped != 3 {
		t.Fatalf("recap %+v", r)
	}
	if r.Sentences[0].Text != "Grimjaw offered two hundred gold for his stolen steel." || r.Sentences[0].Lines[0] != 10 {
		t.Fatalf("first sentence %+v", r.Sentences[0])
	}
	req := srv.Requests()[0]
	for _, m := range req.Messages {
		if strings.Contains(m.Content, "hooded stranger") {
			t.Fatalf("the avoid list was sent to the model: %s", m.Content)
		}
	}
	if !strings.Contains(req.Messages[1].Content, "[11] 19:01 Grimjaw:") {
		t.Fatalf("prompt: %s", req.Messages[1].Content)
	}
}

func TestFallsBackToKeyLines(t *testing.T) {
	cases := map[string]recap.Writer{"no LLM": {}}
	broken, _ := writer(t, llmtest.Reply{Text: "Sure! Here is a recap: the party went to Duskwood."})
	cases["unparseable answer"] = broken
	failing, _ := writer(t, llmtest.Reply{Status: 500})
	cases["failing LLM"] = failing
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := w.Write(context.Background(), input())
			if err != nil {
				t.Fatal(err)
			}
			if !r.Extractive || len(r.Sentences) != 2 {
				t.Fatalf("recap %+v", r)
			}
			if !strings.Contains(r.Sentences[0].Text, "Grimjaw at his forge") || r.Sentences[0].Lines[0] != 10 {
				t.Fatalf("key lines %+v", r.Sentences)
			}
			for _, s := range r.Sentences {
				if strings.Contains(s.Text, "dice") {
					t.Fatalf("table chatter chosen over story: %+v", r.Sentences)
				}
			}
		})
	}
}

// The offline recap picks lines by salience: the evidence of a fact, a new
// entity, a decision, an NPC's answer; chatter, table talk and questions
// lose; every sentence cites its line, in the order spoken.
func TestExtractiveRecapPicksSalientLines(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	in := recap.Input{
		Lines: []recap.Line{
			{ID: 1, At: at(0), Speaker: "Lyra", Text: "Did anyone bring the snacks and the dice tonight?"},
			{ID: 2, At: at(1), Speaker: "Kael", Text: "Where did the stolen steel go, old man?"},
			{ID: 3, At: at(2), Speaker: "Grimjaw", NPC: true, Text: "The Ashen Circle took it to Duskwood, I am sure of it."},
			{ID: 4, At: at(3), Speaker: "Lyra", Text: "I think it is getting late for all of us here."},
			{ID: 5, At: at(4), Speaker: "Kael", Text: "We'll ride for Duskwood at dawn, I promise you that."},
			{ID: 6, At: at(5), Speaker: "Lyra", Text: "A stranger called Vexa waits at the gate with a letter."},
			{ID: 7, At: at(6), Speaker: "Kael", Text: "That sounds like a good plan to me, honestly."},
			{ID: 8, At: at(7), Speaker: "Lyra", Text: "He forged the key to the Sunken Vault, that much is plain."},
		},
		Evidence:  map[int64][]string{3: {"Ashen Circle stole steel"}},
		Names:     []recap.Name{{Name: "Duskwood"}, {Name: "Ashen Circle"}, {Name: "Vexa", New: true}, {Name: "Grimjaw", Aliases: []string{"old man"}}},
		Avoid:     []string{"He forged the key to the Sunken Vault and sold it to a hooded stranger."},
		Sentences: 3,
	}
	r, err := recap.Writer{}.Write(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range r.Sentences {
		if len(s.Lines) != 1 {
			t.Fatalf("sentence %q cites %v, want its one line", s.Text, s.Lines)
		}
		got = append(got, fmt.Sprintf("%d %s", s.Lines[0], s.Text))
	}
	want := []string{
		"3 Grimjaw said: “The Ashen Circle took it to Duskwood, I am sure of it.”",
		"5 Kael said: “We'll ride for Duskwood at dawn, I promise you that.”",
		"6 Lyra said: “A stranger called Vexa waits at the gate with a letter.”",
	}
	if !r.Extractive || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("key lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
