// Package live holds the DM's live controls of a table session: the scene
// (where the action is, which NPCs are present), the NPC told to answer the
// next line, which NPCs are muted, and the DM's standing directions to
// NPCs. The bot's slash commands and console change them; the table reads
// them on every turn.
package live

import (
	"slices"
	"sync"
	"time"
)

// Controls are a guild's live NPC controls, shared with its voice session:
// which NPCs are muted and what the scene is.
type Controls struct {
	mu       sync.Mutex
	muted    map[string]bool
	allMuted bool
	scene    Scene
	next     string // the NPC the DM told to answer the next line
	// directions are the DM's standing instructions, by NPC id.
	directions map[string]Direction
	// splits are the scene's player sets as they changed, oldest first
	// (at most maxSplits), each from the time it took effect on now's
	// clock: a line is witnessed by the set in force when it was said,
	// not when it is processed (see PlayersAt).
	splits []playerSet
	now    func() time.Time
}

// playerSet is the scene's players from a time on, and the DM who set
// them.
type playerSet struct {
	from    time.Time
	players []string
	by      string
}

// maxSplits bounds the history PlayersAt reads: a line is processed
// seconds after it is said, and the DM splits the party a few times an
// evening.
const maxSplits = 64

// Direction is the DM's standing instruction to an NPC (/npc direct): it
// goes into the NPC's prompt for its next replies, steering what it does
// without scripting its words.
type Direction struct {
	Text string
	// Left is how many more replies it is kept for; 0 keeps it until the
	// DM clears or replaces it.
	Left int
}

// NewControls returns the controls of a session with no scene, nothing
// muted.
func NewControls() *Controls {
	return &Controls{muted: map[string]bool{}, directions: map[string]Direction{}, now: time.Now}
}

// UseClock makes the controls time scene changes on now, the clock the
// session times its lines on (the table sets it; the default is the
// wall clock).
func (c *Controls) UseClock(now func() time.Time) {
	if now == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// SetDirection gives an NPC a standing instruction for its next replies
// (replies of them; 0 keeps it until cleared); an empty text clears it.
// A new direction replaces the last one.
func (c *Controls) SetDirection(npcID, text string, replies int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if text == "" {
		delete(c.directions, npcID)
		return
	}
	c.directions[npcID] = Direction{Text: text, Left: max(replies, 0)}
}

// Direction returns an NPC's standing instruction, if any, without using
// it.
func (c *Controls) Direction(npcID string) (Direction, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.directions[npcID]
	return d, ok
}

// TakeDirection returns the instruction for the reply an NPC is about to
// make ("" for none) and counts that reply: a direction given for N
// replies is gone after the Nth.
func (c *Controls) TakeDirection(npcID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.directions[npcID]
	if !ok {
		return ""
	}
	switch {
	case d.Left == 1:
		delete(c.directions, npcID)
	case d.Left > 1:
		d.Left--
		c.directions[npcID] = d
	}
	return d.Text
}

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
	// Players are the Discord user ids of the players in the scene when
	// the DM split the party; empty means everyone at the table.
	Players []string
	// By is the Discord user id of the DM who set the players: while the
	// party is split, their lines are narration the scene hears; any other
	// speaker outside Players is at the table, not in the scene.
	By string
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
	return Scene{LocationID: c.scene.LocationID, Present: slices.Clone(c.scene.Present), Players: slices.Clone(c.scene.Players),
		By: c.scene.By}
}

// PresentPlayers are the players in the scene (empty: the party is not
// split, everyone at the table is there).
func (c *Controls) PresentPlayers() []string { return c.Scene().Players }

// PlayersAt are the players in the scene at time t (empty: the party was
// not split then). A line said before the DM rejoined the party, and
// processed after, was heard by the split scene only.
func (c *Controls) PlayersAt(t time.Time) []string {
	players, _ := c.SplitAt(t)
	return players
}

// SplitAt is PlayersAt with the DM who split the party (Scene.By; empty
// when the party was not split then).
func (c *Controls) SplitAt(t time.Time) (players []string, by string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.splits) - 1; i >= 0; i-- {
		if !c.splits[i].from.After(t) {
			return slices.Clone(c.splits[i].players), c.splits[i].by
		}
	}
	if len(c.splits) == maxSplits { // older than the history kept
		return slices.Clone(c.splits[0].players), c.splits[0].by
	}
	return nil, ""
}

// PresentNPCs are the NPCs in the scene (empty: the scene is not set).
func (c *Controls) PresentNPCs() []string { return c.Scene().Present }

// SetScene replaces the scene.
func (c *Controls) SetScene(s Scene) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Equal(s.Players, c.scene.Players) || (len(s.Players) > 0 && s.By != c.scene.By) {
		c.splits = append(c.splits, playerSet{from: c.now(), players: slices.Clone(s.Players), by: s.By})
		if len(c.splits) > maxSplits {
			c.splits = slices.Delete(c.splits, 0, len(c.splits)-maxSplits)
		}
	}
	c.scene = Scene{LocationID: s.LocationID, Present: slices.Clone(s.Present), Players: slices.Clone(s.Players), By: s.By}
}
