//go:build unix

package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dirLock is an exclusive flock(2) on a spool directory's lock file: one
// spool at a time uses the directory, in this process or another. The lock
// ends when release closes the file or the process dies.
type dirLock struct{ f *os.File }

// lockDir takes the lock on dir, or fails with an error wrapping ErrLocked
// while another spool holds it.
func lockDir(dir string) (*dirLock, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the spool lock in %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("locking spool %s: %w", dir, err)
	}
	return &dirLock{f: f}, nil
}

// release ends the lock. A flock belongs to the open file, not to the
// descriptor: a child process being started holds a copy of every
// descriptor until its program runs (close-on-exec closes them only then),
// so closing the file while another goroutine starts a process (a TTS
// voice, the recogniser) would leave the directory locked a moment longer,
// and an Open right after Close would find it in use. LOCK_UN ends the lock
// for every copy at once.
func (l *dirLock) release() error {
	unlock := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if unlock != nil {
		unlock = fmt.Errorf("unlocking spool lock %s: %w", l.f.Name(), unlock)
	}
	return errors.Join(unlock, l.f.Close())
}
