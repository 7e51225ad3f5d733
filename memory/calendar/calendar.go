// Package calendar reads in-world dates in a campaign's own calendar.
//
// A campaign file may declare its calendar:
//
//	calendar:
//	  months: [{name: Deepwinter, days: 30}, {name: Frostfall, days: 30}, ...]
//	  weekdays: [Moonday, Tiwsday, ...]   # optional, accepted before a date
//	  era: DR                             # optional, accepted after the year
//
// Without months the calendar is numbered: its dates are "day 12".
// [Calendar.Parse] reads "3 Frostfall 1452", "Frostfall 3, 1452",
// "3rd of Frostfall 1452 DR" or "day 12" into a [Date] whose
// [Date.Ordinal] sorts dates in the order they happen in the world.
package calendar

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error about a calendar or a date.
var ErrInvalid = errors.New("invalid in-world date")

// MaxMonthDays bounds a month's length (a sanity check on the file).
const MaxMonthDays = 1000

// Calendar is a campaign's calendar. The zero value is the numbered
// calendar ("day N").
type Calendar struct {
	// Months in their order in the year, each with its number of days.
	Months []Month `yaml:"months" json:"months,omitempty"`
	// Weekdays are accepted (and ignored) before a date: "Moonday, 3 Frostfall 1452".
	Weekdays []string `yaml:"weekdays" json:"weekdays,omitempty"`
	// Era is accepted (and ignored) after a year: "1452 DR".
	Era string `yaml:"era" json:"era,omitempty"`
}

// Month is one month of a calendar.
type Month struct {
	Name string `yaml:"name" json:"name"`
	Days int    `yaml:"days" json:"days"`
}

// Date is an in-world date. Month is 1-based, 0 for a numbered date; Year
// is 0 when the date named none.
type Date struct {
	Year, Month, Day int
	ordinal          int64
}

// Ordinal is the date's day number counted from day 1 of year 0: earlier
// dates have smaller ordinals.
func (d Date) Ordinal() int64 { return d.ordinal }

// Numbered reports whether c is the numbered calendar (no months).
func (c Calendar) Numbered() bool { return len(c.Months) == 0 }

// Validate checks the calendar: months named, distinct, with 1 to
// MaxMonthDays days; weekdays named and distinct.
func (c Calendar) Validate() error {
	seen := map[string]bool{}
	for i, m := range c.Months {
		name := strings.TrimSpace(m.Name)
		switch {
		case name == "":
			return fmt.Errorf("%w: calendar month %d has no name", ErrInvalid, i+1)
		case strings.ContainsAny(name, "0123456789,"):
			return fmt.Errorf("%w: calendar month %q: a month name has no digits or commas", ErrInvalid, m.Name)
		case m.Days < 1 || m.Days > MaxMonthDays:
			return fmt.Errorf("%w: calendar month %q has %d days (want 1 to %d)", ErrInvalid, m.Name, m.Days, MaxMonthDays)
		case seen[fold(name)]:
			return fmt.Errorf("%w: calendar month %q is named twice", ErrInvalid, m.Name)
		}
		seen[fold(name)] = true
	}
	wd := map[string]bool{}
	for i, w := range c.Weekdays {
		name := strings.TrimSpace(w)
		switch {
		case name == "":
			return fmt.Errorf("%w: calendar weekday %d has no name", ErrInvalid, i+1)
		case wd[fold(name)] || seen[fold(name)]:
			return fmt.Errorf("%w: calendar weekday %q is named twice (or is also a month)", ErrInvalid, w)
		}
		wd[fold(name)] = true
	}
	if strings.ContainsAny(c.Era, "0123456789,") {
		return fmt.Errorf("%w: calendar era %q: an era has no digits or commas", ErrInvalid, c.Era)
	}
	return nil
}

// daysPerYear is the length of a year (0 for a numbered calendar).
func (c Calendar) daysPerYear() int64 {
	var n int64
	for _, m := range c.Months {
		n += int64(m.Days)
	}
	return n
}

// Describe says what dates the calendar reads, for error messages.
func (c Calendar) Describe() string {
	if c.Numbered() {
		return `the numbered calendar ("day 12")`
	}
	names := make([]string, len(c.Months))
	for i, m := range c.Months {
		names[i] = m.Name
	}
	return fmt.Sprintf(`the campaign calendar ("3 %s 1452" or "%s 3, 1452"; months: %s)`, c.Months[0].Name, c.Months[0].Name, strings.Join(names, ", "))
}

// Parse reads an in-world date. A numbered calendar reads "day N" (or
// "N"); a calendar with months reads a day and a month in either order,
// then an optional year and era ("3 Frostfall 1452", "Frostfall 3, 1452",
// "3rd of Frostfall", "Moonday 3 Frostfall 1452 DR"), and also "day N"
// (the N-th day of year 0). Names are matched ignoring case. The error
// names the calendar's months.
func (c Calendar) Parse(s string) (Date, error) {
	d, problem := c.parse(s)
	if problem != "" {
		return Date{}, fmt.Errorf("%w: %s: %s; %s reads dates", ErrInvalid, quote(s), problem, c.Describe())
	}
	return d, nil
}

func (c Calendar) parse(s string) (Date, string) {
	words := strings.Fields(strings.NewReplacer(",", " ", ".", " ").Replace(s))
	if len(words) == 0 {
		return Date{}, "empty"
	}
	if len(c.Weekdays) > 0 && c.weekday(words[0]) {
		words = words[1:]
	}
	if len(words) == 2 && fold(words[0]) == "day" {
		n, ok := number(words[1])
		if !ok || n < 1 {
			return Date{}, fmt.Sprintf("day %q is not a positive number", words[1])
		}
		return Date{Day: n, ordinal: int64(n)}, ""
	}
	if c.Numbered() {
		if len(words) == 1 {
			if n, ok := number(words[0]); ok && n >= 1 {
				return Date{Day: n, ordinal: int64(n)}, ""
			}
		}
		return Date{}, "not a numbered date"
	}
	var d Date
	day, month := -1, -1
	rest := words
	for i := 0; i < 2 && len(rest) > 0; i++ {
		w := rest[0]
		if fold(w) == "of" && day >= 0 {
			rest = rest[1:]
			w = ""
			if len(rest) == 0 {
				break
			}
			w = rest[0]
		}
		if m := c.month(w); m > 0 && month < 0 {
			month, rest = m, rest[1:]
			continue
		}
		if n, ok := ordinalNumber(w); ok && day < 0 {
			day, rest = n, rest[1:]
			continue
		}
		break
	}
	if month < 0 {
		return Date{}, "no month of the calendar"
	}
	if day < 0 {
		return Date{}, "no day"
	}
	m := c.Months[month-1]
	if day < 1 || day > m.Days {
		return Date{}, fmt.Sprintf("%s has days 1 to %d, not %d", m.Name, m.Days, day)
	}
	if len(rest) > 0 {
		y, ok := number(rest[0])
		if !ok {
			return Date{}, fmt.Sprintf("%q is not a year", rest[0])
		}
		d.Year, rest = y, rest[1:]
	}
	if len(rest) > 0 && c.Era != "" && fold(strings.Join(rest, " ")) == fold(c.Era) {
		rest = nil
	}
	if len(rest) > 0 {
		return Date{}, fmt.Sprintf("unexpected %q after the date", strings.Join(rest, " "))
	}
	d.Month, d.Day = month, day
	d.ordinal = int64(d.Year)*c.daysPerYear() + int64(day)
	for _, pm := range c.Months[:month-1] {
		d.ordinal += int64(pm.Days)
	}
	return d, ""
}

// Format writes d in the calendar's canonical form: "3 Frostfall 1452 DR"
// or "day 12".
func (c Calendar) Format(d Date) string {
	if d.Month == 0 || d.Month > len(c.Months) {
		return "day " + strconv.Itoa(d.Day)
	}
	s := strconv.Itoa(d.Day) + " " + c.Months[d.Month-1].Name
	if d.Year != 0 {
		s += " " + strconv.Itoa(d.Year)
		if c.Era != "" {
			s += " " + c.Era
		}
	}
	return s
}

func (c Calendar) month(w string) int {
	for i, m := range c.Months {
		if fold(strings.TrimSpace(m.Name)) == fold(w) {
			return i + 1
		}
	}
	return -1
}

func (c Calendar) weekday(w string) bool {
	for _, d := range c.Weekdays {
		if fold(strings.TrimSpace(d)) == fold(w) {
			return true
		}
	}
	return false
}

// number reads a whole number (a year may be negative).
func number(w string) (int, bool) {
	n, err := strconv.Atoi(w)
	if err != nil || n > 1_000_000_000 || n < -1_000_000_000 {
		return 0, false
	}
	return n, true
}

// ordinalNumber reads a day: "3", "3rd", "21st".
func ordinalNumber(w string) (int, bool) {
	l := fold(w)
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if strings.HasSuffix(l, suf) {
			l = strings.TrimSuffix(l, suf)
			break
		}
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 0 || n > MaxMonthDays {
		return -1, false
	}
	return n, true
}

func fold(s string) string { return strings.ToLower(s) }

// quote quotes a value for an error message, cut when long.
func quote(s string) string {
	r := []rune(s)
	if len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return strconv.Quote(s)
}

// Order returns the order in which to tell sessions whose in-world dates
// are dates, listed in the order the sessions were played: by in-world
// date, earliest first. A session without a date the calendar reads is
// told right after the one played before it (it is taken to continue
// from there); sessions on the same date keep the order they were played
// in. It returns indexes into dates.
func (c Calendar) Order(dates []string) []int {
	keys := make([]int64, len(dates))
	var last int64 = math.MinInt64
	for i, s := range dates {
		if d, err := c.Parse(s); err == nil && strings.TrimSpace(s) != "" {
			last = d.Ordinal()
		}
		keys[i] = last
	}
	order := make([]int, len(dates))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	return order
}
