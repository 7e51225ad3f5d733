package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

func client(t *testing.T, srv *llmtest.Server, mod func(*llm.Config)) *llm.Client {
	t.Helper()
	// Generous timeouts: no test may pass or fail by how fast a loaded
	// machine answers. Tests of a timeout use a server that never answers.
	cfg := llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake-model", Backoff: 5 * time.Millisecond,
		FirstTokenTimeout: 30 * time.Second, Timeout: time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func user(s string) []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: s}}
}

func TestStreamDeliversTextAsItArrives(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "Aye, the forge burns hot tonight. Ironhold sleeps.", ChunkDelay: time.Millisecond}))
	defer srv.Close()
	c := client(t, srv, nil)
	var got []string
	resp, err := c.Stream(context.Background(), llm.Request{Messages: user("hello")}, func(s string) { got = append(got, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || strings.Join(got, "") != resp.Text || resp.Text != "Aye, the forge burns hot tonight. Ironhold sleeps." {
		t.Fatalf("pieces %q, text %q", got, resp.Text)
	}
	if resp.Usage.Estimated || resp.Usage.CompletionTokens != (len(resp.Text)+3)/4 || resp.FinishReason != "stop" {
		t.Fatalf("usage %+v, finish %q", resp.Usage, resp.FinishReason)
	}
	if n, in, out := c.Totals(); n != 1 || in == 0 || out == 0 {
		t.Fatalf("totals %d %d %d", n, in, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].Stream || reqs[0].Model != "fake-model" || reqs[0].Messages[0].Content != "hello" {
		t.Fatalf("request %+v", reqs)
	}
}

func TestStreamAssemblesToolCalls(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{ToolCalls: []llmtest.Call{
		{Name: "recall", Args: `{"query":"the stolen steel"}`},
		{Name: "query_entities", Args: `{"name":"Elara"}`},
	}}))
	defer srv.Close()
	resp, err := client(t, srv, nil).Stream(context.Background(), llm.Request{Messages: user("x")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Function.Name != "recall" ||
		resp.ToolCalls[0].Function.Arguments != `{"query":"the stolen steel"}` || resp.ToolCalls[1].ID == "" ||
		resp.FinishReason != "tool_calls" {
		t.Fatalf("tool calls %+v", resp)
	}
}

func TestStreamRetriesOnlyBeforeOutput(t *testing.T) {
	cases := []struct {
		name     string
		replies  []llmtest.Reply
		wantErr  bool
		attempts int
		requests int
	}{
		{"503 then ok", []llmtest.Reply{{Status: 503}, {Text: "fine"}}, false, 2, 2},
		{"429 twice then ok", []llmtest.Reply{{Status: 429}, {Status: 429}, {Text: "fine"}}, false, 3, 3},
		// The first reply never comes in time (an hour); the second comes at
		// once, with seconds to spare however loaded the machine is.
		{"silent server then ok", []llmtest.Reply{{Delay: time.Hour, Text: "late"}, {Text: "fine"}}, false, 2, 2},
		{"400 is not retried", []llmtest.Reply{{Status: 400}}, true, 1, 1},
		{"always 500", []llmtest.Reply{{Status: 500}}, true, 3, 3},
		{"broken after output is not retried", []llmtest.Reply{{Text: "Half a sentence and then", Broken: true}, {Text: "fine"}}, true, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script(tc.replies...))
			defer srv.Close()
			resp, err := client(t, srv, func(c *llm.Config) { c.FirstTokenTimeout = 3 * time.Second }).
				Stream(context.Background(), llm.Request{Messages: user("x")}, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if resp.Attempts != tc.attempts || len(srv.Requests()) != tc.requests {
				t.Fatalf("attempts %d, requests %d", resp.Attempts, len(srv.Requests()))
			}
			if !tc.wantErr && resp.Text != "fine" {
				t.Fatalf("text %q", resp.Text)
			}
		})
	}
}

func TestStreamHonoursContextAndEstimatesUsage(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "twelve chars", NoUsage: true}))
	defer srv.Close()
	resp, err := client(t, srv, nil).Stream(context.Background(), llm.Request{Messages: user("abcdefgh")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Usage.Estimated || resp.Usage.PromptTokens != 2 || resp.Usage.CompletionTokens != 3 {
		t.Fatalf("estimated usage %+v", resp.Usage)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client(t, srv, nil).Stream(ctx, llm.Request{Messages: user("x")}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestNotConfigured(t *testing.T) {
	if _, err := llm.New(llm.Config{}); !errors.Is(err, llm.ErrNotConfigured) || !strings.Contains(err.Error(), "GLYPHOXA_LLM_BASE_URL") {
		t.Fatalf("got %v", err)
	}
}
