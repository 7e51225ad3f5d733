package spool_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	dir := t.TempDir()
	s := mustOpen(t, dir, spool.Options{})
	for _, p := range []string{"one", "two"} {
		if err := s.Append([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// A crash during the third Append left half a record.
	f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{40, 0, 0, 0, 1, 2, 3, 4, 'x'})
	f.Close()

	s = mustOpen(t, dir, spool.Options{})
	if got := payloads(t, s); fmt.Sprint(got) != "[one two]" {
		t.Fatalf("got %v, want the two complete records", got)
	}
	if err := s.Append([]byte("three")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpen(t, dir, spool.Options{})
	if got := payloads(t, s); fmt.Sprint(got) != "[one two three]" {
		t.Fatalf("got %v after appending past the torn record", got)
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

func TestCorruptHeadIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, spool.Options{})
	s.Append([]byte("a"))
	s.Append([]byte("b"))
	s.Advance(1)
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, "head"), []byte("garbage-head"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := spool.Open(dir, spool.Options{}); err == nil {
		t.Fatal("a corrupt head was accepted")
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
