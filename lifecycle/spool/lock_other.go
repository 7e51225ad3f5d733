//go:build !unix

package spool

import (
	"os"
	"path/filepath"
)

// lockDir opens the lock file; other systems get no exclusive lock.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
}
