package mcpserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// A player's sync cursor is opaque: a position in the change log, numbered
// for every change, hidden ones included, would tell the player from the
// step between two cursors how many changes they may not see were written
// (the DM's secret facts, notes on an entity). The position (under 2^36)
// and a 16-bit tag of it are a 52-bit block, permuted by a four-round
// Feistel network keyed with the campaign's cursor key (migration 0047):
// the cursor is a positive integer that says nothing of the position, and
// one the server did not give fails the tag on its way back (but for one
// in 65,536). 52 bits, because a JSON number above 2^53 loses digits in
// JavaScript clients and in the SDK's argument check.

const (
	cursorPosBits = 36
	cursorTagBits = 16
	cursorHalf    = 26 // bits in each half of the 52-bit block
	cursorRounds  = 4
)

// errCursor is the answer to a cursor the server did not give.
var errCursor = errors.New("the cursor is not one sync returned (for this campaign): pass 0, or leave it out, to read every change again")

func cursorMAC(key []byte, label byte, x uint64) uint64 {
	m := hmac.New(sha256.New, key)
	var b [9]byte
	b[0] = label
	binary.BigEndian.PutUint64(b[1:], x)
	m.Write(b[:])
	return binary.BigEndian.Uint64(m.Sum(nil))
}

func cursorRound(key []byte, i int, half uint64) uint64 {
	return cursorMAC(key, byte(i), half) & (1<<cursorHalf - 1)
}

func cursorTag(key []byte, pos uint64) uint64 {
	return cursorMAC(key, 't', pos) & (1<<cursorTagBits - 1)
}

// sealCursor is the cursor a player is given for position pos (0 stays 0:
// "from the start").
func sealCursor(key []byte, pos int64) (int64, error) {
	if pos == 0 {
		return 0, nil
	}
	if pos < 0 || pos >= 1<<cursorPosBits {
		return 0, fmt.Errorf("change-log position %d is outside the cursor's range", pos)
	}
	block := uint64(pos)<<cursorTagBits | cursorTag(key, uint64(pos))
	l, r := block>>cursorHalf, block&(1<<cursorHalf-1)
	for i := range cursorRounds {
		l, r = r, l^cursorRound(key, i, r)
	}
	return int64(l<<cursorHalf | r), nil
}

// openCursor is the position of a cursor sealCursor gave, or errCursor.
func openCursor(key []byte, c int64) (int64, error) {
	if c == 0 {
		return 0, nil
	}
	if c < 0 || c >= 1<<(2*cursorHalf) {
		return 0, errCursor
	}
	l, r := uint64(c)>>cursorHalf, uint64(c)&(1<<cursorHalf-1)
	for i := cursorRounds - 1; i >= 0; i-- {
		l, r = r^cursorRound(key, i, l), l
	}
	block := l<<cursorHalf | r
	pos := block >> cursorTagBits
	if pos == 0 || block&(1<<cursorTagBits-1) != cursorTag(key, pos) {
		return 0, errCursor
	}
	return int64(pos), nil
}
