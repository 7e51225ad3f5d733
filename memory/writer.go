package memory

import (
	"fmt"
	"strings"
)

// WriterRole is what a writer of facts may do.
type WriterRole string

// Writer roles.
const (
	// WriterDM writes canon: DM-confirmed facts that supersede the canon
	// they replace, with a reason.
	WriterDM WriterRole = "dm"
	// WriterExtraction writes what post-session extraction found: canon at
	// or above the review threshold, pending below it.
	WriterExtraction WriterRole = "extraction"
	// WriterImport writes the facts of a campaign file, which the DM wrote.
	WriterImport WriterRole = "import"
	// WriterPlayer and WriterNPC only propose: every write is a new pending
	// proposal of its own, never merged into canon.
	WriterPlayer WriterRole = "player"
	WriterNPC    WriterRole = "npc"
)

// Writer is who writes a fact. The store decides from it what the write
// may do, so no caller can forget to.
type Writer struct {
	Role WriterRole
	// ID names the writer: a Discord user id, an NPC id, an agent name.
	ID string
}

// DM returns a DM writer.
func DM(id string) Writer { return Writer{Role: WriterDM, ID: id} }

// Player returns a player writer.
func Player(id string) Writer { return Writer{Role: WriterPlayer, ID: id} }

// NPCWriter returns the writer of an NPC's claims.
func NPCWriter(npcID string) Writer { return Writer{Role: WriterNPC, ID: npcID} }

// Proposes reports whether the writer can only propose.
func (w Writer) Proposes() bool { return w.Role == WriterPlayer || w.Role == WriterNPC }

// Key is the writer as stored: "npc:grimjaw", "player:1234".
func (w Writer) Key() string { return string(w.Role) + ":" + w.ID }

// Validate checks the role, and that a proposing writer is named.
func (w Writer) Validate() error {
	switch w.Role {
	case WriterDM, WriterExtraction, WriterImport:
		return nil
	case WriterPlayer, WriterNPC:
		if strings.TrimSpace(w.ID) == "" {
			return fmt.Errorf("%w: a %s writer needs an id", ErrInvalid, w.Role)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown writer role %q", ErrInvalid, w.Role)
}

// FactWrite is what a fact write did, as far as the writer may know.
type FactWrite struct {
	// Fact is the stored fact: for a proposing writer, its own proposal.
	Fact Relationship
	// Proposed is true when the fact waits for the DM.
	Proposed bool
	// Conflicts are the canon facts the write superseded or contradicts.
	// Always empty for proposing writers: what they contradict may be a
	// hidden fact.
	Conflicts []Conflict
}
