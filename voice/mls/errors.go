package mls

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by errors for well-formed input that violates a
// protocol rule (wrong epoch, unknown proposal, bad tree, ...).
var ErrInvalid = errors.New("mls: invalid")

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
