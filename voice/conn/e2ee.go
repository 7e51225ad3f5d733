package conn

import (
	"encoding/json"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
)

// E2EE is the DAVE session as the connection drives it. The connection
// feeds it the gateway's DAVE messages and sends what it returns; it
// encrypts every outgoing frame and decrypts every incoming one. Methods
// may be called from several goroutines.
type E2EE interface {
	// SessionDescription reports the protocol version of op 4 (0: no
	// DAVE) and returns what to send (the key package).
	SessionDescription(version int) ([]Outbound, error)
	// HandleJSON handles ops 11, 13, 21, 22 and 24.
	HandleJSON(op gateway.Op, data json.RawMessage) ([]Outbound, error)
	// HandleBinary handles ops 25, 27, 29 and 30.
	HandleBinary(op gateway.Op, payload []byte) ([]Outbound, error)
	// Encrypt protects an outgoing Opus frame (or passes it through while
	// no group is ready).
	Encrypt(frame []byte) ([]byte, error)
	// Decrypt opens an incoming frame from a user.
	Decrypt(userID uint64, frame []byte) ([]byte, error)
	// Epoch is the current MLS epoch (0 before a group exists).
	Epoch() uint64
}

// Outbound is a gateway message the E2EE session wants sent: JSON for text
// ops, Binary for binary ones.
type Outbound struct {
	Op     gateway.Op
	JSON   any
	Binary []byte
}

// E2EERecovery is an optional capability of an E2EE session that acts on
// its own (found by type assertion): a recovery started by decrypt
// failures, or a message held back by a backoff. The connection polls
// TakeOutbound as media arrives and every few tens of milliseconds and
// sends what it returns; once Failed returns an error the connection
// reports it (EventE2EEFailed).
type E2EERecovery interface {
	// TakeOutbound returns the messages to send now.
	TakeOutbound() []Outbound
	// Failed returns the error that made the session give up, or nil.
	Failed() error
}
