package recap

import (
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
)

// InWorldOrder orders the sessions of a campaign recap, given in the order
// they were played, by their in-world dates in the campaign's calendar
// (see [calendar.Calendar.Order]: an undated session follows the one
// played before it), and writes each date in the calendar's form. Every
// campaign recap orders its sessions with it: Discord's /recap, the
// console's and the demo's.
func InWorldOrder(cal calendar.Calendar, played []memory.Session) []memory.Session {
	dates := make([]string, len(played))
	for i, s := range played {
		dates[i] = s.GameDate
	}
	out := make([]memory.Session, 0, len(played))
	for _, i := range cal.Order(dates) {
		s := played[i]
		if d, err := cal.Parse(s.GameDate); err == nil {
			s.GameDate = cal.Format(d)
		}
		out = append(out, s)
	}
	return out
}
