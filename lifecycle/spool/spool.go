// Package spool is a durable local queue: records are appended to a file and
// fsynced before Append returns, read back in order from a persisted head,
// and consumed exactly once by advancing the head.
//
//	s, err := spool.Open(dir, spool.Options{MaxBytes: 64 << 20})
//	...
//	err = s.Append(payload) // durable when it returns
//	recs, _ := s.Peek(100)   // the oldest records, not yet consumed
//	// ...deliver recs...
//	err = s.Advance(len(recs))
//
// # Format
//
// One spool at a time may use a directory: Open locks it (on Unix) and
// fails with an error wrapping ErrLocked while another holds it.
//
// The directory holds three files: "lock", and two more. "log" is a sequence of records, each
//
//	+--------------+--------------+------------------+
//	| length (u32) | CRC-32C (u32)| payload (length) |
//	+--------------+--------------+------------------+
//
// in little-endian order. "head" holds the offset of the first record not
// yet consumed (u64) followed by its CRC-32C (u32); it is replaced
// atomically (write, fsync, rename, fsync of the directory).
//
// A record cut short by a crash during Append was never acknowledged; Open
// truncates it away. When every record is consumed the log is truncated to
// zero, so the spool does not grow without bound while it drains.
//
// A spool is bounded by Options.MaxBytes: an Append that would exceed it
// fails with an error wrapping ErrFull and stores nothing.
package spool

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// DefaultMaxBytes bounds a spool whose Options leave MaxBytes zero.
const DefaultMaxBytes = 64 << 20

// MaxRecord is the largest payload a record may carry.
const MaxRecord = 16 << 20

const (
	logName    = "log"
	lockName   = "lock"
	headName   = "head"
	headerSize = 8 // length + CRC
	headSize   = 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFull is wrapped by the error of an Append that would make the spool
// larger than its bound.
var ErrFull = errors.New("spool is full")

// ErrLocked is wrapped by the error of Open when another spool (in this
// or another process) has the directory open.
var ErrLocked = errors.New("spool directory is in use by another spool")

// ErrClosed is returned by operations on a closed spool.
var ErrClosed = errors.New("spool is closed")

// Options configure a spool.
type Options struct {
	// MaxBytes bounds the log file (default DefaultMaxBytes).
	MaxBytes int64
}

// Spool is a durable FIFO of byte records. It is safe for concurrent use.
type Spool struct {
	dir string
	max int64

	mu      sync.Mutex
	f       *os.File
	lock    *os.File // held while open: one spool per directory
	size    int64    // bytes in the log
	head    int64    // offset of the first unconsumed record
	offsets []int64  // offsets of the unconsumed records, in order
	closed  bool
}

// Open opens (creating if needed) the spool in dir. It discards a record
// left incomplete by a crash.
func Open(dir string, o Options) (*Spool, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating spool directory %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, logName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("opening spool log in %s: %w", dir, err)
	}
	s := &Spool{dir: dir, max: o.MaxBytes, f: f, lock: lock}
	if err := s.load(); err != nil {
		f.Close()
		lock.Close()
		return nil, err
	}
	return s, nil
}

// load reads the head and indexes the records after it.
func (s *Spool) load() error {
	head, err := readHead(filepath.Join(s.dir, headName))
	if err != nil {
		return err
	}
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("reading spool log size in %s: %w", s.dir, err)
	}
	size := st.Size()
	if head > size {
		// The log was truncated after being fully consumed and the crash
		// came before the head was reset.
		head = size
	}
	var hdr [headerSize]byte
	off := head
	for off < size {
		if size-off < headerSize {
			break
		}
		if _, err := s.f.ReadAt(hdr[:], off); err != nil {
			return fmt.Errorf("reading spool record at %d in %s: %w", off, s.dir, err)
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:4]))
		if n > MaxRecord || off+headerSize+n > size {
			break
		}
		buf := make([]byte, n)
		if _, err := s.f.ReadAt(buf, off+headerSize); err != nil {
			return fmt.Errorf("reading spool record at %d in %s: %w", off, s.dir, err)
		}
		if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(hdr[4:8]) {
			break
		}
		s.offsets = append(s.offsets, off)
		off += headerSize + n
	}
	if off < size {
		// An Append interrupted by a crash: it was never acknowledged.
		if err := s.f.Truncate(off); err != nil {
			return fmt.Errorf("discarding a torn record at %d in %s: %w", off, s.dir, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("syncing spool log in %s: %w", s.dir, err)
		}
		size = off
	}
	s.size, s.head = size, head
	return nil
}

// Append stores payload durably at the end of the spool.
func (s *Spool) Append(payload []byte) error {
	if len(payload) > MaxRecord {
		return fmt.Errorf("spool record of %d bytes exceeds the %d-byte limit", len(payload), MaxRecord)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	n := int64(headerSize + len(payload))
	if s.size+n > s.max {
		return fmt.Errorf("%w: %s holds %d bytes (%d records unconsumed); a %d-byte record would exceed the %d-byte bound",
			ErrFull, s.dir, s.size, len(s.offsets), n, s.max)
	}
	buf := make([]byte, n)
	binary.LittleEndian.PutUint32(buf[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[4:8], crc32.Checksum(payload, castagnoli))
	copy(buf[headerSize:], payload)
	if _, err := s.f.WriteAt(buf, s.size); err != nil {
		s.f.Truncate(s.size) // best effort: drop the partial record
		return fmt.Errorf("appending to spool %s: %w", s.dir, err)
	}
	if err := s.f.Sync(); err != nil {
		s.f.Truncate(s.size)
		return fmt.Errorf("syncing spool %s: %w", s.dir, err)
	}
	s.offsets = append(s.offsets, s.size)
	s.size += n
	return nil
}

// Peek returns up to max of the oldest unconsumed records (all of them when
// max <= 0) without consuming them.
func (s *Spool) Peek(max int) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	n := len(s.offsets)
	if max > 0 && max < n {
		n = max
	}
	out := make([][]byte, 0, n)
	var hdr [headerSize]byte
	for _, off := range s.offsets[:n] {
		if _, err := s.f.ReadAt(hdr[:], off); err != nil {
			return nil, fmt.Errorf("reading spool record at %d in %s: %w", off, s.dir, err)
		}
		buf := make([]byte, binary.LittleEndian.Uint32(hdr[0:4]))
		if _, err := s.f.ReadAt(buf, off+headerSize); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading spool record at %d in %s: %w", off, s.dir, err)
		}
		out = append(out, buf)
	}
	return out, nil
}

// Advance consumes the n oldest records; the new head is durable when it
// returns.
func (s *Spool) Advance(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if n < 0 || n > len(s.offsets) {
		return fmt.Errorf("advancing spool %s by %d records: only %d are unconsumed", s.dir, n, len(s.offsets))
	}
	if n == 0 {
		return nil
	}
	rest := s.offsets[n:]
	if len(rest) == 0 {
		// Everything is consumed: start the log afresh.
		if err := s.f.Truncate(0); err != nil {
			return fmt.Errorf("truncating drained spool %s: %w", s.dir, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("syncing spool %s: %w", s.dir, err)
		}
		if err := s.writeHead(0); err != nil {
			return err
		}
		s.offsets, s.size, s.head = s.offsets[:0], 0, 0
		return nil
	}
	if err := s.writeHead(rest[0]); err != nil {
		return err
	}
	s.offsets = append(s.offsets[:0], rest...)
	s.head = s.offsets[0]
	return nil
}

// Len is the number of unconsumed records.
func (s *Spool) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.offsets)
}

// Size is the size of the log in bytes, consumed records included until the
// spool drains.
func (s *Spool) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.dir }

// Close closes the spool; unconsumed records stay on disk for the next Open.
// It is idempotent.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(s.f.Close(), s.lock.Close())
}

func (s *Spool) writeHead(off int64) error {
	var b [headSize]byte
	binary.LittleEndian.PutUint64(b[0:8], uint64(off))
	binary.LittleEndian.PutUint32(b[8:12], crc32.Checksum(b[0:8], castagnoli))
	tmp := filepath.Join(s.dir, headName+".tmp")
	if err := writeFileSync(tmp, b[:]); err != nil {
		return fmt.Errorf("writing spool head in %s: %w", s.dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, headName)); err != nil {
		return fmt.Errorf("replacing spool head in %s: %w", s.dir, err)
	}
	return syncDir(s.dir)
}

func readHead(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading spool head %s: %w", path, err)
	}
	if len(b) != headSize || crc32.Checksum(b[0:8], castagnoli) != binary.LittleEndian.Uint32(b[8:12]) {
		return 0, fmt.Errorf("spool head %s is corrupt (%d bytes); refusing to guess which records were consumed", path, len(b))
	}
	return int64(binary.LittleEndian.Uint64(b[0:8])), nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening spool directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing spool directory %s: %w", dir, err)
	}
	return nil
}

// AppendJSONLine appends v as one JSON line to the file at path (created
// if missing) and syncs it to disk before returning: for side files such as
// the record of writes the database refused.
func AppendJSONLine(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
