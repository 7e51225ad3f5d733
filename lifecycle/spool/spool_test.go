package spool_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
)

func mustOpen(t *testing.T, dir string, o spool.Options) *spool.Spool {
	t.Helper()
	s, err := spool.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func payloads(t *testing.T, s *spool.Spool) []string {
	t.Helper()
	recs, err := s.Peek(0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r)
	}
	return out
}

func TestAppendPeekAdvanceReopen(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, spool.Options{})
	for i := range 5 {
		if err := s.Append(fmt.Appendf(nil, "rec-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := payloads(t, s); fmt.Sprint(got) != "[rec-0 rec-1 rec-2 rec-3 rec-4]" {
		t.Fatalf("peek %v", got)
	}
	if err := s.Advance(2); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = mustOpen(t, dir, spool.Options{})
	if got := payloads(t, s); fmt.Sprint(got) != "[rec-2 rec-3 rec-4]" {
		t.Fatalf("after reopen %v, want the three unconsumed records in order", got)
	}
	if err := s.Advance(3); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 || s.Size() != 0 {
		t.Fatalf("drained spool has %d records, %d bytes", s.Len(), s.Size())
	}
	if err := s.Append([]byte("after-drain")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpen(t, dir, spool.Options{})
	if got := payloads(t, s); fmt.Sprint(got) != "[after-drain]" {
		t.Fatalf("after drain and reopen %v", got)
	}
	if err := s.Advance(2); err == nil {
		t.Fatal("advancing past the end succeeded")
	}
}

func TestTornRecordIsDiscarded(t *testing.T) {
	for _, torn := range [][]byte{
		{0xF7},                                // the first byte of a header
		{0xF7, 'G', 'X', 'R', 40, 0, 0, 0, 1}, // half a header
		nil,                                   // a whole header, half the payload (built below)
	} {
		dir := t.TempDir()
		s := mustOpen(t, dir, spool.Options{})
		for _, p := range []string{"one", "two", "three-is-long"} {
			if err := s.Append([]byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		log := filepath.Join(dir, "spool.log")
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if torn == nil {
			b = b[:len(b)-5] // the third record, cut in its payload
		} else {
			b = append(b[:len(b)-16-len("three-is-long")], torn...)
		}
		if err := os.WriteFile(log, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s = mustOpen(t, dir, spool.Options{})
		if got := payloads(t, s); fmt.Sprint(got) != "[one two]" {
			t.Fatalf("got %v, want the two complete records", got)
		}
		if s.Quarantined() != 0 {
			t.Fatalf("a torn append counted as damage")
		}
		if err := s.Append([]byte("three")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s = mustOpen(t, dir, spool.Options{})
		if got := payloads(t, s); fmt.Sprint(got) != "[one two three]" {
			t.Fatalf("got %v after appending past the torn record", got)
		}
		s.Close()
	}
}

func TestFullSpoolIsAnError(t *testing.T) {
	s := mustOpen(t, t.TempDir(), spool.Options{MaxBytes: 40})
	if err := s.Append(make([]byte, 20)); err != nil {
		t.Fatal(err)
	}
	err := s.Append(make([]byte, 20))
	if !errors.Is(err, spool.ErrFull) {
		t.Fatalf("Append to a full spool = %v, want ErrFull", err)
	}
	if s.Len() != 1 {
		t.Fatalf("%d records after a refused append, want 1", s.Len())
	}
	if err := s.Append(make([]byte, spool.MaxRecord+1)); err == nil {
		t.Fatal("an oversized record was accepted")
	}
}

// A damaged head never blocks the spool: it is moved aside, counted, and
// every record is replayed (delivering some twice rather than losing any).
func TestDamagedHeadIsRotated(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, spool.Options{})
	s.Append([]byte("a"))
	s.Append([]byte("b"))
	s.Advance(1)
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, "spool.head"), []byte("garbage-head"), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen []spool.Corruption
	s = mustOpen(t, dir, spool.Options{OnCorrupt: func(c spool.Corruption) { seen = append(seen, c) }})
	if got := payloads(t, s); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("after a damaged head: %v, want every record replayed", got)
	}
	if s.Quarantined() != 1 || len(seen) != 1 {
		t.Fatalf("quarantined %d, reported %v", s.Quarantined(), seen)
	}
	bad, _ := filepath.Glob(filepath.Join(dir, "spool.head.bad-*"))
	if len(bad) != 1 {
		t.Fatalf("the damaged head was not kept aside: %v", bad)
	}
	if err := s.Advance(2); err != nil {
		t.Fatal(err)
	}
}

// everyValue makes TestEverySingleByteCorruption set each byte to all 255
// other values (about 180,000 cases, minutes under the race detector):
//
//	go test ./lifecycle/spool -run TestEverySingleByteCorruption -args -every-value
var everyValue = flag.Bool("every-value", false, "TestEverySingleByteCorruption: every value at every offset, not the representative ones")

// corruptValues are the values TestEverySingleByteCorruption sets the byte
// at an offset to (orig is the clean byte), all but orig. Every field of a
// record is covered by a CRC-32C, which detects every single-byte change,
// so what can tell values apart is only what the reader does with the
// damaged bytes: resynchronising on the magic (its bytes), JSON structure
// and line ends, the smallest and largest lengths, flipped low and high
// bits. Without -every-value it is those and a few more chosen by offset;
// with it, all 255.
func corruptValues(off int, orig byte) []byte {
	var vs []byte
	add := func(v byte) {
		if v != orig && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	if *everyValue {
		for v := range 256 {
			add(byte(v))
		}
		return vs
	}
	for _, v := range []byte{0x00, 0xFF, 0xF7, 'G', 'X', 'R', '{', '}', '"', '\n', orig ^ 0x01, orig ^ 0x80, orig ^ 0xFF} {
		add(v)
	}
	for i := range 3 {
		add(byte(off*67 + i*89 + 13))
	}
	return vs
}

// Every single-byte corruption at every offset of a 10-record spool (each
// offset set to representative values; all of them with -every-value):
// all records but the damaged one are replayed, in order, and the damage
// is quarantined and counted once.
func TestEverySingleByteCorruption(t *testing.T) {
	base := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		// tmpfs: the quarantine's fsyncs cost nothing there.
		d, err := os.MkdirTemp("/dev/shm", "spooltest")
		if err == nil {
			base = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	src := filepath.Join(base, "src")
	s, err := spool.Open(src, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var ends []int
	for i := range 10 {
		p := fmt.Sprintf(`{"line":%d,"text":"record %d"}`, i, i)
		want = append(want, p)
		if err := s.Append([]byte(p)); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int(s.Size()))
	}
	s.Close()
	clean, err := os.ReadFile(filepath.Join(src, "spool.log"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	dir := filepath.Join(base, "case")
	cases, wantCases := 0, 0
	for off := range clean {
		damaged := 0
		for ends[damaged] <= off {
			damaged++
		}
		expect := fmt.Sprint(append(append([]string(nil), want[:damaged]...), want[damaged+1:]...))
		values := corruptValues(off, clean[off])
		wantCases += len(values)
		for _, v := range values {
			cases++
			b := append([]byte(nil), clean...)
			b[off] = byte(v)
			os.RemoveAll(dir)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "spool.log"), b, 0o600); err != nil {
				t.Fatal(err)
			}
			reports := 0
			s, err := spool.Open(dir, spool.Options{Logger: quiet, OnCorrupt: func(spool.Corruption) { reports++ }})
			if err != nil {
				t.Fatalf("byte %d set to %#x: Open: %v", off, v, err)
			}
			recs, err := s.Peek(0)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(recs))
			for i, r := range recs {
				got[i] = string(r)
			}
			if fmt.Sprint(got) != expect || s.Quarantined() != 1 || reports != 1 {
				t.Fatalf("byte %d (record %d) set to %#x: replayed %v, quarantined %d, reported %d; want %s, 1, 1",
					off, damaged, v, got, s.Quarantined(), reports, expect)
			}
			s.Close()
		}
	}
	if cases != wantCases || (*everyValue && cases != len(clean)*255) {
		t.Fatalf("%d cases, want %d", cases, wantCases)
	}
}

// A spool written before checksummed headers is converted on Open.
func TestConvertsTheOldFormat(t *testing.T) {
	dir := t.TempDir()
	var old []byte
	for _, p := range []string{"consumed", "kept-1", "kept-2"} {
		var h [8]byte
		binary.LittleEndian.PutUint32(h[0:4], uint32(len(p)))
		binary.LittleEndian.PutUint32(h[4:8], crc32.Checksum([]byte(p), crc32.MakeTable(crc32.Castagnoli)))
		old = append(append(old, h[:]...), p...)
	}
	var head [12]byte
	binary.LittleEndian.PutUint64(head[0:8], uint64(8+len("consumed")))
	binary.LittleEndian.PutUint32(head[8:12], crc32.Checksum(head[0:8], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(filepath.Join(dir, "log"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "head"), head[:], 0o600); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dir, spool.Options{})
	if got := payloads(t, s); fmt.Sprint(got) != "[kept-1 kept-2]" {
		t.Fatalf("converted %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "log")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old log is still there: %v", err)
	}
}

// An Append the disk refuses says so (ErrWrite) and stores nothing.
func TestWriteFailureIsReported(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full")
	}
	dir := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(dir, "spool.log")); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dir, spool.Options{})
	err := s.Append([]byte("a line"))
	if !errors.Is(err, spool.ErrWrite) || errors.Is(err, spool.ErrFull) {
		t.Fatalf("Append on a full disk = %v, want ErrWrite", err)
	}
	if s.Len() != 0 {
		t.Fatalf("%d records after a failed append", s.Len())
	}
}

func TestClosed(t *testing.T) {
	s := mustOpen(t, t.TempDir(), spool.Options{})
	s.Close()
	if err := s.Append([]byte("x")); !errors.Is(err, spool.ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func BenchmarkAppend(b *testing.B) {
	s, err := spool.Open(b.TempDir(), spool.Options{MaxBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := make([]byte, 200)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Append(p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestOneSpoolPerDirectory(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, spool.Options{})
	if _, err := spool.Open(dir, spool.Options{}); !errors.Is(err, spool.ErrLocked) {
		t.Fatalf("second Open of a directory in use = %v, want ErrLocked", err)
	}
	s.Close()
	s2, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

// TestRewrite drops and changes unconsumed records atomically: the consumed
// ones stay consumed, the kept ones keep their order across a reopen, new
// Appends follow them, and a failing fn changes nothing.
func TestRewrite(t *testing.T) {
	tests := []struct {
		name     string
		advance  int
		fn       func(p []byte) ([]byte, error)
		want     []string
		changed  int
		wantSize bool // the log is empty afterwards
	}{
		{name: "drop some", advance: 1,
			fn: func(p []byte) ([]byte, error) {
				if string(p) == "rec-2" || string(p) == "rec-4" {
					return nil, nil
				}
				return p, nil
			},
			want: []string{"rec-1", "rec-3"}, changed: 2},
		{name: "change one", advance: 0,
			fn: func(p []byte) ([]byte, error) {
				if string(p) == "rec-0" {
					return []byte("r0"), nil
				}
				return p, nil
			},
			want: []string{"r0", "rec-1", "rec-2", "rec-3", "rec-4"}, changed: 1},
		{name: "drop all", advance: 2,
			fn:   func([]byte) ([]byte, error) { return nil, nil },
			want: []string{}, changed: 3, wantSize: true},
		{name: "keep all", advance: 2,
			fn:   func(p []byte) ([]byte, error) { return p, nil },
			want: []string{"rec-2", "rec-3", "rec-4"}, changed: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, spool.Options{})
			for i := range 5 {
				if err := s.Append(fmt.Appendf(nil, "rec-%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Advance(tt.advance); err != nil {
				t.Fatal(err)
			}
			n, err := s.Rewrite(tt.fn)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.changed {
				t.Errorf("Rewrite changed %d records, want %d", n, tt.changed)
			}
			if got := payloads(t, s); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("after rewrite %v, want %v", got, tt.want)
			}
			if tt.wantSize && s.Size() != 0 {
				t.Errorf("a rewrite that kept nothing left a log of %d bytes", s.Size())
			}
			if err := s.Append([]byte("after")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = mustOpen(t, dir, spool.Options{})
			want := append(append([]string{}, tt.want...), "after")
			if got := payloads(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after reopen %v, want %v", got, want)
			}
			if q := s.Quarantined(); q != 0 {
				t.Errorf("reopening a rewritten spool quarantined %d records", q)
			}
		})
	}

	t.Run("failing fn changes nothing", func(t *testing.T) {
		dir := t.TempDir()
		s := mustOpen(t, dir, spool.Options{})
		for i := range 3 {
			if err := s.Append(fmt.Appendf(nil, "rec-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		boom := errors.New("boom")
		_, err := s.Rewrite(func(p []byte) ([]byte, error) {
			if string(p) == "rec-1" {
				return nil, boom
			}
			return nil, nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Rewrite error %v, want one wrapping fn's", err)
		}
		if got := payloads(t, s); fmt.Sprint(got) != "[rec-0 rec-1 rec-2]" {
			t.Fatalf("after a failed rewrite %v", got)
		}
		if _, err := os.Stat(filepath.Join(dir, "spool.log.rewrite")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed rewrite left its temporary file: %v", err)
		}
	})
}
