// Package live holds the DM's live controls of a table session: the scene
// (where the action is, which NPCs are present), the NPC told to answer the
// next line, and which NPCs are muted. The bot's slash commands and console
// change them; the table reads them on every turn.
package live

import (
	"slices"
	"sync"
)

// Controls are a guild's live NPC controls, shared with its voice session:
// which NPCs are muted and what the scene is.
type Controls struct {
	mu       sync.Mutex
	muted    map[string]bool
	allMuted bool
	scene    Scene
	next     string // the NPC the DM told to answer the next line
}

// NewControls returns the controls of a session with no scene, nothing
// muted.
func NewControls() *Controls { return &Controls{muted: map[string]bool{}} }

// SetNext makes an NPC answer the next line a player says.
func (c *Controls) SetNext(npcID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next = npcID
}

// TakeNext returns the NPC the DM told to answer the next line, once.
func (c *Controls) TakeNext() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next = ""
	return id
}

// Scene is where the action is and who is there.
type Scene struct {
	LocationID string
	Present    []string // NPC entity ids
}

// Muted reports whether an NPC may not answer.
func (c *Controls) Muted(npcID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.allMuted || c.muted[npcID]
}

// SetMuted mutes or unmutes one NPC, or all when npcID is "all".
func (c *Controls) SetMuted(npcID string, muted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if npcID == "all" {
		c.allMuted = muted
		if !muted {
			clear(c.muted)
		}
		return
	}
	if muted {
		c.muted[npcID] = true
	} else {
		delete(c.muted, npcID)
	}
}

// Scene returns the current scene.
func (c *Controls) Scene() Scene {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Scene{LocationID: c.scene.LocationID, Present: slices.Clone(c.scene.Present)}
}

// PresentNPCs are the NPCs in the scene (empty: the scene is not set).
func (c *Controls) PresentNPCs() []string { return c.Scene().Present }

// SetScene replaces the scene.
func (c *Controls) SetScene(s Scene) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scene = Scene{LocationID: s.LocationID, Present: slices.Clone(s.Present)}
}
