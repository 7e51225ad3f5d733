package bot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
)

// Answering a member survives a failed exchange with Discord: a request
// whose connection dropped or timed out, or that Discord answered with a
// 5xx, is sent again (at most answerAttempts times, answerInitialDelay
// doubling to answerMaxDelay between attempts, ±20 %), while the bot runs.
// Discord's refusals (4xx) are final. Which requests are sent again
// depends on what a second copy would do:
//
//   - An edit of a response (the original of a deferred reply, the message
//     a button was on) sets the message: a second copy changes nothing, so
//     every failed exchange is retried (lostExchange).
//   - An interaction's initial response (the acknowledgement) is refused
//     by Discord the second time (400, code 40060 "already acknowledged"):
//     it is retried like an edit, and that refusal of a retry means an
//     earlier attempt got through whose answer was lost. This is what keeps
//     a member from "thinking…" forever when the acknowledgement reached
//     Discord but its answer did not reach the bot.
//   - A follow-up message is a new message each time: it is retried only
//     when Discord surely did not post it (notPosted: no connection was
//     made, or Discord answered 5xx), so that no part of an answer shows
//     twice.
//
// A request Discord rate limited (429) was not taken: the session's
// transport sends it again, as it does every REST call of the bot
// (boundRateLimits: at most rateLimitAttempts times, a wait of at most
// maxRateLimitReset between them), so a rate limit that reaches an answer
// is final: the transport's attempts are used up, or Discord asks for a
// wait over maxRateLimitReset.
//
// The attempts run under the bot's context, not the handler's: the answer
// of a handler that ran out of its time (interactionTimeout) is an error
// message that must still reach the member. Closing the bot ends them.
const (
	answerAttempts     = 5
	answerInitialDelay = 250 * time.Millisecond
	answerMaxDelay     = 4 * time.Second
)

// callDiscord makes one REST call that answers a member: call, with the
// request options it must pass on, is attempted until it succeeds, fails
// in a way retry does not accept, answerAttempts were made or the bot
// closes. It returns the number of attempts and the last error; each
// failed attempt that is retried is logged at Warn.
func (b *Bot) callDiscord(i *discordgo.Interaction, what string, retry func(error) bool, call func(opts ...discordgo.RequestOption) error) (int, error) {
	ctx := b.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	backoff := reconnect.Backoff{Initial: answerInitialDelay, Max: answerMaxDelay}
	for n := 1; ; n++ {
		err := call(discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
		if limit, limited := rateLimited(err); limited {
			return n, fmt.Errorf("Discord still rate limits the call (asking to wait %v; at most %v is waited, %d times): %w",
				limit, maxRateLimitReset, rateLimitAttempts, err)
		}
		if err == nil || n == answerAttempts || !retry(err) || ctx.Err() != nil {
			return n, err
		}
		delay := backoff.Delay(n, rand.Float64())
		b.log.Warn("Discord did not take an answer; trying again", "what", what, "interaction", i.ID,
			"attempt", n, "retry_in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return n, err
		case <-t.C:
		}
	}
}

// rateLimited reports whether Discord refused a request with 429 (rate
// limited: it did not take it), and the wait it asked for.
func rateLimited(err error) (time.Duration, bool) {
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) || rl.RateLimit == nil || rl.TooManyRequests == nil {
		return 0, false
	}
	return max(rl.RetryAfter, 0), true
}

// lostExchange reports whether err is a failed exchange with Discord
// rather than Discord's refusal: a transport error (no connection, a
// connection dropped, a timeout) or a 5xx (discordgo's own retries of a
// 502 used up included). Such a request may or may not have taken effect.
// A 4xx is a refusal that a second copy would get too; an answer that
// could not be decoded means the request took effect.
func lostExchange(err error) bool {
	var rest *discordgo.RESTError
	switch {
	case err == nil, errors.Is(err, discordgo.ErrJSONUnmarshal):
		return false
	case errors.As(err, &rest):
		return rest.Response != nil && rest.Response.StatusCode >= http.StatusInternalServerError
	}
	return true
}

// notPosted reports whether a request that failed surely did not take
// effect: no connection to Discord was made, or Discord answered with a
// 5xx (its own failure, which Discord asks clients to retry).
func notPosted(err error) bool {
	var rest *discordgo.RESTError
	if errors.As(err, &rest) {
		return rest.Response != nil && rest.Response.StatusCode >= http.StatusInternalServerError
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// alreadyAcknowledged reports whether Discord refused an initial response
// because the interaction has one already (400, code 40060).
func alreadyAcknowledged(err error) bool {
	var rest *discordgo.RESTError
	return errors.As(err, &rest) && rest.Message != nil &&
		rest.Message.Code == discordgo.ErrCodeInteractionHasAlreadyBeenAcknowledged
}
