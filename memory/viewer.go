package memory

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Role is the kind of reader a [Viewer] is.
type Role uint8

// Roles. The zero Role is no role: a Viewer without one is refused.
const (
	// RoleDM sees everything: secrets, secret attributes, rejected facts.
	RoleDM Role = iota + 1
	// RolePlayer sees what is public: no secret fact, no secret attribute.
	RolePlayer
	// RoleNPC sees public things, its own secrets (its secret attributes,
	// the secret facts it is an end of or listed in known_by) and nothing
	// of another NPC's.
	RoleNPC
)

// Viewer is who a read is for. Every role-bound read of the store filters
// by it in SQL, so a reader never receives what it may not see.
type Viewer struct {
	Role Role
	// NPCID is the NPC's entity id when Role is RoleNPC.
	NPCID string
	// PlayerID, for a RolePlayer viewer, is the Discord user id of the
	// player the handle reads for: it may then read that player's own
	// knowledge (their grants, what their character witnessed) and no other
	// player's. Empty for "any player", who reads no one's.
	PlayerID string
}

// DMViewer is the game master.
func DMViewer() Viewer { return Viewer{Role: RoleDM} }

// PlayerViewer is any player.
func PlayerViewer() Viewer { return Viewer{Role: RolePlayer} }

// PlayerViewerOf is the player with Discord user id userID: what any player
// sees, plus that player's own knowledge.
func PlayerViewerOf(userID string) Viewer { return Viewer{Role: RolePlayer, PlayerID: userID} }

// NPCViewer is the NPC with entity id id.
func NPCViewer(id string) Viewer { return Viewer{Role: RoleNPC, NPCID: id} }

// Validate reports a viewer without a role, or an NPC viewer without a
// usable id.
func (v Viewer) Validate() error {
	switch v.Role {
	case RoleDM, RolePlayer:
		if v.NPCID != "" {
			return fmt.Errorf("%w: viewer %s with an NPC id", ErrInvalid, v)
		}
		if v.PlayerID != "" && (v.Role != RolePlayer || strings.TrimSpace(v.PlayerID) != v.PlayerID ||
			strings.ContainsRune(v.PlayerID, 0)) {
			return fmt.Errorf("%w: viewer %s with an invalid player id", ErrInvalid, v)
		}
		return nil
	case RoleNPC:
		if v.PlayerID != "" {
			return fmt.Errorf("%w: NPC viewer with a player id", ErrInvalid)
		}
		if strings.TrimSpace(v.NPCID) == "" || strings.ContainsRune(v.NPCID, 0) {
			return fmt.Errorf("%w: NPC viewer without a valid NPC id", ErrInvalid)
		}
		return nil
	}
	return fmt.Errorf("%w: viewer without a role", ErrInvalid)
}

// String is "dm", "player" or "npc:<id>".
func (v Viewer) String() string {
	switch v.Role {
	case RoleDM:
		return "dm"
	case RolePlayer:
		return "player"
	case RoleNPC:
		return "npc:" + v.NPCID
	}
	return "none"
}

// Secrecy: the one definition of what is secret.
//
// A relationship is secret when its attributes hold "secret": true (a JSON
// boolean; campaign files refuse any other value). An attribute is secret,
// at any depth, when its key is a secret key ([SecretKey]) or its value is
// an object holding "secret": true. The store applies the same rule in SQL
// (migration 0010, glyphoxa_public); a test keeps the two in step.

// secretKeys are attribute names that are secret whatever their prefix.
var secretKeys = [...]string{AttrKnownBy, "gm_notes", "dm_notes", "notes_gm", "notes_dm"}

// secretKeyPrefixes make any attribute name starting with them secret.
var secretKeyPrefixes = [...]string{"secret", "gm_", "dm_", "hidden"}

// SecretKey reports whether an attribute name is for the game master's
// (and, for an NPC's own attributes, that NPC's) eyes only: secret_knowledge,
// secret_plan, gm_notes, dm_*, hidden_*, known_by and the secret marker.
// ASCII letters match in either case.
func SecretKey(key string) bool {
	k := asciiLower(key)
	for _, s := range secretKeys {
		if k == s {
			return true
		}
	}
	for _, p := range secretKeyPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// PublicValue is v without what is secret, at any depth: keys [SecretKey]
// names and objects marked {"secret": true}. It returns nil for a value
// that is secret as a whole. It never changes v.
func PublicValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x[AttrSecret] == true {
			return nil
		}
		out := make(map[string]any, len(x))
		for k, y := range x {
			if SecretKey(k) {
				continue
			}
			if p := PublicValue(y); p != nil || y == nil {
				out[k] = p
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, y := range x {
			if p := PublicValue(y); p != nil || y == nil {
				out = append(out, p)
			}
		}
		return out
	}
	return v
}

// PublicAttributes is attrs without what is secret (see [PublicValue]);
// never nil.
func PublicAttributes(attrs map[string]any) map[string]any {
	if m, ok := PublicValue(map[string]any(attrs)).(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// IsSecret reports whether a relationship's attributes mark it secret.
func IsSecret(attrs map[string]any) bool { return attrs[AttrSecret] == true }

// asciiLower lower-cases ASCII letters only, as the SQL side's translate()
// does, so the two agree on every key.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// MaxCampaignIDLen is the longest campaign id.
const MaxCampaignIDLen = 64

// ValidateCampaignID checks a campaign id against the safe alphabet: 1 to
// [MaxCampaignIDLen] ASCII letters, digits, '-' and '_', starting with a
// letter or digit. Campaign ids name spool directories and URL paths
// (/mcp/<campaign>), so nothing else is allowed. The error quotes at most
// the id's first 40 characters.
func ValidateCampaignID(id string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: campaign id %s %s (use 1 to %d letters, digits, - and _, starting with a letter or digit)",
			ErrInvalid, Quote(id, 40), why, MaxCampaignIDLen)
	}
	switch {
	case id == "":
		return fmt.Errorf("%w: empty campaign id", ErrInvalid)
	case len(id) > MaxCampaignIDLen:
		return bad(fmt.Sprintf("is %d bytes long", len(id)))
	case !asciiAlnum(id[0]):
		return bad("does not start with a letter or digit")
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !asciiAlnum(c) && c != '-' && c != '_' {
			return bad(fmt.Sprintf("holds %q at byte %d", rune(c), i))
		}
	}
	return nil
}

func asciiAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Quote quotes s for an error message or a terminal: control characters
// and invalid UTF-8 escaped (as %q does), and cut to at most max runes with
// "…" and the full length appended when longer.
func Quote(s string, max int) string {
	r := []rune(s)
	if max > 0 && len(r) > max {
		return fmt.Sprintf("%q… (%d bytes)", string(r[:max]), len(s))
	}
	return fmt.Sprintf("%q", s)
}

// CheckSecretMarkers refuses attributes whose secrecy a reader would
// misread: a "secret" marker, at any depth, that is not a JSON boolean
// (secret: "true" or "yes" would leave the fact or value public, since
// only true hides it), or spelled in another case ("Secret": true is a
// secret key, hidden itself, and marks nothing; "SECRET": "a note" is
// such a hidden value and is taken). The error wraps ErrInvalid and names
// the attribute's path.
func CheckSecretMarkers(attrs map[string]any) error {
	return checkMarkers(attrs, "")
}

// looksLikeMarker reports whether v reads as a yes or no: a boolean, a
// number, or a word such as "true", "yes" or "on".
func looksLikeMarker(v any) bool {
	switch x := v.(type) {
	case bool, float64, int, int64, json.Number:
		return true
	case string:
		switch asciiLower(strings.TrimSpace(x)) {
		case "true", "false", "yes", "no", "on", "off", "y", "n", "1", "0":
			return true
		}
	}
	return false
}

func checkMarkers(v any, path string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if asciiLower(k) == AttrSecret {
				if k != AttrSecret {
					// SECRET: "the note" is a secret-named value, hidden
					// itself (SecretKey); SECRET: true meant a marker.
					if looksLikeMarker(y) {
						return fmt.Errorf("%w: attribute %s: the secret marker is written %q (lower case), or it marks nothing", ErrInvalid, p, AttrSecret)
					}
					continue
				}
				if _, ok := y.(bool); !ok {
					return fmt.Errorf("%w: attribute %s must be true or false, got %v (%T): any other value leaves it public", ErrInvalid, p, y, y)
				}
			}
			if err := checkMarkers(y, p); err != nil {
				return err
			}
		}
	case []any:
		for i, y := range x {
			if err := checkMarkers(y, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
