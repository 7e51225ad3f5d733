package discordtest

import (
	"fmt"
	"math"
	"net/http"
	"time"
)

// Fault is how the fake fails a REST call, as the network or Discord's
// edge sometimes does.
type Fault int

const (
	// Drop closes the connection before the request is handled: Discord
	// never saw it. The call is not among Calls.
	Drop Fault = iota + 1
	// LoseAnswer handles the request (it takes effect and is among Calls),
	// then closes the connection instead of answering: the request got
	// through, its answer was lost.
	LoseAnswer
	// BadGateway answers 502 without handling the request (discordgo sends
	// a 502'd request again by itself, up to its MaxRestRetries).
	BadGateway
	// Unavailable answers 503 without handling the request.
	Unavailable
	// RateLimited answers 429 without handling the request, asking to
	// retry after 50 ms (Discord's body and Retry-After header).
	RateLimited
	// RateLimitedLong answers 429 without handling the request, asking to
	// retry after an hour.
	RateLimitedLong
	// GlobalLimitDay handles the request and answers it with rate-limit
	// headers that put every route out of calls for a day
	// (X-RateLimit-Global, Remaining 0, Reset-After 86400).
	GlobalLimitDay
	// RouteLimitDayAbsolute handles the request and answers it with
	// rate-limit headers that put its route out of calls for a day, given
	// only as the absolute reset (X-RateLimit-Remaining 0, X-RateLimit-Reset
	// a day after the answer's Date, no X-RateLimit-Reset-After).
	RouteLimitDayAbsolute
)

func (f Fault) String() string {
	switch f {
	case Drop:
		return "drop"
	case LoseAnswer:
		return "lose-answer"
	case BadGateway:
		return "502"
	case Unavailable:
		return "503"
	case RateLimited:
		return "429"
	case RateLimitedLong:
		return "429-long"
	case GlobalLimitDay:
		return "global-limit-day"
	case RouteLimitDayAbsolute:
		return "route-limit-day-absolute"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// fault is a pending FailNext.
type fault struct {
	match func(Call) bool
	left  int
	f     Fault
}

// FailNext makes the next n REST calls matching match fail with f.
// Faults are matched in the order they were added; a call takes the
// first pending one that matches.
func (s *Server) FailNext(n int, f Fault, match func(Call) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{match: match, left: n, f: f})
}

// Faulted returns the calls a fault failed, in order (LoseAnswer's are
// also among Calls: they took effect).
func (s *Server) Faulted() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.faulted...)
}

// takeFault returns the fault c is to fail with, if any, and counts it.
func (s *Server) takeFault(c Call) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		if f.left > 0 && f.match(c) {
			f.left--
			s.faulted = append(s.faulted, c)
			return f.f, true
		}
	}
	return 0, false
}

// failCall fails a call whose fault is f, handling it first (handle) for
// LoseAnswer.
func failCall(w http.ResponseWriter, f Fault, handle func(http.ResponseWriter)) {
	switch f {
	case BadGateway, Unavailable:
		status := http.StatusBadGateway
		if f == Unavailable {
			status = http.StatusServiceUnavailable
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"message": "%s", "code": 0}`, http.StatusText(status))
		return
	case RateLimited, RateLimitedLong:
		after := 0.05
		if f == RateLimitedLong {
			after = 3600
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", fmt.Sprint(math.Ceil(after)))
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"message": "You are being rate limited.", "retry_after": %g, "global": false}`, after)
		return
	case GlobalLimitDay:
		w.Header().Set("X-RateLimit-Global", "true")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset-After", "86400")
		handle(w)
		return
	case RouteLimitDayAbsolute:
		now := time.Now()
		w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", fmt.Sprint(now.Add(24*time.Hour).Unix()))
		handle(w)
		return
	case LoseAnswer:
		handle(discardWriter{header: http.Header{}})
	}
	// Drop, or LoseAnswer once handled: the connection ends unanswered.
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("discordtest: hijacking a connection to drop it: %v", err))
	}
	conn.Close()
}

// discardWriter takes an answer nobody receives.
type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header         { return d.header }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}
