package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
)

// SetCalendar stores the campaign's calendar (nil: back to the numbered
// calendar, "day 12"), checked first. Game dates recorded before that
// the calendar does not read stay as they are, as text, and take no part
// in resolving in-world dates.
func (l *SessionLog) SetCalendar(ctx context.Context, c *calendar.Calendar) error {
	var raw []byte
	if c != nil {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("setting the calendar of campaign %q: %w: %w", l.campaign, memory.ErrInvalid, err)
		}
		var err error
		if raw, err = json.Marshal(c); err != nil {
			return fmt.Errorf("setting the calendar of campaign %q: %w", l.campaign, err)
		}
	}
	if _, err := l.db.Exec(ctx, `INSERT INTO campaigns (id) VALUES ($1) ON CONFLICT DO NOTHING`, l.campaign); err != nil {
		return fmt.Errorf("setting the calendar of campaign %q: %w", l.campaign, err)
	}
	if _, err := l.db.Exec(ctx, `UPDATE campaigns SET calendar = $2 WHERE id = $1`, l.campaign, raw); err != nil {
		return fmt.Errorf("setting the calendar of campaign %q: %w", l.campaign, err)
	}
	return nil
}

// Calendar returns the campaign's calendar and whether one was set; the
// zero Calendar, the numbered one, when none was.
func (l *SessionLog) Calendar(ctx context.Context) (calendar.Calendar, bool, error) {
	return readCalendar(ctx, l.db, l.campaign)
}

// readCalendar reads campaign's calendar (see SessionLog.Calendar).
func readCalendar(ctx context.Context, db querier, campaign string) (calendar.Calendar, bool, error) {
	var raw []byte
	err := db.QueryRow(ctx, `SELECT calendar FROM campaigns WHERE id = $1`, campaign).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && raw == nil) {
		return calendar.Calendar{}, false, nil
	}
	if err != nil {
		return calendar.Calendar{}, false, fmt.Errorf("reading the calendar of campaign %q: %w", campaign, err)
	}
	var c calendar.Calendar
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, false, fmt.Errorf("reading the calendar of campaign %q: %w", campaign, err)
	}
	return c, true, nil
}

// SessionOnGameDate resolves an in-world date of the campaign's calendar
// to the last session on or before it: of the sessions whose game date is
// a date of the calendar on or before d, the one with the latest game
// date, and of those on that date the one started last. Sessions without
// a game date, or whose date the calendar does not read, are not
// candidates. ok is false when no session is dated on or before d.
func (l *SessionLog) SessionOnGameDate(ctx context.Context, cal calendar.Calendar, d calendar.Date) (memory.Session, bool, error) {
	dated, err := l.GameDates(ctx)
	if err != nil {
		return memory.Session{}, false, err
	}
	return lastOnOrBefore(cal, dated, d)
}

// lastOnOrBefore picks from dated (oldest start first) the session
// SessionOnGameDate returns.
func lastOnOrBefore(cal calendar.Calendar, dated []memory.Session, d calendar.Date) (memory.Session, bool, error) {
	var best memory.Session
	var bestOrd int64
	found := false
	for _, s := range dated {
		sd, err := cal.Parse(strings.TrimSpace(s.GameDate))
		if err != nil || sd.Ordinal() > d.Ordinal() {
			continue
		}
		if !found || sd.Ordinal() >= bestOrd {
			best, bestOrd, found = s, sd.Ordinal(), true
		}
	}
	return best, found, nil
}
