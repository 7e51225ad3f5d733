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
// The directory holds "lock", "spool.log", "spool.head" and, after damage,
// "quarantine/". spool.log is a sequence of records, each
//
//	+-------------+--------------+----------------+---------------+------------------+
//	| magic (u32) | length (u32) | header CRC-32C | payload CRC-32C | payload (length) |
//	+-------------+--------------+----------------+---------------+------------------+
//
// in little-endian order; the header CRC covers magic and length, the
// payload CRC the payload. spool.head holds the offset of the first record
// not yet consumed (u64) followed by its CRC-32C (u32); it is replaced
// atomically (write, fsync, rename, fsync of the directory).
//
// # Damage
//
// A record whose payload fails its checksum is skipped: its bytes are
// copied to quarantine/, it is counted ([Spool.Quarantined]), logged and
// reported to Options.OnCorrupt, and the records after it are read as
// usual. A record whose header is damaged (so its length cannot be
// trusted) is skipped the same way up to the next intact record, found by
// its magic and checksums. A record cut short at the end of the log by a
// crash during Append was never acknowledged; Open truncates it away. When
// every record is consumed the log is truncated to zero, so the spool does
// not grow without bound while it drains.
//
// A damaged head is moved aside (spool.head.bad-<unix nanoseconds>),
// logged and counted, and the spool replays from its first record: a
// record may be delivered twice (consumers key their writes), none is lost.
//
// Rewrite replaces the unconsumed records (to take out records nobody may
// keep any longer, such as the lines of a player who asked to be
// forgotten) atomically: a new log holding the consumed prefix unchanged
// and the kept records, each with fresh checksums, is fsynced and renamed
// over the old one, so the head stays valid and a crash leaves one log or
// the other.
//
// A spool written by an earlier glyphoxa ("log" and "head", records
// without magic) is converted on Open.
//
// A spool is bounded by Options.MaxBytes: an Append that would exceed it
// fails with an error wrapping ErrFull and stores nothing. An Append the
// disk refuses fails with an error wrapping ErrWrite and stores nothing.
package spool

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultMaxBytes bounds a spool whose Options leave MaxBytes zero.
const DefaultMaxBytes = 64 << 20

// MaxRecord is the largest payload a record may carry.
const MaxRecord = 16 << 20

const (
	logName       = "spool.log"
	headName      = "spool.head"
	lockName      = "lock"
	quarantineDir = "quarantine"
	headerSize    = 16 // magic, length, header CRC, payload CRC
	headSize      = 12

	// v1 files (no magic, header of length and payload CRC).
	v1LogName    = "log"
	v1HeadName   = "head"
	v1HeaderSize = 8
)

// magic starts every record: a byte that is not ASCII (JSON payloads do not
// hold it) and "GXR".
var magic = [4]byte{0xF7, 'G', 'X', 'R'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFull is wrapped by the error of an Append that would make the spool
// larger than its bound.
var ErrFull = errors.New("spool is full")

// ErrWrite is wrapped by the error of an Append the file system refused
// (a full disk, an I/O error): the record is not stored, and the caller
// should deliver it another way.
var ErrWrite = errors.New("spool write failed")

// ErrLocked is wrapped by the error of Open when another spool (in this
// or another process) has the directory open.
var ErrLocked = errors.New("spool directory is in use by another spool")

// ErrClosed is returned by operations on a closed spool.
var ErrClosed = errors.New("spool is closed")

// Corruption describes damaged bytes Open skipped.
type Corruption struct {
	// Offset and Length locate the damaged bytes in the log.
	Offset, Length int64
	// Reason says what was wrong.
	Reason string
	// Quarantine is the file holding a copy of the bytes ("" if the copy
	// failed).
	Quarantine string
}

// Options configure a spool.
type Options struct {
	// MaxBytes bounds the log file (default DefaultMaxBytes).
	MaxBytes int64
	// Logger logs damage found on Open (default slog.Default()).
	Logger *slog.Logger
	// OnCorrupt, when set, is called for each damaged record or head Open
	// skips (to count it in a metric).
	OnCorrupt func(Corruption)
}

// Spool is a durable FIFO of byte records. It is safe for concurrent use.
type Spool struct {
	dir string
	max int64
	log *slog.Logger

	mu          sync.Mutex
	f           *os.File
	lock        *dirLock // held while open: one spool per directory
	size        int64    // bytes in the log
	head        int64    // offset of the first unconsumed record
	offsets     []int64  // offsets of the unconsumed records, in order
	closed      bool
	quarantined int
	onCorrupt   func(Corruption)
}

// Open opens (creating if needed) the spool in dir. It discards a record
// left incomplete by a crash and skips (quarantining) damaged ones.
func Open(dir string, o Options) (*Spool, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
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
		lock.release()
		return nil, fmt.Errorf("opening spool log in %s: %w", dir, err)
	}
	s := &Spool{dir: dir, max: o.MaxBytes, f: f, lock: lock, log: o.Logger.With("spool", dir), onCorrupt: o.OnCorrupt}
	if err := s.load(); err != nil {
		f.Close()
		lock.release()
		return nil, err
	}
	if err := s.convertV1(); err != nil {
		f.Close()
		lock.release()
		return nil, err
	}
	return s, nil
}

// Quarantined is the number of damaged records and heads Open skipped.
func (s *Spool) Quarantined() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quarantined
}

// corrupt quarantines the bytes [off, off+n) of the log (a copy; n may be
// 0 for a damaged head), logs and counts them.
func (s *Spool) corrupt(off, n int64, reason string, data []byte) {
	c := Corruption{Offset: off, Length: n, Reason: reason}
	if data == nil && n > 0 {
		data = make([]byte, n)
		if _, err := s.f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
			data = nil
		}
	}
	if data != nil {
		qdir := filepath.Join(s.dir, quarantineDir)
		path := filepath.Join(qdir, fmt.Sprintf("%d-at-%d.bad", time.Now().UnixNano(), off))
		if err := os.MkdirAll(qdir, 0o700); err == nil && writeFileSync(path, data) == nil {
			c.Quarantine = path
		}
	}
	s.quarantined++
	s.log.Error("spool: skipped damaged bytes; the records after them are kept",
		"offset", off, "bytes", n, "reason", reason, "quarantine", c.Quarantine)
	if s.onCorrupt != nil {
		s.onCorrupt(c)
	}
}

// load reads the head and indexes the records after it.
func (s *Spool) load() error {
	headPath := filepath.Join(s.dir, headName)
	head, err := readHead(headPath)
	if err != nil {
		// A damaged head: move it aside and replay everything.
		bad := fmt.Sprintf("%s.bad-%d", headPath, time.Now().UnixNano())
		data, _ := os.ReadFile(headPath)
		if rerr := os.Rename(headPath, bad); rerr != nil {
			return fmt.Errorf("%w; moving it aside: %w", err, rerr)
		}
		s.corrupt(0, 0, err.Error()+"; replaying from the first record", data)
		head = 0
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
	off := head
	for off < size {
		n, hdrOK, err := s.recordAt(off, size)
		if err != nil {
			return err
		}
		if n > 0 {
			s.offsets = append(s.offsets, off)
			off += n
			continue
		}
		if hdrOK > 0 && off+hdrOK <= size {
			// The header is intact, the payload is not: skip exactly it.
			s.corrupt(off, hdrOK, "payload checksum mismatch", nil)
			off += hdrOK
			continue
		}
		next, err := s.nextRecord(off+1, size)
		if err != nil {
			return err
		}
		if next < 0 {
			if hdrOK == 0 && !s.tornPrefix(off, size) {
				s.corrupt(off, size-off, "damaged record header at the end of the log", nil)
			}
			// What remains was never acknowledged (a torn Append) or is
			// quarantined: cut it so Appends continue on a clean end.
			if err := s.f.Truncate(off); err != nil {
				return fmt.Errorf("discarding a torn record at %d in %s: %w", off, s.dir, err)
			}
			if err := s.f.Sync(); err != nil {
				return fmt.Errorf("syncing spool log in %s: %w", s.dir, err)
			}
			size = off
			break
		}
		s.corrupt(off, next-off, "damaged record header", nil)
		off = next
	}
	s.size, s.head = size, head
	return nil
}

// recordAt checks the record at off. It returns the record's length when
// it is intact; else, when only its header is intact, hdrOK is the length
// the header claims; both are zero when the header is damaged or cut.
func (s *Spool) recordAt(off, size int64) (n, hdrOK int64, err error) {
	if size-off < headerSize {
		return 0, 0, nil
	}
	var hdr [headerSize]byte
	if _, err := s.f.ReadAt(hdr[:], off); err != nil {
		return 0, 0, fmt.Errorf("reading spool record at %d in %s: %w", off, s.dir, err)
	}
	if !bytes.Equal(hdr[0:4], magic[:]) || crc32.Checksum(hdr[0:8], castagnoli) != binary.LittleEndian.Uint32(hdr[8:12]) {
		return 0, 0, nil
	}
	l := int64(binary.LittleEndian.Uint32(hdr[4:8]))
	if l > MaxRecord {
		return 0, 0, nil
	}
	total := headerSize + l
	if off+total > size {
		return 0, total, nil
	}
	buf := make([]byte, l)
	if _, err := s.f.ReadAt(buf, off+headerSize); err != nil {
		return 0, 0, fmt.Errorf("reading spool record at %d in %s: %w", off, s.dir, err)
	}
	if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(hdr[12:16]) {
		return 0, total, nil
	}
	return total, total, nil
}

// nextRecord finds the first intact record at or after from, or -1.
func (s *Spool) nextRecord(from, size int64) (int64, error) {
	const window = 64 << 10
	buf := make([]byte, window+len(magic)-1)
	for base := from; base < size; base += window {
		n, err := s.f.ReadAt(buf[:min(int64(len(buf)), size-base)], base)
		if err != nil && !errors.Is(err, io.EOF) {
			return -1, fmt.Errorf("reading spool log in %s: %w", s.dir, err)
		}
		for i := 0; i < n && i < window; {
			j := bytes.Index(buf[i:n], magic[:])
			if j < 0 || i+j >= window {
				break
			}
			cand := base + int64(i+j)
			if rn, _, err := s.recordAt(cand, size); err != nil {
				return -1, err
			} else if rn > 0 {
				return cand, nil
			}
			i += j + 1
		}
	}
	return -1, nil
}

// tornPrefix reports whether the bytes from off to the end are the start
// of a record an interrupted Append left: shorter than a header and a
// prefix of the magic, or nothing.
func (s *Spool) tornPrefix(off, size int64) bool {
	n := size - off
	if n >= headerSize {
		return false
	}
	b := make([]byte, n)
	if _, err := s.f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return bytes.HasPrefix(b, magic[:min(len(magic), len(b))])
}

// convertV1 moves the unconsumed records of an earlier glyphoxa's spool
// ("log" and "head") into this one, then removes the old files.
func (s *Spool) convertV1() error {
	oldLog := filepath.Join(s.dir, v1LogName)
	b, err := os.ReadFile(oldLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the old spool log in %s: %w", s.dir, err)
	}
	oldHead := filepath.Join(s.dir, v1HeadName)
	head, err := readHead(oldHead)
	if err != nil {
		s.corrupt(0, 0, err.Error()+"; converting the old log from its first record", nil)
		head = 0
	}
	off := min(head, int64(len(b)))
	for int64(len(b))-off >= v1HeaderSize {
		n := int64(binary.LittleEndian.Uint32(b[off : off+4]))
		if n > MaxRecord || off+v1HeaderSize+n > int64(len(b)) {
			break
		}
		p := b[off+v1HeaderSize : off+v1HeaderSize+n]
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[off+4:off+8]) {
			s.corrupt(off, int64(len(b))-off, "old-format record damaged (its length cannot be trusted)", b[off:])
			break
		}
		if err := s.Append(p); err != nil {
			return fmt.Errorf("converting the old spool in %s: %w", s.dir, err)
		}
		off += v1HeaderSize + n
	}
	if err := errors.Join(os.Remove(oldLog), os.Remove(oldHead)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the converted old spool in %s: %w", s.dir, err)
	}
	return syncDir(s.dir)
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
	buf := encodeRecord(payload)
	if _, err := s.f.WriteAt(buf, s.size); err != nil {
		s.f.Truncate(s.size) // best effort: drop the partial record
		return fmt.Errorf("%w: appending to spool %s: %w", ErrWrite, s.dir, err)
	}
	if err := s.f.Sync(); err != nil {
		s.f.Truncate(s.size)
		return fmt.Errorf("%w: syncing spool %s: %w", ErrWrite, s.dir, err)
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
	return s.readLocked(n)
}

// readLocked reads the n oldest unconsumed records; s.mu is held.
func (s *Spool) readLocked(n int) ([][]byte, error) {
	out := make([][]byte, 0, n)
	var hdr [headerSize]byte
	for _, off := range s.offsets[:n] {
		if _, err := s.f.ReadAt(hdr[:], off); err != nil {
			return nil, fmt.Errorf("reading spool record at %d in %s: %w", off, s.dir, err)
		}
		buf := make([]byte, binary.LittleEndian.Uint32(hdr[4:8]))
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

// Rewrite replaces the unconsumed records by what fn makes of them, in
// order: fn returns the record to keep (its argument, or a new payload), or
// nil to drop it. It reports how many records fn dropped or changed.
//
// The rewrite is atomic: the consumed prefix of the log is copied as it is
// (so the durable head still points at the first unconsumed record), the
// records fn keeps are written after it, each with fresh checksums, and
// the new log is fsynced and renamed over the old one before the
// directory is fsynced. A crash leaves either the old log or the new one,
// never a mix. When fn fails, nothing changes.
func (s *Spool) Rewrite(fn func(payload []byte) ([]byte, error)) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	recs, err := s.readLocked(len(s.offsets))
	if err != nil {
		return 0, err
	}
	prefix := s.size
	if len(s.offsets) > 0 {
		prefix = s.offsets[0]
	}
	changed := 0
	out := make([][]byte, 0, len(recs))
	for i, r := range recs {
		k, err := fn(r)
		if err != nil {
			return 0, fmt.Errorf("rewriting spool %s at record %d: %w", s.dir, i, err)
		}
		switch {
		case k == nil:
			changed++
			continue
		case len(k) > MaxRecord:
			return 0, fmt.Errorf("rewriting spool %s: record %d of %d bytes exceeds the %d-byte limit", s.dir, i, len(k), MaxRecord)
		case !bytes.Equal(k, r):
			changed++
		}
		out = append(out, k)
	}
	if changed == 0 {
		return 0, nil
	}
	tmpPath := filepath.Join(s.dir, logName+".rewrite")
	tmp, err := os.OpenFile(tmpPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("rewriting spool %s: %w", s.dir, err)
	}
	fail := func(err error) (int, error) {
		tmp.Close()
		os.Remove(tmpPath)
		return 0, fmt.Errorf("rewriting spool %s: %w", s.dir, err)
	}
	if _, err := io.Copy(tmp, io.NewSectionReader(s.f, 0, prefix)); err != nil {
		return fail(err)
	}
	offsets := make([]int64, 0, len(out))
	size := prefix
	for _, p := range out {
		buf := encodeRecord(p)
		if _, err := tmp.WriteAt(buf, size); err != nil {
			return fail(err)
		}
		offsets = append(offsets, size)
		size += int64(len(buf))
	}
	if size > s.max {
		return fail(fmt.Errorf("%w: the rewritten log of %d bytes would exceed the %d-byte bound", ErrFull, size, s.max))
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmpPath, filepath.Join(s.dir, logName)); err != nil {
		return fail(err)
	}
	old := s.f
	s.f = tmp
	old.Close()
	s.offsets, s.size = offsets, size
	if err := syncDir(s.dir); err != nil {
		return changed, err
	}
	if len(offsets) == 0 {
		// Nothing is left: start afresh, as Advance does.
		if err := s.f.Truncate(0); err != nil {
			return changed, fmt.Errorf("truncating drained spool %s: %w", s.dir, err)
		}
		if err := s.f.Sync(); err != nil {
			return changed, fmt.Errorf("syncing spool %s: %w", s.dir, err)
		}
		if err := s.writeHead(0); err != nil {
			return changed, err
		}
		s.size, s.head = 0, 0
	}
	return changed, nil
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
	return errors.Join(s.f.Close(), s.lock.release())
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

// encodeRecord frames payload as one record: magic, length, header CRC,
// payload CRC, payload.
func encodeRecord(payload []byte) []byte {
	buf := make([]byte, headerSize+len(payload))
	copy(buf[0:4], magic[:])
	binary.LittleEndian.PutUint32(buf[4:8], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[8:12], crc32.Checksum(buf[0:8], castagnoli))
	binary.LittleEndian.PutUint32(buf[12:16], crc32.Checksum(payload, castagnoli))
	copy(buf[headerSize:], payload)
	return buf
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
		return 0, fmt.Errorf("spool head %s is damaged (%d bytes, checksum mismatch)", path, len(b))
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
