package memory

import (
	"errors"
	"fmt"
)

// ErrNotFound is wrapped by errors for a missing entity, fact, session or path.
var ErrNotFound = errors.New("not found")

// ErrInvalid is wrapped by errors for input a store refuses (an empty id, a
// confidence outside 0..1, an embedding of the wrong size…).
var ErrInvalid = errors.New("invalid input")

// ErrForbidden is wrapped by errors for a read or write the caller's role
// does not allow.
var ErrForbidden = errors.New("forbidden")

// ErrUnavailable is wrapped by errors for a read or write that could not
// reach the database: it is down, unreachable, shutting down or out of
// connections. A caller may retry later; the memory guard spools session-log
// writes that meet it.
var ErrUnavailable = errors.New("memory is unavailable: the database cannot be reached")

// ErrRefused is wrapped by errors the database answered with: it refused
// the request (a constraint, a type, a statement it could not run). Retrying
// the same request does not help.
var ErrRefused = errors.New("the database refused the request")

// DimensionMismatchError reports that the database's embeddings have another
// dimension than the one configured.
type DimensionMismatchError struct {
	Database   int
	Configured int
}

func (e *DimensionMismatchError) Error() string {
	return fmt.Sprintf("embedding dimension mismatch: the database holds %d-dimensional embeddings but %d is configured; "+
		"run `glyphoxa migrate --reembed` to rebuild the semantic index (L2) for %d dimensions, or set memory.embedding_dimensions back to %d",
		e.Database, e.Configured, e.Configured, e.Database)
}
