package ledger

import (
	"fmt"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
)

// verbs are how an entry's kind reads between its two people.
var verbs = map[Kind]string{Promise: "promised", Debt: "owes", Handover: "gave"}

// Text is the entry as one line, the same for `/ledger` and `glyphoxa
// ledger`: who, what, to whom, when it is due, who holds an item passed
// on, the quoted line, when it was said, and whether it waits for review.
// With markdown (Discord) it is a bullet, the time is one Discord shows
// in the reader's zone and the review note is in italics; without, the
// line starts with the time in UTC.
func (it Item) Text(markdown bool) string {
	var b strings.Builder
	switch {
	case markdown:
		b.WriteString("• ")
	case it.SaidAt.IsZero():
		b.WriteString("?                 ")
	default:
		b.WriteString(it.SaidAt.UTC().Format("2006-01-02 15:04") + "  ")
	}
	verb := verbs[it.Kind]
	if verb == "" {
		verb = string(it.Kind)
	}
	fmt.Fprintf(&b, "%s %s %s: %s", it.From, verb, it.To, it.What)
	if it.Due != "" {
		fmt.Fprintf(&b, " (due %s)", it.Due)
	}
	if it.NowWith != "" {
		fmt.Fprintf(&b, " (now with %s)", it.NowWith)
	}
	if it.Quote != "" {
		fmt.Fprintf(&b, " — “%s”", it.Quote)
	}
	if markdown && !it.SaidAt.IsZero() {
		fmt.Fprintf(&b, " <t:%d:f>", it.SaidAt.Unix())
	}
	if it.Status == memory.StatusPending {
		if markdown {
			fmt.Fprintf(&b, " *(waiting for your review: fact #%d)*", it.FactID)
		} else {
			fmt.Fprintf(&b, " (waiting for review: fact #%d)", it.FactID)
		}
	}
	return b.String()
}
