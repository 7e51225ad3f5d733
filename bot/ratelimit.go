package bot

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

// maxRateLimitReset bounds the wait a Discord answer's rate-limit headers
// can impose. discordgo waits out X-RateLimit-Reset-After before the next
// call of the route (of every route with X-RateLimit-Global), asleep and
// holding the route, whatever the context: a broken edge or proxy saying a
// day would stop the bot's calls for a day. Discord's real resets are a
// few seconds.
const maxRateLimitReset = 10 * time.Second

// boundRateLimits caps the reset of the rate-limit headers of every answer
// at maxRateLimitReset, logging the answers it cut.
type boundRateLimits struct {
	base http.RoundTripper
	log  *slog.Logger
}

func (t boundRateLimits) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	// Discord sends X-RateLimit-Reset-After with every X-RateLimit-Reset,
	// and discordgo reads it first; an answer with the absolute reset
	// alone is left as it is.
	after := resp.Header.Get("X-RateLimit-Reset-After")
	if after == "" {
		return resp, nil
	}
	s, perr := strconv.ParseFloat(after, 64)
	if perr == nil && s >= 0 && s <= maxRateLimitReset.Seconds() {
		return resp, nil
	}
	t.log.Warn("Discord's rate-limit headers ask for a long wait; waiting less", "path", r.URL.Path,
		"reset_after", after, "global", resp.Header.Get("X-RateLimit-Global") != "", "waiting", maxRateLimitReset)
	resp.Header.Set("X-RateLimit-Reset-After", strconv.FormatFloat(maxRateLimitReset.Seconds(), 'f', -1, 64))
	return resp, nil
}

// boundSession makes the session's REST calls take at most
// maxRateLimitReset from rate-limit headers.
func boundSession(s *discordgo.Session, log *slog.Logger) {
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
