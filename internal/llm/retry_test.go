package llm_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

var epoch = time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)

// fakeClient is a client whose waits between retries run on clk and are
// not jittered, so that a test knows each wait exactly.
func fakeClient(t *testing.T, url string, clk *clocktest.Fake, retries int) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: url, APIKey: "k", Model: "fake-model", Retries: retries,
		Backoff: 250 * time.Millisecond, MaxBackoff: 10 * time.Second, MaxRetryAfter: 30 * time.Second,
		FirstTokenTimeout: time.Minute, Timeout: time.Minute,
		Clock: clk, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// calls are the two ways of asking: streamed (NPC turns) and whole
// (summaries, extraction, correction, decomposition).
var calls = []struct {
	name string
	do   func(ctx context.Context, c *llm.Client) (llm.Response, error)
}{
	{"stream", func(ctx context.Context, c *llm.Client) (llm.Response, error) {
		return c.Stream(ctx, llm.Request{Messages: user("x")}, nil)
	}},
	{"complete", func(ctx context.Context, c *llm.Client) (llm.Response, error) {
		return c.Complete(ctx, llm.Request{Messages: user("x")})
	}},
}

type result struct {
	resp llm.Response
	err  error
}

// runAdvancing runs do and fires each wait between its attempts on clk,
// returning the result and the waits, in order. The deadline is a hang
// guard only.
func runAdvancing(t *testing.T, clk *clocktest.Fake, do func(ctx context.Context) (llm.Response, error)) (result, []time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan result, 1)
	go func() {
		r, err := do(ctx)
		done <- result{r, err}
	}()
	for n := 1; ; n++ {
		created := make(chan bool, 1)
		go func() { created <- clk.WaitCreated(ctx, n) }()
		select {
		case r := <-done:
			return r, clk.Created()
		case ok := <-created:
			if !ok {
				t.Fatal("the call neither finished nor waited")
			}
			clk.Advance(clk.Created()[n-1])
		}
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	cases := []struct {
		name       string
		retryAfter string
		want       time.Duration
	}{
		{"seconds", "7", 7 * time.Second},
		{"HTTP date", epoch.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second},
		// A Retry-After shorter than the backoff does not shorten it.
		{"shorter than the backoff", "0", 250 * time.Millisecond},
		{"none", "", 250 * time.Millisecond},
	}
	for _, call := range calls {
		for _, tc := range cases {
			t.Run(call.name+"/"+tc.name, func(t *testing.T) {
				srv := llmtest.New(llmtest.Script(llmtest.Reply{Status: 429, RetryAfter: tc.retryAfter}, llmtest.Reply{Text: "fine"}))
				defer srv.Close()
				clk := clocktest.NewFake(epoch)
				c := fakeClient(t, srv.URL(), clk, 2)
				r, waits := runAdvancing(t, clk, func(ctx context.Context) (llm.Response, error) { return call.do(ctx, c) })
				if r.err != nil {
					t.Fatalf("error after a 429 and a good answer: %v", r.err)
				}
				if r.resp.Text != "fine" || r.resp.Attempts != 2 || len(srv.Requests()) != 2 {
					t.Fatalf("text %q after %d attempts, %d requests; want the second answer", r.resp.Text, r.resp.Attempts, len(srv.Requests()))
				}
				if len(waits) != 1 || waits[0] != tc.want {
					t.Fatalf("waited %v, want one wait of %v", waits, tc.want)
				}
			})
		}
	}
}

func TestRetriesExhausted(t *testing.T) {
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script(llmtest.Reply{Status: 500}))
			defer srv.Close()
			clk := clocktest.NewFake(epoch)
			c := fakeClient(t, srv.URL(), clk, 3)
			r, waits := runAdvancing(t, clk, func(ctx context.Context) (llm.Response, error) { return call.do(ctx, c) })
			if r.err == nil {
				t.Fatal("no error after four 500s")
			}
			if msg := r.err.Error(); !strings.Contains(msg, "failed after 4 attempts") || !strings.Contains(msg, "500") {
				t.Errorf("error %q does not say the attempts ran out on a 500", msg)
			}
			if r.resp.Attempts != 4 || len(srv.Requests()) != 4 {
				t.Errorf("%d attempts, %d requests; want 4", r.resp.Attempts, len(srv.Requests()))
			}
			// The backoff doubles from 250 ms (no jitter with Rand 0.5).
			want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
			if len(waits) != len(want) {
				t.Fatalf("waits %v, want %v", waits, want)
			}
			for i := range want {
				if waits[i] != want[i] {
					t.Fatalf("waits %v, want %v", waits, want)
				}
			}
		})
	}
}

func TestRetryAfterTooLongEndsRetries(t *testing.T) {
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script(llmtest.Reply{Status: 429, RetryAfter: "3600"}, llmtest.Reply{Text: "fine"}))
			defer srv.Close()
			clk := clocktest.NewFake(epoch)
			c := fakeClient(t, srv.URL(), clk, 2)
			r, waits := runAdvancing(t, clk, func(ctx context.Context) (llm.Response, error) { return call.do(ctx, c) })
			if r.err == nil || !strings.Contains(r.err.Error(), "retry after 1h0m0s") {
				t.Fatalf("error %v, want one naming the Retry-After the client will not wait for", r.err)
			}
			if len(waits) != 0 || len(srv.Requests()) != 1 {
				t.Fatalf("waits %v, %d requests; want no wait and no second request", waits, len(srv.Requests()))
			}
		})
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "fine"}))
	url := srv.URL()
	srv.Close() // nothing listens there any more
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			clk := clocktest.NewFake(epoch)
			c := fakeClient(t, url, clk, 1)
			r, waits := runAdvancing(t, clk, func(ctx context.Context) (llm.Response, error) { return call.do(ctx, c) })
			if r.err == nil || !strings.Contains(r.err.Error(), "failed after 2 attempts") {
				t.Fatalf("error %v, want the attempts to run out", r.err)
			}
			if len(waits) == 0 {
				t.Fatal("a refused connection was not retried")
			}
		})
	}
}

func TestNoRetryAfterACallerCancels(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Status: 503}))
	defer srv.Close()
	clk := clocktest.NewFake(epoch)
	c := fakeClient(t, srv.URL(), clk, 5)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, llm.Request{Messages: user("x")})
		done <- err
	}()
	guard, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	if !clk.WaitCreated(guard, 1) {
		t.Fatal("the client did not wait to retry the 503")
	}
	cancel()
	select {
	case err := <-done:
		if !strings.Contains(err.Error(), "context canceled") || !strings.Contains(err.Error(), "503") {
			t.Fatalf("error %q, want the cancellation and the 503 before it", err)
		}
	case <-guard.Done():
		t.Fatal("a cancelled call kept waiting")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests after cancelling during the first wait", n)
	}
}
