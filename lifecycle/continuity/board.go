package continuity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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

// ErrNoCard is returned for a card the campaign's store does not hold (it
// was forgotten with a player's lines, or is of another campaign).
var ErrNoCard = errors.New("no such continuity card (it was forgotten, is of another campaign, " +
	"or was raised while the database was down and still waits in that session's outage spool: press again once it is stored)")

// ErrCardPending is returned by Board.Settle for a card this board raised
// and handed to a session's outage guard while the database was down: it
// waits in the outage spool and is not stored yet, so it cannot be settled
// yet; the card stays open and the press is to be made again once the
// spool is replayed.
var ErrCardPending = errors.New("this card was raised while the memory database was down and still waits in the outage spool " +
	"to be stored; it stays open: press again in a minute, once the database is back and the spool is replayed")

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

// Board holds the cards raised in this process, and writes them to the
// campaign's store (table continuity_cards) through the memory door: the
// store is where every process reads and settles them. A card raised
// while the database is down stays on the board, marked unsaved, and is
// written by the next Save of its campaign (the next card raised, the
// next read of the Live page or settlement in this process). A session
// saves its cards through its outage guard (SaveThrough), which spools a
// card the database cannot take, so a process that stops during the
// outage loses none: the next guard on the spool stores it. It is safe
// for concurrent use.
type Board struct {
	mu    sync.Mutex
	cards []*Card // oldest first
	// unsaved marks the cards not yet in the store.
	unsaved map[string]bool
}

// NewBoard returns an empty board.
func NewBoard() *Board { return &Board{unsaved: map[string]bool{}} }

// Add puts c on the board with a new id and status open (raised now when
// c.Raised is zero), marked unsaved, and returns it; Save writes it.
func (b *Board) Add(c Card) Card {
	var id [8]byte
	_, _ = rand.Read(id[:])
	c.ID, c.Status = hex.EncodeToString(id[:]), CardOpen
	if c.Raised.IsZero() {
		c.Raised = time.Now().UTC()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cards = append(b.cards, &c)
	b.unsaved[c.ID] = true
	for len(b.cards) > MaxCards {
		i := slices.IndexFunc(b.cards, func(x *Card) bool { return x.Status != CardOpen && !b.unsaved[x.ID] })
		if i < 0 {
			i = 0
		}
		delete(b.unsaved, b.cards[i].ID)
		b.cards = slices.Delete(b.cards, i, i+1)
	}
	return c
}

// Save writes the board's unsaved cards of camp's campaign to the store;
// those it could not write stay unsaved, and the first error is returned.
func (b *Board) Save(ctx context.Context, camp *access.Campaign) error {
	if camp == nil || !camp.DM() {
		return fmt.Errorf("%w: cards are stored by the DM's handle", memory.ErrForbidden)
	}
	return b.SaveThrough(ctx, camp.ID(), camp.PutContinuityCard)
}

// SaveThrough writes the board's unsaved cards of campaign through put:
// a session's outage guard (lifecycle/guard Guard.PutCard), which stores
// a card or, while the database is down, spools it durably, so that a
// card raised during an outage outlives the process. A card put returns
// nil for is saved (in the store or the spool); those it could not write
// stay unsaved, and the first error is returned.
func (b *Board) SaveThrough(ctx context.Context, campaign string, put func(context.Context, access.ContinuityCard) error) error {
	b.mu.Lock()
	var todo []Card
	for _, c := range b.cards {
		if b.unsaved[c.ID] && c.Campaign == campaign {
			todo = append(todo, *c)
		}
	}
	b.mu.Unlock()
	for _, c := range todo {
		sc, err := stored(c)
		if err == nil {
			err = put(ctx, sc)
		}
		if err != nil {
			return fmt.Errorf("storing continuity card %s: %w", c.ID, err)
		}
		b.mu.Lock()
		delete(b.unsaved, c.ID)
		b.mu.Unlock()
	}
	return nil
}

// stored is c as the store keeps it.
func stored(c Card) (access.ContinuityCard, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return access.ContinuityCard{}, fmt.Errorf("encoding continuity card %s: %w", c.ID, err)
	}
	return access.ContinuityCard{ID: c.ID, SessionID: c.Line.SessionID, SpeakerID: c.Line.SpeakerID, LineKey: c.Line.Key,
		LineText: c.Line.Text, CanonFactID: c.Canon.ID, CanonText: c.Canon.Text, Kind: string(c.Kind), Card: raw,
		CreatedAt: c.Raised}, nil
}

// fromStore is the card a stored one holds.
func fromStore(sc access.ContinuityCard) (Card, error) {
	var c Card
	if err := json.Unmarshal(sc.Card, &c); err != nil {
		return c, fmt.Errorf("decoding continuity card %s: %w", sc.ID, err)
	}
	if !sc.SettledAt.IsZero() && c.Status == CardOpen {
		// Claimed, its settlement not recorded: cannot be seen outside
		// the settling transaction, but say so rather than "open".
		c.Status, c.SettledBy, c.SettledAt = sc.Outcome, sc.SettledBy, sc.SettledAt
	}
	return c, nil
}

// Posted notes when card id reached the DM.
func (b *Board) Posted(id string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.find(id); c != nil {
		c.Posted = at
	}
}

// Get returns card id as this board holds it.
func (b *Board) Get(id string) (Card, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.find(id); c != nil {
		return *c, true
	}
	return Card{}, false
}

// List returns the campaign's cards this board holds, newest first.
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
// store's cards go with the player's other data, and the board would
// otherwise keep their words. It returns the ids of the cards removed, so
// that the caller takes down what it posted of them.
func (b *Board) ForgetSpeaker(campaign, speakerID string) []string {
	if speakerID == "" {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	b.cards = slices.DeleteFunc(b.cards, func(c *Card) bool {
		if c.Campaign == campaign && c.Line.SpeakerID == speakerID {
			delete(b.unsaved, c.ID)
			ids = append(ids, c.ID)
			return true
		}
		return false
	})
	return ids
}

func (b *Board) find(id string) *Card {
	for _, c := range b.cards {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// Stored returns camp's newest limit cards from the store, newest first,
// for the DM: the cards every process raised. Cards of this board not
// yet stored (b may be nil) are written first; when they cannot be, the
// error is returned (the caller shows the board's List instead).
func (b *Board) Stored(ctx context.Context, camp *access.Campaign, limit int) ([]Card, error) {
	if camp == nil || !camp.DM() {
		return nil, fmt.Errorf("%w: continuity cards are the DM's", memory.ErrForbidden)
	}
	if b != nil {
		if err := b.Save(ctx, camp); err != nil {
			return nil, err
		}
	}
	scs, err := camp.ContinuityCards(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Card, 0, len(scs))
	for _, sc := range scs {
		c, err := fromStore(sc)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Settle settles card id for the DM through camp (the card's campaign,
// opened for the DM), in the store: see [SettleStored]. The board's
// unsaved cards are written first (a card still unsaved cannot be
// settled: the database is down), and its copy of the card follows. A
// card of this board that the store does not hold yet (it waits in a
// session's outage spool) is returned open with an error wrapping
// [ErrCardPending].
func (b *Board) Settle(ctx context.Context, camp *access.Campaign, id string, retcon bool, by string) (Card, error) {
	if camp == nil || !camp.DM() {
		return Card{}, fmt.Errorf("%w: cards are settled by the DM", memory.ErrForbidden)
	}
	if err := b.Save(ctx, camp); err != nil {
		return Card{}, fmt.Errorf("settling continuity card %s: %w", id, err)
	}
	card, err := SettleStored(ctx, camp, id, retcon, by)
	if errors.Is(err, ErrNoCard) {
		// An open card of this board, saved, but not in the store: it
		// was saved into an outage spool (SaveThrough through a session's
		// guard) and waits there (the store prunes settled cards only). The press is refused, not lost: the
		// card is returned open, with its buttons.
		b.mu.Lock()
		c := b.find(id)
		if c != nil && c.Campaign == camp.ID() && c.Status == CardOpen {
			card, err = *c, fmt.Errorf("settling continuity card %s: %w", id, ErrCardPending)
		}
		b.mu.Unlock()
		return card, err
	}
	if card.ID != "" {
		b.mu.Lock()
		if c := b.find(id); c != nil {
			posted := c.Posted
			*c = card
			c.Posted = posted
		}
		b.mu.Unlock()
	}
	return card, err
}

// SettleStored settles stored card id for the DM, through camp (the
// card's campaign, opened for the DM), from any process: Keep canon marks
// the line non-canon (NPCs and recaps leave it out) and leaves canon as it
// is; Retcon writes the line's claim as a DM fact, which supersedes the
// canon fact it contradicts through the store's conflict path (the
// conflict is recorded, settled "kept new", with the line as the reason).
// by names the DM. The card is claimed by a conditional UPDATE in the
// transaction that makes the writes, so it is settled exactly once: a
// card settled already (here, in another process, or by a press racing
// this one) is returned with ErrSettled; a write that fails (the database
// is down) rolls back and leaves the card open, to be pressed again.
func SettleStored(ctx context.Context, camp *access.Campaign, id string, retcon bool, by string) (Card, error) {
	if camp == nil || !camp.DM() {
		return Card{}, fmt.Errorf("%w: cards are settled by the DM", memory.ErrForbidden)
	}
	var out Card
	err := camp.InTx(ctx, by, func(tx *access.Campaign) error {
		sc, claimed, err := tx.ClaimContinuityCard(ctx, id, by)
		if errors.Is(err, memory.ErrNotFound) {
			return ErrNoCard
		}
		if err != nil {
			return err
		}
		card, err := fromStore(sc)
		if err != nil {
			return err
		}
		if !claimed {
			out = card
			return ErrSettled
		}
		status, note, err := settle(ctx, tx, card, retcon, by)
		if err != nil {
			return err
		}
		card.Status, card.SettledBy, card.SettledAt, card.Note = status, by, sc.SettledAt.UTC(), note
		raw, err := json.Marshal(card)
		if err != nil {
			return fmt.Errorf("encoding continuity card %s: %w", id, err)
		}
		if err := tx.FinishContinuityCard(ctx, id, status, raw); err != nil {
			return err
		}
		out = card
		return nil
	})
	return out, err
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
