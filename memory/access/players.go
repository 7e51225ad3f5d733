package access

import (
	"context"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Per-player knowledge (see postgres.KnowledgeOf): who plays whom, what the
// DM granted a player, what a player's character witnessed.
type (
	// PlayerCharacter is a Discord member's character.
	PlayerCharacter = postgres.PlayerCharacter
	// Grant is a handout, whisper or fact the DM gave one player.
	Grant = postgres.Grant
	// KnownFact is a canon fact revealed in a character's presence.
	KnownFact = postgres.KnownFact
	// Knowledge is what one player's character knows.
	Knowledge = postgres.Knowledge
	// Presence is who was present in a session from a time on.
	Presence = postgres.Presence
)

// SetPlayerCharacter records that userID plays entity entityID (DM only).
func (c *Campaign) SetPlayerCharacter(ctx context.Context, userID, entityID string) (PlayerCharacter, error) {
	return c.pc.SetPlayerCharacter(ctx, userID, entityID)
}

// PlayerCharacters lists who plays whom.
func (c *Campaign) PlayerCharacters(ctx context.Context) ([]PlayerCharacter, error) {
	return c.pc.PlayerCharacters(ctx)
}

// Presence lists who was present in a session, span by span (DM only).
func (c *Campaign) Presence(ctx context.Context, sessionID string) ([]Presence, error) {
	return c.pc.Presence(ctx, sessionID)
}

// Grant gives player userID a handout or whisper (text), or the fact
// factID (DM only); sessionID is the session it was given in, if any.
func (c *Campaign) Grant(ctx context.Context, userID, text string, factID int64, sessionID string) (Grant, error) {
	return c.pc.AddGrant(ctx, userID, text, factID, sessionID)
}

// Grants lists a player's grants from since on: the DM reads anyone's, a
// handle bound to one player (memory.PlayerViewerOf) only that player's;
// anyone else gets an error wrapping memory.ErrForbidden.
func (c *Campaign) Grants(ctx context.Context, userID string, since time.Time) ([]Grant, error) {
	return c.pc.Grants(ctx, userID, since)
}

// KnowledgeOf is what player userID's character knows of the sessions from
// fromSession on (all when empty): the DM reads anyone's, a handle bound
// to one player only that player's.
func (c *Campaign) KnowledgeOf(ctx context.Context, userID, fromSession string) (Knowledge, error) {
	return c.pc.KnowledgeOf(ctx, userID, fromSession)
}

// LastPresentSession is the last session player userID was present in
// ("" for none); the same rule as KnowledgeOf.
func (c *Campaign) LastPresentSession(ctx context.Context, userID string) (string, error) {
	return c.pc.LastPresentSession(ctx, userID)
}
