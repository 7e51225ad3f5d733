package mls

import (
	"errors"
	"fmt"
)

// maxVarint is the largest length a variable-length vector header can
// carry (RFC 9420 §2.1.2: 30 bits).
const maxVarint = 1<<30 - 1

// ErrMalformed is wrapped by every decoding error caused by bad input.
var ErrMalformed = errors.New("mls: malformed input")

// Reader decodes the TLS presentation language of RFC 9420 from a byte
// slice. It never allocates based on a length field: vectors are returned
// as sub-slices of the input, and a length larger than the remaining input
// is an error. The first error is sticky; later reads return zero values.
type Reader struct {
	b   []byte
	err error
}

// NewReader returns a Reader over b. Returned byte slices alias b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err reports the first decoding error.
func (r *Reader) Err() error { return r.err }

// Len reports how many bytes remain.
func (r *Reader) Len() int { return len(r.b) }

// Fail records err (wrapped in ErrMalformed) unless an error is already set.
func (r *Reader) Fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

// Done checks that all input was consumed and returns the first error.
func (r *Reader) Done() error {
	if r.err == nil && len(r.b) != 0 {
		r.Fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

func (r *Reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.Fail("%s: need %d bytes, have %d", what, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// U8 reads a uint8.
func (r *Reader) U8() uint8 {
	b := r.take(1, "uint8")
	if b == nil {
		return 0
	}
	return b[0]
}

// U16 reads a big-endian uint16.
func (r *Reader) U16() uint16 {
	b := r.take(2, "uint16")
	if b == nil {
		return 0
	}
	return uint16(b[0])<<8 | uint16(b[1])
}

// U32 reads a big-endian uint32.
func (r *Reader) U32() uint32 {
	b := r.take(4, "uint32")
	if b == nil {
		return 0
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// U64 reads a big-endian uint64.
func (r *Reader) U64() uint64 {
	hi := uint64(r.U32())
	lo := uint64(r.U32())
	return hi<<32 | lo
}

// Bytes reads n fixed bytes.
func (r *Reader) Bytes(n int) []byte { return r.take(n, "fixed bytes") }

// VarLen reads a variable-length vector header (RFC 9420 §2.1.2). Headers
// that are not in minimal form and the reserved prefix 0b11 are rejected.
func (r *Reader) VarLen() int {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.Fail("vector length: no bytes left")
		return 0
	}
	prefix := r.b[0] >> 6
	var n uint32
	switch prefix {
	case 0:
		n = uint32(r.U8() & 0x3f)
	case 1:
		n = uint32(r.U16() & 0x3fff)
		if n < 1<<6 {
			r.Fail("vector length %d not minimally encoded", n)
		}
	case 2:
		n = r.U32() & 0x3fffffff
		if n < 1<<14 {
			r.Fail("vector length %d not minimally encoded", n)
		}
	default:
		r.Fail("vector length: reserved prefix 0b11 in byte %#02x", r.b[0])
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// Vec reads a variable-length opaque vector.
func (r *Reader) Vec() []byte {
	n := r.VarLen()
	if r.err != nil {
		return nil
	}
	b := r.take(n, "vector body")
	if b == nil {
		return nil
	}
	return b
}

// Sub reads a variable-length vector and returns a Reader over its body,
// for vectors of structures.
func (r *Reader) Sub() *Reader {
	b := r.Vec()
	return &Reader{b: b, err: r.err}
}

// Join copies a sub-reader's error back into r after checking the
// sub-reader consumed all of its input.
func (r *Reader) Join(sub *Reader) {
	if err := sub.Done(); err != nil && r.err == nil {
		r.err = err
	}
}

// Optional reads the presence byte of optional<T>.
func (r *Reader) Optional() bool {
	switch v := r.U8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.Fail("optional presence byte %d", v)
		return false
	}
}

// Writer encodes the TLS presentation language. The zero value is ready.
type Writer struct {
	b []byte
}

// Bytes returns the encoded bytes.
func (w *Writer) Bytes() []byte { return w.b }

// U8 appends a uint8.
func (w *Writer) U8(v uint8) { w.b = append(w.b, v) }

// U16 appends a big-endian uint16.
func (w *Writer) U16(v uint16) { w.b = append(w.b, byte(v>>8), byte(v)) }

// U32 appends a big-endian uint32.
func (w *Writer) U32(v uint32) {
	w.b = append(w.b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// U64 appends a big-endian uint64.
func (w *Writer) U64(v uint64) { w.U32(uint32(v >> 32)); w.U32(uint32(v)) }

// Raw appends bytes without a length prefix.
func (w *Writer) Raw(b []byte) { w.b = append(w.b, b...) }

// VarLen appends a minimal variable-length vector header. It panics for
// n > 2^30-1, which no caller in this package can produce from valid
// structures.
func (w *Writer) VarLen(n int) {
	switch {
	case n < 1<<6:
		w.U8(uint8(n))
	case n < 1<<14:
		w.U16(uint16(n) | 0x4000)
	case n <= maxVarint:
		w.U32(uint32(n) | 0x80000000)
	default:
		panic(fmt.Sprintf("mls: vector of %d bytes exceeds the 2^30-1 limit", n))
	}
}

// Vec appends an opaque variable-length vector.
func (w *Writer) Vec(b []byte) { w.VarLen(len(b)); w.Raw(b) }

// VecFunc appends a variable-length vector whose body f writes.
func (w *Writer) VecFunc(f func(w *Writer)) {
	var inner Writer
	f(&inner)
	w.Vec(inner.b)
}

// Optional appends the presence byte of optional<T>.
func (w *Writer) Optional(present bool) {
	if present {
		w.U8(1)
	} else {
		w.U8(0)
	}
}
