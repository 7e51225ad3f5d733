package gateway

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Op is a voice gateway opcode.
type Op int

// Opcodes of voice gateway v8 and DAVE protocol v1.
const (
	OpIdentify                 Op = 0
	OpSelectProtocol           Op = 1
	OpReady                    Op = 2
	OpHeartbeat                Op = 3
	OpSessionDescription       Op = 4
	OpSpeaking                 Op = 5
	OpHeartbeatAck             Op = 6
	OpResume                   Op = 7
	OpHello                    Op = 8
	OpResumed                  Op = 9
	OpClientsConnect           Op = 11
	OpClientDisconnect         Op = 13
	OpDAVEPrepareTransition    Op = 21
	OpDAVEExecuteTransition    Op = 22
	OpDAVETransitionReady      Op = 23
	OpDAVEPrepareEpoch         Op = 24
	OpDAVEExternalSender       Op = 25
	OpDAVEKeyPackage           Op = 26
	OpDAVEProposals            Op = 27
	OpDAVECommitWelcome        Op = 28
	OpDAVEAnnounceCommit       Op = 29
	OpDAVEWelcome              Op = 30
	OpDAVEInvalidCommitWelcome Op = 31
)

// Binary reports whether op travels in binary frames.
func (o Op) Binary() bool { return o >= OpDAVEExternalSender && o <= OpDAVEWelcome }

// NoSeq marks a message without a sequence number.
const NoSeq = -1

var errMalformed = errors.New("voice gateway: malformed message")

// Message is a text frame.
type Message struct {
	Op   Op              `json:"op"`
	Data json.RawMessage `json:"d"`
	// Seq is the server's sequence number, or NoSeq.
	Seq int `json:"-"`
}

type wireMessage struct {
	Op   *Op             `json:"op"`
	Data json.RawMessage `json:"d"`
	Seq  *int            `json:"seq,omitempty"`
}

// ParseText decodes a text frame.
func ParseText(b []byte) (Message, error) {
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return Message{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if w.Op == nil {
		return Message{}, fmt.Errorf("%w: no op", errMalformed)
	}
	m := Message{Op: *w.Op, Data: w.Data, Seq: NoSeq}
	if w.Seq != nil {
		m.Seq = *w.Seq
	}
	return m, nil
}

// EncodeText encodes a text frame; seq is NoSeq for client messages.
func EncodeText(op Op, data any, seq int) ([]byte, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("voice gateway: encoding op %d: %w", op, err)
	}
	w := wireMessage{Op: &op, Data: raw}
	if seq != NoSeq {
		w.Seq = &seq
	}
	return json.Marshal(w)
}

// Decode unmarshals a message's payload into v.
func (m Message) Decode(v any) error {
	if err := json.Unmarshal(m.Data, v); err != nil {
		return fmt.Errorf("%w: op %d payload: %v", errMalformed, m.Op, err)
	}
	return nil
}

// BinaryMessage is a binary (DAVE) frame.
type BinaryMessage struct {
	// Seq is set on server messages; NoSeq on client messages.
	Seq     int
	Op      Op
	Payload []byte
}

// ParseServerBinary decodes a server→client binary frame. Payload aliases b.
func ParseServerBinary(b []byte) (BinaryMessage, error) {
	if len(b) < 3 {
		return BinaryMessage{}, fmt.Errorf("%w: binary frame of %d bytes", errMalformed, len(b))
	}
	return BinaryMessage{Seq: int(binary.BigEndian.Uint16(b)), Op: Op(b[2]), Payload: b[3:]}, nil
}

// ParseClientBinary decodes a client→server binary frame. Payload aliases b.
func ParseClientBinary(b []byte) (BinaryMessage, error) {
	if len(b) < 1 {
		return BinaryMessage{}, fmt.Errorf("%w: empty binary frame", errMalformed)
	}
	return BinaryMessage{Seq: NoSeq, Op: Op(b[0]), Payload: b[1:]}, nil
}

// EncodeServerBinary encodes a server→client binary frame.
func EncodeServerBinary(seq int, op Op, payload []byte) []byte {
	b := make([]byte, 3+len(payload))
	binary.BigEndian.PutUint16(b, uint16(seq))
	b[2] = byte(op)
	copy(b[3:], payload)
	return b
}

// EncodeClientBinary encodes a client→server binary frame.
func EncodeClientBinary(op Op, payload []byte) []byte {
	return append([]byte{byte(op)}, payload...)
}

// Identify is op 0.
type Identify struct {
	ServerID               string `json:"server_id"`
	UserID                 string `json:"user_id"`
	SessionID              string `json:"session_id"`
	Token                  string `json:"token"`
	MaxDAVEProtocolVersion int    `json:"max_dave_protocol_version"`
}

// SelectProtocol is op 1.
type SelectProtocol struct {
	Protocol string             `json:"protocol"`
	Data     SelectProtocolData `json:"data"`
}

// SelectProtocolData is the UDP endpoint and mode chosen.
type SelectProtocolData struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	Mode    string `json:"mode"`
}

// Ready is op 2. Its heartbeat_interval is ignored (Hello's counts).
type Ready struct {
	SSRC  uint32   `json:"ssrc"`
	IP    string   `json:"ip"`
	Port  int      `json:"port"`
	Modes []string `json:"modes"`
}

// Heartbeat is op 3 (v8: with seq_ack).
type Heartbeat struct {
	T      int64 `json:"t"`
	SeqAck int   `json:"seq_ack"`
}

// SessionDescription is op 4.
type SessionDescription struct {
	Mode                string `json:"mode"`
	SecretKey           Key    `json:"secret_key"`
	DAVEProtocolVersion int    `json:"dave_protocol_version"`
}

// Key is a secret key, written in JSON as an array of numbers.
type Key []byte

// MarshalJSON writes the key as an array of numbers.
func (k Key) MarshalJSON() ([]byte, error) {
	ints := make([]int, len(k))
	for i, b := range k {
		ints[i] = int(b)
	}
	return json.Marshal(ints)
}

// UnmarshalJSON reads an array of numbers 0..255.
func (k *Key) UnmarshalJSON(b []byte) error {
	var ints []int
	if err := json.Unmarshal(b, &ints); err != nil {
		return err
	}
	out := make([]byte, len(ints))
	for i, v := range ints {
		if v < 0 || v > 255 {
			return fmt.Errorf("secret key byte %d is %d", i, v)
		}
		out[i] = byte(v)
	}
	*k = out
	return nil
}

// Speaking is op 5, both ways: the client announces its SSRC before
// sending audio; the server maps a user to an SSRC.
type Speaking struct {
	Speaking int    `json:"speaking"`
	Delay    int    `json:"delay"`
	SSRC     uint32 `json:"ssrc"`
	UserID   string `json:"user_id,omitempty"`
}

// Speaking flags.
const (
	SpeakingMicrophone = 1
	SpeakingSoundshare = 2
	SpeakingPriority   = 4
)

// HeartbeatAck is op 6.
type HeartbeatAck struct {
	T int64 `json:"t"`
}

// Resume is op 7.
type Resume struct {
	ServerID  string `json:"server_id"`
	SessionID string `json:"session_id"`
	Token     string `json:"token"`
	SeqAck    int    `json:"seq_ack"`
}

// Hello is op 8.
type Hello struct {
	HeartbeatInterval float64 `json:"heartbeat_interval"`
}

// ClientsConnect is op 11.
type ClientsConnect struct {
	UserIDs []string `json:"user_ids"`
}

// ClientDisconnect is op 13.
type ClientDisconnect struct {
	UserID string `json:"user_id"`
}

// Transition is ops 21 (prepare, with ProtocolVersion), 22 (execute), 23
// (ready) and 31 (invalid commit/welcome).
type Transition struct {
	TransitionID    int `json:"transition_id"`
	ProtocolVersion int `json:"protocol_version,omitempty"`
}

// PrepareEpoch is op 24.
type PrepareEpoch struct {
	Epoch           uint64 `json:"epoch"`
	ProtocolVersion int    `json:"protocol_version"`
	TransitionID    int    `json:"transition_id,omitempty"`
}

// Snowflake parses a Discord id.
func Snowflake(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a Discord id", s)
	}
	return v, nil
}
