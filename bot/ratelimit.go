package bot

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
)

// maxRateLimitReset bounds the wait Discord's answers can impose on the
// bot's REST calls. discordgo waits out X-RateLimit-Reset-After (or the
// absolute X-RateLimit-Reset) before the next call of the route (of every
// route with X-RateLimit-Global), asleep and holding the route, whatever
// the context; and on a 429 it sleeps the body's retry_after and sends the
// call again, without end. A broken edge or proxy saying a day (or a 429
// of an hour) would stop the bot's calls for that long. Discord's real
// resets are a few seconds.
const maxRateLimitReset = 10 * time.Second

// rateLimitAttempts bounds how many times one REST call is sent while
// Discord answers it 429 (rate limited): Discord did not take it, so it is
// sent again after the wait asked for (at least a backoff), and after the
// last attempt, or at once when the wait asked for is over
// maxRateLimitReset, the 429 is the call's answer (discordgo's
// RateLimitError).
const rateLimitAttempts = 5

// boundRateLimits is the transport of the bot's discordgo session: every
// REST call the bot makes goes through it. It caps the reset of the
// rate-limit headers of every answer at maxRateLimitReset, and it handles
// 429s in discordgo's place (BoundRateLimits turns discordgo's handling off):
// a call is sent at most rateLimitAttempts times, waiting at most
// maxRateLimitReset between attempts, and the wait ends with the
// request's context. It logs the answers it cut and the calls it gave up.
type boundRateLimits struct {
	base http.RoundTripper
	log  *slog.Logger
}

// RoundTrip implements http.RoundTripper.
func (t boundRateLimits) RoundTrip(r *http.Request) (*http.Response, error) {
	backoff := reconnect.Backoff{Initial: answerInitialDelay, Max: answerMaxDelay}
	for n := 1; ; n++ {
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		t.capReset(r, resp)
		if resp.StatusCode != http.StatusTooManyRequests {
			return resp, nil
		}
		wait, body, rerr := retryAfter(resp)
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if wait > maxRateLimitReset || n == rateLimitAttempts || (r.Body != nil && r.GetBody == nil) {
			t.log.Warn("Discord rate limits a call; giving it up", "method", r.Method, "path", r.URL.Path,
				"retry_after", wait, "attempts", n, "max_wait", maxRateLimitReset)
			return resp, nil
		}
		next := r.Clone(r.Context())
		if r.GetBody != nil {
			b, gerr := r.GetBody()
			if gerr != nil {
				return resp, nil
			}
			next.Body = b
		}
		delay := max(backoff.Delay(n, rand.Float64()), wait)
		t.log.Debug("Discord rate limits a call; sending it again", "method", r.Method, "path", r.URL.Path,
			"attempt", n, "retry_in", delay)
		timer := time.NewTimer(delay)
		select {
		case <-r.Context().Done():
			timer.Stop()
			return resp, nil
		case <-timer.C:
		}
		r = next
	}
}

// capReset caps the reset of resp's rate-limit headers at
// maxRateLimitReset, relative (X-RateLimit-Reset-After, which discordgo
// reads first) or absolute (X-RateLimit-Reset, epoch seconds, against the
// answer's Date): a reset that is too far, or that cannot be read, becomes
// a Reset-After of maxRateLimitReset.
func (t boundRateLimits) capReset(r *http.Request, resp *http.Response) {
	h := resp.Header
	after, reset := h.Get("X-RateLimit-Reset-After"), h.Get("X-RateLimit-Reset")
	switch {
	case after != "":
		s, err := strconv.ParseFloat(after, 64)
		if err == nil && s >= 0 && s <= maxRateLimitReset.Seconds() {
			return
		}
	case reset != "":
		at, err := strconv.ParseFloat(reset, 64)
		date, derr := http.ParseTime(h.Get("Date"))
		if err == nil && derr == nil && at-float64(date.Unix()) <= maxRateLimitReset.Seconds() {
			return
		}
	default:
		return
	}
	t.log.Warn("Discord's rate-limit headers ask for a long wait; waiting less", "path", r.URL.Path,
		"reset_after", after, "reset", reset, "global", h.Get("X-RateLimit-Global") != "", "waiting", maxRateLimitReset)
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(maxRateLimitReset.Seconds(), 'f', -1, 64))
}

// retryAfter reads a 429's body and the wait it asks for: the body's
// retry_after (seconds), else the Retry-After header, else none. It
// returns the body read, for the answer to carry on.
func retryAfter(resp *http.Response) (time.Duration, []byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return 0, nil, err
	}
	var b struct {
		RetryAfter *float64 `json:"retry_after"`
	}
	s := 0.0
	if json.Unmarshal(body, &b) == nil && b.RetryAfter != nil {
		s = *b.RetryAfter
	} else if v, perr := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); perr == nil {
		s = v
	}
	if s != s || s > maxRateLimitReset.Seconds()*1e6 { // NaN, or past what a Duration holds
		return time.Duration(1<<63 - 1), body, nil
	}
	return time.Duration(max(s, 0) * float64(time.Second)), body, nil
}

// BoundRateLimits makes the session's REST calls take at most
// maxRateLimitReset from rate-limit headers and from each 429, and at most
// rateLimitAttempts attempts while rate limited: discordgo's own handling
// of a 429 (sleep whatever is asked, uninterruptibly, and retry without
// end) is turned off. Every discordgo session of the product goes through
// it: the bot's, and `glyphoxa init`'s token check.
func BoundRateLimits(s *discordgo.Session, log *slog.Logger) {
	s.ShouldRetryOnRateLimit = false
	c := &http.Client{}
	if s.Client != nil {
		*c = *s.Client
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if _, done := base.(boundRateLimits); done {
		return
	}
	c.Transport = boundRateLimits{base: base, log: log}
	s.Client = c
}
