package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// Every call of a Client (Stream, Complete, Embed) fails or succeeds the
// same way: a request that failed before producing any output — the
// connection refused or reset, a 408, 429 or 5xx answer, no first token in
// time — is sent again, up to Config.Retries more times. The waits grow
// from Config.Backoff, doubling, jittered by ±50 % and capped at
// Config.MaxBackoff; a server's Retry-After is honoured (the wait is at
// least that long), and one asking for more than Config.MaxRetryAfter ends
// the retries at once, since nobody at the table waits that long. A
// streamed reply that runs past what its max_tokens allows is cut off with
// ErrReplyTooLong and not retried.

// errNoFirstToken reports a server that accepted a request but stayed silent.
var errNoFirstToken = errors.New("no first token in time")

// retryAfterKey keys the per-request holder of the server's Retry-After.
type retryAfterKey struct{}

// retryHint receives the Retry-After of the last answer to one call.
type retryHint struct {
	mu sync.Mutex
	d  time.Duration
	ok bool
}

func (h *retryHint) set(d time.Duration) {
	h.mu.Lock()
	h.d, h.ok = d, true
	h.mu.Unlock()
}

// take returns the last Retry-After and forgets it.
func (h *retryHint) take() (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.d, h.ok
	h.d, h.ok = 0, false
	return d, ok
}

// retryAfterTransport hands the Retry-After header of a 429 or 5xx answer
// to the call that sent the request (through its context): go-openai's
// errors keep the status but not the headers.
type retryAfterTransport struct {
	base  http.RoundTripper
	clock clock.Clock
}

func (t retryAfterTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500) {
		return resp, err
	}
	h, _ := r.Context().Value(retryAfterKey{}).(*retryHint)
	if h == nil {
		return resp, nil
	}
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), t.clock.Now()); ok {
		h.set(d)
	}
	return resp, nil
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date
// (RFC 9110, section 10.2.3).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(24*time.Hour/time.Second) {
			s = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// retryable reports whether a failed request may be sent again.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, errNoFirstToken) {
		return true
	}
	if errors.Is(err, errNoChoices) || errors.Is(err, ErrReplyTooLong) {
		return false
	}
	if status := httpStatus(err); status != 0 {
		return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
	}
	// Transport errors (refused, reset, a timeout of one attempt) are
	// worth another try.
	return !errors.Is(err, context.Canceled)
}

// httpStatus is the HTTP status of a failed request, 0 when it got none.
func httpStatus(err error) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}

// retry runs once until it succeeds, fails for good, or the attempts run
// out. once reports whether output already went to the caller (then a
// failure is final: nothing is said twice). It returns the number of
// attempts made.
func (c *Client) retry(ctx context.Context, what string, once func(ctx context.Context) (produced bool, err error)) (int, error) {
	hint := &retryHint{}
	ctx = context.WithValue(ctx, retryAfterKey{}, hint)
	attempts := c.cfg.Retries + 1
	var lastErr error
	for n := 1; n <= attempts; n++ {
		if n > 1 {
			wait := c.backoff.Delay(n-1, c.rand())
			if ra, ok := hint.take(); ok {
				if ra > c.cfg.MaxRetryAfter {
					return n - 1, fmt.Errorf("%s: the server asks to retry after %v, more than %v: %w", what, ra, c.cfg.MaxRetryAfter, lastErr)
				}
				wait = max(wait, ra)
			}
			if err := c.sleep(ctx, wait); err != nil {
				return n - 1, fmt.Errorf("%s: %w (after: %w)", what, err, lastErr)
			}
		}
		produced, err := once(ctx)
		if err == nil {
			return n, nil
		}
		lastErr = err
		if produced || !retryable(ctx, err) {
			return n, err
		}
	}
	return attempts, fmt.Errorf("%s failed after %d attempts: %w", what, attempts, lastErr)
}

// sleep waits d on the client's clock, or until ctx ends.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
