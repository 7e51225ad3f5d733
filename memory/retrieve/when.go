package retrieve

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

// span is a range of session start times a question is about; a zero
// bound is open.
type span struct {
	from, to time.Time
}

func (s span) open() bool { return s.from.IsZero() && s.to.IsZero() }

// intersect narrows s to t.
func (s span) intersect(t span) span {
	if !t.from.IsZero() && (s.from.IsZero() || t.from.After(s.from)) {
		s.from = t.from
	}
	if !t.to.IsZero() && (s.to.IsZero() || t.to.Before(s.to)) {
		s.to = t.to
	}
	return s
}

var months = map[string]time.Month{
	"january": time.January, "jan": time.January, "february": time.February, "feb": time.February,
	"march": time.March, "mar": time.March, "april": time.April, "apr": time.April, "may": time.May,
	"june": time.June, "jun": time.June, "july": time.July, "jul": time.July, "august": time.August,
	"aug": time.August, "september": time.September, "sep": time.September, "sept": time.September,
	"october": time.October, "oct": time.October, "november": time.November, "nov": time.November,
	"december": time.December, "dec": time.December,
}

const monthRE = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)`

var (
	// "before March 9", "after the 9th of March", "around Mar 9th".
	dayMonthRE = regexp.MustCompile(`(?i)\b(?:(before|until|after|since|on|around|about|near)\s+)?(?:the\s+)?(?:` +
		monthRE + `\.?\s+(\d{1,2})(?:st|nd|rd|th)?|(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthRE + `)\b`)
	sessionWordRE = regexp.MustCompile(`(?i)\b(last|latest|previous|most recent|first)\s+session\b`)
)

// questionSpan reads the time a question is about from its words: "last
// session" (the latest that has ended), "first session", a day ("around March
// 9", "before the 9th of March"; around and on take the sessions within
// three days and one day of it) or a month ("in March", "after May").
// The year is the one that puts the day nearest to a session of the
// campaign. sessions are the campaign's, oldest first. ok is false when
// the question names no time.
func questionSpan(text string, sessions []memory.Session) (span, bool) {
	if len(sessions) == 0 {
		return span{}, false
	}
	if m := sessionWordRE.FindStringSubmatch(text); m != nil {
		// The last session is the latest that has ended: during a
		// session, "last session" is the one before.
		s := sessions[len(sessions)-1]
		for i := len(sessions) - 1; i >= 0; i-- {
			if !sessions[i].EndedAt.IsZero() {
				s = sessions[i]
				break
			}
		}
		if strings.EqualFold(m[1], "first") {
			s = sessions[0]
		}
		return span{from: s.StartedAt, to: s.StartedAt}, true
	}
	if m := dayMonthRE.FindStringSubmatch(text); m != nil {
		name, day := m[2], m[3]
		if name == "" {
			name, day = m[5], m[4]
		}
		d, err := strconv.Atoi(day)
		mon := months[strings.ToLower(name)]
		if err != nil || d < 1 || d > 31 || mon == 0 {
			return span{}, false
		}
		at := nearestYear(sessions, func(y int) time.Time { return time.Date(y, mon, d, 0, 0, 0, 0, time.UTC) })
		switch strings.ToLower(m[1]) {
		case "before", "until":
			return span{to: at}, true
		case "after", "since":
			return span{from: at.AddDate(0, 0, 1)}, true
		case "on":
			return span{from: at.AddDate(0, 0, -1), to: at.AddDate(0, 0, 2)}, true
		default:
			return span{from: at.AddDate(0, 0, -3), to: at.AddDate(0, 0, 4)}, true
		}
	}
	return span{}, false
}

// nearestYear returns date(y) for the year y, among the years of the
// sessions and those beside them, nearest to any session.
func nearestYear(sessions []memory.Session, date func(y int) time.Time) time.Time {
	var best time.Time
	bestGap := time.Duration(-1)
	for _, s := range sessions {
		for y := s.StartedAt.Year() - 1; y <= s.StartedAt.Year()+1; y++ {
			t := date(y)
			gap := t.Sub(s.StartedAt)
			if gap < 0 {
				gap = -gap
			}
			if bestGap < 0 || gap < bestGap {
				best, bestGap = t, gap
			}
		}
	}
	return best
}

// timeScope returns the chunks a question may be answered from because of
// time (nil: any): as of a session, those of that session and earlier
// ones; for a session's date in the game's calendar ("on the 3rd of
// Frostfall"), that session's; for "last session" or "first session",
// that session's; for a day ("around March 9"), those of the sessions
// then. A time the question
// names that no chunked session matches (a day of the game's calendar, a
// session not processed yet) restricts nothing.
func (r *Retriever) timeScope(ctx context.Context, q Query, dated []memory.Session) ([]string, error) {
	var bound span
	if q.AsOf != "" {
		s, err := r.camp.Sessions().Session(ctx, q.AsOf)
		if err != nil {
			return nil, fmt.Errorf("retrieval as of session %q: %w", q.AsOf, err)
		}
		bound.to = s.StartedAt
	}
	if ids, err := r.gameDateScope(ctx, q.Text, dated, bound); err != nil || len(ids) > 0 {
		return ids, err
	}
	if sessionWordRE.MatchString(q.Text) || dayMonthRE.MatchString(q.Text) {
		ss, err := r.camp.Sessions().Starts(ctx)
		if err != nil {
			return nil, err
		}
		if !bound.to.IsZero() {
			ss = slices.DeleteFunc(ss, func(s memory.Session) bool { return s.StartedAt.After(bound.to) })
		}
		if sp, ok := questionSpan(q.Text, ss); ok {
			ids, err := r.camp.Index().ChunkIDsOfSessions(ctx, sp.from, sp.to)
			if err != nil {
				return nil, err
			}
			if len(ids) > 0 {
				bound = bound.intersect(sp)
			}
		}
	}
	if bound.open() {
		return nil, nil
	}
	return r.camp.Index().ChunkIDsOfSessions(ctx, bound.from, bound.to)
}

// gameDateScope returns the chunks of the sessions whose game date the
// question names ("what happened on the 3rd of Frostfall?"), within
// bound; none when it names none, or none of them has chunks.
func (r *Retriever) gameDateScope(ctx context.Context, text string, dated []memory.Session, bound span) ([]string, error) {
	q := " " + strings.Join(strings.Fields(strings.ToLower(text)), " ") + " "
	var ids []string
	for _, s := range dated {
		d := strings.Join(strings.Fields(strings.ToLower(s.GameDate)), " ")
		if d == "" || !strings.Contains(q, d) || (!bound.to.IsZero() && s.StartedAt.After(bound.to)) {
			continue
		}
		some, err := r.camp.Index().ChunkIDsOfSessions(ctx, s.StartedAt, s.StartedAt)
		if err != nil {
			return nil, err
		}
		ids = append(ids, some...)
	}
	return ids, nil
}

// intersectIDs keeps the ids of a that are in b.
func intersectIDs(a, b []string) []string {
	in := set(b)
	out := []string{}
	for _, id := range a {
		if in[id] {
			out = append(out, id)
		}
	}
	return out
}
