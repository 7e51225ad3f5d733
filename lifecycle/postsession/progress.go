package postsession

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Progress records how far the processing of a session has got, per stage.
type Progress interface {
	// Load returns the position reached in a stage and whether it is done;
	// a stage never started is at 0 and not done.
	Load(ctx context.Context, sessionID, stage string) (pos int, done bool, err error)
	// Save records a position (and whether the stage is done).
	Save(ctx context.Context, sessionID, stage string, pos int, done bool) error
	// Reset forgets a session's progress, so that it is processed again.
	Reset(ctx context.Context, sessionID string) error
	// Unfinished lists ended sessions whose processing is not done, oldest
	// first.
	Unfinished(ctx context.Context) ([]string, error)
}

// Store is where progress is kept: memory/postgres's Processing (a
// campaign handle's Processing()) in the product.
type Store interface {
	Load(ctx context.Context, sessionID, stage string) (int, bool, error)
	Save(ctx context.Context, sessionID, stage string, pos int, done bool) error
	Reset(ctx context.Context, sessionID, stage string) error
	NotDone(ctx context.Context, done, started string) ([]string, error)
	LoadWindow(ctx context.Context, sessionID string, window int, hash string) ([]byte, bool, error)
	SaveWindow(ctx context.Context, sessionID string, window int, hash string, raw []byte) error
}

// StoredProgress keeps progress and the extraction cache in a Store.
type StoredProgress struct {
	s Store
}

var (
	_ Progress        = (*StoredProgress)(nil)
	_ ExtractionCache = (*StoredProgress)(nil)
)

// NewStoredProgress returns the progress kept in s.
func NewStoredProgress(s Store) *StoredProgress { return &StoredProgress{s: s} }

// Load implements Progress.
func (p *StoredProgress) Load(ctx context.Context, sessionID, stage string) (int, bool, error) {
	return p.s.Load(ctx, sessionID, stage)
}

// Save implements Progress.
func (p *StoredProgress) Save(ctx context.Context, sessionID, stage string, pos int, done bool) error {
	return p.s.Save(ctx, sessionID, stage, pos, done)
}

// Reset implements Progress.
func (p *StoredProgress) Reset(ctx context.Context, sessionID string) error {
	return p.s.Reset(ctx, sessionID, "")
}

// Unfinished implements Progress.
func (p *StoredProgress) Unfinished(ctx context.Context) ([]string, error) {
	return p.s.NotDone(ctx, StageExtract, "")
}

// lateStore is the optional capability of a Store that keeps the mark of
// lines a session received after it ended and its processing began
// (postgres.Processing.TakeLateLines).
type lateStore interface {
	TakeLateLines(ctx context.Context, sessionID, started string) (bool, error)
}

// TakeLate reports whether session sessionID received lines after it
// ended and its processing began (an outage spool replayed late); if so,
// in one step, it forgets the session's progress in every stage but
// StageStarted, so that its processing runs again with them. A Store
// without the capability never reports any.
func (p *StoredProgress) TakeLate(ctx context.Context, sessionID string) (bool, error) {
	if lt, ok := p.s.(lateStore); ok {
		return lt.TakeLateLines(ctx, sessionID, StageStarted)
	}
	return false, nil
}

// holdingStore is the optional capability of a Store that claims a
// session's processing among the processes sharing it
// (postgres.Processing.Hold).
type holdingStore interface {
	Hold(ctx context.Context, sessionID string) (func(), error)
}

// Hold takes the claim on processing session sessionID, waiting while
// another run holds it, and returns its release. A Store without the
// capability claims nothing.
func (p *StoredProgress) Hold(ctx context.Context, sessionID string) (func(), error) {
	if hs, ok := p.s.(holdingStore); ok {
		return hs.Hold(ctx, sessionID)
	}
	return func() {}, nil
}

// coveringStore is the optional capability of a Store that keeps the
// time of the last line a stage's position covers
// (postgres.Processing.SaveCovering).
type coveringStore interface {
	SaveCovering(ctx context.Context, sessionID, stage string, pos int, done bool, covered time.Time) error
}

// SaveCovering records a position in a stage, as Save, with the time of
// the last line it covers: a line stored later with an earlier time (an
// outage spool replayed late into a session being played) marks the
// session to be processed again (StageLate). A Store without the
// capability records the position alone.
func (p *StoredProgress) SaveCovering(ctx context.Context, sessionID, stage string, pos int, done bool, covered time.Time) error {
	if cs, ok := p.s.(coveringStore); ok {
		return cs.SaveCovering(ctx, sessionID, stage, pos, done, covered)
	}
	return p.s.Save(ctx, sessionID, stage, pos, done)
}

// Interrupted lists ended sessions whose processing started and did not
// finish, oldest first: what a crash, a shutdown or an outage cut short.
func (p *StoredProgress) Interrupted(ctx context.Context) ([]string, error) {
	return p.s.NotDone(ctx, StageExtract, StageStarted)
}

// ResetExtraction forgets how far the extraction of a session got (not its
// chunking), so that it runs again; the cached answers stay, so a re-run
// stores the same entities and facts.
func (p *StoredProgress) ResetExtraction(ctx context.Context, sessionID string) error {
	return p.s.Reset(ctx, sessionID, StageExtract)
}

// LoadExtraction implements ExtractionCache.
func (p *StoredProgress) LoadExtraction(ctx context.Context, sessionID string, window int, hash string) (Extraction, bool, error) {
	raw, ok, err := p.s.LoadWindow(ctx, sessionID, window, hash)
	if err != nil || !ok {
		return Extraction{}, false, err
	}
	var x Extraction
	if err := json.Unmarshal(raw, &x); err != nil {
		return Extraction{}, false, fmt.Errorf("decoding the cached extraction of window %d of session %q: %w", window+1, sessionID, err)
	}
	return x, true, nil
}

// SaveExtraction implements ExtractionCache.
func (p *StoredProgress) SaveExtraction(ctx context.Context, sessionID string, window int, hash string, x Extraction) error {
	raw, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("encoding the extraction of window %d: %w", window+1, err)
	}
	return p.s.SaveWindow(ctx, sessionID, window, hash, raw)
}
