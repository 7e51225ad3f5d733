package dave

import (
	"encoding/binary"
	"fmt"

	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// Binary DAVE opcode payloads (after the sequence number and opcode).

// Proposal operation types of op 27.
const (
	ProposalsAppend = 0
	ProposalsRevoke = 1
)

// ProposalsPayload is op 27.
type ProposalsPayload struct {
	Operation int
	// Messages are the proposal messages (append).
	Messages []*mls.MLSMessage
	// Refs are the proposal references to revoke (revoke).
	Refs [][]byte
}

// ParseProposals decodes an op 27 payload.
func ParseProposals(b []byte) (*ProposalsPayload, error) {
	r := mls.NewReader(b)
	p := &ProposalsPayload{Operation: int(r.U8())}
	s := r.Sub()
	switch p.Operation {
	case ProposalsAppend:
		for s.Len() > 0 && s.Err() == nil {
			p.Messages = append(p.Messages, mls.ReadMLSMessage(s))
		}
	case ProposalsRevoke:
		for s.Len() > 0 && s.Err() == nil {
			p.Refs = append(p.Refs, s.Vec())
		}
	default:
		r.Fail("proposals operation %d", p.Operation)
	}
	r.Join(s)
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("dave: op 27 payload: %w", err)
	}
	return p, nil
}

// Marshal encodes the op 27 payload.
func (p *ProposalsPayload) Marshal() []byte {
	var w mls.Writer
	w.U8(uint8(p.Operation))
	w.VecFunc(func(w *mls.Writer) {
		for _, m := range p.Messages {
			mls.EncodeMLSMessage(w, m)
		}
		for _, ref := range p.Refs {
			w.Vec(ref)
		}
	})
	return w.Bytes()
}

// CommitWelcome is op 28: a commit and, if it adds members, a Welcome.
type CommitWelcome struct {
	Commit  *mls.MLSMessage
	Welcome *mls.Welcome
}

// Marshal encodes op 28.
func (c *CommitWelcome) Marshal() []byte {
	out := c.Commit.Marshal()
	if c.Welcome != nil {
		out = append(out, c.Welcome.Marshal()...)
	}
	return out
}

// ParseCommitWelcome decodes op 28.
func ParseCommitWelcome(b []byte) (*CommitWelcome, error) {
	r := mls.NewReader(b)
	c := &CommitWelcome{Commit: mls.ReadMLSMessage(r)}
	if r.Err() == nil && r.Len() > 0 {
		w, err := mls.UnmarshalWelcome(b[len(b)-r.Len():])
		if err != nil {
			return nil, fmt.Errorf("dave: op 28 welcome: %w", err)
		}
		c.Welcome = w
		return c, nil
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("dave: op 28 commit: %w", err)
	}
	return c, nil
}

// TransitionPayload is op 29 (a commit) or op 30 (a welcome) after its
// transition id.
type TransitionPayload struct {
	TransitionID uint16
	Body         []byte
}

// ParseTransition splits an op 29 or op 30 payload.
func ParseTransition(b []byte) (TransitionPayload, error) {
	if len(b) < 2 {
		return TransitionPayload{}, fmt.Errorf("dave: transition payload of %d bytes", len(b))
	}
	return TransitionPayload{TransitionID: binary.BigEndian.Uint16(b), Body: b[2:]}, nil
}

// Marshal encodes the payload.
func (t TransitionPayload) Marshal() []byte {
	return append(binary.BigEndian.AppendUint16(nil, t.TransitionID), t.Body...)
}
