//go:build !unix

package spool

import (
	"os"
	"path/filepath"
)

// dirLock holds the lock file open; other systems get no exclusive lock.
type dirLock struct{ f *os.File }

// lockDir opens the lock file.
func lockDir(dir string) (*dirLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &dirLock{f: f}, nil
}

// release closes the lock file.
func (l *dirLock) release() error { return l.f.Close() }
