//go:build !linux

package main

import (
	"errors"
	"os"
)

// isTerminal reports whether f is a terminal; off Linux, init does not
// look, and a typed token is echoed.
func isTerminal(*os.File) bool { return false }

func noEcho(*os.File) (func(), error) { return nil, errors.New("not supported") }
