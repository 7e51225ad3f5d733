package calendar

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Each testdata file holds a calendar and the dates it reads: the
// ordinal and canonical form of each, or the error's words.
func TestParse(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var tc struct {
				Calendar Calendar `yaml:"calendar"`
				Cases    []struct {
					In      string `yaml:"in"`
					Ordinal int64  `yaml:"ordinal"`
					Format  string `yaml:"format"`
					Err     string `yaml:"err"`
				} `yaml:"cases"`
			}
			dec := yaml.NewDecoder(strings.NewReader(string(data)))
			dec.KnownFields(true)
			if err := dec.Decode(&tc); err != nil {
				t.Fatal(err)
			}
			if err := tc.Calendar.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.Cases {
				d, err := tc.Calendar.Parse(c.In)
				if c.Err != "" {
					if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.Err) {
						t.Errorf("Parse(%q) = %v, want an error with %q", c.In, err, c.Err)
					}
					continue
				}
				if err != nil {
					t.Errorf("Parse(%q): %v", c.In, err)
					continue
				}
				if d.Ordinal() != c.Ordinal || tc.Calendar.Format(d) != c.Format {
					t.Errorf("Parse(%q) = ordinal %d, %q; want %d, %q", c.In, d.Ordinal(), tc.Calendar.Format(d), c.Ordinal, c.Format)
				}
			}
		})
	}
}

// A date that does not parse is reported with the calendar's months.
func TestParseErrorNamesMonths(t *testing.T) {
	c := Calendar{Months: []Month{{"Deepwinter", 30}, {"Frostfall", 30}}}
	_, err := c.Parse("3 Snowmelt 1452")
	if err == nil || !strings.Contains(err.Error(), "months: Deepwinter, Frostfall") || !strings.Contains(err.Error(), `"3 Snowmelt 1452"`) {
		t.Errorf("error = %v, want the input and the months named", err)
	}
	if _, err := (Calendar{}).Parse("3 Frostfall"); err == nil || !strings.Contains(err.Error(), `"day 12"`) {
		t.Errorf("numbered error = %v, want the numbered form named", err)
	}
}

// Dates sort in the order they happen, and the last day of a month or
// year is followed by the first of the next.
func TestOrdinalOrder(t *testing.T) {
	c := Calendar{Months: []Month{{"Deepwinter", 30}, {"Frostfall", 28}}} // 58 days a year
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1 Deepwinter 1452", 1452*58 + 1},
		{"30 Deepwinter 1452", 1452*58 + 30},
		{"1 Frostfall 1452", 1452*58 + 31},
		{"28 Frostfall 1452", 1452*58 + 58},
		{"1 Deepwinter 1453", 1453*58 + 1},
		{"1 Deepwinter -1", -58 + 1},
	} {
		d, err := c.Parse(tc.in)
		if err != nil || d.Ordinal() != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, d.Ordinal(), err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Calendar
		want string
	}{
		{"unnamed month", Calendar{Months: []Month{{"", 30}}}, "month 1 has no name"},
		{"zero days", Calendar{Months: []Month{{"Frostfall", 0}}}, `"Frostfall" has 0 days`},
		{"twice", Calendar{Months: []Month{{"Frostfall", 3}, {"frostfall", 3}}}, "named twice"},
		{"digits", Calendar{Months: []Month{{"Month 1", 3}}}, "no digits"},
		{"weekday twice", Calendar{Months: []Month{{"Frostfall", 3}}, Weekdays: []string{"Frostfall"}}, "named twice"},
		{"era digits", Calendar{Era: "A1"}, "era"},
	} {
		if err := tc.c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// No input panics, and what parses formats to a date that parses to the
// same ordinal.
func FuzzParse(f *testing.F) {
	c := Calendar{Months: []Month{{"Deepwinter", 30}, {"Frostfall", 28}}, Weekdays: []string{"Moonday"}, Era: "DR"}
	for _, s := range []string{"3 Frostfall 1452", "Frostfall 3, 1452", "day 12", "3rd of Deepwinter", "Moonday 1 Frostfall -3 DR"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := c.Parse(s)
		if err != nil {
			return
		}
		back, err := c.Parse(c.Format(d))
		if err != nil || back.Ordinal() != d.Ordinal() {
			t.Errorf("%q -> %q -> %v, %v", s, c.Format(d), back.Ordinal(), err)
		}
	})
}

func TestOrder(t *testing.T) {
	c := Calendar{Months: []Month{{"Deepwinter", 30}, {"Frostfall", 30}}}
	for _, tc := range []struct {
		name  string
		dates []string
		want  string
	}{
		{"played in order", []string{"1 Deepwinter 1452", "5 Deepwinter 1452", "1 Frostfall 1452"}, "[0 1 2]"},
		{"a flashback", []string{"1 Frostfall 1452", "3 Deepwinter 1452", "2 Frostfall 1452"}, "[1 0 2]"},
		{"undated follow the one played before", []string{"10 Frostfall 1452", "", "1 Deepwinter 1452", "not a date"}, "[2 3 0 1]"},
		{"same date in play order", []string{"2 Frostfall 1452", "Frostfall 2, 1452", "1 Frostfall 1452"}, "[2 0 1]"},
		{"none dated", []string{"", "", ""}, "[0 1 2]"},
		{"empty", nil, "[]"},
	} {
		if got := fmt.Sprint(c.Order(tc.dates)); got != tc.want {
			t.Errorf("%s: Order(%q) = %s, want %s", tc.name, tc.dates, got, tc.want)
		}
	}
}
