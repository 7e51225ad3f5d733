package continuity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Card statuses.
const (
	// CardOpen waits for the DM.
	CardOpen = "open"
	// CardKept: the DM kept canon; the line was marked non-canon.
	CardKept = "kept"
	// CardRetconned: the DM made the line's claim canon.
	CardRetconned = "retconned"
)

// ErrSettled is returned when a card was settled already.
var ErrSettled = errors.New("this card was settled already")

// ErrNoCard is returned for a card the board does not hold (an old one,
// or one another process raised).
var ErrNoCard = errors.New("this card is not held here (it is old, or another glyphoxa process raised it)")

// Line is the line a card quotes.
type Line struct {
	SessionID string    `json:"session_id"`
	SpeakerID string    `json:"speaker_id"`
	Speaker   string    `json:"speaker"`
	Text      string    `json:"text"`
	At        time.Time `json:"at"`
	// Key is the line's idempotency key in the session log.
	Key string `json:"key,omitempty"`
}

// Card is a contradiction raised for the DM: the canon fact, the line, and
// where the DM settled it.
type Card struct {
	ID       string `json:"id"`
	Campaign string `json:"campaign"`
	// GuildID is the Discord server of the table (empty in the demo).
	GuildID string `json:"guild_id,omitempty"`
	Finding
	Line Line `json:"line"`
	// Raised is when the card was made; Posted when it reached the DM on
	// Discord (zero: not, or not yet).
	Raised time.Time `json:"raised"`
	Posted time.Time `json:"posted,omitzero"`
	Status string    `json:"status"`
	// Settled says how and by whom, once settled.
	SettledBy string    `json:"settled_by,omitempty"`
	SettledAt time.Time `json:"settled_at,omitzero"`
	Note      string    `json:"note,omitempty"`
}

// MaxCards bounds the cards a board keeps: the oldest settled go first,
// then the oldest.
const MaxCards = 200

// Board holds the cards raised in this process. It is safe for
// concurrent use.
type Board struct {
	mu    sync.Mutex
	cards []*Card // oldest first
	// settling marks the cards whose settlement is under way.
	settling map[string]bool
}

// NewBoard returns an empty board.
func NewBoard() *Board { return &Board{settling: map[string]bool{}} }

// Add puts c on the board with a new id and status open, and returns it.
func (b *Board) Add(c Card) Card {
	var id [6]byte
	_, _ = rand.Read(id[:])
	c.ID, c.Status = hex.EncodeToString(id[:]), CardOpen
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cards = append(b.cards, &c)
	for len(b.cards) > MaxCards {
		i := slices.IndexFunc(b.cards, func(x *Card) bool { return x.Status != CardOpen })
		if i < 0 {
			i = 0
		}
		b.cards = slices.Delete(b.cards, i, i+1)
	}
	return c
}

// Posted notes when card id reached the DM.
func (b *Board) Posted(id string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.find(id); c != nil {
		c.Posted = at
	}
}

// Get returns card id.
func (b *Board) Get(id string) (Card, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.find(id); c != nil {
		return *c, true
	}
	return Card{}, false
}

// List returns the campaign's cards, newest first.
func (b *Board) List(campaign string) []Card {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Card
	for i := len(b.cards) - 1; i >= 0; i-- {
		if b.cards[i].Campaign == campaign {
			out = append(out, *b.cards[i])
		}
	}
	return out
}

// ForgetSpeaker removes the campaign's cards that quote a line of
// speakerID, a player who asked to be forgotten (/privacy forget-me): the
// board would otherwise keep their words after the store deleted them. It
// reports how many cards went.
func (b *Board) ForgetSpeaker(campaign, speakerID string) int {
	if speakerID == "" {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.cards)
	b.cards = slices.DeleteFunc(b.cards, func(c *Card) bool {
		return c.Campaign == campaign && c.Line.SpeakerID == speakerID
	})
	return n - len(b.cards)
}

func (b *Board) find(id string) *Card {
	for _, c := range b.cards {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// Settle settles card id for the DM, through camp (the card's campaign,
// opened for the DM): Keep canon marks the line non-canon (NPCs and recaps
// leave it out) and leaves canon as it is; Retcon writes the line's claim
// as a DM fact, which supersedes the canon fact it contradicts through the
// store's conflict path (the conflict is recorded, settled "kept new",
// with the line as the reason). by names the DM. A card settled already,
// or being settled, is refused with ErrSettled; a write that fails (the
// database is down) leaves the card open, to be pressed again.
func (b *Board) Settle(ctx context.Context, camp *access.Campaign, id string, retcon bool, by string) (Card, error) {
	if camp == nil || !camp.DM() {
		return Card{}, fmt.Errorf("%w: cards are settled by the DM", memory.ErrForbidden)
	}
	b.mu.Lock()
	c := b.find(id)
	switch {
	case c == nil:
		b.mu.Unlock()
		return Card{}, ErrNoCard
	case c.Status != CardOpen || b.settling[id]:
		card := *c
		b.mu.Unlock()
		return card, ErrSettled
	case c.Campaign != camp.ID():
		b.mu.Unlock()
		return Card{}, fmt.Errorf("%w: the card is of campaign %q", memory.ErrForbidden, c.Campaign)
	}
	b.settling[id] = true
	card := *c
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.settling, id)
		b.mu.Unlock()
	}()
	status, note, err := settle(ctx, camp, card, retcon, by)
	if err != nil {
		return card, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c = b.find(id); c != nil {
		c.Status, c.SettledBy, c.SettledAt, c.Note = status, by, time.Now().UTC(), note
		card = *c
	}
	return card, nil
}

// settle does the settlement's writes.
func settle(ctx context.Context, camp *access.Campaign, c Card, retcon bool, by string) (string, string, error) {
	if !retcon && c.Unsaid {
		return CardKept, "canon kept; the NPC's sentence was never said", nil
	}
	if !retcon {
		n, err := camp.Sessions().MarkNonCanon(ctx, c.Line.SessionID, c.Line.At, c.Line.At)
		if err != nil {
			return "", "", fmt.Errorf("marking the line non-canon: %w", err)
		}
		if n > 0 {
			return CardKept, "canon kept; the line is marked non-canon", nil
		}
		// Nothing marked: the line is non-canon already, or not stored
		// yet (it waits in the outage spool). Settling then would lose the
		// DM's choice when the line arrives as canon: the card stays open.
		stored, err := lineStored(ctx, camp, c.Line)
		if err != nil {
			return "", "", fmt.Errorf("marking the line non-canon: %w", err)
		}
		if !stored {
			return "", "", fmt.Errorf("marking the line non-canon: %w: the line is not in the session log yet (it waits in the outage spool); press Keep canon again once it is stored",
				memory.ErrUnavailable)
		}
		return CardKept, "canon kept; the line was non-canon already", nil
	}
	reason := fmt.Sprintf("retcon by the DM of %s's line %q", c.Line.Speaker, c.Line.Text)
	prov := memory.Provenance{SessionID: c.Line.SessionID, Timestamp: c.Line.At, Confidence: 1, Source: memory.SourceStated}
	attrs := map[string]any{"evidence": c.Line.Text}
	g := camp.Graph()
	switch c.Kind {
	case KindPlace:
		w, err := g.WriteFact(ctx, memory.DM(by), memory.Relationship{SourceID: c.Subject, TargetID: c.Object, Type: c.Rel,
			Attributes: attrs, Provenance: prov}, reason)
		if err != nil {
			return "", "", fmt.Errorf("recording the retcon: %w", err)
		}
		return CardRetconned, fmt.Sprintf("fact #%d is canon now; it superseded fact #%d", w.Fact.ID, c.Canon.ID), nil
	case KindHolder:
		attrs["what"] = c.Item
		w, err := g.WriteFact(ctx, memory.DM(by), memory.Relationship{SourceID: c.Object, TargetID: c.Subject, Type: RelGave,
			Attributes: attrs, Provenance: prov}, reason)
		if err != nil {
			return "", "", fmt.Errorf("recording the retcon: %w", err)
		}
		return CardRetconned, fmt.Sprintf("fact #%d is canon now: %s holds %s", w.Fact.ID, c.Subject, c.Item), nil
	case KindDead:
		if c.Canon.ID == 0 {
			return "", "", fmt.Errorf("%w: %s was retired by the DM as dead; a retcon would bring them back, which is done on their entity page (the console's Entities)",
				memory.ErrInvalid, strings.TrimSuffix(c.Claim, " is spoken of as alive"))
		}
		if _, err := g.RetireFact(ctx, c.Canon.ID, c.Line.SessionID); err != nil {
			return "", "", fmt.Errorf("retiring the death: %w", err)
		}
		return CardRetconned, fmt.Sprintf("fact #%d (the death) is retired as of session %s", c.Canon.ID, c.Line.SessionID), nil
	}
	return "", "", fmt.Errorf("%w: unknown card kind %q", memory.ErrInvalid, c.Kind)
}

// lineStored reports whether the session log holds line (by its
// idempotency key when it has one, else by its time).
func lineStored(ctx context.Context, camp *access.Campaign, line Line) (bool, error) {
	es, err := camp.Sessions().Entries(ctx, line.SessionID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(es, func(e memory.TranscriptEntry) bool {
		if line.Key != "" {
			return e.IdempotencyKey == line.Key
		}
		// The database keeps microseconds (pgx truncates).
		return e.At.Equal(line.At.Truncate(time.Microsecond))
	}), nil
}
